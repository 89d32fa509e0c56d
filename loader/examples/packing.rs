//! Sequence packing on a real corpus: the King James Bible, one byte per
//! token, one verse per document (31,102 documents, 4.17 M tokens).
//!
//! Prints, for concat-and-split and best fit, the packing loop alone on one
//! core (documents already in memory, windows of 4096 documents), the same
//! loop reading its windows from a zstd token store (each window gathered,
//! then packed, on the calling thread: the bare loop a program without a
//! loader would run) and the packed loader over that store (gather and
//! planning on its worker threads), as tokens per second, medians of
//! `--runs`; then the share of padding best fit leaves at several row
//! lengths.
//!
//! ```text
//! cargo run --release -p zrecord-loader --example packing -- [--rows 64] [--seq-len 1024] [--batches 200] [--runs 5]
//! ```

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use zrecord::{Codec, DynRaggedStore, RaggedStore};
use zrecord_loader::{DEFAULT_WINDOW, Documents, Mode, PackedLoader, Packer, Packing};

struct Options {
    rows: usize,
    seq_len: usize,
    batches: usize,
    runs: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        rows: 64,
        seq_len: 1024,
        batches: 200,
        runs: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value: usize = args
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or(format!("{arg} needs a number"))?;
        match arg.as_str() {
            "--rows" => o.rows = value,
            "--seq-len" => o.seq_len = value,
            "--batches" => o.batches = value,
            "--runs" => o.runs = value.max(1),
            _ => return Err(format!("unknown option {arg}")),
        }
    }
    Ok(o)
}

/// The verses, each as its bytes and a newline.
fn verses() -> Vec<Vec<u32>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/kjv.txt.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    BufReader::new(flate2::read::GzDecoder::new(file))
        .split(b'\n')
        .map(|line| {
            let mut doc: Vec<u32> = line
                .expect("read the text")
                .into_iter()
                .map(u32::from)
                .collect();
            doc.push(u32::from(b'\n'));
            doc
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The packing loop alone: `batches` batches from in-memory windows.
fn bare(packing: Packing, windows: &[Documents], o: &Options) -> f64 {
    // Enough windows for every batch, copied before the clock starts.
    let mean = windows.iter().map(|w| w.tokens().len()).sum::<usize>() / windows.len();
    let needed = (o.batches * o.rows * o.seq_len).div_ceil(mean.max(1)) + 2;
    let mut next = windows
        .iter()
        .cycle()
        .take(needed)
        .cloned()
        .collect::<Vec<_>>()
        .into_iter();
    let mut packer = Packer::new(packing, o.seq_len, o.rows).expect("a valid packer");
    let start = Instant::now();
    for _ in 0..o.batches {
        let batch = packer
            .next_batch(|| next.next())
            .expect("documents never run out");
        std::hint::black_box(&batch);
    }
    (o.batches * o.rows * o.seq_len) as f64 / start.elapsed().as_secs_f64()
}

/// The packing loop reading its windows from the store, in order: each
/// window gathered (on every core, as zrecord gathers large batches) and
/// then packed, on the calling thread.
fn bare_over_store(packing: Packing, store: &DynRaggedStore, o: &Options) -> f64 {
    let records = store.len();
    let window = DEFAULT_WINDOW.min(records);
    let mut first = 0u64;
    let mut packer = Packer::new(packing, o.seq_len, o.rows).expect("a valid packer");
    let start = Instant::now();
    for _ in 0..o.batches {
        let batch = packer
            .next_batch(|| {
                let indices: Vec<u64> = (first..first + window).map(|i| i % records).collect();
                first = (first + window) % records;
                let docs = store.gather_dyn(&indices).expect("a gather");
                Some(Documents::from_ragged(docs).expect("token documents"))
            })
            .expect("documents never run out");
        std::hint::black_box(&batch);
    }
    (o.batches * o.rows * o.seq_len) as f64 / start.elapsed().as_secs_f64()
}

/// The packed loader over the store.
fn loader(packing: Packing, store: &Arc<DynRaggedStore>, o: &Options, workers: usize) -> f64 {
    let mut loader = PackedLoader::builder(o.seq_len, o.rows)
        .tokens(Arc::clone(store))
        .packing(packing)
        .mode(Mode::Sequential)
        .workers(workers)
        .build()
        .expect("a valid loader");
    let start = Instant::now();
    for _ in 0..o.batches {
        std::hint::black_box(loader.next_batch().expect("a batch"));
    }
    (o.batches * o.rows * o.seq_len) as f64 / start.elapsed().as_secs_f64()
}

/// Share of padding when best fit packs every verse once, window by window.
fn padding(docs: &[Vec<u32>], seq_len: usize, window: usize) -> f64 {
    let windows: Vec<Documents> = docs.chunks(window).map(to_documents).collect();
    let tokens: usize = docs.iter().map(Vec::len).sum();
    let mut packer = Packer::new(Packing::BestFit, seq_len, 1).expect("a valid packer");
    let mut next = windows.into_iter();
    let (mut real, mut rows) = (0, 0);
    while real < tokens {
        match packer.next_batch(|| next.next()) {
            Ok(batch) => {
                real += batch.tokens().len() - batch.padding();
                rows += 1;
            }
            Err(_) => break,
        }
    }
    1.0 - real as f64 / (rows * seq_len) as f64
}

fn to_documents(docs: &[Vec<u32>]) -> Documents {
    let mut w = Documents::new();
    for d in docs {
        w.push(d);
    }
    w
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options()?;
    let docs = verses();
    let tokens: usize = docs.iter().map(Vec::len).sum();
    let dir = tempfile::tempdir()?;
    let store = RaggedStore::<u32>::create(dir.path().join("kjv"), Codec::Zstd)?;
    store.append_slices(&docs)?;
    let store = Arc::new(store.into_dyn());
    let windows: Vec<Documents> = docs
        .chunks(DEFAULT_WINDOW as usize)
        .map(to_documents)
        .collect();
    println!(
        "KJV: {} documents, {tokens} byte tokens; batches of {} × {}, {} per run, median of {} runs; {} cores",
        docs.len(),
        o.rows,
        o.seq_len,
        o.batches,
        o.runs,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "| packing | packer alone, 1 core | loop over the store | loader, 2 workers | loader / loop over the store | loader, 1 worker |"
    );
    println!("| --- | --: | --: | --: | --: | --: |");
    for packing in [Packing::ConcatSplit, Packing::BestFit] {
        let (mut b, mut s, mut l2, mut l1) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..o.runs {
            b.push(bare(packing, &windows, &o));
            s.push(bare_over_store(packing, &store, &o));
            l2.push(loader(packing, &store, &o, 2));
            l1.push(loader(packing, &store, &o, 1));
        }
        let (b, s, l2, l1) = (median(b), median(s), median(l2), median(l1));
        println!(
            "| {packing:?} | {:.1} M tokens/s | {:.1} | {:.1} | {:.2}× | {:.1} |",
            b / 1e6,
            s / 1e6,
            l2 / 1e6,
            l2 / s,
            l1 / 1e6
        );
    }
    println!();
    println!("best fit padding, windows of {DEFAULT_WINDOW} verses (concat-and-split: none)");
    for seq_len in [128, 256, 512, 1024, 2048] {
        println!(
            "  rows of {seq_len:>4}: {:.2} % padding",
            100.0 * padding(&docs, seq_len, DEFAULT_WINDOW as usize)
        );
    }
    Ok(())
}
