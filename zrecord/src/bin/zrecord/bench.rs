//! `zrecord bench`: random-batch gather throughput of a store on this machine.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use zrecord::AnyStore;

use crate::progress;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store.
    store: PathBuf,
    /// Records per batch.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Batches to time (after a warm-up of a tenth as many).
    #[arg(long, default_value_t = 200)]
    batches: u64,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let store =
        AnyStore::open_read_only(&args.store).with_context(|| args.store.display().to_string())?;
    if store.is_empty() || args.batch == 0 {
        bail!("nothing to gather: the store is empty or --batch is 0");
    }
    let mut batch = store.new_batch();
    let mut gather = |indices: &[u64]| -> Result<u64> {
        store.gather_into(indices, &mut batch)?;
        Ok(batch.as_bytes().len() as u64)
    };
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut indices = vec![0u64; args.batch];
    let warmup = (args.batches / 10).max(1);
    let bar = progress::records(quiet, args.batches + warmup, "bench");
    let (mut bytes, mut times) = (0u64, Vec::with_capacity(args.batches as usize));
    for b in 0..warmup + args.batches {
        for i in &mut indices {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            *i = rng % store.len();
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
        "{}: {} batches of {}: {:.0} MiB/s, {:.0} k records/s, batch latency p50 {:.3} ms, p95 {:.3} ms ({} threads)",
        args.store.display(),
        args.batches,
        args.batch,
        bytes as f64 / secs / (1 << 20) as f64,
        (args.batches as usize * args.batch) as f64 / secs / 1e3,
        pct(0.5),
        pct(0.95),
        rayon_threads()
    );
    Ok(())
}

/// Cores the gather may use.
fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
