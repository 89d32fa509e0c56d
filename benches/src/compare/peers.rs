//! The stores a Rust user would otherwise pick, written from the same
//! records: a memory-mapped `.npy` always; Arrow IPC and safetensors with the
//! `peers` feature; HDF5 (dense records only) with the `hdf5` feature.

use std::path::Path;

use zrecord::DType;

use super::Result;
use super::disk::{self, allocated_bytes};
use super::measure::timed;
use super::systems::{Mapped, Source, System};

/// An array a peer stores: name, dtype (`u8`, `i32` or `i64`), shape,
/// little-endian bytes.
type Array<'a> = (&'static str, DType, Vec<usize>, &'a [u8]);

/// A peer, written and opened.
pub(crate) struct Peer {
    pub(crate) name: &'static str,
    pub(crate) write_s: f64,
    pub(crate) on_disk: u64,
    pub(crate) system: Box<dyn System>,
}

/// A peer's row name for dense or ragged records.
fn named(source: &Source, dense: &'static str, ragged: &'static str) -> &'static str {
    match source {
        Source::Dense { .. } => dense,
        Source::Ragged(_) => ragged,
    }
}

/// Writes every peer of `source` under `dir` and opens it; notes say what
/// was left out.
pub(crate) fn write_all(source: &Source, dir: &Path, notes: &mut Vec<String>) -> Result<Vec<Peer>> {
    let offsets64: Vec<i64> = match source {
        Source::Ragged(d) => d.offsets.iter().map(|&o| o as i64).collect(),
        Source::Dense { .. } => Vec::new(),
    };
    let arrays: Vec<Array<'_>> = match source {
        Source::Dense { data, shape } => {
            let shape = vec![source.len(), shape[0], shape[1]];
            vec![("records", DType::U8, shape, data)]
        }
        Source::Ragged(d) => {
            let offsets = bytemuck::cast_slice(&offsets64);
            vec![
                ("tokens", DType::I32, vec![d.tokens.len()], source.bytes()),
                ("offsets", DType::I64, vec![offsets64.len()], offsets),
            ]
        }
    };
    let paths: Vec<_> = arrays
        .iter()
        .map(|a| dir.join(format!("{}.npy", a.0)))
        .collect();
    let (written, write_s) = timed(|| {
        let mut files = arrays.iter().zip(&paths);
        files.try_for_each(|((_, dtype, shape, bytes), path)| {
            disk::write_npy(path, *dtype, shape, bytes)
        })
    });
    written?;
    let data = disk::open_npy(&paths[0])?;
    let offsets = paths.get(1).map(|p| disk::open_npy(p)).transpose()?;
    let system = Box::new(Mapped::new(source, data, offsets)?);
    let sizes = paths.iter().map(|p| allocated_bytes(p));
    let on_disk = sizes.sum::<std::io::Result<u64>>()?;
    #[cfg_attr(not(any(feature = "peers", feature = "hdf5")), allow(unused_mut))]
    let mut peers = vec![Peer {
        name: named(source, "mmap .npy", "mmap .npy (values + offsets)"),
        write_s,
        on_disk,
        system,
    }];
    #[cfg(feature = "peers")]
    with_peers(source, &arrays, dir, &mut peers)?;
    #[cfg(not(feature = "peers"))]
    notes.push(
        "Arrow IPC and safetensors skipped: built without the `peers` feature of zrecord-benches \
         (add `--features peers`)."
            .into(),
    );
    #[cfg(feature = "hdf5")]
    hdf5(source, dir, &mut peers, notes)?;
    #[cfg(not(feature = "hdf5"))]
    notes.push(
        "HDF5 skipped: built without the `hdf5` feature of zrecord-benches (it needs the system \
         libhdf5, e.g. Debian's libhdf5-dev; then add `--features hdf5`)."
            .into(),
    );
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
) -> Result<()> {
    use super::{arrow_ipc, disk::Region};
    use safetensors::tensor::{Dtype, SafeTensors, TensorView};
    use std::sync::Arc;

    let stem = arrays[0].0;
    let column = arrow_ipc::column(source)?;
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
    let (written, write_s) = timed(|| -> Result<()> {
        let views = arrays.iter().map(|(name, dtype, shape, bytes)| {
            let dtype = match dtype {
                DType::U8 => Dtype::U8,
                DType::I32 => Dtype::I32,
                _ => Dtype::I64,
            };
            Ok((*name, TensorView::new(dtype, shape.clone(), bytes)?))
        });
        safetensors::serialize_to_file(views.collect::<Result<Vec<_>>>()?, None, &path)?;
        Ok(std::fs::File::open(&path)?.sync_all()?)
    });
    written?;
    let map = disk::map(&path)?;
    let (header, metadata) = SafeTensors::read_metadata(&map)?;
    let tensor = |name: &str| {
        let (a, b) = metadata.info(name)?.data_offsets;
        let map = Arc::clone(&map);
        Some(Region {
            map,
            range: 8 + header + a..8 + header + b,
        })
    };
    let data = tensor(stem).ok_or("no tensor")?;
    peers.push(Peer {
        name: named(
            source,
            "safetensors mmap",
            "safetensors mmap (values + offsets)",
        ),
        write_s,
        on_disk: allocated_bytes(&path)?,
        system: Box::new(Mapped::new(source, data, tensor("offsets"))?),
    });
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
