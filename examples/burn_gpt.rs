//! Train a small GPT with Burn on the King James Bible, one byte per token,
//! from a packed zrecord token store.
//!
//! The verses (one document each, ending with a newline) go into a ragged
//! token store — the store `zrecord import text kjv.txt DIR --tokenizer bytes`
//! makes; give it with `--store DIR`, or let the example write it from the
//! copy shipped in `examples/data/kjv.txt.gz`. A [`PackedLoader`] packs the
//! verses into rows (best fit by default), a decoder-only transformer learns
//! to predict the next byte under a block-diagonal causal mask, and every
//! `--eval-every` steps the loss on held-out verses (one in a hundred) is
//! printed in nats per byte with its perplexity. At the end: a generated
//! sample and, last, `val_loss=<value>`.
//!
//! ```text
//! cargo run --release --example burn_gpt -- [--minutes 10] [--steps N] [--store DIR]
//!     [--text FILE] [--packing best-fit|concat-split] [--context 256] [--rows 16]
//!     [--d-model 128] [--layers 3] [--heads 4] [--lr 0.002] [--eval-every 100]
//! ```
//!
//! [`PackedLoader`]: zrecord_loader::PackedLoader

use std::error::Error;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use burn::tensor::Device;
use zrecord::{AnyStore, Codec, DynRaggedStore, RaggedStore};
use zrecord_examples::gpt::{GptConfig, TrainConfig, train};
use zrecord_loader::Packing;

/// Command-line options.
struct Options {
    store: Option<PathBuf>,
    text: PathBuf,
    train: TrainConfig,
}

fn options() -> Result<Options, String> {
    let usage = "usage: burn_gpt [--minutes M] [--steps N] [--store DIR] [--text FILE] \
                 [--packing best-fit|concat-split] [--context L] [--rows B] [--d-model D] \
                 [--layers N] [--heads H] [--lr LR] [--eval-every N] [--seed S]";
    let mut options = Options {
        store: None,
        text: Path::new(env!("CARGO_MANIFEST_DIR")).join("data/kjv.txt.gz"),
        train: TrainConfig {
            model: GptConfig {
                vocab: 256,
                context: 256,
                d_model: 128,
                heads: 4,
                layers: 3,
            },
            rows: 16,
            learning_rate: 2e-3,
            warmup: 50,
            max_steps: usize::MAX,
            budget: Duration::from_secs(600),
            eval_every: 100,
            packing: Packing::BestFit,
            seed: 2024,
        },
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{usage}"));
        let t = &mut options.train;
        let bad = |e: &dyn std::fmt::Display| format!("{arg}: {e}\n{usage}");
        match arg.as_str() {
            "--minutes" => {
                let m: f64 = value(&arg)?.parse().map_err(|e| bad(&e))?;
                t.budget = Duration::from_secs_f64(m * 60.0);
            }
            "--steps" => t.max_steps = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--store" => options.store = Some(value(&arg)?.into()),
            "--text" => options.text = value(&arg)?.into(),
            "--packing" => {
                t.packing = match value(&arg)?.as_str() {
                    "best-fit" => Packing::BestFit,
                    "concat-split" => Packing::ConcatSplit,
                    other => return Err(bad(&format!("unknown packing {other:?}"))),
                }
            }
            "--context" => t.model.context = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--rows" => t.rows = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--d-model" => t.model.d_model = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--layers" => t.model.layers = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--heads" => t.model.heads = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--lr" => t.learning_rate = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--eval-every" => t.eval_every = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "--seed" => t.seed = value(&arg)?.parse().map_err(|e| bad(&e))?,
            "-h" | "--help" => return Err(usage.into()),
            _ => return Err(format!("unexpected argument {arg:?}\n{usage}")),
        }
    }
    if options.train.eval_every == 0 || options.train.rows == 0 || options.train.model.context == 0
    {
        return Err(format!(
            "--eval-every, --rows and --context must be at least 1\n{usage}"
        ));
    }
    Ok(options)
}

/// The verses of `text` (plain or gzipped, one per line) as a byte-token
/// store: each verse's bytes and a closing newline.
fn write_store(text: &Path, dir: &Path) -> Result<DynRaggedStore, Box<dyn Error>> {
    let file = std::fs::File::open(text).map_err(|e| format!("{}: {e}", text.display()))?;
    let reader: Box<dyn Read> = match text.extension().is_some_and(|e| e == "gz") {
        true => Box::new(flate2::read::GzDecoder::new(file)),
        false => Box::new(file),
    };
    let mut verses = Vec::new();
    for line in BufReader::new(reader).split(b'\n') {
        let mut line = line?;
        if !line.is_empty() {
            line.push(b'\n');
            verses.push(line);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    let store = RaggedStore::<u8>::create(dir, Codec::Zstd)?;
    store.append_slices(&verses)?;
    Ok(store.into_dyn())
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = options()?;
    let start = Instant::now();
    let tokens = match &options.store {
        Some(dir) => match AnyStore::open(dir)? {
            AnyStore::Ragged(s) => s,
            AnyStore::Dense(_) => return Err(format!("{} is a dense store", dir.display()).into()),
        },
        None => write_store(
            &options.text,
            &std::env::temp_dir().join("zrecord-burn-gpt"),
        )?,
    };
    let tokens = Arc::new(tokens);
    let bytes = tokens.stats()?.live_bytes;
    let validation: Vec<u64> = (0..tokens.len()).step_by(100).collect();
    let c = &options.train;
    println!(
        "{} verses ({:.1} MB) in a token store, {} held out; ready in {:.1} s",
        tokens.len(),
        bytes as f64 / 1e6,
        validation.len(),
        start.elapsed().as_secs_f64()
    );
    println!(
        "model: {} blocks of width {} with {} heads, context {}; {:?} rows of {} tokens, {} per batch; \
         up to {:.1} min on {} threads",
        c.model.layers,
        c.model.d_model,
        c.model.heads,
        c.model.context,
        c.packing,
        c.model.context + 1,
        c.rows,
        c.budget.as_secs_f64() / 60.0,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    let report = train(tokens, &validation, c, &Device::flex(), |e| {
        println!(
            "step {:>5}  {:>6.1} s  train {:.3}  val {:.3} nats/byte (perplexity {:.2})",
            e.step,
            e.seconds,
            e.train_loss,
            e.val_loss,
            e.val_loss.exp()
        );
    })?;
    println!(
        "{:.0} tokens/s trained; {:.1} % of the batches' tokens were padding",
        report.tokens_per_second,
        100.0 * report.padding
    );
    let prompt = b"And God said, ";
    let sample = report.model.generate(
        &prompt.iter().map(|&b| u32::from(b)).collect::<Vec<_>>(),
        200,
        0.8,
        c.seed,
    );
    let text: Vec<u8> = prompt
        .iter()
        .copied()
        .chain(sample.iter().map(|&t| t as u8))
        .collect();
    println!("sample: {}", String::from_utf8_lossy(&text).trim_end());
    let last = report.evals.last().ok_or("no step was trained")?;
    println!("val_loss={:.4}", last.val_loss);
    Ok(())
}
