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

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use rand::distr::{Distribution, Uniform};
use zrecord_benches::sampler_baselines::{
    BATCH, LEN, SEED, fisher_yates_epoch, iid_random_range, small_rng, zsampler,
};
use zsampler::Mode;

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, elements: u64) {
    group
        .throughput(Throughput::Elements(elements))
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
}

fn bench_iid(c: &mut Criterion) {
    let mut group = c.benchmark_group("iid_1M_batch1024");
    configure(&mut group, BATCH as u64);

    group.bench_function("smallrng_random_range", |b| {
        let mut rng = small_rng(SEED);
        let mut buffer = vec![0u64; BATCH];
        b.iter(|| {
            iid_random_range(&mut rng, LEN, &mut buffer);
            black_box(&buffer);
        });
    });

    group.bench_function("smallrng_uniform", |b| {
        let mut rng = small_rng(SEED);
        let uniform = Uniform::new(0, LEN).expect("non-empty range");
        let mut buffer = vec![0u64; BATCH];
        b.iter(|| {
            for slot in &mut buffer {
                *slot = uniform.sample(&mut rng);
            }
            black_box(&buffer);
        });
    });

    group.bench_function("zsampler_iid", |b| {
        let sampler = zsampler(Mode::Iid);
        let mut buffer = vec![0u64; BATCH];
        let mut step = 0;
        b.iter(|| {
            sampler.fill_batch(step, &mut buffer);
            step += 1;
            black_box(&buffer);
        });
    });
    group.finish();
}

fn bench_cyclic(c: &mut Criterion) {
    let steps = LEN / BATCH as u64;
    let mut group = c.benchmark_group("epoch_1M_batch1024");
    configure(&mut group, steps * BATCH as u64);

    group.bench_function("fisher_yates", |b| {
        let mut rng = small_rng(SEED);
        let mut permutation: Vec<u64> = (0..LEN).collect();
        let mut buffer = vec![0u64; BATCH];
        b.iter(|| {
            // A fresh permutation per epoch, then the epoch's batches.
            fisher_yates_epoch(&mut rng, &mut permutation, &mut buffer, |b| {
                black_box(b);
            });
        });
    });

    for (name, mode) in [
        ("zsampler_cyclic", Mode::Cyclic),
        (
            "zsampler_block",
            Mode::Block {
                block_size: 256,
                window_blocks: 16,
            },
        ),
    ] {
        group.bench_function(name, |b| {
            let sampler = zsampler(mode);
            let mut buffer = vec![0u64; BATCH];
            let mut step = 0;
            b.iter(|| {
                for _ in 0..steps {
                    sampler.fill_batch(step, &mut buffer);
                    step += 1;
                    black_box(&buffer);
                }
            });
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_iid(&mut criterion);
    bench_cyclic(&mut criterion);
    criterion.final_summary();
}
