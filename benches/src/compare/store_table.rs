//! The store tables (a), (b) and (c), one run for every workload: every
//! system built from the same records, checked against them, warmed up, then
//! timed side by side; the table and JSON rows made from the measurements.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use zrecord::{Codec, DictTier, OpenOptions};

use super::Result;
use super::disk::allocated_bytes;
use super::frames::{Frames, grouped_bytes};
use super::measure::{self, Budget, Runner, Sampled, timed};
use super::peers;
use super::report::{MIB, Report, Table, bold, fmt_bytes, fmt_num, fmt_ratio, fmt_seconds};
use super::systems::{self, InMemory, Memcpy, Out, Source, System, Zrecord};
use crate::plans::{BATCH, plan};
use crate::workloads::{DenseWorkload, RAGGED_PLAN_SEED, RAGGED_RECORDS, RaggedTokens};

/// Records per group of the grouped-zstd ratio row (ArrayRecord's default).
const GROUP: usize = 256;

/// A workload of the store tables: (a) or (b) dense, (c) ragged.
#[derive(Clone, Copy, Debug)]
pub enum Workload {
    /// (a) or (b).
    Dense(DenseWorkload),
    /// (c).
    Ragged,
}

impl Workload {
    /// DATA.md's letter, the records of the full workload, and the seed of
    /// its index plan.
    pub fn spec(&self) -> (char, usize, u64) {
        match self {
            Workload::Dense(w) => (w.name.chars().next().unwrap_or('?'), w.records, w.plan_seed),
            Workload::Ragged => ('c', RAGGED_RECORDS, RAGGED_PLAN_SEED),
        }
    }

    /// The first `n` records, full-size data checked against DATA.md, and
    /// what was checked.
    pub(crate) fn generate(&self, n: usize) -> Result<(Source, String)> {
        Ok(match self {
            Workload::Dense(w) => {
                let data = w.generate(n);
                let checked = w.verify(&data)?.describe("SHA-256 matches");
                let (data, shape) = (Arc::new(data), w.shape);
                (Source::Dense { data, shape }, checked)
            }
            Workload::Ragged => {
                let data = RaggedTokens::generate(n);
                let checked = data.verify()?;
                let checked = checked.describe("SHA-256 of lengths and tokens match");
                (Source::Ragged(Arc::new(data)), checked)
            }
        })
    }

    fn title(&self, source: &Source) -> String {
        match self {
            Workload::Dense(w) => format!(
                "({}) dense {} records of u8[{}][{}] ({} B each)",
                self.spec().0,
                source.len(),
                w.shape[0],
                w.shape[1],
                w.record_bytes()
            ),
            Workload::Ragged => format!(
                "(c) ragged {} i32 token sequences ({} tokens, lengths 16..2048)",
                source.len(),
                source.bytes().len() / 4
            ),
        }
    }
}

/// A row that gathers, and its system.
type Entry = (Meta, Box<dyn System>);

/// Builds, checks and times every system of `workload`, with zstd_dict
/// stores for each of `tiers`; returns its table.
pub fn run(
    workload: Workload,
    tiers: &[DictTier],
    quick: bool,
    report: &mut Report,
) -> Result<Table> {
    let (letter, full, seed) = workload.spec();
    let n = records(letter, full, quick);
    let (generated, gen_s) = timed(|| workload.generate(n));
    let (source, checked) = generated?;
    eprintln!(
        "({letter}) {n} records, {} bytes generated in {gen_s:.1} s ({checked})",
        source.bytes().len()
    );
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare")
        .tempdir()?;
    let path = |name: &str| dir.path().join(name);
    let mut notes = vec![format!("Data: {checked}.")];
    let mut entries: Vec<Entry> = vec![
        (
            Meta::limit("in-memory gather (limit)", Stored::Nothing, true),
            Box::new(InMemory(source.clone(), Out::default())),
        ),
        (
            Meta::limit("memcpy (limit)", Stored::Nothing, false),
            Box::new(Memcpy(source.clone(), Vec::new())),
        ),
    ];

    // zrecord stores, each compressed one held to its frames decoded from memory.
    let write = |dir_name: &str, codec: &Codec| {
        let (store, s) = timed(|| Zrecord::write(&path(dir_name), &source, codec.clone()));
        eprintln!("  {dir_name} written in {s:.1} s");
        store.map(|store| (store, s))
    };
    let (raw, raw_s) = write("zr-raw", &Codec::Raw)?;
    let zstd = write("zr-zstd", &Codec::Zstd)?;
    let mut compressed = vec![("zstd".to_string(), Codec::Zstd, zstd)];
    for &tier in tiers {
        let (dict, train_s) = timed(|| raw.train_dict(tier));
        let (dict, label) = (dict?, format!("zstd_dict {}", tier.name()));
        notes.push(format!(
            "{label}: a {} KiB dictionary trained in {train_s:.1} s (not in write MiB/s).",
            dict.len() / 1024
        ));
        let codec = Codec::ZstdDict(dict);
        let store = write(&format!("zr-dict-{}", tier.name()), &codec)?;
        compressed.push((label, codec, store));
    }
    // The raw store read-only from here on: a writable handle's exclusive
    // lock would refuse the checked read-only handle below.
    let raw_path = raw.path().to_path_buf();
    drop(raw);
    let read_only = |verify| {
        let options = OpenOptions::new().read_only(true);
        Zrecord::open(&raw_path, &source, options.verify_on_read(verify))
    };
    let mut stores = vec![("zrecord raw".to_string(), raw_s, read_only(false)?, 0)];
    for (label, codec, (store, s)) in compressed {
        let frames = Frames::from_store(store.path(), &codec, &source)?;
        let stored = Stored::Memory(frames.compressed_bytes());
        let meta = Meta::limit(&format!("{label} frames in memory (limit)"), stored, true);
        stores.push((format!("zrecord {label}"), s, store, entries.len()));
        entries.push((meta, Box::new(frames)));
    }
    // The raw store again with every record's CRC-32C checked on gather: the
    // price of read checks, side by side with the row above.
    let verifying = read_only(true)?;
    stores.push(("zrecord raw, verify_on_read".into(), raw_s, verifying, 0));
    for (name, s, store, limit) in stores {
        let on_disk = allocated_bytes(store.path())?;
        let meta = Meta::store(&name, Role::Zrecord, s, on_disk, limit);
        entries.push((meta, Box::new(store)));
    }
    for peer in peers::write_all(&source, dir.path(), &mut notes)? {
        let meta = Meta::store(peer.name, Role::Peer, peer.write_s, peer.on_disk, 0);
        entries.push((meta, peer.system));
    }
    let grouped = grouped_bytes(&source, GROUP);
    let name = format!("grouped zstd ({GROUP} records/frame, level 3; ratio only)");
    let ratio_only = Meta::limit(&name, Stored::Memory(grouped), false);

    // Check, then time.
    let plan = run_plan(seed, n, quick);
    for batch in plan.iter().take(3).chain(plan.last()) {
        for (meta, system) in entries.iter_mut().filter(|(m, _)| m.checked) {
            systems::check(&meta.name, system.as_mut(), &source, batch)?;
        }
    }
    eprintln!(
        "  every system's plan batches 0..3 and {} equal the source",
        plan.len() - 1
    );
    // The systems stay open, their files mapped, for the huge-page note.
    let mut table = measure_and_report(
        workload,
        &mut entries,
        &ratio_only,
        &plan,
        &source,
        quick,
        report,
    );
    table.notes.extend(notes);
    table.note(huge_page_note(dir.path()));
    Ok(table)
}

/// How much of each mapped file under `dir` the kernel maps with 2 MiB
/// pages (page-cache large folios): a mapped gather's TLB cost depends on it.
fn huge_page_note(dir: &Path) -> String {
    let parts: Vec<String> = super::rss::file_maps(dir)
        .into_iter()
        .filter(|m| m.rss_kib >= 1024)
        .map(|m| {
            let share = 100.0 * m.pmd_kib as f64 / m.rss_kib as f64;
            format!("{} {share:.0}% of {} MiB", m.name, m.rss_kib / 1024)
        })
        .collect();
    format!(
        "Mapped with 2 MiB pages (FilePmdMapped / Rss per file, /proc/self/smaps, after timing): {}.",
        parts.join(", ")
    )
}

/// What a row is: bold for zrecord; the best peer is picked among peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A physical limit, or a ratio reference.
    Reference,
    Zrecord,
    /// Another store a Rust user could pick.
    Peer,
}

/// Where a system's bytes are, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    /// Not counted (the source itself).
    Nothing,
    /// Allocated on disk (`st_blocks × 512`).
    Disk(u64),
    /// Held in memory (compressed frames).
    Memory(u64),
}

/// One row of a store table.
#[derive(Clone, Debug)]
struct Meta {
    name: String,
    role: Role,
    /// Seconds to write the whole workload durably, if it writes.
    write_s: Option<f64>,
    stored: Stored,
    /// The row (index) whose gather is this row's limit.
    limit: Option<usize>,
    /// Whether its batches are compared with the source before timing
    /// (memcpy is not a gather).
    checked: bool,
}

impl Meta {
    fn limit(name: &str, stored: Stored, checked: bool) -> Meta {
        Meta {
            name: name.into(),
            role: Role::Reference,
            write_s: None,
            stored,
            limit: None,
            checked,
        }
    }

    /// A store row: written in `write_s`, `on_disk` bytes, held to `limit`.
    fn store(name: &str, role: Role, write_s: f64, on_disk: u64, limit: usize) -> Meta {
        Meta {
            write_s: Some(write_s),
            stored: Stored::Disk(on_disk),
            limit: Some(limit),
            role,
            ..Meta::limit(name, Stored::Nothing, true)
        }
    }
}

/// Records of workload `letter` for a run (full size, or a quick prefix).
pub(crate) fn records(letter: char, full: usize, quick: bool) -> usize {
    match (quick, letter) {
        (false, _) => full,
        (true, 'a') => 48.min(full),
        (true, 'b') => 2_000.min(full),
        (true, _) => 1_000.min(full),
    }
}

/// The index plan of a run: DATA.md's `plan(seed, nb, 256, N)`, with
/// enough batches to visit every record about four times (8 to 256).
fn run_plan(seed: u64, records: usize, quick: bool) -> Vec<Vec<u64>> {
    let nb = if quick {
        8
    } else {
        (4 * records).div_ceil(BATCH).clamp(8, 256)
    };
    plan(seed, nb, BATCH, records as u64)
}

/// Warms every row up (every record once, in order, in batches of
/// [`BATCH`]: every page a system reads comes into memory and its maps),
/// times them side by side over `plan`, and makes the table and the JSON
/// rows of `workload`, with the `ratio_only` row, which does not gather, last.
/// Row 0 must be the in-memory gather.
fn measure_and_report(
    workload: Workload,
    entries: &mut [Entry],
    ratio_only: &Meta,
    plan: &[Vec<u64>],
    source: &Source,
    quick: bool,
    report: &mut Report,
) -> Table {
    let (mut metas, mut runners): (Vec<&Meta>, Vec<Runner<'_>>) = entries
        .iter_mut()
        .map(|(meta, system)| {
            let run = |batch: &[u64]| black_box(system.gather(batch)).bytes.len();
            (&*meta, Box::new(run) as Runner<'_>)
        })
        .unzip();
    let (records, logical) = (source.len(), source.bytes().len() as u64);
    for (meta, run) in metas.iter().zip(&mut runners) {
        let (_, s) = timed(|| {
            for first in (0..records).step_by(BATCH) {
                let last = (first + BATCH).min(records);
                run(&(first as u64..last as u64).collect::<Vec<_>>());
            }
        });
        eprintln!("  warm-up {}: {s:.2} s", meta.name);
    }
    let (total, min_rounds, min_sample) = if quick { (200, 3, 1) } else { (20_000, 7, 3) };
    let budget = Budget::millis(total, min_rounds, min_sample);
    let (mut samples, rounds) = measure::interleaved(&mut runners, plan, budget);
    // No samples: the figures of a row that does not gather are NaN (dashes,
    // and no JSON rows).
    metas.push(ratio_only);
    samples.push(Sampled::default());
    #[rustfmt::skip]
    let columns = [
        "system", "write MiB/s>", "gather MiB/s>", "k records/s>", "p50 batch>", "p95 batch>",
        "on disk>", "ratio>", "× in-memory>", "× its limit>", "× best peer>",
    ];
    let (letter, title) = (workload.spec().0, workload.title(source));
    let mut table = Table::new(title, &columns);
    // The best peer: the fastest gather among the other stores.
    let rows = || metas.iter().zip(&samples);
    let best_peer = rows()
        .filter(|(m, _)| m.role == Role::Peer)
        .max_by(|a, b| a.1.bytes_per_s().total_cmp(&b.1.bytes_per_s()));
    let npy = rows().find(|(m, _)| m.name.starts_with("mmap .npy"));
    let mut faulting = Vec::new();
    for (meta, sample) in rows() {
        let write = meta.write_s.map_or(f64::NAN, |s| logical as f64 / s / MIB);
        let (bytes, on_disk, metric) = match meta.stored {
            Stored::Nothing => (f64::NAN, "—".to_string(), ""),
            Stored::Disk(b) => (b as f64, fmt_bytes(b), "bytes_on_disk"),
            Stored::Memory(b) => (
                b as f64,
                format!("({} in memory)", fmt_bytes(b)),
                "bytes_in_memory",
            ),
        };
        let ratio = logical as f64 / bytes;
        let vs = |r: Option<&Sampled>| r.map_or(f64::NAN, |r| sample.paired_ratio(r));
        let (mib_s, krec) = (sample.bytes_per_s() / MIB, sample.records_per_s() / 1e3);
        let (p50, p95) = (sample.latency(50.0), sample.latency(95.0));
        let (vs_mem, vs_limit) = (vs(Some(&samples[0])), vs(meta.limit.map(|l| &samples[l])));
        let (vs_peer, vs_npy) = (vs(best_peer.map(|r| r.1)), vs(npy.map(|r| r.1)));
        let faults = sample.faults_per_batch();
        for (metric, value, unit) in [
            ("write_mib_s", write, "MiB/s"),
            (metric, bytes, "B"),
            ("compression_ratio", ratio, "x"),
            ("gather_mib_s", mib_s, "MiB/s"),
            ("k_records_s", krec, "k/s"),
            ("p50_batch_ms", p50 * 1e3, "ms"),
            ("p95_batch_ms", p95 * 1e3, "ms"),
            ("vs_in_memory", vs_mem, "x"),
            ("vs_limit", vs_limit, "x"),
            ("vs_best_peer", vs_peer, "x"),
            ("vs_mmap_npy", vs_npy, "x"),
            ("page_faults_per_batch", faults, "1"),
        ] {
            report.push(letter, &meta.name, metric, value, unit);
        }
        if faults >= 1.0 {
            let (name, major) = (&meta.name, sample.faults.1);
            faulting.push(format!("{name} {faults:.0} (major {major})"));
        }
        table.rows.push(vec![
            bold(&meta.name, meta.role == Role::Zrecord),
            fmt_num(write),
            fmt_num(mib_s),
            fmt_num(krec),
            fmt_seconds(p50),
            fmt_seconds(p95),
            on_disk,
            fmt_ratio(ratio),
            fmt_ratio(vs_mem),
            fmt_ratio(vs_limit),
            fmt_ratio(vs_peer),
        ]);
    }
    table.note(format!(
        "{records} records, {} logical; batch {BATCH}, {} plan batches, {rounds} interleaved rounds; \
         medians over rounds. Ratio = logical bytes / stored bytes. × in-memory and × its limit: \
         median over rounds of this row's rate / the reference's rate in the same round.",
        fmt_bytes(logical),
        plan.len()
    ));
    table.note(if faulting.is_empty() {
        "Page faults while timed: under one per batch for every system.".to_string()
    } else {
        format!(
            "Page faults per batch while timed: {}; the other systems under one.",
            faulting.join(", ")
        )
    });
    if let Some((m, _)) = best_peer {
        table.note(format!(
            "Best peer (fastest gather of the other stores): {}.",
            m.name
        ));
    }
    table
}
