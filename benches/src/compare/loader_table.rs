//! Workload (e), the driving side: writes data (a) and (b), each with a
//! label stream, and the tokens of (c) to zrecord stores, checks them, then
//! runs every configuration in a child process ([`super::loader_child`])
//! and makes the table.
//!
//! Peak RSS is measured in the child (the `compare` binary re-executed with
//! [`CHILD_FLAG`]), which opens the stores from disk: its `VmHWM` holds only
//! the run's own memory. The stores are read through memory maps, so their
//! pages count as file-backed resident memory; the table shows that part
//! apart, and the bound counts it with the store handles.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use zrecord::{Codec, DenseStore, RaggedStore};

use super::loader_child::{BATCH, CHILD_FLAG, ChildConfig, ChildResult, Data, RESULT_PREFIX, SEED};
use super::measure::median;
use super::report::{MIB, Report, Table, fmt_num, fmt_ratio};
use super::store_table::timed;
use crate::Verified;
use crate::workloads::{DENSE_A, DENSE_B, DenseWorkload, RaggedTokens};

/// The loader's default prefetch depth (`LoaderBuilder::prefetch`).
pub const PREFETCH: usize = 4;
/// The loader's default worker count.
pub const DEFAULT_WORKERS: usize = 2;

/// A target of the loader, as measured.
#[derive(Clone, Debug)]
pub struct Target {
    /// What is measured.
    pub what: String,
    /// The goal.
    pub goal: String,
    /// The measured figure.
    pub measured: String,
    /// Reached or not.
    pub reached: bool,
}

fn child(config: &ChildConfig) -> super::Result<ChildResult> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .arg(CHILD_FLAG)
        .arg(serde_json::to_string(config)?)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("the loader child failed ({}): {stdout}", out.status).into());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .ok_or("the loader child printed no result")?;
    Ok(serde_json::from_str(line)?)
}

/// One child's run; the first two labels of a data set are the bare loop
/// and the default loader, which alternate.
struct Run {
    /// The data set and codec, as the table's first column names them.
    data: String,
    /// Bytes of one batch as the consumer receives it.
    batch_bytes: u64,
    label: String,
    workers: Option<usize>,
    consumer_sleeps: bool,
    result: ChildResult,
}

/// Runs workload (e); returns its table and the loader targets.
///
/// # Errors
/// A checksum mismatch, zrecord errors, a failing child.
pub fn run(quick: bool, report: &mut Report) -> super::Result<(Table, Vec<Target>)> {
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare-e")
        .tempdir()?;
    let mut runs: Vec<Run> = Vec::new();
    let (warmup, reps) = if quick {
        (2, 1)
    } else {
        (PREFETCH as u64 + 4, 3)
    };
    for (workload, codecs) in [
        (&DENSE_A, &[("raw", Codec::Raw), ("zstd", Codec::Zstd)][..]),
        (&DENSE_B, &[("raw", Codec::Raw)][..]),
    ] {
        let n = if quick { 300 } else { workload.records };
        let stores = labelled_stores(workload, n, codecs, dir.path())?;
        let width = workload.record_bytes() as u64;
        for (codec, records, labels) in stores {
            let steps = match (quick, workload.name, codec) {
                (true, _, _) => 6,
                (false, "a", "raw") => 200,
                (false, "a", _) => 48,
                (false, _, _) => 40_000,
            };
            let data = Data::Labelled { records, labels };
            let name = format!("({}) {codec}", workload.name);
            let batch_bytes = BATCH * (width + 8);
            let full = workload.name == "a";
            let config = Plan {
                data,
                warmup,
                steps,
                reps,
                full,
            };
            measure(&name, batch_bytes, &config, &mut runs)?;
        }
    }
    // (c): tokens, padded per batch.
    let n = if quick {
        300
    } else {
        crate::workloads::RAGGED_RECORDS
    };
    let tokens = RaggedTokens::generate(n);
    let path = dir.path().join("tokens");
    {
        let store = RaggedStore::<i32>::create(&path, Codec::Raw)?;
        let records: Vec<&[i32]> = (0..tokens.len()).map(|r| tokens.record(r)).collect();
        for piece in records.chunks(50_000) {
            store.append_slices(piece)?;
        }
        store.sync()?;
        for r in [0, n / 2, n - 1] {
            if store.get(r as u64)?.as_slice() != Some(tokens.record(r)) {
                return Err(format!("tokens: record {r} differs from the source").into());
            }
        }
    }
    let mean_len = tokens.tokens.len() as u64 / n as u64;
    drop(tokens);
    let plan = Plan {
        data: Data::PaddedTokens { tokens: path },
        warmup,
        steps: if quick { 6 } else { 10_000 },
        reps,
        full: false,
    };
    measure("(c) raw, padded", BATCH * mean_len * 4, &plan, &mut runs)?;
    Ok(tabulate(&runs, reps, report))
}

/// Writes the first `n` records of `workload` in each of `codecs`, and a
/// label store, each checked against the source; returns `(codec, records,
/// labels)` per codec.
fn labelled_stores(
    workload: &DenseWorkload,
    n: usize,
    codecs: &[(&'static str, Codec)],
    dir: &Path,
) -> super::Result<Vec<(&'static str, PathBuf, PathBuf)>> {
    let (generated, gen_s) = timed(|| workload.generate_verified(n));
    let (data, verified) = generated?;
    let checked = match verified {
        Verified::Checksum => "SHA-256 matches benches/DATA.md",
        Verified::PrefixUnchecked => "a prefix: no checksum exists",
    };
    let name = workload.name;
    eprintln!("(e) {name}: {n} records generated in {gen_s:.1} s ({checked})");
    let labels_path = dir.join(format!("labels-{name}"));
    {
        let labels = DenseStore::<i64>::create(&labels_path, &[], Codec::Raw)?;
        labels.append(&(0..n as i64).collect::<Vec<i64>>())?;
        labels.sync()?;
    }
    let mut stores = Vec::new();
    for (codec_name, codec) in codecs {
        let path = dir.join(format!("{name}-{codec_name}"));
        let store = DenseStore::<u8>::create(&path, &workload.shape, codec.clone())?;
        let width = workload.record_bytes();
        for piece in data.chunks((64 << 20) / width * width) {
            store.append(piece)?;
        }
        store.sync()?;
        // Check a few batches against the source before anything is timed.
        let sampler = zsampler::Sampler::builder(n as u64, BATCH)
            .seed(SEED)
            .build()?;
        for step in [0, 1, 7] {
            let indices = sampler.batch_at(step);
            let batch = store.gather(&indices)?;
            let got = batch.as_slice().ok_or("a non-contiguous batch")?;
            for (k, &i) in indices.iter().enumerate() {
                if got[k * width..][..width] != data[i as usize * width..][..width] {
                    return Err(
                        format!("{name}-{codec_name}: record {i} differs from the source").into(),
                    );
                }
            }
        }
        stores.push((*codec_name, path, labels_path.clone()));
    }
    eprintln!("  stores written and checked");
    Ok(stores)
}

/// How one data set is measured.
struct Plan {
    data: Data,
    warmup: u64,
    steps: u64,
    /// Alternations of the bare loop and the default loader.
    reps: usize,
    /// Also 1 and 4 workers, and a consumer that sleeps 1.5× the gather.
    full: bool,
}

/// Runs the children of one data set (named `name` in the table).
fn measure(name: &str, batch_bytes: u64, plan: &Plan, runs: &mut Vec<Run>) -> super::Result<()> {
    let config = |workers: Option<usize>, sleep: f64| ChildConfig {
        data: plan.data.clone(),
        workers,
        prefetch: PREFETCH,
        warmup: plan.warmup,
        steps: plan.steps,
        consumer_sleep_s: sleep,
    };
    let mut go = |label: String, workers: Option<usize>, sleep: f64| -> super::Result<f64> {
        let result = child(&config(workers, sleep))?;
        eprintln!("  {name} {label}: {:.1} batches/s", result.batches_per_s);
        let per_step_gather = result.gather_s / result.steps as f64;
        runs.push(Run {
            data: name.into(),
            batch_bytes,
            label,
            workers,
            consumer_sleeps: sleep > 0.0,
            result,
        });
        Ok(per_step_gather)
    };
    // Bare loop and the default loader alternate, so drift hits both.
    let mut bare_gather = Vec::new();
    for _ in 0..plan.reps {
        bare_gather.push(go("bare loop (calling thread)".into(), None, 0.0)?);
        go(
            format!("zrecord-loader, {DEFAULT_WORKERS} workers (default)"),
            Some(DEFAULT_WORKERS),
            0.0,
        )?;
    }
    if !plan.full {
        return Ok(());
    }
    for workers in [1, 4] {
        go(
            format!(
                "zrecord-loader, {workers} worker{}",
                if workers > 1 { "s" } else { "" }
            ),
            Some(workers),
            0.0,
        )?;
    }
    let sleep = 1.5 * median(&bare_gather);
    go(
        format!(
            "zrecord-loader, {DEFAULT_WORKERS} workers, consumer sleeps 1.5× gather ({:.1} ms)",
            sleep * 1e3
        ),
        Some(DEFAULT_WORKERS),
        sleep,
    )?;
    Ok(())
}

fn tabulate(runs: &[Run], reps: usize, report: &mut Report) -> (Table, Vec<Target>) {
    let columns = [
        "data",
        "run",
        "batches/s>",
        "× bare loop>",
        "consumer wait>",
        "peak RSS>",
        "of it store maps>",
        "RSS bound>",
        "within",
    ];
    let mut table = Table::new(
        "(e) loader end to end, batch 256: data (a) and (b) with i64 labels, (c) tokens padded per batch",
        &columns,
    );
    let mut targets = Vec::new();
    let target = |what: String, goal: &str, measured: String, reached: bool| Target {
        what,
        goal: goal.into(),
        measured,
        reached,
    };
    let mut data_sets: Vec<&str> = Vec::new();
    for run in runs {
        if !data_sets.contains(&run.data.as_str()) {
            data_sets.push(&run.data);
        }
    }
    for data in data_sets {
        // One row per label: the alternating repetitions of the bare loop and
        // the default loader are summarised by their median rate.
        let mut labels: Vec<&str> = Vec::new();
        for run in runs.iter().filter(|r| r.data == data) {
            if !labels.contains(&run.label.as_str()) {
                labels.push(&run.label);
            }
        }
        let rate_of = |label: &str| {
            let rates: Vec<f64> = runs
                .iter()
                .filter(|r| r.data == data && r.label == label)
                .map(|r| r.result.batches_per_s)
                .collect();
            median(&rates)
        };
        let bare_rate = rate_of(labels[0]);
        let default_rate = rate_of(labels[1]);
        for label in &labels {
            let Some(run) = runs.iter().find(|r| r.data == data && r.label == *label) else {
                continue;
            };
            let (r, loader) = (&run.result, run.workers.is_some());
            let rate = rate_of(label);
            let wait_share = r.wait_s / r.wall_s;
            let kib = |k: u64| k as f64 * 1024.0;
            let (peak, maps) = (kib(r.vm_hwm_kib), kib(r.peak_file_kib));
            let batches = ((PREFETCH + 2) as u64 * run.batch_bytes) as f64;
            let bound = kib(r.rss_open_kib) + maps + batches + 100.0 * MIB;
            let within = peak <= bound;
            let sys = format!("{data}: {label}");
            let wait = if loader { wait_share } else { f64::NAN };
            for (metric, value, unit) in [
                ("batches_s", rate, "1/s"),
                ("vs_bare_loop", rate / bare_rate, "x"),
                ("consumer_wait_share", wait, "fraction"),
                ("peak_rss_mib", peak / MIB, "MiB"),
                ("peak_file_backed_mib", maps / MIB, "MiB"),
                ("peak_anon_mib", kib(r.peak_anon_kib) / MIB, "MiB"),
                ("rss_bound_mib", bound / MIB, "MiB"),
            ] {
                report.push('e', &sys, metric, value, unit);
            }
            let (dash, mib) = (|| "—".to_string(), |b: f64| format!("{:.0} MiB", b / MIB));
            table.row(vec![
                data.into(),
                if loader {
                    format!("**{label}**")
                } else {
                    label.to_string()
                },
                fmt_num(rate),
                fmt_ratio(rate / bare_rate),
                if loader {
                    format!("{:.1} %", 100.0 * wait_share)
                } else {
                    dash()
                },
                mib(peak),
                mib(maps),
                if loader { mib(bound) } else { dash() },
                match (loader, within) {
                    (false, _) => dash(),
                    (true, true) => "yes".into(),
                    (true, false) => "**no**".into(),
                },
            ]);
            if loader {
                let measured = format!("{:.0} MiB of {:.0} MiB", peak / MIB, bound / MIB);
                let goal = "≤ store handles + (prefetch + 2) × batch bytes + 100 MiB";
                targets.push(target(
                    format!("(e) {data}, {label}: peak RSS"),
                    goal,
                    measured,
                    within,
                ));
            }
            if run.consumer_sleeps {
                targets.push(target(
                    format!(
                        "(e) {data}: consumer wait when the consumer spends 1.5× the gather time"
                    ),
                    "≤ 5 % of wall time",
                    format!("{:.1} %", 100.0 * wait_share),
                    wait_share <= 0.05,
                ));
            }
        }
        let ratio = default_rate / bare_rate;
        targets.push(target(
            format!("(e) {data}: loader ({DEFAULT_WORKERS} workers) / bare loop"),
            "≥ 0.9×",
            format!("{ratio:.2}× ({default_rate:.1} vs {bare_rate:.1} batches/s)"),
            ratio >= 0.9,
        ));
        // The figures a Python loader was quoted at for workload (a).
        let (python, name) = match data {
            "(a) raw" => (191.0, "191"),
            "(a) zstd" => (17.0, "17 (two threads; 9.7 default)"),
            _ => continue,
        };
        targets.push(target(
            format!("(e) {data}: beat the Python reference"),
            &format!("> {name} batches/s (the Python loader's quoted figure, not re-measured)"),
            format!("{default_rate:.1} batches/s"),
            default_rate > python,
        ));
    }
    table.note(format!(
        "Each run is its own child process that opens the stores from disk. Bare loop and default loader \
         alternate {reps}×; their rows are medians. (c): both the bare loop and the loader's consumer pad each \
         batch of tokens with zeros to its longest record (`Padding::pad`, the step the Burn converter \
         `ragged_padded` takes before it wraps the buffer in a tensor without a copy). Consumer wait: the \
         loader's counter over the timed steps / wall time. Peak RSS: the child's VmHWM; \"of it store maps\": \
         the sampled peak of file-backed resident memory (the stores are read through memory maps, whose \
         page-cache pages count in RSS). RSS bound = RSS after opening the stores + store maps + (prefetch \
         {PREFETCH} + 2) × the batch's bytes + 100 MiB. The 1.5× consumer sleeps (a training step that leaves \
         the CPU to the loader) 1.5 × the bare loop's median gather time per step."
    ));
    (table, targets)
}
