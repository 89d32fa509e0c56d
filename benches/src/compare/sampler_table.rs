//! Workload (d): sampler index rates on one core, zsampler against what a
//! Rust user would write instead (the baselines of the criterion bench
//! `sampler`), batch 1024 over 1M indices, interleaved rounds.

use std::hint::black_box;
use std::time::{Duration, Instant};

use zsampler::{Mode, Sampler};

use super::measure::median;
use super::report::{Report, Table, fmt_ratio, fmt_seconds};
use crate::sampler_baselines::{fisher_yates_epoch, iid_random_range, small_rng};

/// Index space.
pub const LEN: u64 = 1_000_000;
/// Batch size.
pub const BATCH: usize = 1024;
const SEED: u64 = 42;

/// Per-round rates (indices/s) and seconds per iteration of one system.
type Rounds = (Vec<f64>, Vec<f64>);

/// One iteration of a system: returns the indices it produced.
type Iteration<'a> = Box<dyn FnMut() -> u64 + 'a>;

fn sampler(mode: Mode) -> Sampler {
    Sampler::builder(LEN, BATCH as u64)
        .seed(SEED)
        .mode(mode)
        .build()
        .expect("a valid sampler configuration")
}

/// Interleaved rounds of `systems`; per system, the per-round rates
/// (indices per second) and the median seconds per iteration.
fn rounds(systems: &mut [Iteration<'_>], budget: Duration, min_rounds: usize) -> Vec<Rounds> {
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
    // iid: 1000 batches per iteration.
    const IID_BATCHES: u64 = 1000;
    let mut rng = small_rng(SEED);
    let mut base_buf = vec![0u64; BATCH];
    let iid = sampler(Mode::Iid);
    let mut iid_buf = vec![0u64; BATCH];
    let mut iid_step = 0;
    let mut group_iid: Vec<Iteration<'_>> = vec![
        Box::new(|| {
            for _ in 0..IID_BATCHES {
                iid_random_range(&mut rng, LEN, &mut base_buf);
                black_box(&base_buf);
            }
            IID_BATCHES * BATCH as u64
        }),
        Box::new(|| {
            for _ in 0..IID_BATCHES {
                iid.fill_batch(iid_step, &mut iid_buf);
                iid_step += 1;
                black_box(&iid_buf);
            }
            IID_BATCHES * BATCH as u64
        }),
    ];
    let iid_results = rounds(&mut group_iid, budget, min_rounds);
    drop(group_iid);

    let mut rng = small_rng(SEED);
    let mut permutation: Vec<u64> = (0..LEN).collect();
    let mut fy_buf = vec![0u64; BATCH];
    let cyclic = sampler(Mode::Cyclic);
    let block = sampler(Mode::Block {
        block_size: 256,
        window_blocks: 16,
    });
    let (mut c_buf, mut b_buf) = (vec![0u64; BATCH], vec![0u64; BATCH]);
    let (mut c_step, mut b_step) = (0, 0);
    let mut group_epoch: Vec<Iteration<'_>> = vec![
        Box::new(|| {
            fisher_yates_epoch(&mut rng, &mut permutation, &mut fy_buf, |b| {
                black_box(b);
            });
            steps * BATCH as u64
        }),
        Box::new(|| {
            for _ in 0..steps {
                cyclic.fill_batch(c_step, &mut c_buf);
                c_step += 1;
                black_box(&c_buf);
            }
            steps * BATCH as u64
        }),
        Box::new(|| {
            for _ in 0..steps {
                block.fill_batch(b_step, &mut b_buf);
                b_step += 1;
                black_box(&b_buf);
            }
            steps * BATCH as u64
        }),
    ];
    let epoch_results = rounds(&mut group_epoch, budget, min_rounds);
    drop(group_epoch);

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
    // (group, [(system, target G/s)], its rounds)
    type Group<'a> = (&'a str, Vec<(&'a str, Option<f64>)>, &'a [Rounds]);
    let groups: [Group<'_>; 2] = [
        (
            "iid, 1000 batches",
            vec![
                ("SmallRng + random_range (baseline)", None),
                ("zsampler iid", Some(1.0)),
            ],
            &iid_results,
        ),
        (
            "one epoch, 976 batches",
            vec![
                ("Fisher–Yates per epoch (baseline)", None),
                ("zsampler cyclic", Some(0.2)),
                ("zsampler block (256 × 16)", None),
            ],
            &epoch_results,
        ),
    ];
    for (group, systems, results) in groups {
        let baseline = &results[0].0;
        for ((name, target), (rates, secs)) in systems.iter().zip(results) {
            let rate = median(rates) / 1e9;
            let paired: Vec<f64> = rates.iter().zip(baseline).map(|(r, b)| r / b).collect();
            let vs = median(&paired);
            report.push('d', name, "g_indices_s", rate, "G/s");
            report.push('d', name, "vs_baseline", vs, "x");
            report.push('d', name, "median_iteration_ms", median(secs) * 1e3, "ms");
            let (goal, met) = match target {
                Some(t) => (
                    format!("≥ {t} G/s"),
                    if rate >= *t {
                        "yes".to_string()
                    } else {
                        "**no**".to_string()
                    },
                ),
                None => (String::new(), String::new()),
            };
            table.row(vec![
                group.to_string(),
                if target.is_some() || name.starts_with("zsampler") {
                    format!("**{name}**")
                } else {
                    name.to_string()
                },
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
        iid_results[0].0.len()
    ));
    table
}
