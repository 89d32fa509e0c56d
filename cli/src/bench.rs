//! `zrecord bench`: random-batch gather throughput of a store on this machine.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use zrecord::storage::{Io, page_cache};
use zrecord::{AnyStore, OpenOptions};

use crate::progress;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store.
    store: PathBuf,
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

/// Above this resident share a "cold" figure would be a warm one.
const COLD_RESIDENT_LIMIT: f64 = 0.01;

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let options = OpenOptions::new().read_only(true).io(args.io.into());
    let store = options
        .open::<AnyStore>(&args.store)
        .with_context(|| args.store.display().to_string())?;
    if store.is_empty() || args.batch == 0 {
        bail!("nothing to gather: the store is empty or --batch is 0");
    }
    let mut cold_note = String::new();
    if args.cold {
        let left = page_cache::evict(&args.store)
            .with_context(|| format!("evicting {} from the page cache", args.store.display()))?;
        if left.share() > COLD_RESIDENT_LIMIT {
            bail!(
                "{:.1} % of the store stayed in the page cache after eviction (mapped and \
                 locked by another process?): a figure now would not be cold",
                left.share() * 100.0
            );
        }
        cold_note = format!(", cold: {:.2} % resident before", left.share() * 100.0);
    }
    let mut batch = store.new_batch();
    let mut gather = |indices: &[u64]| -> Result<u64> {
        store.gather_into(indices, &mut batch)?;
        Ok(batch.as_bytes().len() as u64)
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
        let blocks = store.len().div_ceil(args.block);
        for run in indices.chunks_mut(args.block as usize) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let first = rng % blocks * args.block;
            for (k, i) in run.iter_mut().enumerate() {
                *i = (first + k as u64) % store.len();
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
        args.store.display(),
        args.batches,
        args.batch,
        bytes as f64 / secs / (1 << 20) as f64,
        (args.batches as usize * args.batch) as f64 / secs / 1e3,
        pct(0.5),
        pct(0.95),
        rayon_threads(),
        store.io(),
        args.block
    );
    Ok(())
}

/// Cores the gather may use.
fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
