//! Store gather benchmarks: issue 2's three targets, each zrecord against its
//! reference on the same records and index plan, in the same run.
//!
//! - (a) 256 KiB records, batch 256 (plan seed 5): zrecord raw vs an
//!   in-memory gather with the same threads; zrecord zstd vs the same zstd
//!   frames decoded from memory on all cores.
//! - (b) 784 B records, batch 256 (plan seed 6): zrecord raw vs a memory-mapped
//!   flat file copied on one thread (and vs the in-memory gather); zrecord
//!   zstd vs the frames decoded from memory.
//!
//! Every system's batches are checked against the source before timing, and
//! every record is gathered once as a warm-up. Throughput is in bytes
//! (MiB/s). After a full run the medians are printed as a table with the ratio
//! zrecord / reference; `--bin store_targets` measures the same pairs
//! interleaved round by round, which is steadier on a shared machine.
//!
//! `cargo bench -p zrecord-benches --bench store` (full-size data, checked
//! against BENCH-DATA.md's SHA-256); under `--test`/`--list`, or with
//! `ZRECORD_BENCH_QUICK=1`, prefixes of the workloads (no checksum exists).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use zrecord_benches::plans::BATCH;
use zrecord_benches::systems::{DenseSuite, touch_all};
use zrecord_benches::targets::{Scale, TARGETS, Target, workloads};

fn bench_target(c: &mut Criterion, target: &Target, suite: &DenseSuite, plan: &[Vec<u64>]) {
    let mut group = c.benchmark_group(target.id);
    group.throughput(Throughput::Bytes(target.batch_bytes() as u64));
    if target.workload.record_bytes() >= 64 << 10 {
        // Tens of milliseconds per batch: flat sampling, few samples.
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(15)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5));
    } else {
        group
            .sample_size(40)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
    }
    for kind in target.systems() {
        let system = kind.of(suite);
        group.bench_function(kind.id(), |b| {
            let mut out = vec![0u8; target.batch_bytes()];
            let mut next = 0;
            b.iter(|| {
                system.gather(&plan[next], &mut out);
                next = (next + 1) % plan.len();
                black_box(&out);
            });
        });
    }
    group.finish();
}

/// `<target>/criterion`, from `CARGO_TARGET_DIR` or the bench executable's
/// path (`<target>/<profile>/deps/store-…`).
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

/// The median point estimate (ns per iteration) from criterion's `estimates.json`.
fn median_ns(dir: &Path, group: &str, bench: &str) -> Option<f64> {
    let text =
        std::fs::read_to_string(dir.join(group).join(bench).join("new/estimates.json")).ok()?;
    let median = &text[text.find("\"median\":{")?..];
    let value = &median[median.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}

fn print_table(dir: &Path) {
    println!();
    println!(
        "| target | system | median batch | MiB/s | k records/s | zrecord / reference | goal |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for target in &TARGETS {
        let Some(reference) = median_ns(dir, target.id, target.reference.id()) else {
            continue;
        };
        for kind in target.systems() {
            let Some(ns) = median_ns(dir, target.id, kind.id()) else {
                continue;
            };
            let mib_s = target.batch_bytes() as f64 / (ns * 1e-9) / (1u64 << 20) as f64;
            let krec_s = BATCH as f64 / (ns * 1e-9) / 1e3;
            let (ratio, goal) = if kind == target.zrecord {
                (
                    format!("{:.2}×", reference / ns),
                    format!("≥ {:.1}×", target.goal),
                )
            } else {
                (String::new(), String::new())
            };
            let role = if kind == target.reference {
                " (reference)"
            } else {
                ""
            };
            let time = if ns >= 1e6 {
                format!("{:.2} ms", ns / 1e6)
            } else {
                format!("{:.1} µs", ns / 1e3)
            };
            println!(
                "| {} | {}{role} | {time} | {mib_s:.0} | {krec_s:.1} | {ratio} | {goal} |",
                target.label,
                kind.id(),
            );
        }
    }
}

fn main() {
    let dir = criterion_dir();
    let mut criterion = Criterion::default()
        .output_directory(&dir)
        .configure_from_args();
    let smoke = std::env::args().any(|a| a == "--test" || a == "--list" || a == "--profile-time");
    let scale = if smoke || std::env::var_os("ZRECORD_BENCH_QUICK").is_some() {
        Scale::Quick
    } else {
        Scale::Full
    };

    for workload in workloads() {
        let (data, verified) = workload
            .generate_verified(scale.records(&workload))
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "workload {}: {} records, {verified:?}",
            workload.name,
            scale.records(&workload)
        );
        let suite = DenseSuite::build(data, &workload.shape).expect("build the systems");
        let plan = scale.plan(&workload);
        suite
            .check_plan(&plan)
            .expect("every system gathers the source");
        for system in suite.systems() {
            touch_all(system, BATCH);
        }
        for target in TARGETS.iter().filter(|t| t.workload.name == workload.name) {
            bench_target(&mut criterion, target, &suite, &plan);
        }
    }
    criterion.final_summary();

    if !smoke {
        print_table(&dir);
    }
}
