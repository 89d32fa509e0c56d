//! The stores a Rust user would otherwise pick, written from the same
//! records: a memory-mapped `.npy` always; Arrow IPC and safetensors with the
//! `peers` feature; HDF5 (dense records only) with the `hdf5` feature.

use std::path::Path;

use super::Result;
use super::disk::{Region, allocated_bytes};
use super::measure::timed;
use super::npy;
use super::systems::{Mapped, Source, System};

/// An array a peer stores: name, `.npy` dtype (`|u1`, `<i4` or `<i8`),
/// shape, little-endian bytes.
pub struct Array<'a> {
    /// Name (file stem or tensor name).
    pub name: &'static str,
    /// `.npy` dtype.
    pub descr: &'static str,
    /// Shape.
    pub shape: Vec<usize>,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// A peer, written and opened.
pub struct Peer {
    /// Row name.
    pub name: &'static str,
    /// Seconds to write it durably.
    pub write_s: f64,
    /// Allocated bytes on disk.
    pub on_disk: u64,
    /// Its gather.
    pub system: Box<dyn System>,
}

/// A peer's row name for dense or ragged records.
fn named(source: &Source, dense: &'static str, ragged: &'static str) -> &'static str {
    match source {
        Source::Dense { .. } => dense,
        Source::Ragged(_) => ragged,
    }
}

/// The records as mapped arrays: `data` cut into records of the source's
/// width, or tokens cut by `offsets`.
fn mapped(source: &Source, data: Region, offsets: Option<Region>) -> Result<Box<dyn System>> {
    Ok(match (source, offsets) {
        (Source::Dense { shape, .. }, _) => Box::new(Mapped::dense(data, shape[0] * shape[1])),
        (Source::Ragged(_), offsets) => {
            Box::new(Mapped::ragged(data, offsets.ok_or("no offsets")?)?)
        }
    })
}

/// Writes every peer of `source` under `dir` and opens it; notes say what
/// was left out.
///
/// # Errors
/// I/O and the peers' own errors.
pub fn write_all(source: &Source, dir: &Path, notes: &mut Vec<String>) -> Result<Vec<Peer>> {
    let offsets64: Vec<i64> = match source {
        Source::Ragged(d) => d.offsets.iter().map(|&o| o as i64).collect(),
        Source::Dense { .. } => Vec::new(),
    };
    let array = |name, descr, shape, bytes| Array {
        name,
        descr,
        shape,
        bytes,
    };
    let arrays = match source {
        Source::Dense { data, shape } => {
            vec![array(
                "records",
                "|u1",
                vec![source.len(), shape[0], shape[1]],
                &data[..],
            )]
        }
        Source::Ragged(d) => vec![
            array("tokens", "<i4", vec![d.tokens.len()], source.bytes()),
            array(
                "offsets",
                "<i8",
                vec![offsets64.len()],
                bytemuck::cast_slice(&offsets64),
            ),
        ],
    };
    let paths: Vec<_> = arrays
        .iter()
        .map(|a| dir.join(format!("{}.npy", a.name)))
        .collect();
    let (written, write_s) = timed(|| {
        arrays
            .iter()
            .zip(&paths)
            .try_for_each(|(a, path)| npy::write(path, a.descr, &a.shape, a.bytes))
    });
    written?;
    let data = npy::open(&paths[0])?;
    let system = mapped(
        source,
        data,
        paths.get(1).map(|p| npy::open(p)).transpose()?,
    )?;
    let mut on_disk = 0;
    for path in &paths {
        on_disk += allocated_bytes(path)?;
    }
    let mut peers = vec![Peer {
        name: named(source, "mmap .npy", "mmap .npy (values + offsets)"),
        write_s,
        on_disk,
        system,
    }];
    with_peers(source, &arrays, dir, &mut peers, notes)?;
    hdf5(source, dir, &mut peers, notes)?;
    let times: Vec<String> = peers
        .iter()
        .map(|p| format!("{} {:.1} s", p.name, p.write_s))
        .collect();
    eprintln!("  peers written: {}", times.join(", "));
    Ok(peers)
}

/// Arrow IPC (`take` on a `FixedSizeBinary` or `List<Int32>` column) and
/// safetensors (the arrays as tensors, memory-mapped).
#[cfg(feature = "peers")]
fn with_peers(
    source: &Source,
    arrays: &[Array<'_>],
    dir: &Path,
    peers: &mut Vec<Peer>,
    _: &mut Vec<String>,
) -> Result<()> {
    use super::{arrow_ipc, safetensors_file};
    use std::sync::Arc;

    let stem = arrays[0].name;
    let column: arrow_array::ArrayRef = match source {
        Source::Dense { data, shape } => {
            Arc::new(arrow_ipc::dense_array(data, shape[0] * shape[1])?)
        }
        Source::Ragged(d) => Arc::new(arrow_ipc::ragged_array(&d.tokens, &d.offsets)?),
    };
    let path = dir.join(format!("{stem}.arrow"));
    let (written, write_s) = timed(|| arrow_ipc::write(&path, column));
    written?;
    peers.push(Peer {
        name: named(
            source,
            "Arrow IPC mmap + take",
            "Arrow IPC mmap + take (list of i32)",
        ),
        write_s,
        on_disk: allocated_bytes(&path)?,
        system: Box::new(arrow_ipc::Arrow::open(&path)?),
    });

    let path = dir.join(format!("{stem}.safetensors"));
    let (written, write_s) = timed(|| safetensors_file::write(&path, arrays));
    written?;
    let mut tensors = safetensors_file::open(&path)?;
    let data = tensors.remove(stem).ok_or(format!("no tensor {stem}"))?;
    peers.push(Peer {
        name: named(
            source,
            "safetensors mmap",
            "safetensors mmap (values + offsets)",
        ),
        write_s,
        on_disk: allocated_bytes(&path)?,
        system: mapped(source, data, tensors.remove("offsets"))?,
    });
    Ok(())
}

#[cfg(not(feature = "peers"))]
fn with_peers(
    _: &Source,
    _: &[Array<'_>],
    _: &Path,
    _: &mut Vec<Peer>,
    notes: &mut Vec<String>,
) -> Result<()> {
    notes.push(
        "Arrow IPC and safetensors skipped: built without the `peers` feature of zrecord-benches \
         (add `--features peers`)."
            .into(),
    );
    Ok(())
}

/// HDF5: one contiguous dataset, one library read per record.
#[cfg(feature = "hdf5")]
fn hdf5(source: &Source, dir: &Path, peers: &mut Vec<Peer>, notes: &mut Vec<String>) -> Result<()> {
    let Source::Dense { data, shape } = source else {
        notes.push(
            "HDF5: not measured for ragged records (HDF5 has no packed ragged layout of its own)."
                .into(),
        );
        return Ok(());
    };
    let path = dir.join("records.h5");
    let (system, write_s) =
        timed(|| super::hdf5_file::Dense::write(&path, data, &[source.len(), shape[0], shape[1]]));
    let system = system?;
    notes.push(format!("HDF5: {}.", system.describe()));
    peers.push(Peer {
        name: "HDF5 (hdf5-metno)",
        write_s,
        on_disk: allocated_bytes(&path)?,
        system: Box::new(system),
    });
    Ok(())
}

#[cfg(not(feature = "hdf5"))]
fn hdf5(_: &Source, _: &Path, _: &mut Vec<Peer>, notes: &mut Vec<String>) -> Result<()> {
    notes.push(
        "HDF5 skipped: built without the `hdf5` feature of zrecord-benches (it needs the system \
         libhdf5, e.g. Debian's libhdf5-dev; then add `--features hdf5`)."
            .into(),
    );
    Ok(())
}
