//! The systems of the ragged table (c): each gathers variable-length `i32`
//! token sequences into a packed batch (values + offsets).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, ListArray};
use zrecord::{Codec, RaggedBatch, RaggedStore};

use super::arrow_ipc;
use super::copy;
use super::frames::FrameSet;
use super::npy::NpyMap;
use super::safetensors_file::SafetensorsMap;
use crate::workloads::RaggedTokens;

/// A system's reusable output.
#[derive(Default)]
pub struct RaggedOut {
    values: Vec<i32>,
    offsets: Vec<usize>,
    zrecord: RaggedBatch<i32>,
    arrow: Option<ListArray>,
}

/// Where each record of a packed batch starts (`len + 1` entries from 0).
#[derive(Clone, Copy, Debug)]
pub enum Offsets<'o> {
    /// `usize` offsets (zrecord, our own copies).
    Usize(&'o [usize]),
    /// Arrow's `i32` offsets.
    I32(&'o [i32]),
}

impl Offsets<'_> {
    /// Records.
    pub fn records(&self) -> usize {
        match self {
            Offsets::Usize(o) => o.len().saturating_sub(1),
            Offsets::I32(o) => o.len().saturating_sub(1),
        }
    }

    /// Record `k`'s range in the values.
    pub fn range(&self, k: usize) -> Range<usize> {
        match self {
            Offsets::Usize(o) => o[k]..o[k + 1],
            Offsets::I32(o) => o[k] as usize..o[k + 1] as usize,
        }
    }
}

/// A packed batch as a system returns it.
#[derive(Clone, Copy, Debug)]
pub struct Packed<'o> {
    /// All records' tokens end to end.
    pub values: &'o [i32],
    /// Where each record starts.
    pub offsets: Offsets<'o>,
}

impl Packed<'_> {
    /// Bytes of token data.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(self.values)
    }
}

/// A way to gather token sequences.
pub trait RaggedSystem: Sync {
    /// Name for the tables.
    fn name(&self) -> &str;

    /// Gathers `indices` into a packed batch held by `out`.
    ///
    /// # Panics
    /// On any error: benchmarks gather only valid indices.
    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o>;
}

fn own(out: &mut RaggedOut) -> Packed<'_> {
    Packed {
        values: &out.values,
        offsets: Offsets::Usize(&out.offsets),
    }
}

/// The tokens in one `Vec`, copied with zrecord's threads (the limit).
pub struct InMemory {
    /// The workload.
    pub data: Arc<RaggedTokens>,
}

impl RaggedSystem for InMemory {
    fn name(&self) -> &str {
        "in-memory gather"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        let d = &self.data;
        let range = |i: u64| d.offsets[i as usize]..d.offsets[i as usize + 1];
        copy::gather_packed(&d.tokens, range, indices, &mut out.values, &mut out.offsets);
        own(out)
    }
}

/// One contiguous copy of as many tokens as the batch holds (memcpy
/// bandwidth, same threads): not a gather, so never compared with the source.
pub struct Memcpy {
    /// The workload.
    pub data: Arc<RaggedTokens>,
}

impl RaggedSystem for Memcpy {
    fn name(&self) -> &str {
        "memcpy"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        let d = &self.data;
        let total: usize = indices
            .iter()
            .map(|&i| d.lengths[i as usize] as usize)
            .sum();
        let start = d.offsets[indices.first().copied().unwrap_or(0) as usize];
        out.values.resize(total, 0);
        copy::memcpy_wrapping(
            bytemuck::cast_slice(&d.tokens),
            start * 4,
            bytemuck::cast_slice_mut(&mut out.values),
        );
        out.offsets.clear();
        out.offsets.extend([0, total]);
        own(out)
    }
}

/// The records' zstd frames in memory, decoded on all cores.
pub struct Frames {
    /// The frames.
    pub set: FrameSet,
    /// Record lengths in tokens.
    pub data: Arc<RaggedTokens>,
    /// Name for the tables.
    pub name: String,
}

impl RaggedSystem for Frames {
    fn name(&self) -> &str {
        &self.name
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        let lengths = &self.data.lengths;
        self.set.gather_packed(
            indices,
            |i| lengths[i as usize] as usize,
            &mut out.values,
            &mut out.offsets,
        );
        own(out)
    }
}

/// A zrecord `RaggedStore<i32>`.
pub struct Zrecord {
    /// The store.
    pub store: RaggedStore<i32>,
    /// Name for the tables.
    pub name: String,
}

impl Zrecord {
    /// Creates a store with `codec` at `path`, appends every record of
    /// `data` in appends of about 64 MiB, and syncs it.
    ///
    /// # Errors
    /// Any zrecord error.
    pub fn write(
        path: &Path,
        data: &RaggedTokens,
        codec: Codec,
        name: String,
    ) -> zrecord::Result<Zrecord> {
        let store = RaggedStore::<i32>::create(path, codec)?;
        let mut first = 0;
        while first < data.len() {
            let mut last = first;
            while last < data.len() && data.offsets[last] - data.offsets[first] < (16 << 20) {
                last += 1;
            }
            let records: Vec<&[i32]> = (first..last).map(|r| data.record(r)).collect();
            store.append_slices(&records)?;
            first = last;
        }
        store.sync()?;
        Ok(Zrecord { store, name })
    }
}

impl RaggedSystem for Zrecord {
    fn name(&self) -> &str {
        &self.name
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        self.store
            .gather_into(indices, &mut out.zrecord)
            .unwrap_or_else(|e| panic!("zrecord gather: {e}"));
        Packed {
            values: out.zrecord.values(),
            offsets: Offsets::Usize(out.zrecord.layout().offsets()),
        }
    }
}

/// Token values and `i64` offsets from two maps (`.npy` or safetensors).
fn mapped_parts<'m>(tokens: &'m [u8], offsets: &'m [u8]) -> Result<(&'m [i32], &'m [i64]), String> {
    let t = bytemuck::try_cast_slice(tokens).map_err(|e| format!("tokens: {e}"))?;
    let o = bytemuck::try_cast_slice(offsets).map_err(|e| format!("offsets: {e}"))?;
    Ok((t, o))
}

/// Memory-mapped `.npy` files — tokens `<i4 (T,)` and offsets `<i8 (N+1,)` —
/// gathered with zrecord's threads.
pub struct Npy {
    /// The tokens.
    pub tokens: NpyMap,
    /// The offsets.
    pub offsets: NpyMap,
}

impl Npy {
    /// Maps both files and checks that their bytes can be read in place.
    ///
    /// # Errors
    /// I/O errors, bad files, misaligned data.
    pub fn open(
        tokens: &Path,
        offsets: &Path,
    ) -> Result<Npy, Box<dyn std::error::Error + Send + Sync>> {
        let npy = Npy {
            tokens: NpyMap::open(tokens)?,
            offsets: NpyMap::open(offsets)?,
        };
        mapped_parts(npy.tokens.data(), npy.offsets.data())?;
        Ok(npy)
    }
}

impl RaggedSystem for Npy {
    fn name(&self) -> &str {
        "mmap .npy (values + offsets)"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        let (tokens, offsets) =
            mapped_parts(self.tokens.data(), self.offsets.data()).unwrap_or((&[], &[]));
        let range = |i: u64| offsets[i as usize] as usize..offsets[i as usize + 1] as usize;
        copy::gather_packed(tokens, range, indices, &mut out.values, &mut out.offsets);
        own(out)
    }
}

/// A memory-mapped Arrow IPC file, `take` on a `List<Int32>` column.
pub struct Arrow {
    /// The column, zero-copy over the map.
    pub column: ArrayRef,
}

impl RaggedSystem for Arrow {
    fn name(&self) -> &str {
        "Arrow IPC mmap + take"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        out.arrow = Some(arrow_ipc::take_ragged(&self.column, indices));
        let (values, offsets) = out
            .arrow
            .as_ref()
            .map_or((&[][..], &[0][..]), arrow_ipc::list_parts);
        Packed {
            values,
            offsets: Offsets::I32(offsets),
        }
    }
}

/// A memory-mapped safetensors file — tensors `tokens` (I32) and `offsets`
/// (I64) — sliced per record with zrecord's threads.
pub struct Safetensors {
    /// The map.
    pub map: SafetensorsMap,
}

impl Safetensors {
    fn parts(&self) -> Result<(&[i32], &[i64]), String> {
        let tokens = self.map.tensor("tokens").ok_or("no tokens tensor")?;
        let offsets = self.map.tensor("offsets").ok_or("no offsets tensor")?;
        mapped_parts(tokens, offsets)
    }

    /// Maps `path` and checks its tensors can be read in place.
    ///
    /// # Errors
    /// I/O errors, bad files, misaligned data.
    pub fn open(path: &Path) -> Result<Safetensors, Box<dyn std::error::Error + Send + Sync>> {
        let s = Safetensors {
            map: SafetensorsMap::open(path)?,
        };
        s.parts()?;
        Ok(s)
    }
}

impl RaggedSystem for Safetensors {
    fn name(&self) -> &str {
        "safetensors mmap (values + offsets)"
    }

    fn gather<'o>(&self, indices: &[u64], out: &'o mut RaggedOut) -> Packed<'o> {
        let (tokens, offsets) = self.parts().unwrap_or((&[], &[]));
        let range = |i: u64| offsets[i as usize] as usize..offsets[i as usize + 1] as usize;
        copy::gather_packed(tokens, range, indices, &mut out.values, &mut out.offsets);
        own(out)
    }
}

/// Gathers `batch` from `system` and compares every record with `data`.
///
/// # Errors
/// A description of the first difference.
pub fn check_batch(
    system: &dyn RaggedSystem,
    data: &RaggedTokens,
    batch: &[u64],
) -> Result<(), String> {
    let mut out = RaggedOut::default();
    let got = system.gather(batch, &mut out);
    if got.offsets.records() != batch.len() {
        return Err(format!(
            "{}: a batch of {} records came back with {}",
            system.name(),
            batch.len(),
            got.offsets.records()
        ));
    }
    for (k, &i) in batch.iter().enumerate() {
        if got.values.get(got.offsets.range(k)) != Some(data.record(i as usize)) {
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
    fn every_ragged_system_gathers_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let data = Arc::new(RaggedTokens::generate(300));
        let offsets64: Vec<i64> = data.offsets.iter().map(|&o| o as i64).collect();
        let tokens_bytes: &[u8] = bytemuck::cast_slice(&data.tokens);
        let offsets_bytes: &[u8] = bytemuck::cast_slice(&offsets64);
        npy::write(
            &dir.path().join("t.npy"),
            "<i4",
            &[data.tokens.len()],
            tokens_bytes,
        )
        .unwrap();
        npy::write(
            &dir.path().join("o.npy"),
            "<i8",
            &[offsets64.len()],
            offsets_bytes,
        )
        .unwrap();
        arrow_ipc::write(
            &dir.path().join("x.arrow"),
            Arc::new(arrow_ipc::ragged_array(&data.tokens, &data.offsets).unwrap()),
        )
        .unwrap();
        safetensors_file::write(
            &dir.path().join("x.st"),
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
        .unwrap();
        let systems: Vec<Box<dyn RaggedSystem>> = vec![
            Box::new(InMemory {
                data: Arc::clone(&data),
            }),
            Box::new(Frames {
                set: FrameSet::compress(
                    data.len(),
                    |r| bytemuck::cast_slice(data.record(r)),
                    &Codec::Zstd,
                ),
                data: Arc::clone(&data),
                name: "frames".into(),
            }),
            Box::new(
                Zrecord::write(&dir.path().join("zr"), &data, Codec::Zstd, "zr".into()).unwrap(),
            ),
            Box::new(Npy::open(&dir.path().join("t.npy"), &dir.path().join("o.npy")).unwrap()),
            Box::new(Arrow {
                column: arrow_ipc::open(&dir.path().join("x.arrow")).unwrap(),
            }),
            Box::new(Safetensors::open(&dir.path().join("x.st")).unwrap()),
        ];
        for s in &systems {
            check_batch(s.as_ref(), &data, &[299, 0, 17, 17]).unwrap();
        }
        let memcpy = Memcpy {
            data: Arc::clone(&data),
        };
        let mut out = RaggedOut::default();
        let got = memcpy.gather(&[3, 1], &mut out);
        assert_eq!(
            got.values.len(),
            (data.lengths[3] + data.lengths[1]) as usize
        );
    }
}
