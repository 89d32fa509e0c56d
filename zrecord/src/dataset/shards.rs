//! [`Shards`]: stores of one schema read as one index space — shard `s`
//! holds global indices `starts[s]..starts[s + 1]`. [`DenseShards`] and
//! [`RaggedShards`] are its two kinds.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{DType, DynDenseStore, DynRaggedBatch, DynRaggedStore, DynVec, Error, Result, Schema};

/// Where each index of a batch lives: per shard, its local indices and
/// their positions in the batch.
struct Groups {
    /// `(shard, its range of `locals` and `positions`)`, shards ascending.
    groups: Vec<(usize, Range<usize>)>,
    locals: Vec<u64>,
    positions: Vec<usize>,
    /// The batch already lists its shards in ascending order (`positions`
    /// is left empty: it would be `0..n`): each shard's records can be read
    /// straight into place.
    in_place: bool,
}

impl Groups {
    /// The batch position of the record at `at` in `locals`.
    fn position(&self, at: usize) -> usize {
        if self.in_place {
            at
        } else {
            self.positions[at]
        }
    }

    /// Splits `indices` by shard, shards in ascending order; an index past
    /// `starts`' end is an error.
    fn split(starts: &[u64], indices: &[u64]) -> Result<Groups> {
        // Run by run while the batch lists its shards in order (a mixture's
        // batches do): a run's end is found by one comparison per index and
        // its local indices by one subtraction. The general split from the
        // first shard out of order.
        let mut groups: Vec<(usize, Range<usize>)> = Vec::new();
        let mut locals = Vec::with_capacity(indices.len());
        let (mut k, mut shard) = (0, 0);
        while let Some(&first) = indices.get(k) {
            let next = Self::locate(starts, first, shard)?;
            if !groups.is_empty() && next < shard {
                return Self::split_unordered(starts, indices);
            }
            shard = next;
            let (lo, span) = (starts[shard], starts[shard + 1] - starts[shard]);
            let rest = &indices[k..];
            let run = (rest.iter())
                .position(|&i| i.wrapping_sub(lo) >= span)
                .unwrap_or(rest.len());
            locals.extend(rest[..run].iter().map(|&i| i - lo));
            groups.push((shard, k..k + run));
            k += run;
        }
        Ok(Groups {
            groups,
            locals,
            positions: Vec::new(),
            in_place: true,
        })
    }

    /// The shard of `index`: `near` if it holds it (neighbours mostly share
    /// a shard), else the last shard starting at or before it (empty shards
    /// skipped).
    #[inline]
    fn locate(starts: &[u64], index: u64, near: usize) -> Result<usize> {
        let len = starts.last().copied().unwrap_or(0);
        if index >= len {
            return Err(Error::IndexOutOfRange { index, len });
        }
        if (starts[near]..starts[near + 1]).contains(&index) {
            return Ok(near);
        }
        Ok(starts.partition_point(|&s| s <= index) - 1)
    }

    /// [`split`](Self::split) of a batch in any order: positions sorted by
    /// shard, each shard's in batch order.
    fn split_unordered(starts: &[u64], indices: &[u64]) -> Result<Groups> {
        let mut shards = Vec::with_capacity(indices.len());
        let mut shard = 0;
        for &index in indices {
            shard = Self::locate(starts, index, shard)?;
            shards.push(shard);
        }
        let mut positions: Vec<usize> = (0..indices.len()).collect();
        positions.sort_by_key(|&p| shards[p]);
        let mut groups: Vec<(usize, Range<usize>)> = Vec::new();
        for (k, &position) in positions.iter().enumerate() {
            match groups.last_mut() {
                Some((last, range)) if *last == shards[position] => range.end = k + 1,
                _ => groups.push((shards[position], k..k + 1)),
            }
        }
        let locals = positions
            .iter()
            .map(|&p| indices[p] - starts[shards[p]])
            .collect();
        Ok(Groups {
            groups,
            locals,
            positions,
            in_place: false,
        })
    }
}

/// A store kind that can be a shard: [`DynDenseStore`] or [`DynRaggedStore`].
pub trait ShardStore: sealed::Sealed + Send + Sync {
    /// Records in the store.
    fn records(&self) -> u64;
    /// The store's folder.
    fn folder(&self) -> &Path;
    /// What its records are; shards of one stream agree on it.
    fn schema(&self) -> Schema;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::DynDenseStore {}
    impl Sealed for crate::DynRaggedStore {}
}

impl ShardStore for DynDenseStore {
    fn records(&self) -> u64 {
        self.len()
    }
    fn folder(&self) -> &Path {
        self.path()
    }
    fn schema(&self) -> Schema {
        Schema::Dense {
            dtype: self.dtype(),
            item_shape: self.item_shape().to_vec(),
        }
    }
}

impl ShardStore for DynRaggedStore {
    fn records(&self) -> u64 {
        self.len()
    }
    fn folder(&self) -> &Path {
        self.path()
    }
    fn schema(&self) -> Schema {
        Schema::Ragged {
            dtype: self.dtype(),
        }
    }
}

/// Stores of one schema read as one: index `i` is record `i - starts[s]`
/// of shard `s`. A single store is a dataset of one shard (`From` any
/// store), read with no extra work.
///
/// ```
/// use std::sync::Arc;
/// use zrecord::{Codec, DenseShards, DenseStore};
/// # let dir = tempfile::tempdir()?;
///
/// let a = DenseStore::<i64>::create(dir.path().join("a"), &[], Codec::Raw)?;
/// a.append(&[0, 1, 2])?;
/// let b = DenseStore::<i64>::create(dir.path().join("b"), &[], Codec::Raw)?;
/// b.append(&[3, 4])?;
/// let both = DenseShards::new(dir.path(), vec![Arc::new(a.into_dyn()), Arc::new(b.into_dyn())])?;
/// assert_eq!(both.len(), 5);
/// assert_eq!(both.gather_dyn(&[4, 0, 3])?.as_slice::<i64>(), Some(&[4, 0, 3][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Shards<S> {
    path: PathBuf,
    stores: Vec<Arc<S>>,
    starts: Vec<u64>,
}

/// Dense shards: batches are one `(B, *item_shape)` buffer.
pub type DenseShards = Shards<DynDenseStore>;
/// Ragged shards: batches are packed ([`DynRaggedBatch`]).
pub type RaggedShards = Shards<DynRaggedStore>;

impl<S: ShardStore> Shards<S> {
    /// The shards `stores`, in order, named `path` in errors.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no stores or over 2^64 records in
    /// all; [`Error::Dataset`] for a store whose schema differs from the
    /// first's.
    pub fn new(path: impl Into<PathBuf>, stores: Vec<Arc<S>>) -> Result<Self> {
        let path = path.into();
        let first = stores
            .first()
            .ok_or_else(|| Error::InvalidArgument("a dataset needs at least one shard".into()))?;
        let schema = first.schema();
        if let Some(other) = stores.iter().find(|s| s.schema() != schema) {
            return Err(Error::Dataset {
                path,
                reason: format!(
                    "shard {} holds {:?}, but {} holds {schema:?}",
                    other.folder().display(),
                    other.schema(),
                    first.folder().display(),
                ),
            });
        }
        let mut starts = vec![0u64];
        for store in &stores {
            let next = starts[starts.len() - 1]
                .checked_add(store.records())
                .ok_or_else(|| {
                    Error::InvalidArgument("the shards hold over 2^64 records".into())
                })?;
            starts.push(next);
        }
        Ok(Shards {
            path,
            stores,
            starts,
        })
    }

    /// Where the records are: the store's path, or the dataset's stream.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records in all shards.
    pub fn len(&self) -> u64 {
        self.starts[self.starts.len() - 1]
    }

    /// Whether the shards hold no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shards, in index order.
    pub fn shards(&self) -> &[Arc<S>] {
        &self.stores
    }

    /// The global index of each shard's first record, then the total.
    pub fn starts(&self) -> &[u64] {
        &self.starts
    }

    /// Where `indices` lie: all in one shard (with their local indices),
    /// or split by shard.
    fn route<'a>(&'a self, indices: &'a [u64]) -> Result<Route<'a, S>> {
        if let [only] = &self.stores[..] {
            return Ok(Route::One(only, Cow::Borrowed(indices)));
        }
        let mut groups = Groups::split(&self.starts, indices)?;
        if let [(shard, _)] = groups.groups[..] {
            let locals = std::mem::take(&mut groups.locals);
            return Ok(Route::One(&self.stores[shard], Cow::Owned(locals)));
        }
        Ok(Route::Many(groups))
    }
}

/// A batch's way to its shards.
enum Route<'a, S> {
    /// One shard holds every record: read straight into the output.
    One(&'a S, Cow<'a, [u64]>),
    /// Records from several shards.
    Many(Groups),
}

thread_local! {
    /// Per-shard pieces of dense batches, reused: no allocation or zeroing
    /// per batch in the steady state.
    static PIECE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Shards<DynDenseStore> {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.stores[0].dtype()
    }

    /// The shape of every record.
    pub fn item_shape(&self) -> &[usize] {
        self.stores[0].item_shape()
    }

    /// Elements per record.
    pub fn record_len(&self) -> usize {
        self.stores[0].record_len()
    }

    /// Bytes per record.
    pub fn record_bytes(&self) -> usize {
        self.stores[0].record_bytes()
    }

    /// Gathers records `indices` (global, any order, repeats allowed) into
    /// `out`, reusing its allocation: as [`DynDenseStore::gather_into`].
    /// A batch within one shard is read straight into `out`.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] if `out` holds another dtype;
    /// [`Error::IndexOutOfRange`] with the global index; a shard's errors.
    pub fn gather_into(&self, indices: &[u64], out: &mut DynVec) -> Result<()> {
        if out.dtype() != self.dtype() {
            return Err(Error::DTypeMismatch {
                store: self.dtype(),
                got: out.dtype(),
            });
        }
        out.fill_bytes(indices.len() * self.record_len(), indices.len(), |bytes| {
            self.gather_bytes(indices, bytes)
        })
    }

    /// Gathers records `indices` as bytes into `out`, exactly
    /// `indices.len() * record_bytes()` long: as
    /// [`DynDenseStore::gather_bytes`]. A run of records within one shard is
    /// read straight into its place in `out`.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] with the global index,
    /// [`Error::BufferLength`]; a shard's errors.
    pub fn gather_bytes(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let width = self.record_bytes();
        if indices.len().checked_mul(width) != Some(out.len()) {
            return Err(Error::BufferLength {
                expected: indices.len().saturating_mul(width),
                got: out.len(),
            });
        }
        let groups = match self.route(indices)? {
            Route::One(store, locals) => return store.gather_bytes(&locals, out),
            Route::Many(groups) => groups,
        };
        if groups.in_place {
            for (shard, range) in &groups.groups {
                let into = &mut out[range.start * width..range.end * width];
                self.stores[*shard].gather_bytes(&groups.locals[range.clone()], into)?;
            }
            return Ok(());
        }
        PIECE.with_borrow_mut(|piece| {
            for (shard, range) in &groups.groups {
                let need = range.len() * width;
                if piece.len() < need {
                    piece.resize(need, 0);
                }
                let locals = &groups.locals[range.clone()];
                self.stores[*shard].gather_bytes(locals, &mut piece[..need])?;
                let positions = range.clone().map(|at| groups.position(at));
                for (record, position) in piece.chunks_exact(width).zip(positions) {
                    out[position * width..][..width].copy_from_slice(record);
                }
            }
            Ok(())
        })
    }

    /// Records `indices` in a new buffer: as [`gather_into`](Self::gather_into).
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn gather_dyn(&self, indices: &[u64]) -> Result<DynVec> {
        let mut out = DynVec::new(self.dtype());
        self.gather_into(indices, &mut out)?;
        Ok(out)
    }
}

impl Shards<DynRaggedStore> {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.stores[0].dtype()
    }

    /// Gathers records `indices` (global, any order, repeats allowed) into
    /// `out`, reusing its allocations: as [`DynRaggedStore::gather_into`].
    /// A batch within one shard is read straight into `out`.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] with the global index; a shard's errors.
    pub fn gather_into(&self, indices: &[u64], out: &mut DynRaggedBatch) -> Result<()> {
        let groups = match self.route(indices)? {
            Route::One(store, locals) => return store.gather_into(&locals, out),
            Route::Many(groups) => groups,
        };
        let mut pieces = Vec::with_capacity(groups.groups.len());
        // Where each position's record is: (piece, record in the piece).
        let mut place = vec![(0usize, 0usize); indices.len()];
        for (g, (shard, range)) in groups.groups.iter().enumerate() {
            pieces.push(self.stores[*shard].gather_dyn(&groups.locals[range.clone()])?);
            for (k, at) in range.clone().enumerate() {
                place[groups.position(at)] = (g, k);
            }
        }
        out.layout.clear();
        for &(g, k) in &place {
            let layout = &pieces[g].layout;
            let (shape, range) = layout.shape(k).zip(layout.range(k)).ok_or_else(|| {
                Error::InvalidArgument("a shard returned fewer records than asked".into())
            })?;
            out.layout.push_checked(shape, range.len());
        }
        let size = self.dtype().size();
        out.values
            .fill_bytes(out.layout.total(), indices.len(), |bytes| {
                let mut at = 0;
                for &(g, k) in &place {
                    let piece = &pieces[g];
                    let range = piece.layout.range(k).unwrap_or(0..0);
                    let from = &piece.values.as_bytes()[range.start * size..range.end * size];
                    bytes[at..at + from.len()].copy_from_slice(from);
                    at += from.len();
                }
                Ok(())
            })
    }

    /// Records `indices` in a new batch: as [`gather_into`](Self::gather_into).
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn gather_dyn(&self, indices: &[u64]) -> Result<DynRaggedBatch> {
        let mut out = DynRaggedBatch::new(self.dtype());
        self.gather_into(indices, &mut out)?;
        Ok(out)
    }
}

impl<S> Clone for Shards<S> {
    fn clone(&self) -> Self {
        Shards {
            path: self.path.clone(),
            stores: self.stores.clone(),
            starts: self.starts.clone(),
        }
    }
}

impl<S: ShardStore> From<Arc<S>> for Shards<S> {
    fn from(store: Arc<S>) -> Self {
        Shards {
            path: store.folder().into(),
            starts: vec![0, store.records()],
            stores: vec![store],
        }
    }
}

impl From<DynDenseStore> for DenseShards {
    fn from(store: DynDenseStore) -> Self {
        Arc::new(store).into()
    }
}

impl From<DynRaggedStore> for RaggedShards {
    fn from(store: DynRaggedStore) -> Self {
        Arc::new(store).into()
    }
}

impl<S> fmt::Debug for Shards<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shards")
            .field("path", &self.path)
            .field("starts", &self.starts)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{Codec, DenseStore, RaggedStore};

    /// Shards of `sizes` records (record `i` of the whole holds `i`), and
    /// one store holding them all.
    fn dense(dir: &Path, sizes: &[u64]) -> (DenseShards, DynDenseStore) {
        let whole = DenseStore::<u32>::create(dir.join("whole"), &[2], Codec::Zstd).unwrap();
        let mut shards = Vec::new();
        let mut next = 0u32;
        for (s, &n) in sizes.iter().enumerate() {
            let store =
                DenseStore::<u32>::create(dir.join(s.to_string()), &[2], Codec::Raw).unwrap();
            let values: Vec<u32> = (next..next + n as u32).flat_map(|i| [i, !i]).collect();
            store.append(&values).unwrap();
            whole.append(&values).unwrap();
            next += n as u32;
            shards.push(Arc::new(store.into_dyn()));
        }
        (DenseShards::new(dir, shards).unwrap(), whole.into_dyn())
    }

    fn ragged(dir: &Path, sizes: &[u64]) -> (RaggedShards, DynRaggedStore) {
        let whole = RaggedStore::<u16>::create(dir.join("whole"), Codec::Raw).unwrap();
        let mut shards = Vec::new();
        let mut next = 0u16;
        for (s, &n) in sizes.iter().enumerate() {
            let store = RaggedStore::<u16>::create(dir.join(s.to_string()), Codec::Zstd).unwrap();
            let records: Vec<Vec<u16>> = (next..next + n as u16)
                .map(|i| vec![i; 1 + i as usize % 4])
                .collect();
            store.append_slices(&records).unwrap();
            whole.append_slices(&records).unwrap();
            next += n as u16;
            shards.push(Arc::new(store.into_dyn()));
        }
        (RaggedShards::new(dir, shards).unwrap(), whole.into_dyn())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Any batch of global indices (in any order, or with its shards in
        /// order) reads what one store of all the records reads, empty
        /// shards and batches across shards included.
        #[test]
        fn shards_read_like_one_store(
            sizes in prop::collection::vec(0u64..6, 1..5),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            sorted in any::<bool>(),
        ) {
            let total: u64 = sizes.iter().sum();
            prop_assume!(total > 0);
            let mut indices: Vec<u64> = picks.iter().map(|p| p.index(total as usize) as u64).collect();
            if sorted {
                // Shards in order: each shard's records read straight into place.
                indices.sort_unstable();
            }
            let dir = tempfile::tempdir().unwrap();
            let (shards, whole) = dense(&dir.path().join("d"), &sizes);
            prop_assert_eq!(shards.len(), total);
            prop_assert_eq!(shards.gather_dyn(&indices).unwrap(), whole.gather_dyn(&indices).unwrap());
            let (shards, whole) = ragged(&dir.path().join("r"), &sizes);
            prop_assert_eq!(shards.gather_dyn(&indices).unwrap(), whole.gather_dyn(&indices).unwrap());
        }
    }

    proptest! {
        /// Every batch position lands once, in its shard's group, with its
        /// local index; groups ascend by shard; a batch whose shards come
        /// in order is read in place.
        #[test]
        fn split_groups_every_position_by_shard(
            sizes in prop::collection::vec(0u64..6, 1..6),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
            sorted in any::<bool>(),
        ) {
            let mut starts = vec![0];
            for n in &sizes {
                starts.push(starts[starts.len() - 1] + n);
            }
            let total = starts[sizes.len()];
            prop_assume!(total > 0);
            let mut indices: Vec<u64> = picks.iter().map(|p| p.index(total as usize) as u64).collect();
            if sorted {
                indices.sort_unstable();
            }
            let shard_of = |i: u64| starts.partition_point(|&s| s <= i) - 1;
            let groups = Groups::split(&starts, &indices).unwrap();
            prop_assert_eq!(groups.in_place, indices.is_sorted_by_key(|&i| shard_of(i)));
            prop_assert!(groups.groups.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1.end == w[1].1.start));
            let mut seen = vec![false; indices.len()];
            for (shard, range) in &groups.groups {
                for at in range.clone() {
                    let position = groups.position(at);
                    prop_assert!(!std::mem::replace(&mut seen[position], true));
                    prop_assert_eq!(shard_of(indices[position]), *shard);
                    prop_assert_eq!(starts[*shard] + groups.locals[at], indices[position]);
                }
            }
            prop_assert!(seen.into_iter().all(|s| s));
            let past = Groups::split(&starts, &[indices.first().copied().unwrap_or(0), total]);
            let named_past = matches!(past, Err(Error::IndexOutOfRange { index, len }) if index == total && len == total);
            prop_assert!(named_past);
        }
    }

    #[test]
    fn an_index_past_the_end_names_the_global_length() {
        let dir = tempfile::tempdir().unwrap();
        let (shards, _) = dense(dir.path(), &[2, 3]);
        let err = shards.gather_dyn(&[0, 5]).unwrap_err();
        assert!(
            matches!(err, Error::IndexOutOfRange { index: 5, len: 5 }),
            "{err}"
        );
    }

    #[test]
    fn shards_of_other_shapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = DenseStore::<u8>::create(dir.path().join("a"), &[2], Codec::Raw).unwrap();
        let b = DenseStore::<u8>::create(dir.path().join("b"), &[3], Codec::Raw).unwrap();
        let err = DenseShards::new(
            dir.path(),
            vec![Arc::new(a.into_dyn()), Arc::new(b.into_dyn())],
        )
        .unwrap_err();
        assert!(err.to_string().contains("[3]"), "{err}");
    }
}
