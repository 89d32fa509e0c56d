//! The systems of the store tables (a)–(c), one trait for dense and ragged
//! records: a system gathers a batch into its own reusable output and hands
//! back the records end to end, which [`check`] compares with the [`Source`].

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use zrecord::gather_policy::{PARALLEL_COPY_BYTES, PIECES_PER_THREAD};
use zrecord::{Codec, DenseStore, DictTier, Dictionary, OpenOptions, RaggedBatch, RaggedStore};

use super::disk::Region;
use crate::workloads::RaggedTokens;

/// The records every system is built from and checked against.
#[derive(Clone)]
pub(crate) enum Source {
    /// `u8` records of item shape `shape`, end to end.
    Dense {
        data: Arc<Vec<u8>>,
        shape: [usize; 2],
    },
    /// `i32` token sequences.
    Ragged(Arc<RaggedTokens>),
}

impl Source {
    pub(crate) fn len(&self) -> usize {
        match self {
            Source::Dense { data, shape } => data.len() / (shape[0] * shape[1]).max(1),
            Source::Ragged(d) => d.len(),
        }
    }

    /// All records' bytes end to end.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Source::Dense { data, .. } => data,
            Source::Ragged(d) => bytemuck::cast_slice(&d.tokens),
        }
    }

    /// Where each record lies in [`bytes`](Self::bytes).
    pub(crate) fn cuts(&self) -> Cuts<'_> {
        match self {
            Source::Dense { shape, .. } => Cuts::Width(shape[0] * shape[1]),
            Source::Ragged(d) => Cuts::Offsets(&d.offsets, 4),
        }
    }

    /// Every record's bytes, in order.
    pub(crate) fn records(&self) -> Vec<&[u8]> {
        (0..self.len() as u64)
            .map(|i| &self.bytes()[self.cuts().range(i)])
            .collect()
    }
}

/// Where each record of a buffer lies: a width, or element offsets (from
/// 0, one past the last record) and the element size in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cuts<'a> {
    Width(usize),
    Offsets(&'a [usize], usize),
    /// Arrow's `i32` offsets of 4-byte elements.
    #[cfg_attr(not(feature = "peers"), allow(dead_code))]
    I32(&'a [i32]),
    /// `i64` offsets of 4-byte elements (the peers' files).
    I64(&'a [i64]),
}

impl Cuts<'_> {
    /// Where record `k` lies, if the offsets reach it.
    pub(crate) fn get(&self, k: usize) -> Option<Range<usize>> {
        let (start, end, size) = match *self {
            Cuts::Width(w) => (k, k + 1, w),
            Cuts::Offsets(o, size) => (*o.get(k)?, *o.get(k + 1)?, size),
            Cuts::I32(o) => (*o.get(k)? as usize, *o.get(k + 1)? as usize, 4),
            Cuts::I64(o) => (*o.get(k)? as usize, *o.get(k + 1)? as usize, 4),
        };
        Some(start * size..end * size)
    }

    #[inline]
    pub(crate) fn range(&self, i: u64) -> Range<usize> {
        self.get(i as usize).expect("a record inside the offsets")
    }
}

/// A batch as a system hands it back: the records end to end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packed<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) cuts: Cuts<'a>,
}

impl Packed<'_> {
    pub(crate) fn records(&self) -> usize {
        match self.cuts {
            Cuts::Width(w) => self.bytes.len().checked_div(w).unwrap_or(0),
            Cuts::Offsets(o, _) => o.len().saturating_sub(1),
            Cuts::I32(o) => o.len().saturating_sub(1),
            Cuts::I64(o) => o.len().saturating_sub(1),
        }
    }
}

/// A way to gather records.
pub(crate) trait System {
    /// Gathers `indices` (any order, repeats allowed) into this system's
    /// reusable output and returns it; panics on any error (benchmarks
    /// gather only valid indices).
    fn gather(&mut self, indices: &[u64]) -> Packed<'_>;
}

/// Gathers `batch` from `system` and compares every record with `source`.
pub(crate) fn check(
    name: &str,
    system: &mut dyn System,
    source: &Source,
    batch: &[u64],
) -> Result<(), String> {
    let got = system.gather(batch);
    let (n, want) = (got.records(), batch.len());
    if n != want {
        return Err(format!(
            "{name}: a batch of {want} records came back with {n}"
        ));
    }
    for (k, &i) in batch.iter().enumerate() {
        let record = got.cuts.get(k).and_then(|r| got.bytes.get(r));
        if record != Some(&source.bytes()[source.cuts().range(i)]) {
            return Err(format!(
                "{name}: record {i} (position {k} of the batch) differs from the source"
            ));
        }
    }
    Ok(())
}

/// A system's reusable output: the records' bytes and, for ragged records,
/// where each starts.
#[derive(Default)]
pub(crate) struct Out {
    bytes: Vec<u8>,
    offsets: Vec<usize>,
}

impl Out {
    /// Records `indices` of `width` bytes end to end, `fill(dst, i)` writing
    /// record `i`; across rayon's pool when `parallel`.
    pub(crate) fn fixed(
        &mut self,
        width: usize,
        indices: &[u64],
        parallel: bool,
        fill: impl Fn(&mut [u8], u64) + Sync,
    ) -> Packed<'_> {
        self.bytes.resize(indices.len() * width, 0);
        if parallel {
            self.bytes
                .par_chunks_mut(width)
                .zip(indices.par_iter())
                .with_min_len(min_len(indices.len()))
                .for_each(|(dst, &i)| fill(dst, i));
        } else {
            let chunks = self.bytes.chunks_mut(width).zip(indices);
            chunks.for_each(|(dst, &i)| fill(dst, i));
        }
        Packed {
            bytes: &self.bytes,
            cuts: Cuts::Width(width),
        }
    }

    /// Records `indices` end to end, record `i` being `len(i)` bytes that
    /// `fill(dst, i)` writes; across rayon's pool when `parallel(bytes)`.
    pub(crate) fn packed(
        &mut self,
        indices: &[u64],
        len: impl Fn(u64) -> usize,
        parallel: impl FnOnce(usize) -> bool,
        fill: impl Fn(&mut [u8], u64) + Sync,
    ) -> Packed<'_> {
        let (o, mut total) = (&mut self.offsets, 0);
        o.clear();
        o.push(0);
        for &i in indices {
            total += len(i);
            o.push(total);
        }
        self.bytes.resize(total, 0);
        if parallel(total) {
            let mut jobs: Vec<(&mut [u8], u64)> = Vec::with_capacity(indices.len());
            let mut rest = &mut self.bytes[..];
            for (k, &i) in indices.iter().enumerate() {
                let (dst, tail) = rest.split_at_mut(o[k + 1] - o[k]);
                jobs.push((dst, i));
                rest = tail;
            }
            jobs.par_iter_mut()
                .with_min_len(min_len(indices.len()))
                .for_each(|(dst, i)| fill(dst, *i));
        } else {
            for (k, &i) in indices.iter().enumerate() {
                fill(&mut self.bytes[o[k]..o[k + 1]], i);
            }
        }
        Packed {
            bytes: &self.bytes,
            cuts: Cuts::Offsets(&self.offsets, 1),
        }
    }

    /// Copies records `indices` out of `src`, cut by `cuts`, with zrecord's threads.
    pub(crate) fn copy(&mut self, src: &[u8], cuts: Cuts<'_>, indices: &[u64]) -> Packed<'_> {
        let n = indices.len();
        match cuts {
            Cuts::Width(w) => self.fixed(w, indices, parallel(n * w, n), |dst, i| {
                dst.copy_from_slice(&src[i as usize * w..][..w]);
            }),
            _ => self.packed(
                indices,
                |i| cuts.range(i).len(),
                |bytes| parallel(bytes, n),
                |dst, i| dst.copy_from_slice(&src[cuts.range(i)]),
            ),
        }
    }
}

// Copies with zrecord's thread policy, so every uncompressed peer is
// gathered "with the same threads": on the calling thread below
// `PARALLEL_COPY_BYTES` per batch, across rayon's pool in
// `PIECES_PER_THREAD` contiguous pieces per thread above (zrecord's own constants).

/// Whether a copy of `bytes` in `records` records fans out.
fn parallel(bytes: usize, records: usize) -> bool {
    records > 1 && bytes >= PARALLEL_COPY_BYTES && rayon::current_num_threads() > 1
}

/// Items per parallel piece: a few pieces per thread, as zrecord splits.
fn min_len(items: usize) -> usize {
    items
        .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
        .max(1)
}

/// Copies `src` into `out` (same length) with the same policy: memcpy
/// bandwidth with the gather's threads.
fn memcpy(src: &[u8], out: &mut [u8]) {
    if parallel(out.len(), 2) {
        let piece = min_len(out.len());
        out.par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        out.copy_from_slice(src);
    }
}

/// Fills `out` with `src` read from offset `start` on, wrapping around at
/// its end (`src` may be shorter than `out`), each piece with [`memcpy`].
fn memcpy_wrapping(src: &[u8], start: usize, out: &mut [u8]) {
    assert!(!src.is_empty() || out.is_empty(), "nothing to copy from");
    let mut at = start % src.len().max(1);
    let mut rest = out;
    while !rest.is_empty() {
        let n = rest.len().min(src.len() - at);
        let (dst, tail) = rest.split_at_mut(n);
        memcpy(&src[at..at + n], dst);
        rest = tail;
        at = 0;
    }
}

/// The source itself, copied with zrecord's threads (the limit).
pub(crate) struct InMemory(pub(crate) Source, pub(crate) Out);

impl System for InMemory {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        self.1.copy(self.0.bytes(), self.0.cuts(), indices)
    }
}

/// One contiguous copy of as many bytes as the batch holds, from where its
/// first record starts (memcpy bandwidth, same threads): not a gather, so
/// never compared with the source.
pub(crate) struct Memcpy(pub(crate) Source, pub(crate) Vec<u8>);

impl System for Memcpy {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let (s, out) = (&self.0, &mut self.1);
        let total = match s.cuts() {
            Cuts::Width(w) => indices.len() * w,
            cuts => indices.iter().map(|&i| cuts.range(i).len()).sum(),
        };
        out.resize(total, 0);
        let start = s.cuts().range(indices.first().copied().unwrap_or(0)).start;
        memcpy_wrapping(s.bytes(), start, out);
        Packed {
            bytes: out,
            cuts: Cuts::Width(total),
        }
    }
}

/// A zrecord store: `DenseStore<u8>` or `RaggedStore<i32>`, with its
/// reusable output.
pub(crate) enum Zrecord {
    Dense(DenseStore<u8>, Vec<u8>),
    Ragged(RaggedStore<i32>, RaggedBatch<i32>),
}

impl Zrecord {
    /// Creates a store of `source`'s records with `codec` at `path`, appends
    /// them in appends of about 64 MiB (dense) or 16 Mi tokens (ragged), and
    /// syncs it.
    pub(crate) fn write(path: &Path, source: &Source, codec: Codec) -> zrecord::Result<Zrecord> {
        Ok(match source {
            Source::Dense { data, shape } => {
                let store = DenseStore::<u8>::create(path, shape, codec)?;
                let width = shape[0] * shape[1];
                for piece in data.chunks((64usize << 20).div_ceil(width) * width) {
                    store.append(piece)?;
                }
                store.sync()?;
                Zrecord::Dense(store, Vec::new())
            }
            Source::Ragged(data) => {
                let store = RaggedStore::<i32>::create(path, codec)?;
                let (mut first, starts) = (0, &data.offsets[..data.len()]);
                while first < data.len() {
                    let rest = &starts[first..];
                    let last = first + rest.partition_point(|&o| o - rest[0] < (16 << 20));
                    let records: Vec<&[i32]> = (first..last).map(|r| data.record(r)).collect();
                    store.append_slices(&records)?;
                    first = last;
                }
                store.sync()?;
                Zrecord::Ragged(store, RaggedBatch::default())
            }
        })
    }

    /// Opens the store `write` made at `path` again with `options`.
    pub(crate) fn open(
        path: &Path,
        source: &Source,
        options: OpenOptions,
    ) -> zrecord::Result<Zrecord> {
        Ok(match source {
            Source::Dense { .. } => Zrecord::Dense(options.open(path)?, vec![]),
            Source::Ragged(_) => {
                let store = options.open(path)?;
                Zrecord::Ragged(store, RaggedBatch::default())
            }
        })
    }

    pub(crate) fn path(&self) -> &Path {
        match self {
            Zrecord::Dense(store, _) => store.path(),
            Zrecord::Ragged(store, _) => store.path(),
        }
    }

    pub(crate) fn train_dict(&self, tier: DictTier) -> zrecord::Result<Dictionary> {
        match self {
            Zrecord::Dense(store, _) => store.train_dict(tier),
            Zrecord::Ragged(store, _) => store.train_dict(tier),
        }
    }
}

impl System for Zrecord {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let fail = |e: zrecord::Error| panic!("zrecord gather: {e}");
        match self {
            Zrecord::Dense(store, out) => {
                out.resize(indices.len() * store.record_len(), 0);
                store.gather_into(indices, out).unwrap_or_else(fail);
                Packed {
                    bytes: out,
                    cuts: Cuts::Width(store.record_len()),
                }
            }
            Zrecord::Ragged(store, out) => {
                store.gather_into(indices, out).unwrap_or_else(fail);
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
pub(crate) struct Mapped {
    data: Region,
    offsets: Option<Region>,
    width: usize,
    out: Out,
}

impl Mapped {
    pub(crate) fn new(
        source: &Source,
        data: Region,
        offsets: Option<Region>,
    ) -> Result<Self, String> {
        let width = match (source.cuts(), &offsets) {
            (Cuts::Width(w), _) => w,
            (_, Some(o)) => {
                bytemuck::try_cast_slice::<u8, i32>(data.bytes())
                    .map_err(|e| format!("tokens: {e}"))?;
                bytemuck::try_cast_slice::<u8, i64>(o.bytes())
                    .map_err(|e| format!("offsets: {e}"))?;
                0
            }
            (_, None) => return Err("ragged records without offsets".into()),
        };
        let (offsets, out) = (offsets.filter(|_| width == 0), Out::default());
        Ok(Mapped {
            data,
            offsets,
            width,
            out,
        })
    }
}

impl System for Mapped {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let cuts = match &self.offsets {
            None => Cuts::Width(self.width),
            Some(o) => Cuts::I64(bytemuck::cast_slice(o.bytes())),
        };
        self.out.copy(self.data.bytes(), cuts, indices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::frames::{Frames, grouped_bytes};
    use crate::compare::peers;
    use crate::workloads::DENSE_B;

    #[test]
    fn every_system_gathers_the_source() {
        let shape = DENSE_B.shape;
        let dense = |data: Vec<u8>| Source::Dense {
            data: Arc::new(data),
            shape,
        };
        let ragged = |d: RaggedTokens| Source::Ragged(Arc::new(d));
        let tokens = RaggedTokens::generate(300);
        let mut flipped = tokens.clone();
        flipped.tokens.iter_mut().for_each(|t| *t ^= 1);
        let data = DENSE_B.generate(300);
        let sources = [
            (
                dense(data.clone()),
                dense(data.iter().map(|b| b ^ 1).collect()),
            ),
            (ragged(tokens), ragged(flipped)),
        ];
        for (source, other) in sources {
            let dir = tempfile::tempdir().unwrap();
            let write = |name: &str, codec: &Codec| {
                Zrecord::write(&dir.path().join(name), &source, codec.clone()).unwrap()
            };
            let raw = write("raw", &Codec::Raw);
            let dict = Codec::ZstdDict(raw.train_dict(DictTier::Fast).unwrap());
            let in_memory = InMemory(source.clone(), Out::default());
            let mut systems: Vec<(&str, Box<dyn System>)> =
                vec![("in-memory", Box::new(in_memory))];
            for (name, codec) in [("zstd", Codec::Zstd), ("dict", dict)] {
                let store = write(name, &codec);
                let frames = Frames::from_store(store.path(), &codec, &source).unwrap();
                systems.push(("frames", Box::new(frames)));
                systems.push((name, Box::new(store)));
            }
            systems.push(("raw", Box::new(raw)));
            assert!(grouped_bytes(&source, 7) > 0);
            let mut notes = Vec::new();
            for peer in peers::write_all(&source, dir.path(), &mut notes).unwrap() {
                systems.push((peer.name, peer.system));
            }
            let peers = if cfg!(feature = "peers") { 3 } else { 1 };
            assert_eq!(systems.len(), 6 + peers, "{notes:?}");
            for (name, system) in &mut systems {
                check(name, system.as_mut(), &source, &[299, 0, 17, 17]).unwrap();
                check(name, system.as_mut(), &source, &[5]).unwrap();
            }
            let batch_bytes = source.cuts().range(3).len() + source.cuts().range(1).len();
            let mut memcpy = Memcpy(source.clone(), Vec::new());
            assert_eq!(memcpy.gather(&[3, 1]).bytes.len(), batch_bytes);
            let mut wrong = InMemory(other, Out::default());
            assert!(check("wrong", &mut wrong, &source, &[7]).is_err());
        }
    }

    #[test]
    fn copies_wrap_around() {
        let src: Vec<u8> = (0..=255u8).cycle().take(8 << 20).collect();
        let mut out = vec![0u8; src.len()];
        memcpy(&src, &mut out);
        assert_eq!(out, src);
        let mut out = vec![0u8; 10];
        memcpy_wrapping(&[1, 2, 3, 4], 3, &mut out);
        assert_eq!(out, [4, 1, 2, 3, 4, 1, 2, 3, 4, 1]);
    }
}
