//! The systems of the dense tables (a) and (b): each gathers fixed-size
//! records into a batch and hands back the batch's bytes.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, FixedSizeBinaryArray};
use zrecord::{Codec, DenseStore};

use super::arrow_ipc;
use super::copy;
use super::frames::FrameSet;
use super::npy::NpyMap;
use super::safetensors_file::SafetensorsMap;

/// A system's reusable output: a byte buffer, or the array a kernel returned.
#[derive(Default)]
pub struct DenseOut {
    bytes: Vec<u8>,
    arrow: Option<FixedSizeBinaryArray>,
}

impl DenseOut {
    /// The byte buffer, sized to `len`.
    pub fn buffer(&mut self, len: usize) -> &mut [u8] {
        self.bytes.resize(len, 0);
        &mut self.bytes
    }
}

/// A way to gather fixed-size records.
pub trait DenseSystem: Sync {
    /// Name for the tables.
    fn name(&self) -> &str;

    /// Gathers `indices` (any order, repeats allowed) and returns the
    /// records' bytes end to end, held by `out`.
    ///
    /// # Panics
    /// On any error: benchmarks gather only valid indices.
    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8];
}

/// The records in one `Vec`, copied with zrecord's threads (the limit).
pub struct InMemory {
    /// Records end to end.
    pub data: Arc<Vec<u8>>,
    /// Bytes per record.
    pub width: usize,
}

impl DenseSystem for InMemory {
    fn name(&self) -> &str {
        "in-memory gather"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        let buf = out.buffer(indices.len() * self.width);
        copy::gather_fixed(&self.data, self.width, indices, buf);
        buf
    }
}

/// One contiguous copy of a batch's size (memcpy bandwidth, same threads):
/// not a gather, so never compared with the source.
pub struct Memcpy {
    /// Records end to end.
    pub data: Arc<Vec<u8>>,
    /// Bytes per record.
    pub width: usize,
}

impl DenseSystem for Memcpy {
    fn name(&self) -> &str {
        "memcpy"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        // A different region per batch, like a gather's.
        let start = indices.first().copied().unwrap_or(0) as usize * self.width;
        let buf = out.buffer(indices.len() * self.width);
        copy::memcpy_wrapping(&self.data, start, buf);
        buf
    }
}

/// The records' zstd frames in memory, decoded on all cores (the limit of
/// a compressed gather).
pub struct Frames {
    /// The frames.
    pub set: FrameSet,
    /// Bytes per record.
    pub width: usize,
    /// Name for the tables.
    pub name: String,
}

impl DenseSystem for Frames {
    fn name(&self) -> &str {
        &self.name
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        let buf = out.buffer(indices.len() * self.width);
        self.set.gather_fixed(indices, buf);
        buf
    }
}

/// A zrecord `DenseStore<u8>`.
pub struct Zrecord {
    /// The store.
    pub store: DenseStore<u8>,
    /// Name for the tables.
    pub name: String,
}

impl Zrecord {
    /// Creates a store of `shape` records with `codec` at `path`, appends
    /// `data` in appends of about 64 MiB, and syncs it.
    ///
    /// # Errors
    /// Any zrecord error.
    pub fn write(
        path: &Path,
        data: &[u8],
        shape: &[usize],
        codec: Codec,
        name: String,
    ) -> zrecord::Result<Zrecord> {
        let store = DenseStore::<u8>::create(path, shape, codec)?;
        let width: usize = shape.iter().product();
        let per_append = (64usize << 20).div_ceil(width) * width;
        for piece in data.chunks(per_append) {
            store.append(piece)?;
        }
        store.sync()?;
        Ok(Zrecord { store, name })
    }
}

impl DenseSystem for Zrecord {
    fn name(&self) -> &str {
        &self.name
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        let buf = out.buffer(indices.len() * self.store.record_len());
        self.store
            .gather_into(indices, buf)
            .unwrap_or_else(|e| panic!("zrecord gather: {e}"));
        buf
    }
}

/// A memory-mapped `.npy` file `(N, *shape)` of `u8`, gathered with
/// zrecord's threads.
pub struct Npy {
    /// The map.
    pub map: NpyMap,
    /// Bytes per record.
    pub width: usize,
}

impl DenseSystem for Npy {
    fn name(&self) -> &str {
        "mmap .npy"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        let buf = out.buffer(indices.len() * self.width);
        copy::gather_fixed(self.map.data(), self.width, indices, buf);
        buf
    }
}

/// A memory-mapped Arrow IPC file, `take` on a `FixedSizeBinary` column.
pub struct Arrow {
    /// The column, zero-copy over the map.
    pub column: ArrayRef,
}

impl DenseSystem for Arrow {
    fn name(&self) -> &str {
        "Arrow IPC mmap + take"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        out.arrow = Some(arrow_ipc::take_dense(&self.column, indices));
        out.arrow.as_ref().map_or(&[], |a| a.value_data())
    }
}

/// A memory-mapped safetensors file, one `U8 (N, *shape)` tensor, sliced
/// per record (zrecord's threads).
pub struct Safetensors {
    /// The map.
    pub map: SafetensorsMap,
    /// The tensor's name.
    pub tensor: String,
    /// Bytes per record.
    pub width: usize,
}

impl DenseSystem for Safetensors {
    fn name(&self) -> &str {
        "safetensors mmap"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut DenseOut) -> &'o [u8] {
        let data = self.map.tensor(&self.tensor).unwrap_or(&[]);
        let buf = out.buffer(indices.len() * self.width);
        copy::gather_fixed(data, self.width, indices, buf);
        buf
    }
}

/// Gathers `batch` from `system` and compares every record with `data`.
///
/// # Errors
/// A description of the first differing record.
pub fn check_batch(
    system: &dyn DenseSystem,
    data: &[u8],
    width: usize,
    batch: &[u64],
) -> Result<(), String> {
    let mut out = DenseOut::default();
    let got = system.gather(batch, &mut out);
    if got.len() != batch.len() * width {
        return Err(format!(
            "{}: a batch of {} records came back as {} bytes",
            system.name(),
            batch.len(),
            got.len()
        ));
    }
    for (k, (rec, &i)) in got.chunks(width).zip(batch).enumerate() {
        if rec != &data[i as usize * width..][..width] {
            return Err(format!(
                "{}: record {i} (position {k} of the batch) differs from the source",
                system.name()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{npy, safetensors_file};

    #[test]
    fn every_dense_system_gathers_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let width = 48;
        let data = Arc::new(
            (0..200 * width)
                .map(|i| (i * 7 % 251) as u8)
                .collect::<Vec<u8>>(),
        );
        npy::write(&dir.path().join("x.npy"), "|u1", &[200, 6, 8], &data).unwrap();
        arrow_ipc::write(
            &dir.path().join("x.arrow"),
            Arc::new(arrow_ipc::dense_array(&data, width).unwrap()),
        )
        .unwrap();
        safetensors_file::write(
            &dir.path().join("x.st"),
            vec![("images", safetensors::Dtype::U8, vec![200, 6, 8], &data)],
        )
        .unwrap();
        let systems: Vec<Box<dyn DenseSystem>> = vec![
            Box::new(InMemory {
                data: Arc::clone(&data),
                width,
            }),
            Box::new(Frames {
                set: FrameSet::compress(200, |i| &data[i * width..(i + 1) * width], &Codec::Zstd),
                width,
                name: "frames".into(),
            }),
            Box::new(
                Zrecord::write(
                    &dir.path().join("zr"),
                    &data,
                    &[6, 8],
                    Codec::Zstd,
                    "zr".into(),
                )
                .unwrap(),
            ),
            Box::new(Npy {
                map: NpyMap::open(&dir.path().join("x.npy")).unwrap(),
                width,
            }),
            Box::new(Arrow {
                column: arrow_ipc::open(&dir.path().join("x.arrow")).unwrap(),
            }),
            Box::new(Safetensors {
                map: SafetensorsMap::open(&dir.path().join("x.st")).unwrap(),
                tensor: "images".into(),
                width,
            }),
        ];
        for s in &systems {
            check_batch(s.as_ref(), &data, width, &[199, 0, 5, 5]).unwrap();
        }
        let memcpy = Memcpy {
            data: Arc::clone(&data),
            width,
        };
        assert_eq!(
            memcpy.gather(&[3, 1], &mut DenseOut::default()).len(),
            2 * width
        );
        let wrong = InMemory {
            data: Arc::new(vec![0; data.len()]),
            width,
        };
        assert!(check_batch(&wrong, &data, width, &[1]).is_err());
    }
}
