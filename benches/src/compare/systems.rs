//! The systems of the store tables (a)–(c), one trait for dense and ragged
//! records: a system gathers a batch into its own reusable output and hands
//! back the records end to end, which [`check`] compares with the [`Source`].

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use zrecord::{Codec, DenseStore, DictTier, Dictionary, OpenOptions, RaggedBatch, RaggedStore};

use super::copy;
use super::disk::Region;
use super::frames::FrameSet;
use crate::workloads::RaggedTokens;

/// The records every system is built from and checked against.
#[derive(Clone)]
pub enum Source {
    /// Fixed-size `u8` records end to end, of item shape `shape`.
    Dense {
        /// The records.
        data: Arc<Vec<u8>>,
        /// The item shape (rows, columns).
        shape: [usize; 2],
    },
    /// `i32` token sequences.
    Ragged(Arc<RaggedTokens>),
}

impl Source {
    /// Number of records.
    pub fn len(&self) -> usize {
        match self {
            Source::Dense { data, .. } => data.len() / self.width().unwrap_or(1).max(1),
            Source::Ragged(d) => d.len(),
        }
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per record of a dense source.
    pub fn width(&self) -> Option<usize> {
        match self {
            Source::Dense { shape, .. } => Some(shape[0] * shape[1]),
            Source::Ragged(_) => None,
        }
    }

    /// All records' bytes end to end.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Dense { data, .. } => data,
            Source::Ragged(d) => bytemuck::cast_slice(&d.tokens),
        }
    }

    /// Where record `i` lies in [`bytes`](Self::bytes).
    pub fn range(&self, i: u64) -> Range<usize> {
        let i = i as usize;
        match self {
            Source::Dense { shape, .. } => i * shape[0] * shape[1]..(i + 1) * shape[0] * shape[1],
            Source::Ragged(d) => d.offsets[i] * 4..d.offsets[i + 1] * 4,
        }
    }

    /// Where every record starts in [`bytes`](Self::bytes), plus the end.
    pub fn starts(&self) -> Vec<usize> {
        (0..self.len() as u64)
            .map(|i| self.range(i).start)
            .chain([self.bytes().len()])
            .collect()
    }
}

/// Where each record of a packed batch lies.
#[derive(Clone, Copy, Debug)]
pub enum Cuts<'a> {
    /// Records of this many bytes.
    Width(usize),
    /// `len + 1` element offsets from 0, and the element size in bytes.
    Offsets(&'a [usize], usize),
    /// Arrow's `i32` element offsets, and the element size in bytes.
    I32(&'a [i32], usize),
}

/// A batch as a system hands it back: the records end to end.
#[derive(Clone, Copy, Debug)]
pub struct Packed<'a> {
    /// The records' bytes.
    pub bytes: &'a [u8],
    /// Where each record lies in them.
    pub cuts: Cuts<'a>,
}

impl Packed<'_> {
    /// Number of records.
    pub fn records(&self) -> usize {
        match self.cuts {
            Cuts::Width(w) => self.bytes.len().checked_div(w).unwrap_or(0),
            Cuts::Offsets(o, _) => o.len().saturating_sub(1),
            Cuts::I32(o, _) => o.len().saturating_sub(1),
        }
    }

    /// Record `k`'s bytes, if it lies inside the batch.
    pub fn record(&self, k: usize) -> Option<&[u8]> {
        let range = match self.cuts {
            Cuts::Width(w) => k * w..(k + 1) * w,
            Cuts::Offsets(o, size) => o.get(k)? * size..o.get(k + 1)? * size,
            Cuts::I32(o, size) => *o.get(k)? as usize * size..*o.get(k + 1)? as usize * size,
        };
        self.bytes.get(range)
    }
}

/// A way to gather records.
pub trait System {
    /// Gathers `indices` (any order, repeats allowed) into this system's
    /// reusable output and returns it.
    ///
    /// # Panics
    /// On any error: benchmarks gather only valid indices.
    fn gather(&mut self, indices: &[u64]) -> Packed<'_>;
}

/// Gathers `batch` from `system` and compares every record with `source`.
///
/// # Errors
/// A description of the first difference.
pub fn check(
    name: &str,
    system: &mut dyn System,
    source: &Source,
    batch: &[u64],
) -> Result<(), String> {
    let got = system.gather(batch);
    if got.records() != batch.len() {
        return Err(format!(
            "{name}: a batch of {} records came back with {}",
            batch.len(),
            got.records()
        ));
    }
    for (k, &i) in batch.iter().enumerate() {
        if got.record(k) != Some(&source.bytes()[source.range(i)]) {
            return Err(format!(
                "{name}: record {i} (position {k} of the batch) differs from the source"
            ));
        }
    }
    Ok(())
}

/// A copying system's output: the records' bytes and, for ragged records,
/// where each starts.
#[derive(Default)]
struct Out {
    bytes: Vec<u8>,
    offsets: Vec<usize>,
}

impl Out {
    /// Copies records `indices` of `width` bytes out of `src`, with zrecord's threads.
    fn copy_fixed(&mut self, src: &[u8], width: usize, indices: &[u64]) -> Packed<'_> {
        self.bytes.resize(indices.len() * width, 0);
        copy::gather_fixed(src, width, indices, &mut self.bytes);
        self.packed_fixed(width)
    }

    /// Copies records `indices` out of `src`, record `i` at `range(i)`, with
    /// zrecord's threads.
    fn copy_packed(
        &mut self,
        src: &[u8],
        range: impl Fn(u64) -> Range<usize> + Sync,
        indices: &[u64],
    ) -> Packed<'_> {
        copy::gather_packed(src, range, indices, &mut self.bytes, &mut self.offsets);
        self.packed()
    }

    fn packed_fixed(&self, width: usize) -> Packed<'_> {
        Packed {
            bytes: &self.bytes,
            cuts: Cuts::Width(width),
        }
    }

    fn packed(&self) -> Packed<'_> {
        Packed {
            bytes: &self.bytes,
            cuts: Cuts::Offsets(&self.offsets, 1),
        }
    }
}

/// The source itself, copied with zrecord's threads (the limit).
pub struct InMemory {
    source: Source,
    out: Out,
}

impl InMemory {
    /// Gathers from `source`.
    pub fn new(source: &Source) -> Self {
        let source = source.clone();
        InMemory {
            source,
            out: Out::default(),
        }
    }
}

impl System for InMemory {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        match &self.source {
            Source::Dense { data, shape } => {
                self.out.copy_fixed(data, shape[0] * shape[1], indices)
            }
            Source::Ragged(d) => {
                let (tokens, o) = (bytemuck::cast_slice(&d.tokens), &d.offsets);
                let range = |i: u64| o[i as usize] * 4..o[i as usize + 1] * 4;
                self.out.copy_packed(tokens, range, indices)
            }
        }
    }
}

/// One contiguous copy of as many bytes as the batch holds, from where its
/// first record starts (memcpy bandwidth, same threads): not a gather, so
/// never compared with the source.
pub struct Memcpy {
    source: Source,
    out: Vec<u8>,
}

impl Memcpy {
    /// Copies from `source`.
    pub fn new(source: &Source) -> Self {
        let source = source.clone();
        Memcpy {
            source,
            out: Vec::new(),
        }
    }
}

impl System for Memcpy {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let s = &self.source;
        let total = match s {
            Source::Dense { shape, .. } => indices.len() * shape[0] * shape[1],
            Source::Ragged(d) => indices
                .iter()
                .map(|&i| d.lengths[i as usize] as usize * 4)
                .sum(),
        };
        let start = s.range(indices.first().copied().unwrap_or(0)).start;
        self.out.resize(total, 0);
        copy::memcpy_wrapping(s.bytes(), start, &mut self.out);
        Packed {
            bytes: &self.out,
            cuts: Cuts::Width(total),
        }
    }
}

/// A store's zstd frames in memory, decoded on all cores (the limit of a
/// compressed gather).
pub struct Frames {
    set: FrameSet,
    source: Source,
    out: Out,
}

impl Frames {
    /// Decodes `set`, whose records are `source`'s.
    pub fn new(set: FrameSet, source: &Source) -> Self {
        let source = source.clone();
        Frames {
            set,
            source,
            out: Out::default(),
        }
    }

    /// Bytes of all frames.
    pub fn compressed_bytes(&self) -> u64 {
        self.set.compressed_bytes()
    }
}

impl System for Frames {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let out = &mut self.out;
        match &self.source {
            Source::Dense { shape, .. } => {
                out.bytes.resize(indices.len() * shape[0] * shape[1], 0);
                self.set.gather_fixed(indices, &mut out.bytes);
                out.packed_fixed(shape[0] * shape[1])
            }
            Source::Ragged(d) => {
                let len = |i: u64| d.lengths[i as usize] as usize * 4;
                self.set
                    .gather_packed(indices, len, &mut out.bytes, &mut out.offsets);
                out.packed()
            }
        }
    }
}

/// A zrecord store: `DenseStore<u8>` or `RaggedStore<i32>`.
pub enum Zrecord {
    /// Dense records into a reused buffer.
    Dense(DenseStore<u8>, Vec<u8>),
    /// Ragged records into a reused packed batch.
    Ragged(RaggedStore<i32>, RaggedBatch<i32>),
}

impl Zrecord {
    /// Creates a store of `source`'s records with `codec` at `path`, appends
    /// them in appends of about 64 MiB (dense) or 16 MiB (ragged), and syncs it.
    ///
    /// # Errors
    /// Any zrecord error.
    pub fn write(path: &Path, source: &Source, codec: Codec) -> zrecord::Result<Zrecord> {
        let zrecord = match source {
            Source::Dense { data, shape } => {
                let store = DenseStore::<u8>::create(path, shape, codec)?;
                let per_append =
                    (64usize << 20).div_ceil(shape[0] * shape[1]) * shape[0] * shape[1];
                for piece in data.chunks(per_append) {
                    store.append(piece)?;
                }
                Zrecord::Dense(store, Vec::new())
            }
            Source::Ragged(data) => {
                let store = RaggedStore::<i32>::create(path, codec)?;
                let mut first = 0;
                while first < data.len() {
                    let mut last = first;
                    while last < data.len() && data.offsets[last] - data.offsets[first] < (16 << 20)
                    {
                        last += 1;
                    }
                    let records: Vec<&[i32]> = (first..last).map(|r| data.record(r)).collect();
                    store.append_slices(&records)?;
                    first = last;
                }
                Zrecord::Ragged(store, RaggedBatch::default())
            }
        };
        match &zrecord {
            Zrecord::Dense(store, _) => store.sync()?,
            Zrecord::Ragged(store, _) => store.sync()?,
        }
        Ok(zrecord)
    }

    /// Opens the store `write` made at `path` again, read-only, checking every
    /// record's checksum on gather when `verify_on_read`.
    ///
    /// # Errors
    /// Any zrecord error.
    pub fn open_read_only(
        path: &Path,
        source: &Source,
        verify_on_read: bool,
    ) -> zrecord::Result<Zrecord> {
        let options = OpenOptions::new()
            .read_only(true)
            .verify_on_read(verify_on_read);
        Ok(match source {
            Source::Dense { .. } => {
                Zrecord::Dense(DenseStore::open_with(path, options)?, Vec::new())
            }
            Source::Ragged(_) => Zrecord::Ragged(
                RaggedStore::open_with(path, options)?,
                RaggedBatch::default(),
            ),
        })
    }

    /// The store's folder.
    pub fn path(&self) -> &Path {
        match self {
            Zrecord::Dense(store, _) => store.path(),
            Zrecord::Ragged(store, _) => store.path(),
        }
    }

    /// A dictionary trained on the store's records.
    ///
    /// # Errors
    /// Any zrecord error.
    pub fn train_dict(&self, tier: DictTier) -> zrecord::Result<Dictionary> {
        match self {
            Zrecord::Dense(store, _) => store.train_dict(tier),
            Zrecord::Ragged(store, _) => store.train_dict(tier),
        }
    }

    /// Physical records per record in the store's files (FORMAT.md): one
    /// dense; two ragged (payload, then shape).
    pub fn physical_per_record(&self) -> u64 {
        match self {
            Zrecord::Dense(..) => 1,
            Zrecord::Ragged(..) => 2,
        }
    }
}

impl System for Zrecord {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        match self {
            Zrecord::Dense(store, out) => {
                out.resize(indices.len() * store.record_len(), 0);
                store
                    .gather_into(indices, out)
                    .unwrap_or_else(|e| panic!("zrecord gather: {e}"));
                Packed {
                    bytes: out,
                    cuts: Cuts::Width(store.record_len()),
                }
            }
            Zrecord::Ragged(store, out) => {
                store
                    .gather_into(indices, out)
                    .unwrap_or_else(|e| panic!("zrecord gather: {e}"));
                Packed {
                    bytes: bytemuck::cast_slice(out.values()),
                    cuts: Cuts::Offsets(out.layout().offsets(), 4),
                }
            }
        }
    }
}

/// Arrays in memory-mapped files (`.npy`, safetensors), sliced per record
/// with zrecord's threads: records of `width` bytes, or `i32` tokens cut by
/// the file's own `i64` offsets.
pub struct Mapped {
    data: Region,
    layout: Layout,
    out: Out,
}

/// How a mapped array is cut into records.
enum Layout {
    Width(usize),
    Offsets(Region),
}

impl Mapped {
    /// Fixed-size records of `width` bytes in `data`.
    pub fn dense(data: Region, width: usize) -> Self {
        Mapped {
            data,
            layout: Layout::Width(width),
            out: Out::default(),
        }
    }

    /// `i32` tokens in `data`, record `r` from token `offsets[r]` to
    /// `offsets[r + 1]` (`i64`).
    ///
    /// # Errors
    /// When the arrays cannot be read in place (misaligned or cut short).
    pub fn ragged(data: Region, offsets: Region) -> Result<Self, String> {
        bytemuck::try_cast_slice::<u8, i32>(data.bytes()).map_err(|e| format!("tokens: {e}"))?;
        bytemuck::try_cast_slice::<u8, i64>(offsets.bytes())
            .map_err(|e| format!("offsets: {e}"))?;
        Ok(Mapped {
            data,
            layout: Layout::Offsets(offsets),
            out: Out::default(),
        })
    }
}

impl System for Mapped {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let data = self.data.bytes();
        match &self.layout {
            Layout::Width(w) => self.out.copy_fixed(data, *w, indices),
            Layout::Offsets(offsets) => {
                let o: &[i64] = bytemuck::cast_slice(offsets.bytes());
                let range = |i: u64| o[i as usize] as usize * 4..o[i as usize + 1] as usize * 4;
                self.out.copy_packed(data, range, indices)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::peers;
    use crate::workloads::DENSE_B;

    fn sources() -> [Source; 2] {
        let data = Arc::new(DENSE_B.generate(300));
        let shape = DENSE_B.shape;
        [
            Source::Dense { data, shape },
            Source::Ragged(Arc::new(RaggedTokens::generate(300))),
        ]
    }

    #[test]
    fn every_system_gathers_the_source() {
        for source in sources() {
            let dir = tempfile::tempdir().unwrap();
            let raw = Zrecord::write(&dir.path().join("raw"), &source, Codec::Raw).unwrap();
            let zstd = Zrecord::write(&dir.path().join("zstd"), &source, Codec::Zstd).unwrap();
            let group = zstd.physical_per_record();
            let set = FrameSet::from_store(zstd.path(), &Codec::Zstd, group, 0).unwrap();
            let mut systems: Vec<(&str, Box<dyn System>)> = vec![
                ("in-memory", Box::new(InMemory::new(&source))),
                ("frames", Box::new(Frames::new(set, &source))),
                ("raw", Box::new(raw)),
                ("zstd", Box::new(zstd)),
            ];
            let mut notes = Vec::new();
            for peer in peers::write_all(&source, dir.path(), &mut notes).unwrap() {
                systems.push((peer.name, peer.system));
            }
            let peers = if cfg!(feature = "peers") { 3 } else { 1 };
            assert_eq!(systems.len(), 4 + peers, "{notes:?}");
            for (name, system) in &mut systems {
                check(name, system.as_mut(), &source, &[299, 0, 17, 17]).unwrap();
                check(name, system.as_mut(), &source, &[5]).unwrap();
            }
            let batch_bytes = source.range(3).len() + source.range(1).len();
            let mut memcpy = Memcpy::new(&source);
            assert_eq!(memcpy.gather(&[3, 1]).bytes.len(), batch_bytes);
            let other = match &source {
                Source::Dense { data, shape } => {
                    let data = Arc::new(data.iter().map(|b| b ^ 1).collect());
                    Source::Dense {
                        data,
                        shape: *shape,
                    }
                }
                Source::Ragged(d) => {
                    let mut d = RaggedTokens::clone(d);
                    d.tokens.iter_mut().for_each(|t| *t ^= 1);
                    Source::Ragged(Arc::new(d))
                }
            };
            assert!(check("wrong", &mut InMemory::new(&other), &source, &[7]).is_err());
        }
    }
}
