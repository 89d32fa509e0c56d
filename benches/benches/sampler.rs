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
//! Throughput is in indices. After a run the medians of the benchmarks that ran
//! are printed as a table with the ratio to each group's baseline (whose
//! benchmark must have run too; skipped under `--test`).
//!
//! `cargo bench -p zrecord-benches --bench sampler`

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use rand::SeedableRng;
use rand::distr::{Distribution, Uniform};
use rand::rngs::SmallRng;
use zrecord_benches::sampler_baselines::{fisher_yates_epoch, iid_random_range, small_rng};
use zsampler::{Mode, Sampler};

const LEN: u64 = 1_000_000;
const BATCH: u64 = 1024;
const SEED: u64 = 42;

/// Group and benchmark names, in table order; the first of a group is its baseline.
const IID_GROUP: &str = "iid_1M_batch1024";
const CYCLIC_GROUP: &str = "epoch_1M_batch1024";

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, elements: u64) {
    group
        .throughput(Throughput::Elements(elements))
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
}

fn bench_iid(c: &mut Criterion) {
    let mut group = c.benchmark_group(IID_GROUP);
    configure(&mut group, BATCH);
    let batch = BATCH as usize;

    group.bench_function("smallrng_random_range", |b| {
        let mut rng = small_rng(SEED);
        let mut buffer = vec![0u64; batch];
        b.iter(|| {
            iid_random_range(&mut rng, LEN, &mut buffer);
            black_box(&buffer);
        });
    });

    group.bench_function("smallrng_uniform", |b| {
        let mut rng = SmallRng::seed_from_u64(SEED);
        let uniform = Uniform::new(0, LEN).expect("non-empty range");
        let mut buffer = vec![0u64; batch];
        b.iter(|| {
            for slot in &mut buffer {
                *slot = uniform.sample(&mut rng);
            }
            black_box(&buffer);
        });
    });

    group.bench_function("zsampler_iid", |b| {
        let sampler = Sampler::builder(LEN, BATCH)
            .seed(SEED)
            .mode(Mode::Iid)
            .build()
            .expect("valid configuration");
        let mut buffer = vec![0u64; batch];
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
    let steps = LEN / BATCH;
    let mut group = c.benchmark_group(CYCLIC_GROUP);
    configure(&mut group, steps * BATCH);
    let batch = BATCH as usize;

    group.bench_function("fisher_yates", |b| {
        let mut rng = small_rng(SEED);
        let mut permutation: Vec<u64> = (0..LEN).collect();
        let mut buffer = vec![0u64; batch];
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
            let sampler = Sampler::builder(LEN, BATCH)
                .seed(SEED)
                .mode(mode)
                .build()
                .expect("valid configuration");
            let mut buffer = vec![0u64; batch];
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

/// `<target>/criterion`, from the bench executable's path
/// (`<target>/<profile>/deps/sampler-…`) or `CARGO_TARGET_DIR`.
fn criterion_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir).join("criterion");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// The median point estimate (ns per iteration) from criterion's `estimates.json`,
/// if that benchmark ran in this process (written after `since`).
fn median_ns(dir: &Path, group: &str, bench: &str, since: SystemTime) -> Option<f64> {
    let path = dir.join(group).join(bench).join("new/estimates.json");
    if std::fs::metadata(&path).ok()?.modified().ok()? < since {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let median = &text[text.find("\"median\":{")?..];
    let value = &median[median.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}

fn print_table(dir: &Path, since: SystemTime) {
    let groups: [(&str, u64, &[&str]); 2] = [
        (
            IID_GROUP,
            BATCH,
            &["smallrng_random_range", "smallrng_uniform", "zsampler_iid"],
        ),
        (
            CYCLIC_GROUP,
            (LEN / BATCH) * BATCH,
            &["fisher_yates", "zsampler_cyclic", "zsampler_block"],
        ),
    ];
    println!();
    println!("| group | benchmark | median / iteration | indices/s | vs baseline |");
    println!("|---|---|---:|---:|---:|");
    for (group, elements, benches) in groups {
        let Some(baseline) = median_ns(dir, group, benches[0], since) else {
            continue;
        };
        for bench in benches {
            let Some(ns) = median_ns(dir, group, bench, since) else {
                continue;
            };
            let rate = elements as f64 / (ns * 1e-9);
            let time = if ns >= 1e6 {
                format!("{:.3} ms", ns / 1e6)
            } else if ns >= 1e3 {
                format!("{:.3} µs", ns / 1e3)
            } else {
                format!("{ns:.1} ns")
            };
            println!(
                "| {group} | {bench} | {time} | {:.3} G | {:.2}× |",
                rate / 1e9,
                baseline / ns
            );
        }
    }
}

fn main() {
    let since = SystemTime::now();
    let dir = criterion_dir();
    let mut criterion = Criterion::default()
        .output_directory(&dir)
        .configure_from_args();
    bench_iid(&mut criterion);
    bench_cyclic(&mut criterion);
    criterion.final_summary();

    let quick = std::env::args().any(|a| a == "--test" || a == "--list" || a == "--profile-time");
    if !quick {
        print_table(&dir, since);
    }
}
