//! Workloads (a) and (b): dense records, every system built from the same
//! bytes, checked against them, then timed side by side.

use std::error::Error;
use std::hint::black_box;
use std::sync::Arc;

use zrecord::{Codec, DenseStore, DictTier, OpenOptions};

use super::dense::{self, DenseOut, DenseSystem, Frames, InMemory, Memcpy, Npy, Zrecord};
use super::disk::allocated_bytes;
use super::frames::{FrameSet, group_ranges, grouped_bytes};
use super::measure::Runner;
use super::npy::{self, NpyMap};
use super::report::{Report, Table};
use super::safetensors_file::{self, SafetensorsMap};
use super::store_table::{Meta, Role, Stored, measure_and_report, records, run_plan, timed};
use super::{arrow_ipc, dense::Arrow, dense::Safetensors};
use crate::Verified;
use crate::workloads::DenseWorkload;

/// Records per group of the grouped-zstd ratio row (as the brief for this
/// harness puts ArrayRecord's default).
pub const GROUP: usize = 256;

type Entry = (Meta, Option<Box<dyn DenseSystem>>);

/// Builds, checks and times every system of a dense workload; returns its table.
///
/// # Errors
/// A checksum mismatch, an I/O, zrecord, arrow or safetensors error, or a
/// system whose batches differ from the source.
pub fn run(
    w: &DenseWorkload,
    tiers: &[DictTier],
    quick: bool,
    report: &mut Report,
) -> Result<Table, Box<dyn Error + Send + Sync>> {
    let letter = w.name.chars().next().unwrap_or('?');
    let n = records(letter, w.records, quick);
    let width = w.record_bytes();
    let (generated, gen_s) = timed(|| w.generate_verified(n));
    let (data, verified) = generated?;
    let data = Arc::new(data);
    let logical = data.len() as u64;
    let checked = match verified {
        Verified::Checksum => "SHA-256 matches BENCH-DATA.md",
        Verified::PrefixUnchecked => "a prefix: no checksum exists",
    };
    eprintln!("({letter}) {n} records of {width} B generated in {gen_s:.1} s ({checked})");
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare")
        .tempdir()?;
    let path = |name: &str| dir.path().join(name);
    let shape: Vec<usize> = std::iter::once(n).chain(w.shape).collect();
    let mut notes = vec![format!("Data: {checked}.")];

    // zrecord stores, and the frames they hold (the decode limits).
    let (raw, raw_s) = timed(|| {
        Zrecord::write(
            &path("zr-raw"),
            &data,
            &w.shape,
            Codec::Raw,
            "zrecord raw".into(),
        )
    });
    let raw = raw?;
    eprintln!("  zrecord raw written in {raw_s:.1} s");
    let mut compressed: Vec<(Zrecord, f64, FrameSet, String)> = Vec::new();
    let (zstd, zstd_s) = timed(|| {
        Zrecord::write(
            &path("zr-zstd"),
            &data,
            &w.shape,
            Codec::Zstd,
            "zrecord zstd".into(),
        )
    });
    let zstd = zstd?;
    eprintln!("  zrecord zstd written in {zstd_s:.1} s");
    let frames = FrameSet::from_store(&path("zr-zstd"), &Codec::Zstd, 1, 0)?;
    compressed.push((zstd, zstd_s, frames, "zstd frames in memory (limit)".into()));
    for &tier in tiers {
        let (dict, train_s) = timed(|| raw.store.train_dict(tier));
        let dict = dict?;
        let codec = Codec::ZstdDict(dict.clone());
        let name = format!("zrecord zstd_dict {}", tier.name());
        let dir_name = format!("zr-dict-{}", tier.name());
        let (store, s) =
            timed(|| Zrecord::write(&path(&dir_name), &data, &w.shape, codec.clone(), name));
        let store = store?;
        eprintln!(
            "  {} trained in {train_s:.1} s, written in {s:.1} s",
            store.name
        );
        notes.push(format!(
            "zstd_dict {}: a {} KiB dictionary trained in {train_s:.1} s (not in write MiB/s).",
            tier.name(),
            dict.len() / 1024
        ));
        let frames = FrameSet::from_store(&path(&dir_name), &codec, 1, 0)?;
        compressed.push((
            store,
            s,
            frames,
            format!("zstd_dict {} frames in memory (limit)", tier.name()),
        ));
    }

    // Peers.
    let (r, npy_s) = timed(|| npy::write(&path("records.npy"), "|u1", &shape, &data));
    r?;
    let npy = Npy {
        map: NpyMap::open(&path("records.npy"))?,
        width,
    };
    let column = Arc::new(arrow_ipc::dense_array(&data, width)?);
    let (r, arrow_s) = timed(|| arrow_ipc::write(&path("records.arrow"), column));
    r?;
    let arrow = Arrow {
        column: arrow_ipc::open(&path("records.arrow"))?,
    };
    let (r, st_s) = timed(|| {
        safetensors_file::write(
            &path("records.safetensors"),
            vec![("records", safetensors::Dtype::U8, shape.clone(), &data)],
        )
    });
    r?;
    let st = Safetensors {
        map: SafetensorsMap::open(&path("records.safetensors"))?,
        tensor: "records".into(),
        width,
    };
    eprintln!("  peers written: npy {npy_s:.1} s, arrow {arrow_s:.1} s, safetensors {st_s:.1} s");

    // Rows: limits, zrecord, peers, the grouped ratio.
    let mut entries: Vec<Entry> = vec![
        (
            Meta::limit("in-memory gather (limit)", Stored::Nothing, true),
            Some(Box::new(InMemory {
                data: Arc::clone(&data),
                width,
            })),
        ),
        (
            Meta::limit("memcpy (limit)", Stored::Nothing, false),
            Some(Box::new(Memcpy {
                data: Arc::clone(&data),
                width,
            })),
        ),
    ];
    let first_frames = entries.len();
    let mut stores = Vec::new();
    for (store, s, frames, name) in compressed {
        let stored = Stored::Memory(frames.compressed_bytes());
        entries.push((
            Meta::limit(&name, stored, true),
            Some(Box::new(Frames {
                set: frames,
                width,
                name: name.clone(),
            })),
        ));
        stores.push((store, s));
    }
    let raw_disk = allocated_bytes(&path("zr-raw"))?;
    // The raw store read-only, twice: without and with read checks (every
    // record's CRC-32C checked on gather), side by side in one run.
    drop(raw);
    let read_only = |verify_on_read, name: &str| -> zrecord::Result<Zrecord> {
        let options = OpenOptions::new()
            .read_only(true)
            .verify_on_read(verify_on_read);
        Ok(Zrecord {
            store: DenseStore::<u8>::open_with(path("zr-raw"), options)?,
            name: name.into(),
        })
    };
    entries.push((
        Meta::store("zrecord raw", Role::Zrecord, raw_s, raw_disk, 0),
        Some(Box::new(read_only(false, "zrecord raw")?)),
    ));
    let name = "zrecord raw, verify_on_read";
    entries.push((
        Meta::store(name, Role::Zrecord, raw_s, raw_disk, 0),
        Some(Box::new(read_only(true, name)?)),
    ));
    for (k, (store, s)) in stores.into_iter().enumerate() {
        let disk = allocated_bytes(store.store.path())?;
        let meta = Meta::store(
            &store.name.clone(),
            Role::Zrecord,
            s,
            disk,
            first_frames + k,
        );
        entries.push((meta, Some(Box::new(store))));
    }
    let peers: [(&str, f64, &str, Box<dyn DenseSystem>); 3] = [
        ("records.npy", npy_s, "mmap .npy", Box::new(npy)),
        (
            "records.arrow",
            arrow_s,
            "Arrow IPC mmap + take",
            Box::new(arrow),
        ),
        (
            "records.safetensors",
            st_s,
            "safetensors mmap",
            Box::new(st),
        ),
    ];
    for (file, s, name, system) in peers {
        let meta = Meta::store(name, Role::Peer, s, allocated_bytes(&path(file))?, 0);
        entries.push((meta, Some(system)));
    }
    hdf5_rows(&mut entries, &mut notes, &data, &shape, &path("records.h5"))?;
    let starts: Vec<usize> = (0..=n).map(|r| r * width).collect();
    let grouped = grouped_bytes(&data, &group_ranges(&starts, GROUP));
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
    let plan = run_plan(w.plan_seed, n, quick);
    for batch in plan.iter().take(3).chain(plan.last()) {
        for (meta, system) in &entries {
            if let (true, Some(system)) = (meta.checked, system) {
                dense::check_batch(system.as_ref(), &data, width, batch)?;
            }
        }
    }
    eprintln!(
        "  every system's plan batches 0..3 and {} equal the source",
        plan.len() - 1
    );
    let metas: Vec<Meta> = entries.iter().map(|(m, _)| m.clone()).collect();
    let runners: Vec<Option<Runner<'_>>> = entries
        .iter()
        .map(|(_, system)| {
            system.as_ref().map(|system| {
                let mut out = DenseOut::default();
                Box::new(move |batch: &[u64]| black_box(system.gather(batch, &mut out)).len())
                    as Runner<'_>
            })
        })
        .collect();
    let title = format!(
        "({letter}) dense {} records of u8[{}][{}] ({} B each)",
        n, w.shape[0], w.shape[1], width
    );
    let mut table = measure_and_report(
        letter, &title, &metas, runners, &plan, n, logical, quick, report,
    );
    table.notes.extend(notes);
    table.note(huge_page_note(dir.path()));
    Ok(table)
}

#[cfg(feature = "hdf5")]
fn hdf5_rows(
    entries: &mut Vec<Entry>,
    notes: &mut Vec<String>,
    data: &[u8],
    shape: &[usize],
    path: &std::path::Path,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let (system, s) = timed(|| super::hdf5_file::Dense::write(path, data, shape));
    let system = system?;
    notes.push(format!("HDF5: {}.", system.describe()));
    let meta = Meta::store(
        "HDF5 (hdf5-metno)",
        Role::Peer,
        s,
        allocated_bytes(path)?,
        0,
    );
    entries.push((meta, Some(Box::new(system))));
    Ok(())
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_rows(
    _: &mut Vec<Entry>,
    notes: &mut Vec<String>,
    _: &[u8],
    _: &[usize],
    _: &std::path::Path,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    notes.push(HDF5_SKIPPED.into());
    Ok(())
}

/// How much of each mapped file under `dir` the kernel maps with 2 MiB
/// pages (page-cache large folios): a mapped gather's TLB cost depends on it.
pub fn huge_page_note(dir: &std::path::Path) -> String {
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

/// The note printed when HDF5 is not built in.
pub const HDF5_SKIPPED: &str = "HDF5 skipped: built without the `hdf5` feature of zrecord-benches \
(it needs the system libhdf5, e.g. Debian's libhdf5-dev; then add `--features hdf5`).";
