//! Workload (d): sampler index rates on one core, zsampler against what a
//! Rust user would write instead (the baselines of the criterion bench
//! `sampler`), batch 1024 over 1M indices, interleaved rounds; and a
//! mixture's index generation (`Plan::fill_indices`, what a loader's worker
//! runs per batch) against the same over one source.

use std::hint::black_box;

use zrecord::{Codec, DenseStore};
use zrecord_loader::{Batch, Loader, LoaderBuilder, Mixture, Source};
use zsampler::Mode;

use super::Result;
use super::measure::{Budget, Runner, interleaved, median};
use super::report::{Report, Table, bold, fmt_ratio, fmt_seconds, yes_no};
use crate::sampler_baselines::{
    BATCH, BLOCK, EPOCH_BATCHES, LEN, SEED, epoch_baseline, iid_baseline, zsampler,
};

/// Batches per iteration of the iid group.
const IID_BATCHES: u64 = 1000;
/// Batches per iteration of the plan group.
const PLAN_BATCHES: u64 = 1000;
/// The mixture's weights; its sources hold these shares of the records.
const MIXTURE: [f64; 3] = [0.5, 0.3, 0.2];

/// The plan group's iterations, `PLAN_BATCHES` iid batches from
/// `Plan::fill_indices`: 1024 indices each over one store of `len` records
/// and over a [`MIXTURE`] of stores holding the same number of records in
/// all, then rank 0's 256 of the mixture's global batches of 1024 on 4
/// ranks. Nothing is gathered.
fn plans(len: u64) -> Result<[Runner<'static>; 3]> {
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare-d")
        .tempdir()?;
    let store = |name: &str, records: u64| -> Result<DenseStore<u8>> {
        let store = DenseStore::<u8>::create(dir.path().join(name), &[], Codec::Raw)?;
        store.append(&(0..records).map(|r| r as u8).collect::<Vec<u8>>())?;
        Ok(store)
    };
    let one = Loader::builder(BATCH as u64).stream("x", store("one", len)?);
    let mut mixture = Mixture::new();
    for (k, weight) in MIXTURE.iter().enumerate() {
        let records = (len as f64 * weight) as u64;
        let source = Source::new(format!("s{k}")).stream("x", store(&format!("s{k}"), records)?);
        mixture = mixture.source(source.weight(*weight));
    }
    let mix = Loader::builder(BATCH as u64).mixture(mixture);
    let timed = |builder: LoaderBuilder<Batch>| -> Result<Runner<'static>> {
        let plan = builder.mode(Mode::Iid).seed(SEED).plan()?;
        let (mut out, mut step) = (Vec::with_capacity(BATCH), 0);
        Ok(runner(move || {
            for _ in 0..PLAN_BATCHES {
                plan.fill_indices(step, &mut out);
                black_box(&out);
                step += 1;
            }
            PLAN_BATCHES as usize * plan.batch_size()
        }))
    };
    let rank = mix.clone().shard(0, 4);
    Ok([timed(one)?, timed(mix)?, timed(rank)?])
}

/// An iteration as a [`Runner`] (which ignores the plan's batch).
fn runner(mut iteration: impl FnMut() -> usize + 'static) -> Runner<'static> {
    Box::new(move |_: &[u64]| iteration())
}

/// A row's target: a rate, or a time per index within a factor of its
/// group's baseline.
#[derive(Clone, Copy)]
enum Goal {
    GPerS(f64),
    TimeWithin(f64),
}

/// Measures the three groups (iid; one epoch of cyclic, block and the
/// Fisher–Yates baseline; a mixture's indices through the loader) and
/// returns the table.
pub fn run(quick: bool, report: &mut Report) -> Result<Table> {
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
    let [one, mix, rank] = plans(if quick { 20_000 } else { LEN })?;
    let mixture = format!(
        "mixture of {} stores ({}), iid",
        MIXTURE.len(),
        MIXTURE.map(|w| w.to_string()).join(" / ")
    );
    let mixture_rank = format!("{mixture}, rank 0 of 4 (256 indices a batch)");
    // Per group, the baseline first: (system, target, its iteration).
    let groups: [(_, Vec<(_, Option<Goal>, _)>); 3] = [
        (
            "iid, 1000 batches",
            vec![
                ("SmallRng + random_range (baseline)", None, iid_base),
                ("zsampler iid", Some(Goal::GPerS(1.0)), iid),
            ],
        ),
        (
            "one epoch, 976 batches",
            vec![
                ("Fisher–Yates per epoch (baseline)", None, epoch_base),
                (
                    "zsampler cyclic",
                    Some(Goal::GPerS(0.2)),
                    epoch(Mode::Cyclic),
                ),
                ("zsampler block (256 × 16)", None, epoch(BLOCK)),
            ],
        ),
        (
            "Plan::fill_indices, iid, 1000 batches",
            vec![
                ("one store (baseline)", None, one),
                (mixture.as_str(), Some(Goal::TimeWithin(2.0)), mix),
                (mixture_rank.as_str(), None, rank),
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
                Some(Goal::GPerS(t)) => (format!("≥ {t} G/s"), yes_no(rate >= *t)),
                Some(Goal::TimeWithin(f)) => (
                    format!("time per index ≤ {f}× the baseline's"),
                    yes_no(vs >= 1.0 / f),
                ),
                None => (String::new(), String::new()),
            };
            table.rows.push(vec![
                group.to_string(),
                bold(name, !name.ends_with("(baseline)")),
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
         Targets: iid ≥ 1 G indices/s, cyclic ≥ 0.2 G indices/s. The plan group ({} rounds) times \
         `Plan::fill_indices`, what a loader's worker runs for each batch's indices: 1000 iid batches of 1024 \
         over one store of {} records, and over a mixture of three stores holding their weight's share of as \
         many, then rank 0's quarter of the mixture's batches on 4 ranks (each rank generates the whole global \
         batch's split to pick its records); nothing is gathered.",
        rounds_run[0], rounds_run[2], if quick { 20_000 } else { LEN },
    ));
    Ok(table)
}
