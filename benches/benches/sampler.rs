//! Sampler index rates, side by side with what a Rust user would write instead.
//!
//! - **iid**, batch 1024 over 1M indices: `zsampler` (`fill_batch` into a reused
//!   buffer) vs a `SmallRng` + `random_range` loop (and `SmallRng` + a prepared
//!   `Uniform`).
//! - **cyclic**, batch 1024 over 1M indices, one iteration = one epoch
//!   (976 batches, the remainder dropped): `zsampler` cyclic (and block) vs a
//!   materialised Fisher–Yates shuffle per epoch (`SliceRandom::shuffle`) copied
//!   out batch by batch.
//!
//! Throughput is in indices. criterion keeps its statistics per benchmark and
//! reports a change against the previous run; the side-by-side verdict (ratios
//! to the baselines in interleaved rounds) is `compare`'s table (d).
//!
//! `cargo bench -p zrecord-benches --bench sampler`

use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use rand::distr::{Distribution, Uniform};
use zrecord_benches::sampler_baselines::{
    BATCH, BLOCK, EPOCH_BATCHES, LEN, SEED, epoch_baseline, iid_baseline, small_rng, zsampler,
};
use zsampler::Mode;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, elements: u64) {
    group
        .throughput(Throughput::Elements(elements))
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
}

/// Times the calls of an iteration that `setup` makes afresh for every sample.
fn bench<I: FnMut() -> usize>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    setup: impl Fn() -> I,
) {
    group.bench_function(name, |b| b.iter(setup()));
}

fn bench_iid(c: &mut Criterion) {
    let mut group = c.benchmark_group("iid_1M_batch1024");
    configure(&mut group, BATCH as u64);
    bench(&mut group, "smallrng_random_range", || iid_baseline(1));
    bench(&mut group, "smallrng_uniform", || {
        let mut rng = small_rng(SEED);
        let uniform = Uniform::new(0, LEN).expect("non-empty range");
        let mut buffer = vec![0u64; BATCH];
        move || {
            for slot in &mut buffer {
                *slot = uniform.sample(&mut rng);
            }
            std::hint::black_box(&buffer);
            BATCH
        }
    });
    bench(&mut group, "zsampler_iid", || zsampler(Mode::Iid, 1));
    group.finish();
}

fn bench_cyclic(c: &mut Criterion) {
    let mut group = c.benchmark_group("epoch_1M_batch1024");
    configure(&mut group, EPOCH_BATCHES * BATCH as u64);
    // A fresh permutation per epoch, then the epoch's batches.
    bench(&mut group, "fisher_yates", epoch_baseline);
    bench(&mut group, "zsampler_cyclic", || {
        zsampler(Mode::Cyclic, EPOCH_BATCHES)
    });
    bench(&mut group, "zsampler_block", || {
        zsampler(BLOCK, EPOCH_BATCHES)
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_iid(&mut criterion);
    bench_cyclic(&mut criterion);
    criterion.final_summary();
}
