//! Workload (d): sampler index rates on one core, zsampler against what a
//! Rust user would write instead (the baselines of the criterion bench
//! `sampler`), batch 1024 over 1M indices, interleaved rounds.

use zsampler::Mode;

use super::measure::{Budget, Runner, interleaved, median};
use super::report::{Report, Table, bold, fmt_ratio, fmt_seconds, yes_no};
use crate::sampler_baselines::{BLOCK, EPOCH_BATCHES, epoch_baseline, iid_baseline, zsampler};

/// Batches per iteration of the iid group.
const IID_BATCHES: u64 = 1000;

/// An iteration as a [`Runner`] (which ignores the plan's batch).
fn runner(mut iteration: impl FnMut() -> usize + 'static) -> Runner<'static> {
    Box::new(move |_: &[u64]| iteration())
}

/// Measures the two groups (iid; one epoch of cyclic, block and the
/// Fisher–Yates baseline) and returns the table.
pub fn run(quick: bool, report: &mut Report) -> Table {
    let (total, min_rounds) = if quick { (100, 3) } else { (6_000, 15) };
    let budget = Budget::millis(total, min_rounds, 0);
    #[rustfmt::skip]
    let columns = [
        "group", "system", "median / iteration>", "G indices/s>", "× baseline>", "target", "reached",
    ];
    let title = "(d) sampler index rates, batch 1024 over 1M indices, one core";
    let mut table = Table::new(title, &columns);
    let epoch = |mode| runner(zsampler(mode, EPOCH_BATCHES));
    let iid = runner(zsampler(Mode::Iid, IID_BATCHES));
    let (iid_base, epoch_base) = (runner(iid_baseline(IID_BATCHES)), runner(epoch_baseline()));
    // Per group, the baseline first: (system, target G/s, its iteration).
    let groups: [(_, Vec<(_, Option<f64>, _)>); 2] = [
        (
            "iid, 1000 batches",
            vec![
                ("SmallRng + random_range (baseline)", None, iid_base),
                ("zsampler iid", Some(1.0), iid),
            ],
        ),
        (
            "one epoch, 976 batches",
            vec![
                ("Fisher–Yates per epoch (baseline)", None, epoch_base),
                ("zsampler cyclic", Some(0.2), epoch(Mode::Cyclic)),
                ("zsampler block (256 × 16)", None, epoch(BLOCK)),
            ],
        ),
    ];
    let mut rounds_run = Vec::new();
    for (group, systems) in groups {
        let (systems, mut iterations): (Vec<_>, Vec<_>) =
            systems.into_iter().map(|(n, t, i)| ((n, t), i)).unzip();
        // A plan of one (unused) batch: a sample is one iteration, and its
        // "bytes" are the indices the iteration produced.
        let (results, rounds) = interleaved(&mut iterations, &[vec![]], budget);
        rounds_run.push(rounds);
        for ((name, target), sampled) in systems.iter().zip(&results) {
            let rate = sampled.bytes_per_s() / 1e9;
            let vs = sampled.paired_ratio(&results[0]);
            let secs = median(&sampled.round_secs);
            report.push('d', name, "g_indices_s", rate, "G/s");
            report.push('d', name, "vs_baseline", vs, "x");
            report.push('d', name, "median_iteration_ms", secs * 1e3, "ms");
            let (goal, met) = match target {
                Some(t) => (format!("≥ {t} G/s"), yes_no(rate >= *t)),
                None => (String::new(), String::new()),
            };
            table.rows.push(vec![
                group.to_string(),
                bold(name, name.starts_with("zsampler")),
                fmt_seconds(secs),
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
