//! The store tables (a), (b) and (c), one run for every workload: every
//! system built from the same records, checked against them, warmed up, then
//! timed side by side; the table and JSON rows made from the measurements.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zrecord::{Codec, DictTier};

use super::Result;
use super::disk::allocated_bytes;
use super::frames::{FrameSet, group_ranges, grouped_bytes};
use super::measure::{self, Budget, Runner, Sampled};
use super::peers;
use super::report::{MIB, Report, Table, fmt_bytes, fmt_num, fmt_ratio, fmt_seconds};
use super::systems::{self, Frames, InMemory, Memcpy, Source, System, Zrecord};
use crate::Verified;
use crate::plans::{BATCH, plan};
use crate::workloads::{DenseWorkload, RAGGED_PLAN_SEED, RAGGED_RECORDS, RaggedTokens};

/// Records per group of the grouped-zstd ratio row (ArrayRecord's default).
pub const GROUP: usize = 256;

/// A workload of the store tables.
#[derive(Clone, Copy, Debug)]
pub enum Workload {
    /// (a) or (b).
    Dense(DenseWorkload),
    /// (c).
    Ragged,
}

impl Workload {
    /// DATA.md's letter.
    pub fn letter(&self) -> char {
        match self {
            Workload::Dense(w) => w.name.chars().next().unwrap_or('?'),
            Workload::Ragged => 'c',
        }
    }

    /// Records in the full workload.
    pub fn records(&self) -> usize {
        match self {
            Workload::Dense(w) => w.records,
            Workload::Ragged => RAGGED_RECORDS,
        }
    }

    /// Seed of the index plan.
    pub fn plan_seed(&self) -> u64 {
        match self {
            Workload::Dense(w) => w.plan_seed,
            Workload::Ragged => RAGGED_PLAN_SEED,
        }
    }

    /// Generates the first `n` records and checks full-size data against
    /// DATA.md; returns them and what was checked.
    pub fn generate(&self, n: usize) -> Result<(Source, String)> {
        let (source, verified, what) = match self {
            Workload::Dense(w) => {
                let (data, verified) = w.generate_verified(n)?;
                let data = Arc::new(data);
                (
                    Source::Dense {
                        data,
                        shape: w.shape,
                    },
                    verified,
                    "SHA-256 matches",
                )
            }
            Workload::Ragged => {
                let data = RaggedTokens::generate(n);
                let verified = data.verify()?;
                let what = "SHA-256 of lengths and tokens match";
                (Source::Ragged(Arc::new(data)), verified, what)
            }
        };
        let checked = match verified {
            Verified::Checksum => format!("{what} benches/DATA.md"),
            Verified::PrefixUnchecked => "a prefix: no checksum exists".into(),
        };
        Ok((source, checked))
    }

    fn title(&self, source: &Source) -> String {
        match self {
            Workload::Dense(w) => format!(
                "({}) dense {} records of u8[{}][{}] ({} B each)",
                self.letter(),
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

/// A row and, if it gathers, its system.
type Entry = (Meta, Option<Box<dyn System>>);

/// Builds, checks and times every system of `workload`; returns its table.
/// zstd_dict stores are built for each of `tiers`.
///
/// # Errors
/// A checksum mismatch, an I/O, zrecord or peer error, or a system whose
/// batches differ from the source.
pub fn run(
    workload: Workload,
    tiers: &[DictTier],
    quick: bool,
    report: &mut Report,
) -> Result<Table> {
    let letter = workload.letter();
    let n = records(letter, workload.records(), quick);
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
            Some(Box::new(InMemory::new(&source))),
        ),
        (
            Meta::limit("memcpy (limit)", Stored::Nothing, false),
            Some(Box::new(Memcpy::new(&source))),
        ),
    ];

    // zrecord stores, and the frames they hold decoded from memory (their limits).
    let (raw, raw_s) = timed(|| Zrecord::write(&path("zr-raw"), &source, Codec::Raw));
    let raw = raw?;
    eprintln!("  zrecord raw written in {raw_s:.1} s");
    let mut stores = vec![(raw_s, "zrecord raw".to_string(), 0)];
    let mut compressed = Vec::new();
    let (zstd, zstd_s) = timed(|| Zrecord::write(&path("zr-zstd"), &source, Codec::Zstd));
    eprintln!("  zrecord zstd written in {zstd_s:.1} s");
    compressed.push((zstd?, zstd_s, Codec::Zstd, "zstd".to_string()));
    for &tier in tiers {
        let (dict, train_s) = timed(|| raw.train_dict(tier));
        let dict = dict?;
        let codec = Codec::ZstdDict(dict.clone());
        let dir_name = format!("zr-dict-{}", tier.name());
        let (store, s) = timed(|| Zrecord::write(&path(&dir_name), &source, codec.clone()));
        let label = format!("zstd_dict {}", tier.name());
        eprintln!("  zrecord {label} trained in {train_s:.1} s, written in {s:.1} s");
        notes.push(format!(
            "{label}: a {} KiB dictionary trained in {train_s:.1} s (not in write MiB/s).",
            dict.len() / 1024
        ));
        compressed.push((store?, s, codec, label));
    }
    // The raw store read-only from here on: a writable handle's exclusive
    // lock would refuse the checked read-only handle below.
    let raw_path = raw.path().to_path_buf();
    drop(raw);
    let mut systems: Vec<Zrecord> = vec![Zrecord::open_read_only(&raw_path, &source, false)?];
    for (store, s, codec, label) in compressed {
        let group = store.physical_per_record();
        let frames = Frames::new(
            FrameSet::from_store(store.path(), &codec, group, 0)?,
            &source,
        );
        let name = format!("{label} frames in memory (limit)");
        let stored = Stored::Memory(frames.compressed_bytes());
        stores.push((s, format!("zrecord {label}"), entries.len()));
        entries.push((Meta::limit(&name, stored, true), Some(Box::new(frames))));
        systems.push(store);
    }
    for ((s, name, limit), store) in stores.into_iter().zip(systems) {
        let meta = Meta::store(
            &name,
            Role::Zrecord,
            s,
            allocated_bytes(store.path())?,
            limit,
        );
        entries.push((meta, Some(Box::new(store))));
    }
    // The raw store again, read-only, with every record's CRC-32C checked on
    // gather: the price of read checks, side by side with the row above.
    let checked = Zrecord::open_read_only(&raw_path, &source, true)?;
    let name = "zrecord raw, verify_on_read";
    let meta = Meta::store(
        name,
        Role::Zrecord,
        raw_s,
        allocated_bytes(checked.path())?,
        0,
    );
    entries.push((meta, Some(Box::new(checked))));

    for peer in peers::write_all(&source, dir.path(), &mut notes)? {
        let meta = Meta::store(peer.name, Role::Peer, peer.write_s, peer.on_disk, 0);
        entries.push((meta, Some(peer.system)));
    }
    let grouped = grouped_bytes(source.bytes(), &group_ranges(&source.starts(), GROUP));
    entries.push((
        Meta {
            name: format!("grouped zstd ({GROUP} records/frame, level 3; ratio only)"),
            role: Role::RatioOnly,
            write_s: None,
            stored: Stored::Memory(grouped),
            limit: None,
            checked: false,
        },
        None,
    ));

    // Check, then time.
    let plan = run_plan(workload.plan_seed(), n, quick);
    for batch in plan.iter().take(3).chain(plan.last()) {
        for (meta, system) in &mut entries {
            if let (true, Some(system)) = (meta.checked, system) {
                systems::check(&meta.name, system.as_mut(), &source, batch)?;
            }
        }
    }
    eprintln!(
        "  every system's plan batches 0..3 and {} equal the source",
        plan.len() - 1
    );
    let logical = source.bytes().len() as u64;
    let title = workload.title(&source);
    let mut table = measure_and_report(
        letter,
        &title,
        &mut entries,
        &plan,
        n,
        logical,
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
    let mut per_file: Vec<(String, u64, u64)> = Vec::new();
    for m in super::rss::file_maps(dir) {
        let name = m
            .path
            .strip_prefix(&*dir.to_string_lossy())
            .unwrap_or(&m.path)
            .trim_start_matches('/')
            .to_string();
        match per_file.iter_mut().find(|(n, _, _)| *n == name) {
            Some(e) => {
                e.1 += m.rss_kib;
                e.2 += m.pmd_kib;
            }
            None => per_file.push((name, m.rss_kib, m.pmd_kib)),
        }
    }
    let parts: Vec<String> = per_file
        .iter()
        .filter(|(_, rss, _)| *rss >= 1024)
        .map(|(name, rss, pmd)| {
            format!(
                "{name} {:.0}% of {} MiB",
                100.0 * *pmd as f64 / *rss as f64,
                rss / 1024
            )
        })
        .collect();
    format!(
        "Mapped with 2 MiB pages (FilePmdMapped / Rss per file, /proc/self/smaps, after timing): {}.",
        parts.join(", ")
    )
}

/// What a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A physical limit (in-memory gather, memcpy, frames decoded from memory).
    Limit,
    /// A zrecord store.
    Zrecord,
    /// Another store a Rust user could pick.
    Peer,
    /// Compression ratio only (nothing is gathered).
    RatioOnly,
}

/// Where a system's bytes are, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Not counted (the source itself).
    Nothing,
    /// Allocated on disk (`st_blocks × 512`).
    Disk(u64),
    /// Held in memory (compressed frames).
    Memory(u64),
}

/// One row of a store table.
#[derive(Clone, Debug)]
pub struct Meta {
    /// Name for the table.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Seconds to write the whole workload durably, if it writes.
    pub write_s: Option<f64>,
    /// Its bytes.
    pub stored: Stored,
    /// The row (index) whose gather is this row's limit.
    pub limit: Option<usize>,
    /// Whether its batches are compared with the source before timing
    /// (memcpy is not a gather).
    pub checked: bool,
}

impl Meta {
    /// A limit row.
    pub fn limit(name: &str, stored: Stored, checked: bool) -> Meta {
        Meta {
            name: name.into(),
            role: Role::Limit,
            write_s: None,
            stored,
            limit: None,
            checked,
        }
    }

    /// A store row: written in `write_s`, `on_disk` bytes, held to `limit`.
    pub fn store(name: &str, role: Role, write_s: f64, on_disk: u64, limit: usize) -> Meta {
        Meta {
            name: name.into(),
            role,
            write_s: Some(write_s),
            stored: Stored::Disk(on_disk),
            limit: Some(limit),
            checked: true,
        }
    }
}

/// Records of workload `letter` for a run (full size, or a quick prefix).
pub fn records(letter: char, full: usize, quick: bool) -> usize {
    if !quick {
        return full;
    }
    match letter {
        'a' => 48,
        'b' => 2_000,
        _ => 1_000,
    }
    .min(full)
}

/// The index plan of a run: DATA.md's `plan(seed, nb, 256, N)`, with
/// enough batches to visit every record about four times (8 to 256).
pub fn run_plan(seed: u64, records: usize, quick: bool) -> Vec<Vec<u64>> {
    let nb = if quick {
        8
    } else {
        (4 * records).div_ceil(BATCH).clamp(8, 256)
    };
    plan(seed, nb, BATCH, records as u64)
}

/// Timing budget of one store table.
pub fn budget(quick: bool) -> Budget {
    if quick {
        Budget {
            total: Duration::from_millis(200),
            min_rounds: 3,
            min_sample: Duration::from_millis(1),
        }
    } else {
        Budget {
            total: Duration::from_secs(20),
            min_rounds: 7,
            min_sample: Duration::from_millis(3),
        }
    }
}

/// Runs `f` and returns its value and the seconds it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64())
}

/// Gathers every record once, in order, in batches of [`BATCH`]: brings
/// every page a system reads into memory and into its maps.
fn warm_up(run: &mut Runner<'_>, records: usize) {
    for first in (0..records).step_by(BATCH) {
        let batch: Vec<u64> = (first..(first + BATCH).min(records))
            .map(|i| i as u64)
            .collect();
        run(&batch);
    }
}

/// Warms every gathering row up, times them side by side over `plan`, and
/// makes the table and the JSON rows of workload `letter`. Row 0 must be the
/// in-memory gather; `logical` is the workload's size in bytes.
#[allow(clippy::too_many_arguments)]
fn measure_and_report(
    letter: char,
    title: &str,
    entries: &mut [Entry],
    plan: &[Vec<u64>],
    records: usize,
    logical: u64,
    quick: bool,
    report: &mut Report,
) -> Table {
    let metas: Vec<Meta> = entries.iter().map(|(m, _)| m.clone()).collect();
    let (which, mut runners): (Vec<usize>, Vec<Runner<'_>>) = entries
        .iter_mut()
        .enumerate()
        .filter_map(|(k, (_, system))| {
            let system = system.as_mut()?;
            let run = move |batch: &[u64]| black_box(system.gather(batch)).bytes.len();
            Some((k, Box::new(run) as Runner<'_>))
        })
        .unzip();
    for (&k, run) in which.iter().zip(&mut runners) {
        let (_, s) = timed(|| warm_up(run, records));
        eprintln!("  warm-up {}: {s:.2} s", metas[k].name);
    }
    let (sampled, rounds) = measure::interleaved(&mut runners, plan, budget(quick));
    drop(runners);
    let mut samples: Vec<Option<Sampled>> = vec![None; metas.len()];
    for (k, s) in which.into_iter().zip(sampled) {
        samples[k] = Some(s);
    }
    let columns = [
        "system",
        "write MiB/s>",
        "gather MiB/s>",
        "k records/s>",
        "p50 batch>",
        "p95 batch>",
        "on disk>",
        "ratio>",
        "× in-memory>",
        "× its limit>",
        "× best peer>",
    ];
    let mut table = Table::new(title, &columns);
    let in_memory = samples[0].clone().unwrap_or_default();
    // The best peer: the fastest gather among the other stores.
    let rows = || metas.iter().zip(&samples);
    let best_peer = rows()
        .filter(|(m, _)| m.role == Role::Peer)
        .filter_map(|(m, s)| Some((m, s.as_ref()?)))
        .max_by(|a, b| a.1.bytes_per_s().total_cmp(&b.1.bytes_per_s()));
    let npy = rows()
        .find(|(m, _)| m.name.starts_with("mmap .npy"))
        .and_then(|(_, s)| s.as_ref());
    let mut faulting = Vec::new();
    for (meta, sample) in rows() {
        let write = meta.write_s.map(|s| logical as f64 / s / MIB);
        let (bytes, on_disk, metric) = match meta.stored {
            Stored::Nothing => (None, "—".to_string(), ""),
            Stored::Disk(b) => (Some(b), fmt_bytes(b), "bytes_on_disk"),
            Stored::Memory(b) => (
                Some(b),
                format!("({} in memory)", fmt_bytes(b)),
                "bytes_in_memory",
            ),
        };
        let ratio = bytes.map_or(f64::NAN, |b| logical as f64 / b as f64);
        let name = match meta.role {
            Role::Zrecord => format!("**{}**", meta.name),
            _ => meta.name.clone(),
        };
        let dash = || "—".to_string();
        let mut cells = vec![name, write.map_or_else(dash, fmt_num)];
        let mut values = vec![
            ("write_mib_s", write.unwrap_or(f64::NAN), "MiB/s"),
            (metric, bytes.map_or(f64::NAN, |b| b as f64), "B"),
            ("compression_ratio", ratio, "x"),
        ];
        let (mut vs_mem, mut vs_limit, mut vs_peer) = (f64::NAN, f64::NAN, f64::NAN);
        match sample {
            Some(s) => {
                let (mib_s, krec) = (s.bytes_per_s() / MIB, s.records_per_s() / 1e3);
                let (p50, p95) = (s.latency(50.0), s.latency(95.0));
                vs_mem = s.paired_ratio(&in_memory);
                let limit = meta.limit.and_then(|l| samples[l].as_ref());
                vs_limit = limit.map_or(f64::NAN, |l| s.paired_ratio(l));
                vs_peer = best_peer.map_or(f64::NAN, |(_, p)| s.paired_ratio(p));
                values.extend([
                    ("gather_mib_s", mib_s, "MiB/s"),
                    ("k_records_s", krec, "k/s"),
                    ("p50_batch_ms", p50 * 1e3, "ms"),
                    ("p95_batch_ms", p95 * 1e3, "ms"),
                    ("vs_in_memory", vs_mem, "x"),
                    ("vs_limit", vs_limit, "x"),
                    ("vs_best_peer", vs_peer, "x"),
                    (
                        "vs_mmap_npy",
                        npy.map_or(f64::NAN, |n| s.paired_ratio(n)),
                        "x",
                    ),
                    ("page_faults_per_batch", s.faults_per_batch(), "1"),
                ]);
                cells.extend([
                    fmt_num(mib_s),
                    fmt_num(krec),
                    fmt_seconds(p50),
                    fmt_seconds(p95),
                ]);
                if s.faults_per_batch() >= 1.0 {
                    let (n, major) = (s.faults_per_batch(), s.faults.1);
                    faulting.push(format!("{} {n:.0} (major {major})", meta.name));
                }
            }
            None => cells.extend([dash(), dash(), dash(), dash()]),
        }
        for (metric, value, unit) in values {
            report.push(letter, &meta.name, metric, value, unit);
        }
        cells.extend([on_disk, fmt_ratio(ratio), fmt_ratio(vs_mem)]);
        cells.extend([fmt_ratio(vs_limit), fmt_ratio(vs_peer)]);
        table.row(cells);
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
