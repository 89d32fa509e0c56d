//! Workload (e), the driving side: writes data (a) and a label stream to
//! zrecord stores, checks them, then runs every configuration in a child
//! process ([`super::loader_child`]) and makes the table.
//!
//! Peak RSS is measured in the child (the `compare` binary re-executed with
//! [`CHILD_FLAG`]), which opens the stores from disk: its `VmHWM` holds only
//! the run's own memory. The stores are read through memory maps, so their
//! pages count as file-backed resident memory; the table shows that part
//! apart, and the bound counts it with the store handles.

use std::process::{Command, Stdio};

use zrecord::{Codec, DenseStore};

use super::loader_child::{BATCH, CHILD_FLAG, ChildConfig, ChildResult, RESULT_PREFIX, SEED};
use super::measure::median;
use super::report::{MIB, Report, Table, fmt_num, fmt_ratio};
use super::store_table::timed;
use crate::Verified;
use crate::workloads::DENSE_A;

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

struct Run {
    codec: &'static str,
    label: String,
    workers: Option<usize>,
    result: ChildResult,
}

/// Runs workload (e); returns its table and the loader targets.
///
/// # Errors
/// A checksum mismatch, zrecord errors, a failing child.
pub fn run(
    quick: bool,
    report: &mut Report,
) -> super::Result<(Table, Vec<Target>)> {
    let n = if quick { 300 } else { DENSE_A.records };
    let (generated, gen_s) = timed(|| DENSE_A.generate_verified(n));
    let (data, verified) = generated?;
    let checked = match verified {
        Verified::Checksum => "SHA-256 matches benches/DATA.md",
        Verified::PrefixUnchecked => "a prefix: no checksum exists",
    };
    eprintln!("(e) {n} records generated in {gen_s:.1} s ({checked})");
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare-e")
        .tempdir()?;
    let labels_path = dir.path().join("labels");
    {
        let labels = DenseStore::<i64>::create(&labels_path, &[], Codec::Raw)?;
        labels.append(&(0..n as i64).collect::<Vec<i64>>())?;
        labels.sync()?;
    }
    let mut stores = Vec::new();
    for (name, codec) in [("raw", Codec::Raw), ("zstd", Codec::Zstd)] {
        let path = dir.path().join(format!("images-{name}"));
        let store = DenseStore::<u8>::create(&path, &DENSE_A.shape, codec)?;
        for piece in data.chunks(64 << 20) {
            store.append(piece)?;
        }
        store.sync()?;
        // Check a few batches against the source before anything is timed.
        let width = DENSE_A.record_bytes();
        let sampler = zsampler::Sampler::builder(n as u64, BATCH)
            .seed(SEED)
            .build()?;
        for step in [0, 1, 7] {
            let indices = sampler.batch_at(step);
            let batch = store.gather(&indices)?;
            let got = batch.as_slice().ok_or("a non-contiguous batch")?;
            for (k, &i) in indices.iter().enumerate() {
                if got[k * width..][..width] != data[i as usize * width..][..width] {
                    return Err(format!("images-{name}: record {i} differs from the source").into());
                }
            }
        }
        stores.push((name, path));
    }
    drop(data);
    eprintln!("  stores written and checked");

    let batch_bytes = BATCH * (DENSE_A.record_bytes() as u64 + 8);
    let (warmup, reps) = if quick {
        (2, 1)
    } else {
        (PREFETCH as u64 + 4, 3)
    };
    let mut runs: Vec<Run> = Vec::new();
    for (codec, path) in &stores {
        let steps = match (quick, *codec) {
            (true, _) => 6,
            (false, "raw") => 200,
            (false, _) => 48,
        };
        let config = |workers: Option<usize>, sleep: f64| ChildConfig {
            images: path.clone(),
            labels: labels_path.clone(),
            workers,
            prefetch: PREFETCH,
            warmup,
            steps,
            consumer_sleep_s: sleep,
        };
        let mut go = |label: String,
                      workers: Option<usize>,
                      sleep: f64|
         -> super::Result<f64> {
            let result = child(&config(workers, sleep))?;
            eprintln!("  {codec} {label}: {:.1} batches/s", result.batches_per_s);
            let per_step_gather = result.gather_s / result.steps as f64;
            runs.push(Run {
                codec,
                label,
                workers,
                result,
            });
            Ok(per_step_gather)
        };
        // Bare loop and the default loader alternate, so drift hits both.
        let mut bare_gather = Vec::new();
        for _ in 0..reps {
            bare_gather.push(go(
                "bare loop (calling thread, all cores)".into(),
                None,
                0.0,
            )?);
            go(
                format!("zrecord-loader, {DEFAULT_WORKERS} workers (default)"),
                Some(DEFAULT_WORKERS),
                0.0,
            )?;
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
    }
    Ok(tabulate(&runs, batch_bytes, reps, report))
}

fn tabulate(
    runs: &[Run],
    batch_bytes: u64,
    reps: usize,
    report: &mut Report,
) -> (Table, Vec<Target>) {
    let mut table = Table::new(
        "(e) loader end to end: data (a) + i64 labels, batch 256",
        &[
            "codec",
            "run",
            "batches/s>",
            "× bare loop>",
            "consumer wait>",
            "peak RSS>",
            "of it store maps>",
            "RSS bound>",
            "within",
        ],
    );
    let mut targets = Vec::new();
    for codec in ["raw", "zstd"] {
        let of = |pred: &dyn Fn(&Run) -> bool| -> Vec<&Run> {
            runs.iter()
                .filter(|r| r.codec == codec && pred(r))
                .collect()
        };
        let bare: Vec<f64> = of(&|r| r.workers.is_none())
            .iter()
            .map(|r| r.result.batches_per_s)
            .collect();
        let bare_rate = median(&bare);
        let default: Vec<f64> = of(&|r| {
            r.workers == Some(DEFAULT_WORKERS)
                && r.result.wait_s >= 0.0
                && !r.label.contains("sleeps")
        })
        .iter()
        .map(|r| r.result.batches_per_s)
        .collect();
        let mut seen_bare = false;
        let mut seen_default = false;
        for run in of(&|_| true) {
            let r = &run.result;
            let is_bare = run.workers.is_none();
            let is_default = run.workers == Some(DEFAULT_WORKERS) && !run.label.contains("sleeps");
            // One row per kind: the alternating repetitions are summarised by their median.
            if (is_bare && std::mem::replace(&mut seen_bare, true))
                || (is_default && std::mem::replace(&mut seen_default, true))
            {
                continue;
            }
            let rate = if is_bare {
                bare_rate
            } else if is_default {
                median(&default)
            } else {
                r.batches_per_s
            };
            let wait_share = r.wait_s / r.wall_s;
            let kib = |k: u64| k as f64 * 1024.0;
            let peak = kib(r.vm_hwm_kib);
            let maps = kib(r.peak_file_kib);
            let bound = kib(r.rss_open_kib)
                + maps
                + ((PREFETCH + 2) as u64 * batch_bytes) as f64
                + 100.0 * MIB;
            let within = peak <= bound;
            let sys = format!("{codec}: {}", run.label);
            report.push('e', &sys, "batches_s", rate, "1/s");
            report.push('e', &sys, "vs_bare_loop", rate / bare_rate, "x");
            if run.workers.is_some() {
                report.push('e', &sys, "consumer_wait_share", wait_share, "fraction");
            }
            report.push('e', &sys, "peak_rss_mib", peak / MIB, "MiB");
            report.push('e', &sys, "peak_file_backed_mib", maps / MIB, "MiB");
            report.push(
                'e',
                &sys,
                "peak_anon_mib",
                kib(r.peak_anon_kib) / MIB,
                "MiB",
            );
            report.push('e', &sys, "rss_bound_mib", bound / MIB, "MiB");
            let label = if run.workers.is_some() {
                format!("**{}**", run.label)
            } else {
                run.label.clone()
            };
            table.row(vec![
                codec.into(),
                label,
                fmt_num(rate),
                fmt_ratio(rate / bare_rate),
                if run.workers.is_some() {
                    format!("{:.1} %", 100.0 * wait_share)
                } else {
                    "—".into()
                },
                format!("{:.0} MiB", peak / MIB),
                format!("{:.0} MiB", maps / MIB),
                if run.workers.is_some() {
                    format!("{:.0} MiB", bound / MIB)
                } else {
                    "—".into()
                },
                if run.workers.is_none() {
                    "—".into()
                } else if within {
                    "yes".into()
                } else {
                    "**no**".into()
                },
            ]);
            if run.workers.is_some() {
                targets.push(Target {
                    what: format!("(e) {codec}, {}: peak RSS", run.label),
                    goal: "≤ store handles + (prefetch + 2) × batch bytes + 100 MiB".into(),
                    measured: format!("{:.0} MiB of {:.0} MiB", peak / MIB, bound / MIB),
                    reached: within,
                });
            }
            if run.label.contains("sleeps") {
                targets.push(Target {
                    what: format!(
                        "(e) {codec}: consumer wait when the consumer spends 1.5× the gather time"
                    ),
                    goal: "≤ 5 % of wall time".into(),
                    measured: format!("{:.1} %", 100.0 * wait_share),
                    reached: wait_share <= 0.05,
                });
            }
        }
        let ratio = median(&default) / bare_rate;
        targets.push(Target {
            what: format!("(e) {codec}: loader ({DEFAULT_WORKERS} workers) / bare loop"),
            goal: "≥ 0.9×".into(),
            measured: format!(
                "{ratio:.2}× ({:.1} vs {:.1} batches/s)",
                median(&default),
                bare_rate
            ),
            reached: ratio >= 0.9,
        });
        let (python, name) = if codec == "raw" {
            (191.0, "191")
        } else {
            (17.0, "17 (two threads; 9.7 default)")
        };
        targets.push(Target {
            what: format!("(e) {codec}: beat the Python reference"),
            goal: format!("> {name} batches/s (the Python loader's quoted figure, not re-measured)"),
            measured: format!("{:.1} batches/s", median(&default)),
            reached: median(&default) > python,
        });
    }
    table.note(format!(
        "Each run is its own child process that opens the stores from disk. Bare loop and default loader \
         alternate {reps}×; their rows are medians. Consumer wait: the loader's counter over the timed steps / \
         wall time. Peak RSS: the child's VmHWM; \"of it store maps\": the sampled peak of file-backed resident \
         memory (the stores are read through memory maps, whose page-cache pages count in RSS). RSS bound = RSS \
         after opening the stores + store maps + (prefetch {PREFETCH} + 2) × {:.1} MiB + 100 MiB. The 1.5× consumer \
         sleeps (a training step that leaves the CPU to the loader) 1.5 × the bare loop's median gather time per step.",
        batch_bytes as f64 / MIB
    ));
    (table, targets)
}
