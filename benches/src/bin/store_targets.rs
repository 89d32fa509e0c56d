//! Issue 2's store targets, measured side by side with an interleaved loop.
//!
//! For each workload it generates the records (full size: checked against
//! BENCH-DATA.md's SHA-256), builds every system from them in a temporary
//! folder, checks every system's batches against the source, gathers every
//! record once (warm-up), then times rounds: in each round every system of a
//! target gathers the same plan batches, in a rotating order. It prints the
//! medians and the ratio zrecord / reference as a markdown table.
//!
//! ```text
//! cargo run --release -p zrecord-benches --bin store_targets -- [--quick] [--seconds S] [--only IDS]
//! ```
//!
//! `--quick` uses prefixes of the workloads (not checksummed) and short runs:
//! a smoke test. `--seconds` is the timing budget per target (default 12);
//! `--only a_raw_256KiB,b_raw_784B,…` runs some targets.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use zrecord_benches::plans::BATCH;
use zrecord_benches::systems::{DenseSuite, Gather, touch_all};
use zrecord_benches::targets::{Scale, SystemKind, TARGETS, Target, workloads};
use zrecord_benches::{DenseWorkload, Verified};

/// A sample gathers at least this long, so timer noise stays small.
const MIN_SAMPLE: Duration = Duration::from_millis(3);
/// Rounds per target: at least this many, whatever the budget…
const MIN_ROUNDS: usize = 11;
/// …and at most this many.
const MAX_ROUNDS: usize = 5001;

struct Options {
    scale: Scale,
    budget: Duration,
    /// Target ids to run (all when empty).
    only: Vec<String>,
}

impl Options {
    fn wants(&self, target: &Target) -> bool {
        self.only.is_empty() || self.only.iter().any(|id| id == target.id)
    }
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        scale: Scale::Full,
        budget: Duration::from_secs(12),
        only: Vec::new(),
    };
    let mut explicit_budget = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.scale = Scale::Quick,
            "--seconds" => {
                let value = args.next().ok_or("--seconds needs a value")?;
                let secs: f64 = value
                    .parse()
                    .map_err(|_| format!("--seconds {value}: not a number"))?;
                options.budget = Duration::from_secs_f64(secs);
                explicit_budget = true;
            }
            "--only" => {
                let value = args.next().ok_or("--only needs target ids")?;
                options.only = value.split(',').map(str::to_string).collect();
                if let Some(bad) = options
                    .only
                    .iter()
                    .find(|id| !TARGETS.iter().any(|t| t.id == id.as_str()))
                {
                    let ids: Vec<_> = TARGETS.iter().map(|t| t.id).collect();
                    return Err(format!("--only {bad}: targets are {}", ids.join(", ")));
                }
            }
            // `cargo bench` passes `--bench`; ignore it.
            "--bench" => {}
            "-h" | "--help" => {
                return Err("usage: store_targets [--quick] [--seconds S] [--only ID,...]".into());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.scale == Scale::Quick && !explicit_budget {
        options.budget = Duration::from_millis(500);
    }
    Ok(options)
}

/// Medians of one system in one target.
struct Measured {
    kind: SystemKind,
    name: String,
    /// Seconds per batch, one per round.
    per_batch: Vec<f64>,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn time_batches(system: &dyn Gather, batches: &[&Vec<u64>], out: &mut [u8]) -> f64 {
    let start = Instant::now();
    for batch in batches {
        system.gather(batch, out);
    }
    std::hint::black_box(&*out);
    start.elapsed().as_secs_f64() / batches.len() as f64
}

/// Times `systems` in interleaved rounds over `plan`.
fn measure(
    systems: &[(SystemKind, &dyn Gather)],
    plan: &[Vec<u64>],
    budget: Duration,
) -> (Vec<Measured>, usize, usize) {
    let record_bytes = systems[0].1.record_bytes();
    let mut out = vec![0u8; BATCH * record_bytes];
    // Calibrate: per-batch time of each system over plan batches it has not
    // just gathered (a batch gathered twice in a row is served from cache).
    let probe_len = plan.len().min(16);
    let costs: Vec<f64> = systems
        .iter()
        .map(|(_, s)| {
            let probe: Vec<&Vec<u64>> = plan.iter().rev().take(probe_len).collect();
            time_batches(*s, &probe, &mut out)
        })
        .collect();
    let fastest = costs.iter().copied().fold(f64::INFINITY, f64::min);
    let per_sample = ((MIN_SAMPLE.as_secs_f64() / fastest).ceil() as usize).clamp(1, plan.len());
    let mut measured: Vec<Measured> = systems
        .iter()
        .map(|(kind, s)| Measured {
            kind: *kind,
            name: s.name().to_string(),
            per_batch: Vec::new(),
        })
        .collect();
    let mut next = 0usize;
    let start = Instant::now();
    let mut rounds = 0;
    // At least MIN_ROUNDS rounds, then until the budget is spent.
    while rounds < MIN_ROUNDS || (start.elapsed() < budget && rounds < MAX_ROUNDS) {
        let round = rounds;
        rounds += 1;
        let batches: Vec<&Vec<u64>> = (0..per_sample)
            .map(|k| &plan[(next + k) % plan.len()])
            .collect();
        next = (next + per_sample) % plan.len();
        for k in 0..systems.len() {
            let s = (round + k) % systems.len();
            let t = time_batches(systems[s].1, &batches, &mut out);
            measured[s].per_batch.push(t);
        }
    }
    (measured, rounds, per_sample)
}

struct Row {
    target: &'static str,
    system: String,
    reference: bool,
    seconds: f64,
    mib_s: f64,
    krec_s: f64,
    /// zrecord rows: median over rounds of reference time / zrecord time.
    ratio: Option<f64>,
    goal: Option<f64>,
}

fn run_target(
    target: &Target,
    suite: &DenseSuite,
    plan: &[Vec<u64>],
    budget: Duration,
) -> Vec<Row> {
    let systems: Vec<(SystemKind, &dyn Gather)> = target
        .systems()
        .into_iter()
        .map(|k| (k, k.of(suite)))
        .collect();
    let (mut measured, rounds, per_sample) = measure(&systems, plan, budget);
    // Systems are [zrecord, reference, context...]; pair their times round by
    // round (before `median` sorts them), so drift on a shared machine cancels.
    let mut pairs: Vec<f64> = measured[1]
        .per_batch
        .iter()
        .zip(&measured[0].per_batch)
        .map(|(reference, zrecord)| reference / zrecord)
        .collect();
    let paired = median(&mut pairs);
    eprintln!(
        "  {}: {rounds} rounds of {per_sample} batch(es) per system",
        target.label
    );
    let bytes = target.batch_bytes() as f64;
    measured
        .iter_mut()
        .map(|m| {
            let seconds = median(&mut m.per_batch);
            let is_zrecord = m.kind == target.zrecord;
            Row {
                target: target.label,
                system: m.name.clone(),
                reference: m.kind == target.reference,
                seconds,
                mib_s: bytes / seconds / (1u64 << 20) as f64,
                krec_s: BATCH as f64 / seconds / 1e3,
                ratio: is_zrecord.then_some(paired),
                goal: is_zrecord.then_some(target.goal),
            }
        })
        .collect()
}

fn build(workload: &DenseWorkload, scale: Scale) -> Result<DenseSuite, String> {
    let records = scale.records(workload);
    let start = Instant::now();
    let (data, verified) = workload
        .generate_verified(records)
        .map_err(|e| e.to_string())?;
    let generated = start.elapsed();
    let check = match verified {
        Verified::Checksum => "SHA-256 matches BENCH-DATA.md",
        Verified::PrefixUnchecked => "prefix, no checksum exists",
    };
    let start = Instant::now();
    let suite = DenseSuite::build(data, &workload.shape).map_err(|e| e.to_string())?;
    eprintln!(
        "workload {}: {records} records of {} B, generated and checked in {:.2} s ({check}); systems built in {:.1} s; zstd ratio {:.2}",
        workload.name,
        workload.record_bytes(),
        generated.as_secs_f64(),
        start.elapsed().as_secs_f64(),
        suite.zstd_ratio()
    );
    Ok(suite)
}

fn run(options: &Options) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for workload in workloads() {
        if !TARGETS
            .iter()
            .any(|t| t.workload.name == workload.name && options.wants(t))
        {
            continue;
        }
        let suite = build(&workload, options.scale)?;
        let plan = options.scale.plan(&workload);
        suite.check_plan(&plan)?;
        eprintln!(
            "  every system's batches 0..3 and {} of the plan equal the source",
            plan.len() - 1
        );
        for system in suite.systems() {
            touch_all(system, BATCH);
        }
        for target in TARGETS
            .iter()
            .filter(|t| t.workload.name == workload.name && options.wants(t))
        {
            rows.extend(run_target(target, &suite, &plan, options.budget));
        }
    }
    Ok(rows)
}

fn print_table(rows: &[Row]) {
    println!(
        "| target | system | median batch | MiB/s | k records/s | zrecord / reference | goal | met |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    for row in rows {
        let time = if row.seconds >= 1e-3 {
            format!("{:.2} ms", row.seconds * 1e3)
        } else {
            format!("{:.1} µs", row.seconds * 1e6)
        };
        let name = if row.reference {
            format!("{} (reference)", row.system)
        } else {
            row.system.clone()
        };
        let (ratio, goal, met) = match (row.ratio, row.goal) {
            (Some(r), Some(g)) => (
                format!("{r:.2}×"),
                format!("≥ {g:.1}×"),
                if r >= g { "yes" } else { "**no**" }.to_string(),
            ),
            _ => (String::new(), String::new(), String::new()),
        };
        println!(
            "| {} | {name} | {time} | {:.0} | {:.1} | {ratio} | {goal} | {met} |",
            row.target, row.mib_s, row.krec_s
        );
    }
    println!();
    println!(
        "zrecord / reference: the median over rounds of (reference time / zrecord time) \
         in the same round; MiB/s and k records/s: the median batch time of each system."
    );
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "{} CPUs, rayon pool of {} threads, batch {BATCH}, {} per target",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        rayon::current_num_threads(),
        if options.scale == Scale::Quick {
            "quick prefixes".to_string()
        } else {
            format!("{:.0} s", options.budget.as_secs_f64())
        }
    );
    match run(&options) {
        Ok(rows) => {
            print_table(&rows);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
