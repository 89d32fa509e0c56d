//! `zrecord bench`: random-batch gather throughput of a store, dataset or
//! folder of stores on this machine (every stream gathers the same indices,
//! as a loader's batch does).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use zrecord::storage::{Io, page_cache};
use zrecord::{DynRaggedBatch, DynVec};

use crate::progress;
use crate::source::{RemoteArgs, Source};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A store, a dataset (a folder with dataset.zr), a folder of stores,
    /// or one of these in object storage (s3://…, gs://…, az://…, https://…).
    source: String,
    /// Records per batch.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Batches to time (after a warm-up of a tenth as many, unless --cold).
    #[arg(long, default_value_t = 200)]
    batches: u64,
    /// How the store's files are read.
    #[arg(long, value_enum, default_value_t = IoArg::Auto)]
    io: IoArg,
    /// Gather runs of this many consecutive records (a block-shuffled
    /// order) instead of independent random records.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    block: u64,
    /// Drop the store's files from the page cache first and time from the
    /// first batch (no warm-up): reads from the disk, not from memory.
    #[arg(long)]
    cold: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// `--io`: how a store's files are read.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum IoArg {
    /// Memory-mapped: fastest while the store fits in memory.
    Mapped,
    /// Explicit reads, many in flight: for stores larger than memory.
    Direct,
    /// Mapped if the store fits in half the memory available, else direct.
    Auto,
}

impl From<IoArg> for Io {
    fn from(io: IoArg) -> Io {
        match io {
            IoArg::Mapped => Io::Mapped,
            IoArg::Direct => Io::Direct,
            IoArg::Auto => Io::Auto,
        }
    }
}

/// A stream's batch, reused from one gather to the next.
enum Buffer {
    Dense(DynVec),
    Ragged(DynRaggedBatch),
}

/// Above this resident share a "cold" figure would be a warm one.
const COLD_RESIDENT_LIMIT: f64 = 0.01;

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let source = Source::open(&args.source, &args.remote, args.io.into())?;
    let len = source.streams.first().map_or(0, |s| s.len());
    if len == 0 || args.batch == 0 {
        bail!(
            "nothing to gather: {} is empty or --batch is 0",
            source.shown
        );
    }
    let mut cold_note = String::new();
    if args.cold {
        let Some(root) = source.local_path() else {
            bail!(
                "--cold drops local files from the page cache; {} is a URL (its reads are remote, \
                 or from --cache)",
                source.shown
            );
        };
        let (mut resident, mut total) = (0u64, 0u64);
        for stream in &source.streams {
            for relative in &stream.stores {
                let dir = root.join(relative);
                let left = page_cache::evict(&dir)
                    .with_context(|| format!("evicting {} from the page cache", dir.display()))?;
                resident += left.resident;
                total += left.total;
            }
        }
        let share = if total == 0 {
            0.0
        } else {
            resident as f64 / total as f64
        };
        if share > COLD_RESIDENT_LIMIT {
            bail!(
                "{:.1} % of the store stayed in the page cache after eviction (mapped and \
                 locked by another process?): a figure now would not be cold",
                share * 100.0
            );
        }
        cold_note = format!(", cold: {:.2} % resident before", share * 100.0);
    }
    let mut outs: Vec<Buffer> = source
        .streams
        .iter()
        .map(|s| match &s.shards {
            zrecord::Stream::Dense(d) => Buffer::Dense(DynVec::new(d.dtype())),
            zrecord::Stream::Ragged(r) => Buffer::Ragged(DynRaggedBatch::new(r.dtype())),
        })
        .collect();
    let mut gather = |indices: &[u64]| -> Result<u64> {
        let mut bytes = 0;
        for (stream, out) in source.streams.iter().zip(&mut outs) {
            bytes += match (&stream.shards, out) {
                (zrecord::Stream::Dense(d), Buffer::Dense(buf)) => {
                    d.gather_into(indices, buf)?;
                    buf.as_bytes().len()
                }
                (zrecord::Stream::Ragged(r), Buffer::Ragged(batch)) => {
                    r.gather_into(indices, batch)?;
                    batch.values().as_bytes().len()
                }
                _ => bail!("internal error: a stream's buffer is of the other kind"),
            } as u64;
        }
        Ok(bytes)
    };
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut indices = vec![0u64; args.batch];
    let warmup = if args.cold {
        0
    } else {
        (args.batches / 10).max(1)
    };
    let bar = progress::records(quiet, args.batches + warmup, "bench");
    let (mut bytes, mut times) = (0u64, Vec::with_capacity(args.batches as usize));
    for b in 0..warmup + args.batches {
        let blocks = len.div_ceil(args.block);
        for run in indices.chunks_mut(args.block as usize) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let first = rng % blocks * args.block;
            for (k, i) in run.iter_mut().enumerate() {
                *i = (first + k as u64) % len;
            }
        }
        let start = Instant::now();
        let n = gather(&indices)?;
        if b >= warmup {
            times.push(start.elapsed());
            bytes += n;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let total: Duration = times.iter().sum();
    times.sort_unstable();
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    let secs = total.as_secs_f64();
    println!(
        "{}: {} batches of {}: {:.0} MiB/s, {:.0} k records/s, batch latency p50 {:.3} ms, p95 {:.3} ms ({} threads, io {:?}, block {}{cold_note})",
        source.shown,
        args.batches,
        args.batch,
        bytes as f64 / secs / (1 << 20) as f64,
        (args.batches as usize * args.batch) as f64 / secs / 1e3,
        pct(0.5),
        pct(0.95),
        rayon_threads(),
        source
            .streams
            .first()
            .and_then(|s| s.shard_stores().first().map(|s| s.io()))
            .unwrap_or(Io::Auto),
        args.block
    );
    Ok(())
}

/// Cores the gather may use.
fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
