//! Sampler index rates, criterion's statistics of the loops `compare`'s
//! table (d) times side by side (where the verdict is: ratios to the
//! baselines in interleaved rounds), batch 1024 over 1M indices:
//!
//! - **iid**: `zsampler` (`fill_batch` into a reused buffer) vs a `SmallRng`
//!   + `random_range` loop;
//! - **one epoch** (976 batches, the remainder dropped): `zsampler` cyclic and
//!   block vs a materialised Fisher–Yates shuffle per epoch copied out batch
//!   by batch.
//!
//! `cargo bench -p zrecord-benches --bench sampler`

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput};
use zrecord_benches::sampler_baselines::{
    BATCH, BLOCK, EPOCH_BATCHES, epoch_baseline, iid_baseline, zsampler,
};
use zsampler::Mode;

/// A group whose iterations produce `indices` indices each.
fn group<'a>(c: &'a mut Criterion, name: &str, indices: u64) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .throughput(Throughput::Elements(indices))
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group
}

// Every sample times a fresh iteration (a fresh permutation per epoch).
fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut iid = group(&mut c, "iid_1M_batch1024", BATCH as u64);
    iid.bench_function("smallrng_random_range", |b| b.iter(iid_baseline(1)));
    iid.bench_function("zsampler_iid", |b| b.iter(zsampler(Mode::Iid, 1)));
    iid.finish();
    let (name, batches) = ("epoch_1M_batch1024", EPOCH_BATCHES);
    let mut epoch = group(&mut c, name, batches * BATCH as u64);
    epoch.bench_function("fisher_yates", |b| b.iter(epoch_baseline()));
    epoch.bench_function("zsampler_cyclic", |b| {
        b.iter(zsampler(Mode::Cyclic, batches))
    });
    epoch.bench_function("zsampler_block", |b| b.iter(zsampler(BLOCK, batches)));
    epoch.finish();
    c.final_summary();
}
