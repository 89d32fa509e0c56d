//! Workload (e), the driving side: writes data (a) and (b), each with a
//! label stream, and the tokens of (c) to zrecord stores, checks them, then
//! runs every configuration in a child process ([`super::loader_child`])
//! and makes the table.
//!
//! Peak RSS is the child's `VmHWM`. The stores are read through memory maps,
//! whose pages count as file-backed resident memory; the table shows that
//! part apart, and the bound counts it with the store handles.

use std::process::{Command, Stdio};

use zrecord::{Codec, DenseStore};

use super::Result;
use super::loader_child::{self, BATCH, CHILD_FLAG, ChildConfig, ChildResult, Data, RESULT_PREFIX};
use super::measure::{median, timed};
use super::report::{MIB, Report, Table, bold, fmt_num, fmt_ratio, yes_no};
use super::store_table::Workload;
use super::summary::target;
use super::systems::{self, Source, Zrecord};
use crate::workloads::{DENSE_A, DENSE_B};

/// The loader's default prefetch depth (`LoaderBuilder::prefetch`).
pub const PREFETCH: usize = 4;
/// The loader's default worker count.
pub const DEFAULT_WORKERS: usize = 2;
/// The weights of the mixture row of (b): the data split into sources of
/// these shares of its records, read at the same shares.
const MIXTURE: [f64; 3] = [0.5, 0.3, 0.2];

/// Runs workload (e); returns its table and the loader's rows of the
/// targets table.
pub fn run(quick: bool, report: &mut Report) -> Result<(Table, Vec<Vec<String>>)> {
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare-e")
        .tempdir()?;
    let (warmup, reps) = if quick {
        (2, 1)
    } else {
        (PREFETCH as u64 + 4, 3)
    };
    let mut sets = Vec::new();
    for (workload, codecs) in [
        (Workload::Dense(DENSE_A), &[Codec::Raw, Codec::Zstd][..]),
        (Workload::Dense(DENSE_B), &[Codec::Raw][..]),
        (Workload::Ragged, &[Codec::Raw][..]),
    ] {
        let (letter, full, _) = workload.spec();
        let n = if quick { 300 } else { full };
        let (generated, gen_s) = timed(|| workload.generate(n));
        let (source, checked) = generated?;
        eprintln!("(e) {letter}: {n} records generated in {gen_s:.1} s ({checked})");
        // Dense data with a label stream; tokens padded per batch.
        let (labels, batch_bytes) = match &source {
            Source::Dense { shape, .. } => {
                let path = dir.path().join(format!("labels-{letter}"));
                let labels = DenseStore::<i64>::create(&path, &[], Codec::Raw)?;
                labels.append(&(0..n as i64).collect::<Vec<i64>>())?;
                labels.sync()?;
                (Some(path), BATCH * (shape[0] * shape[1] + 8) as u64)
            }
            Source::Ragged(d) => (None, BATCH * (d.tokens.len() / n) as u64 * 4),
        };
        let sampler = loader_child::sampler(n as u64)?;
        let mut configs = Vec::new();
        for codec in codecs {
            let padded = if labels.is_some() { "" } else { ", padded" };
            let name = format!("({letter}) {}{padded}", codec.name());
            let path = dir.path().join(format!("{letter}-{}", codec.name()));
            let mut store = Zrecord::write(&path, &source, codec.clone())?;
            // Check a few batches against the source before anything is timed.
            for step in [0, 1, 7] {
                systems::check(&name, &mut store, &source, &sampler.batch_at(step))?;
            }
            let data = match &labels {
                Some(labels) => Data::Labelled {
                    records: path,
                    labels: labels.clone(),
                },
                None => Data::PaddedTokens { tokens: path },
            };
            let steps = match (quick, letter, codec) {
                (true, ..) => 6,
                (false, 'a', Codec::Raw) => 200,
                (false, 'a', _) => 48,
                (false, 'b', _) => 40_000,
                (false, ..) => 10_000,
            };
            let config = ChildConfig {
                data,
                workers: None,
                warmup,
                steps,
                consumer_sleep_s: 0.0,
            };
            // (b) raw again as a mixture of sources of consecutive records.
            let mixture = match letter {
                'b' => Some(ChildConfig {
                    data: mixture_sources(dir.path(), &source)?,
                    ..config.clone()
                }),
                _ => None,
            };
            configs.push((name, config, mixture));
        }
        drop(source);
        eprintln!("  stores written and checked");
        for (name, config, mixture) in configs {
            let rows = measure(&name, &config, mixture.as_ref(), reps, letter == 'a')?;
            sets.push(DataSet {
                name,
                batch_bytes,
                rows,
            });
        }
    }
    Ok(tabulate(&sets, reps, report))
}

/// Writes `source` (dense) as one store per share of [`MIXTURE`], each of
/// consecutive records with its labels (their indices in `source`).
fn mixture_sources(dir: &std::path::Path, source: &Source) -> Result<Data> {
    let Source::Dense { data, shape } = source else {
        return Err("the mixture row needs dense data".into());
    };
    let (width, n) = (shape[0] * shape[1], source.len());
    let (mut sources, mut first) = (Vec::new(), 0);
    for (k, share) in MIXTURE.iter().enumerate() {
        let last = if k + 1 == MIXTURE.len() {
            n
        } else {
            first + (n as f64 * share) as usize
        };
        let (records, labels) = (
            dir.join(format!("mix-{k}")),
            dir.join(format!("mix-labels-{k}")),
        );
        let store = DenseStore::<u8>::create(&records, shape, Codec::Raw)?;
        store.append(&data[first * width..last * width])?;
        store.sync()?;
        let store = DenseStore::<i64>::create(&labels, &[], Codec::Raw)?;
        store.append(&(first as i64..last as i64).collect::<Vec<i64>>())?;
        store.sync()?;
        sources.push((records, labels));
        first = last;
    }
    Ok(Data::Mixture {
        sources,
        weights: MIXTURE.to_vec(),
    })
}

/// One data set's runs, named as the table's first column names it.
struct DataSet {
    name: String,
    /// Bytes of one batch as the consumer receives it.
    batch_bytes: u64,
    /// The bare loop first, then the default loader.
    rows: Vec<Row>,
}

/// The runs of one configuration.
struct Row {
    label: String,
    loader: bool,
    consumer_sleeps: bool,
    /// The mixture's row, paired with the default loader's.
    mixture: bool,
    results: Vec<ChildResult>,
}

impl Row {
    fn rate(&self) -> f64 {
        let rates: Vec<f64> = self.results.iter().map(|r| r.batches_per_s).collect();
        median(&rates)
    }
}

fn child(config: &ChildConfig) -> Result<ChildResult> {
    let out = Command::new(std::env::current_exe()?)
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

/// Runs the children of one data set: the bare loop and the default loader
/// (and the `mixture`'s, with as many workers) alternating `reps` times, so
/// drift hits all; when `full`, also 1 and 4 workers and a consumer that
/// sleeps 1.5× the bare loop's gather.
fn measure(
    name: &str,
    base: &ChildConfig,
    mixture: Option<&ChildConfig>,
    reps: usize,
    full: bool,
) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    let mut run = |label: String, of: &ChildConfig, workers, sleep: f64| -> Result<f64> {
        let config = ChildConfig {
            workers,
            consumer_sleep_s: sleep,
            ..of.clone()
        };
        let result = child(&config)?;
        eprintln!("  {name} {label}: {:.1} batches/s", result.batches_per_s);
        let per_step_gather = result.gather_s / base.steps as f64;
        match rows.iter_mut().find(|r| r.label == label) {
            Some(row) => row.results.push(result),
            None => rows.push(Row {
                label,
                loader: workers.is_some(),
                consumer_sleeps: sleep > 0.0,
                mixture: !std::ptr::eq(of, base),
                results: vec![result],
            }),
        }
        Ok(per_step_gather)
    };
    let default = format!("zrecord-loader, {DEFAULT_WORKERS} workers (default)");
    let mut bare_gather = Vec::new();
    for _ in 0..reps {
        bare_gather.push(run("bare loop (calling thread)".into(), base, None, 0.0)?);
        run(default.clone(), base, Some(DEFAULT_WORKERS), 0.0)?;
        if let Some(mixture) = mixture {
            let weights = MIXTURE.map(|w| w.to_string()).join(" / ");
            let label = format!(
                "zrecord-loader, {DEFAULT_WORKERS} workers, mixture of {} sources ({weights})",
                MIXTURE.len()
            );
            run(label, mixture, Some(DEFAULT_WORKERS), 0.0)?;
        }
    }
    if full {
        for (workers, s) in [(1, ""), (4, "s")] {
            let label = format!("zrecord-loader, {workers} worker{s}");
            run(label, base, Some(workers), 0.0)?;
        }
        let sleep = 1.5 * median(&bare_gather);
        let label = format!(
            "zrecord-loader, {DEFAULT_WORKERS} workers, consumer sleeps 1.5× gather ({:.1} ms)",
            sleep * 1e3
        );
        run(label, base, Some(DEFAULT_WORKERS), sleep)?;
    }
    Ok(rows)
}

fn tabulate(sets: &[DataSet], reps: usize, report: &mut Report) -> (Table, Vec<Vec<String>>) {
    #[rustfmt::skip]
    let columns = [
        "data", "run", "batches/s>", "× bare loop>", "consumer wait>",
        "peak RSS>", "of it store maps>", "RSS bound>", "within",
    ];
    let mut table = Table::new(
        "(e) loader end to end, batch 256: data (a) and (b) with i64 labels, (c) tokens padded per batch",
        &columns,
    );
    let mut targets = Vec::new();
    for set in sets {
        let (data, rows) = (&set.name, &set.rows);
        // The alternating repetitions of the bare loop and the default
        // loader are summarised by their median rate.
        let (bare_rate, default_rate) = (rows[0].rate(), rows[1].rate());
        for row in rows {
            let (r, loader, label) = (&row.results[0], row.loader, &row.label);
            let rate = row.rate();
            let wait_share = r.wait_s / r.wall_s;
            let kib = |k: u64| k as f64 * 1024.0;
            let (peak, maps) = (kib(r.vm_hwm_kib), kib(r.peak_file_kib));
            let batches = ((PREFETCH + 2) as u64 * set.batch_bytes) as f64;
            let bound = kib(r.rss_open_kib) + maps + batches + 100.0 * MIB;
            let within = peak <= bound;
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
                report.push('e', &format!("{data}: {label}"), metric, value, unit);
            }
            let mib = |b: f64| format!("{:.0} MiB", b / MIB);
            let only_loader = |cell: String| if loader { cell } else { "—".into() };
            table.rows.push(vec![
                data.clone(),
                bold(label, loader),
                fmt_num(rate),
                fmt_ratio(rate / bare_rate),
                only_loader(format!("{:.1} %", 100.0 * wait_share)),
                mib(peak),
                mib(maps),
                only_loader(mib(bound)),
                only_loader(yes_no(within)),
            ]);
            if loader {
                targets.push(target(
                    format!("(e) {data}, {label}: peak RSS"),
                    "≤ store handles + (prefetch + 2) × batch bytes + 100 MiB",
                    format!("{:.0} MiB of {:.0} MiB", peak / MIB, bound / MIB),
                    within,
                ));
            }
            if row.consumer_sleeps {
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
        if let Some(mix) = rows.iter().find(|r| r.mixture) {
            // Paired: each repetition's mixture run / the default loader's
            // run just before it.
            let ratios: Vec<f64> = (mix.results.iter().zip(&rows[1].results))
                .map(|(m, d)| m.batches_per_s / d.batches_per_s)
                .collect();
            let ratio = median(&ratios);
            report.push(
                'e',
                &format!("{data}: {}", mix.label),
                "vs_one_source",
                ratio,
                "x",
            );
            targets.push(target(
                format!(
                    "(e) {data}: loader over a mixture of {} sources / over one source",
                    MIXTURE.len()
                ),
                "≥ 0.95×",
                format!(
                    "{ratio:.2}× ({:.1} vs {default_rate:.1} batches/s)",
                    mix.rate()
                ),
                ratio >= 0.95,
            ));
        }
        let ratio = default_rate / bare_rate;
        targets.push(target(
            format!("(e) {data}: loader ({DEFAULT_WORKERS} workers) / bare loop"),
            "≥ 0.9×",
            format!("{ratio:.2}× ({default_rate:.1} vs {bare_rate:.1} batches/s)"),
            ratio >= 0.9,
        ));
        // The figures a Python loader was quoted at for workload (a).
        let (python, quoted) = match data.as_str() {
            "(a) raw" => (191.0, "191"),
            "(a) zstd" => (17.0, "17 (two threads; 9.7 default)"),
            _ => continue,
        };
        targets.push(target(
            format!("(e) {data}: beat the Python reference"),
            &format!("> {quoted} batches/s (the Python loader's quoted figure, not re-measured)"),
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
         the CPU to the loader) 1.5 × the bare loop's median gather time per step. The mixture: the same records \
         split into {n} stores of consecutive records ({weights} of them, with their labels), read at those \
         weights by one loader (each source cyclic on its own), in the same alternation; its target is the \
         median of its per-repetition ratios to the default loader over the one store.",
        n = MIXTURE.len(),
        weights = MIXTURE.map(|w| w.to_string()).join(" / "),
    ));
    (table, targets)
}
