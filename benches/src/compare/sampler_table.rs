//! Workload (d): sampler index rates on one core, zsampler against what a
//! Rust user would write instead (the baselines of the criterion bench
//! `sampler`), batch 1024 over 1M indices, interleaved rounds.

use std::hint::black_box;
use std::time::{Duration, Instant};

use zsampler::{Mode, Sampler};

use super::measure::median;
use super::report::{Report, Table, bold, fmt_ratio, fmt_seconds, yes_no};
use crate::sampler_baselines::{fisher_yates_epoch, iid_random_range, small_rng};

/// Index space.
pub const LEN: u64 = 1_000_000;
/// Batch size.
pub const BATCH: usize = 1024;
const SEED: u64 = 42;
/// Batches per iteration of the iid group.
const IID_BATCHES: u64 = 1000;

/// One iteration of a system: returns the indices it produced.
type Iteration = Box<dyn FnMut() -> u64>;

/// `batches` batches of zsampler in `mode` per iteration, each iteration
/// going on where the last ended.
fn zsampler(mode: Mode, batches: u64) -> Iteration {
    let sampler = Sampler::builder(LEN, BATCH as u64)
        .seed(SEED)
        .mode(mode)
        .build()
        .expect("a valid sampler configuration");
    let (mut buf, mut step) = (vec![0u64; BATCH], 0);
    Box::new(move || {
        for _ in 0..batches {
            sampler.fill_batch(step, &mut buf);
            step += 1;
            black_box(&buf);
        }
        batches * BATCH as u64
    })
}

/// Interleaved rounds of `systems`; per system, the per-round rates
/// (indices per second) and seconds per iteration.
fn rounds(
    systems: &mut [Iteration],
    budget: Duration,
    min_rounds: usize,
) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut out = vec![(Vec::new(), Vec::new()); systems.len()];
    let start = Instant::now();
    let mut round = 0;
    while round < min_rounds || start.elapsed() < budget {
        for k in 0..systems.len() {
            let s = (round + k) % systems.len();
            let t = Instant::now();
            let n = systems[s]();
            let dt = t.elapsed().as_secs_f64();
            out[s].0.push(n as f64 / dt);
            out[s].1.push(dt);
        }
        round += 1;
    }
    out
}

/// Measures the two groups (iid; one epoch of cyclic, block and the
/// Fisher–Yates baseline) and returns the table.
pub fn run(quick: bool, report: &mut Report) -> Table {
    let (budget, min_rounds) = if quick {
        (Duration::from_millis(100), 3)
    } else {
        (Duration::from_secs(6), 15)
    };
    let steps = LEN / BATCH as u64;
    let mut table = Table::new(
        "(d) sampler index rates, batch 1024 over 1M indices, one core",
        &[
            "group",
            "system",
            "median / iteration>",
            "G indices/s>",
            "× baseline>",
            "target",
            "reached",
        ],
    );
    // Per group, the baseline first: (system, target G/s, its iteration).
    type Group = (&'static str, Vec<(&'static str, Option<f64>, Iteration)>);
    let iid_baseline: Iteration = {
        let (mut rng, mut buf) = (small_rng(SEED), vec![0u64; BATCH]);
        Box::new(move || {
            for _ in 0..IID_BATCHES {
                iid_random_range(&mut rng, LEN, &mut buf);
                black_box(&buf);
            }
            IID_BATCHES * BATCH as u64
        })
    };
    let epoch_baseline: Iteration = {
        let (mut rng, mut buf) = (small_rng(SEED), vec![0u64; BATCH]);
        let mut permutation: Vec<u64> = (0..LEN).collect();
        Box::new(move || {
            fisher_yates_epoch(&mut rng, &mut permutation, &mut buf, |b| {
                black_box(b);
            });
            steps * BATCH as u64
        })
    };
    let block = Mode::Block {
        block_size: 256,
        window_blocks: 16,
    };
    let groups: [Group; 2] = [
        (
            "iid, 1000 batches",
            vec![
                ("SmallRng + random_range (baseline)", None, iid_baseline),
                ("zsampler iid", Some(1.0), zsampler(Mode::Iid, IID_BATCHES)),
            ],
        ),
        (
            "one epoch, 976 batches",
            vec![
                ("Fisher–Yates per epoch (baseline)", None, epoch_baseline),
                ("zsampler cyclic", Some(0.2), zsampler(Mode::Cyclic, steps)),
                ("zsampler block (256 × 16)", None, zsampler(block, steps)),
            ],
        ),
    ];
    let mut rounds_run = Vec::new();
    for (group, systems) in groups {
        let (systems, mut iterations): (Vec<_>, Vec<_>) =
            systems.into_iter().map(|(n, t, i)| ((n, t), i)).unzip();
        let results = rounds(&mut iterations, budget, min_rounds);
        rounds_run.push(results[0].0.len());
        let baseline = &results[0].0;
        for ((name, target), (rates, secs)) in systems.iter().zip(&results) {
            let rate = median(rates) / 1e9;
            let paired: Vec<f64> = rates.iter().zip(baseline).map(|(r, b)| r / b).collect();
            let vs = median(&paired);
            report.push('d', name, "g_indices_s", rate, "G/s");
            report.push('d', name, "vs_baseline", vs, "x");
            report.push('d', name, "median_iteration_ms", median(secs) * 1e3, "ms");
            let (goal, met) = match target {
                Some(t) => (format!("≥ {t} G/s"), yes_no(rate >= *t)),
                None => (String::new(), String::new()),
            };
            table.row(vec![
                group.to_string(),
                bold(name, name.starts_with("zsampler")),
                fmt_seconds(median(secs)),
                format!("{rate:.3}"),
                fmt_ratio(vs),
                goal,
                met,
            ]);
        }
    }
    table.note(format!(
        "{} interleaved rounds per group; median over rounds; × baseline is the median of per-round ratios. \
         Targets: iid ≥ 1 G indices/s, cyclic ≥ 0.2 G indices/s.",
        rounds_run[0]
    ));
    table
}
