//! Workload (c): ragged token sequences, every system built from the same
//! tokens, checked against them, then timed side by side.

use std::error::Error;
use std::hint::black_box;
use std::sync::Arc;

use zrecord::{Codec, DictTier};

use super::disk::allocated_bytes;
use super::frames::{FrameSet, group_ranges, grouped_bytes};
use super::measure::Runner;
use super::npy;
use super::ragged::{
    self, Arrow, Frames, InMemory, Memcpy, Npy, RaggedOut, RaggedSystem, Safetensors, Zrecord,
};
use super::report::{Report, Table};
use super::safetensors_file;
use super::store_table::{Meta, Role, Stored, measure_and_report, records, run_plan, timed};
use super::{arrow_ipc, dense_run};
use crate::Verified;
use crate::workloads::{RAGGED_PLAN_SEED, RAGGED_RECORDS, RaggedTokens};

type Entry = (Meta, Option<Box<dyn RaggedSystem>>);

/// Builds, checks and times every system of workload (c); returns its table.
///
/// # Errors
/// A checksum mismatch, an I/O, zrecord, arrow or safetensors error, or a
/// system whose batches differ from the source.
pub fn run(
    tiers: &[DictTier],
    quick: bool,
    report: &mut Report,
) -> Result<Table, Box<dyn Error + Send + Sync>> {
    let n = records('c', RAGGED_RECORDS, quick);
    let (data, gen_s) = timed(|| RaggedTokens::generate(n));
    let checked = match data.verify()? {
        Verified::Checksum => "SHA-256 of lengths and tokens match BENCH-DATA.md",
        Verified::PrefixUnchecked => "a prefix: no checksum exists",
    };
    let data = Arc::new(data);
    let logical = (data.tokens.len() * 4) as u64;
    eprintln!(
        "(c) {n} records, {} tokens generated in {gen_s:.1} s ({checked})",
        data.tokens.len()
    );
    let dir = tempfile::Builder::new()
        .prefix("zrecord-compare")
        .tempdir()?;
    let path = |name: &str| dir.path().join(name);
    let mut notes = vec![format!("Data: {checked}.")];

    let (raw, raw_s) =
        timed(|| Zrecord::write(&path("zr-raw"), &data, Codec::Raw, "zrecord raw".into()));
    let raw = raw?;
    eprintln!("  zrecord raw written in {raw_s:.1} s");
    let mut compressed: Vec<(Zrecord, f64, FrameSet, String)> = Vec::new();
    let (zstd, zstd_s) =
        timed(|| Zrecord::write(&path("zr-zstd"), &data, Codec::Zstd, "zrecord zstd".into()));
    let zstd = zstd?;
    eprintln!("  zrecord zstd written in {zstd_s:.1} s");
    let frames = FrameSet::from_store(&path("zr-zstd"), &Codec::Zstd, 2, 0)?;
    compressed.push((zstd, zstd_s, frames, "zstd frames in memory (limit)".into()));
    for &tier in tiers {
        let (dict, train_s) = timed(|| raw.store.train_dict(tier));
        let dict = dict?;
        let codec = Codec::ZstdDict(dict.clone());
        let name = format!("zrecord zstd_dict {}", tier.name());
        let dir_name = format!("zr-dict-{}", tier.name());
        let (store, s) = timed(|| Zrecord::write(&path(&dir_name), &data, codec.clone(), name));
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
        let frames = FrameSet::from_store(&path(&dir_name), &codec, 2, 0)?;
        compressed.push((
            store,
            s,
            frames,
            format!("zstd_dict {} frames in memory (limit)", tier.name()),
        ));
    }

    let offsets64: Vec<i64> = data.offsets.iter().map(|&o| o as i64).collect();
    let tokens_bytes: &[u8] = bytemuck::cast_slice(&data.tokens);
    let offsets_bytes: &[u8] = bytemuck::cast_slice(&offsets64);
    let (r, npy_s) = timed(|| {
        npy::write(
            &path("tokens.npy"),
            "<i4",
            &[data.tokens.len()],
            tokens_bytes,
        )?;
        npy::write(
            &path("offsets.npy"),
            "<i8",
            &[offsets64.len()],
            offsets_bytes,
        )
    });
    r?;
    let npy = Npy::open(&path("tokens.npy"), &path("offsets.npy"))?;
    let npy_disk = allocated_bytes(&path("tokens.npy"))? + allocated_bytes(&path("offsets.npy"))?;
    let column = Arc::new(arrow_ipc::ragged_array(&data.tokens, &data.offsets)?);
    let (r, arrow_s) = timed(|| arrow_ipc::write(&path("tokens.arrow"), column));
    r?;
    let arrow = Arrow {
        column: arrow_ipc::open(&path("tokens.arrow"))?,
    };
    let (r, st_s) = timed(|| {
        safetensors_file::write(
            &path("tokens.safetensors"),
            vec![
                (
                    "tokens",
                    safetensors::Dtype::I32,
                    vec![data.tokens.len()],
                    tokens_bytes,
                ),
                (
                    "offsets",
                    safetensors::Dtype::I64,
                    vec![offsets64.len()],
                    offsets_bytes,
                ),
            ],
        )
    });
    r?;
    let st = Safetensors::open(&path("tokens.safetensors"))?;
    eprintln!("  peers written: npy {npy_s:.1} s, arrow {arrow_s:.1} s, safetensors {st_s:.1} s");

    let mut entries: Vec<Entry> = vec![
        (
            Meta::limit("in-memory gather (limit)", Stored::Nothing, true),
            Some(Box::new(InMemory {
                data: Arc::clone(&data),
            })),
        ),
        (
            Meta::limit("memcpy (limit)", Stored::Nothing, false),
            Some(Box::new(Memcpy {
                data: Arc::clone(&data),
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
                data: Arc::clone(&data),
                name: name.clone(),
            })),
        ));
        stores.push((store, s));
    }
    let raw_disk = allocated_bytes(&path("zr-raw"))?;
    entries.push((
        Meta::store("zrecord raw", Role::Zrecord, raw_s, raw_disk, 0),
        Some(Box::new(raw)),
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
    let arrow_disk = allocated_bytes(&path("tokens.arrow"))?;
    let st_disk = allocated_bytes(&path("tokens.safetensors"))?;
    entries.push((
        Meta::store(
            "mmap .npy (values + offsets)",
            Role::Peer,
            npy_s,
            npy_disk,
            0,
        ),
        Some(Box::new(npy)),
    ));
    entries.push((
        Meta::store(
            "Arrow IPC mmap + take (list of i32)",
            Role::Peer,
            arrow_s,
            arrow_disk,
            0,
        ),
        Some(Box::new(arrow)),
    ));
    entries.push((
        Meta::store(
            "safetensors mmap (values + offsets)",
            Role::Peer,
            st_s,
            st_disk,
            0,
        ),
        Some(Box::new(st)),
    ));
    if cfg!(feature = "hdf5") {
        notes.push(
            "HDF5: not measured for ragged records (HDF5 has no packed ragged layout of its own)."
                .into(),
        );
    } else {
        notes.push(dense_run::HDF5_SKIPPED.into());
    }
    let starts: Vec<usize> = data.offsets.iter().map(|&o| o * 4).collect();
    let grouped = grouped_bytes(tokens_bytes, &group_ranges(&starts, dense_run::GROUP));
    entries.push((
        Meta {
            name: format!(
                "grouped zstd ({} records/frame, level 3; ratio only)",
                dense_run::GROUP
            ),
            role: Role::RatioOnly,
            write_s: None,
            stored: Stored::Memory(grouped),
            limit: None,
            checked: false,
        },
        None,
    ));

    let plan = run_plan(RAGGED_PLAN_SEED, n, quick);
    for batch in plan.iter().take(3).chain(plan.last()) {
        for (meta, system) in &entries {
            if let (true, Some(system)) = (meta.checked, system) {
                ragged::check_batch(system.as_ref(), &data, batch)?;
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
                let mut out = RaggedOut::default();
                Box::new(move |batch: &[u64]| black_box(system.gather(batch, &mut out)).bytes())
                    as Runner<'_>
            })
        })
        .collect();
    let title = format!(
        "(c) ragged {n} i32 token sequences ({} tokens, lengths 16..2048)",
        data.tokens.len()
    );
    let mut table = measure_and_report(
        'c', &title, &metas, runners, &plan, n, logical, quick, report,
    );
    table.notes.extend(notes);
    table.note(dense_run::huge_page_note(dir.path()));
    Ok(table)
}
