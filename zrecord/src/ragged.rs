//! Ragged stores: every record is an array of the store's dtype with its own
//! shape, kept as a payload record and a shape record side by side.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::path::Path;

use ndarray::{ArrayBase, ArrayD, Data, Dimension};

use crate::bytes::{as_bytes, fill_bytes, try_resize};
use crate::codec::train_from_continuous;
use crate::common::{store_methods, training_indices};
use crate::dtype::validate_bytes;
use crate::engine::Engine;
use crate::format::{TypeIdentity, decode_shape, encode_shape};
use crate::lengths::LengthHistogram;
use crate::{
    Codec, DType, DictTier, Dictionary, DynRaggedBatch, DynVec, Element, Error, LengthStats,
    OpenOptions, RaggedBatch, RaggedLayout, Result, Schema, StoreKind,
};

/// A ragged store whose dtype is known at run time.
///
/// Its typed twin is [`RaggedStore`]; convert with [`DynRaggedStore::typed`]
/// and [`RaggedStore::into_dyn`].
pub struct DynRaggedStore {
    engine: Engine,
    dtype: DType,
}

impl DynRaggedStore {
    pub(crate) fn from_engine(engine: Engine) -> Result<Self> {
        match engine.identity().clone() {
            TypeIdentity::Ragged { dtype } => Ok(DynRaggedStore { engine, dtype }),
            TypeIdentity::Dense { .. } => Err(Error::KindMismatch {
                path: engine.dir().into(),
                expected: StoreKind::Ragged,
                found: StoreKind::Dense,
            }),
        }
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    store_methods!();

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The typed store, if its dtype is `T`'s.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`].
    pub fn typed<T: Element>(self) -> Result<RaggedStore<T>> {
        if self.dtype != T::DTYPE {
            return Err(Error::DTypeMismatch {
                store: self.dtype,
                got: T::DTYPE,
            });
        }
        Ok(RaggedStore {
            inner: self,
            _element: PhantomData,
        })
    }

    /// Appends `n` records: record `k` has bytes `payload(k)` and shape
    /// `shape(k)`. Validates every record before writing anything.
    fn append_records<'a>(
        &self,
        n: usize,
        payload: impl Fn(usize) -> &'a [u8] + Sync,
        shape: impl Fn(usize) -> &'a [usize],
    ) -> Result<u64> {
        let size = self.dtype.size();
        let mut shapes = Vec::with_capacity(n * 16);
        // Record k's payload and where its shape record ends in `shapes`:
        // found once, since the engine looks at each record several times.
        let mut records = Vec::with_capacity(n);
        for k in 0..n {
            let dims = shape(k);
            let bytes = payload(k);
            let elements = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
            if elements == Some(0) && !self.engine.allows_empty_records() {
                return Err(Error::EmptyRecord {
                    position: k,
                    shape: dims.to_vec(),
                });
            }
            if elements.and_then(|e| e.checked_mul(size)) != Some(bytes.len()) {
                return Err(Error::BufferLength {
                    expected: elements.unwrap_or(usize::MAX),
                    got: bytes.len() / size,
                });
            }
            encode_shape(dims, &mut shapes);
            records.push((bytes, shapes.len()));
        }
        let shapes = &shapes;
        let records = &records;
        self.engine.append(2 * n, |p| {
            let k = p / 2;
            if p % 2 == 0 {
                records[k].0
            } else {
                let start = if k == 0 { 0 } else { records[k - 1].1 };
                &shapes[start..records[k].1]
            }
        })
    }

    /// Appends the records of a packed batch. Returns the first new index.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`], [`Error::InvalidBool`] or (a format-1
    /// store only) [`Error::EmptyRecord`] before anything is written;
    /// [`Error::Io`].
    pub fn append_batch(&self, batch: &DynRaggedBatch) -> Result<u64> {
        self.append_bytes(batch.dtype(), batch.values.as_bytes(), &batch.layout)
    }

    /// Appends records given as little-endian bytes of `dtype`, end to end,
    /// cut into records and shaped by `layout` — a packed batch built from
    /// buffers another language owns. Returns the first new index.
    ///
    /// ```
    /// use zrecord::{Codec, DType, DynRaggedStore, OpenOptions, RaggedLayout, Schema};
    /// # let dir = tempfile::tempdir()?;
    /// let store: DynRaggedStore = OpenOptions::new()
    ///     .create(dir.path().join("text"), &Schema::ragged(DType::U8), Codec::Zstd)?;
    /// let mut layout = RaggedLayout::new();
    /// layout.push(&[5])?;
    /// layout.push(&[3])?;
    /// store.append_bytes(DType::U8, b"helloyes", &layout)?;
    /// assert_eq!(store.gather_dyn(&[1])?.values().as_bytes(), b"yes");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`], [`Error::BufferLength`] when `bytes` does
    /// not hold exactly the layout's elements, [`Error::InvalidBool`] or (a
    /// format-1 store only) [`Error::EmptyRecord`], each before anything is
    /// written; [`Error::Io`].
    pub fn append_bytes(&self, dtype: DType, bytes: &[u8], layout: &RaggedLayout) -> Result<u64> {
        if dtype != self.dtype {
            return Err(Error::DTypeMismatch {
                store: self.dtype,
                got: dtype,
            });
        }
        let size = self.dtype.size();
        if layout.total().checked_mul(size) != Some(bytes.len()) {
            return Err(Error::BufferLength {
                expected: layout.total(),
                got: bytes.len() / size,
            });
        }
        validate_bytes(self.dtype, bytes)?;
        self.append_records(
            layout.len(),
            |k| {
                layout
                    .range(k)
                    .map_or(&[][..], |r| &bytes[r.start * size..r.end * size])
            },
            |k| layout.shape(k).unwrap_or(&[]),
        )
    }

    /// Reads records `indices` into `layout` and lets `fill(total, read)`
    /// size the values buffer and run `read` on its bytes.
    fn gather_with(
        &self,
        indices: &[u64],
        layout: &mut RaggedLayout,
        fill: impl FnOnce(usize, &(dyn Fn(&mut [u8]) -> Result<()> + Sync)) -> Result<()>,
    ) -> Result<()> {
        let snap = self.engine.snapshot();
        snap.check_indices(indices)?;
        layout.clear();
        let size = self.dtype.size() as u64;
        let mut total_bytes = 0u64;
        let reads = snap.ragged_reads(indices)?;
        for (k, (&index, loc)) in indices.iter().zip(&reads.payloads).enumerate() {
            let corrupt = |reason: String| Error::CorruptRecord {
                path: self.path().into(),
                index,
                reason,
            };
            let dims = layout.dims_mut();
            let first = dims.len();
            match snap.implied_rank(&reads, k) {
                Some(0) => {}
                // Checked against the payload's size below, like a read shape.
                Some(_) => dims.push(loc.logic_len as usize / size as usize),
                None => {
                    decode_shape(snap.ragged_shape(&reads, k, index)?, dims).map_err(corrupt)?
                }
            }
            let elements = dims[first..]
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
            if elements.and_then(|e| e.checked_mul(size)) != Some(u64::from(loc.logic_len)) {
                return Err(corrupt(format!(
                    "its shape {:?} does not match its {} payload bytes",
                    &dims[first..],
                    loc.logic_len
                )));
            }
            layout.finish_record(loc.logic_len as usize / size as usize);
            total_bytes = total_bytes.saturating_add(loc.logic_len.into());
        }
        if usize::try_from(total_bytes).is_ok_and(|b| b <= isize::MAX as usize) {
            fill(layout.total(), &|bytes| {
                snap.ragged_payloads(&reads, indices, bytes)
            })
        } else {
            Err(Error::BatchTooLarge {
                records: indices.len(),
                bytes: total_bytes,
            })
        }
    }

    /// Gathers records `indices` (any order, repeats allowed) into `out`,
    /// reusing its buffers.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] or [`Error::CorruptRecord`]; `out` is left
    /// empty after an error.
    pub fn gather_into(&self, indices: &[u64], out: &mut DynRaggedBatch) -> Result<()> {
        if out.values.dtype() != self.dtype {
            out.values = DynVec::new(self.dtype);
        }
        let DynRaggedBatch { values, layout } = out;
        let result = self.gather_with(indices, layout, |total, read| {
            values.fill_bytes(total, indices.len(), read)
        });
        if result.is_err() {
            values.resize(0);
            layout.clear();
        }
        result
    }

    /// Gathers records `indices` into a new packed batch.
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn gather_dyn(&self, indices: &[u64]) -> Result<DynRaggedBatch> {
        let mut out = DynRaggedBatch::new(self.dtype);
        self.gather_into(indices, &mut out)?;
        Ok(out)
    }

    /// Statistics of the records' lengths in elements (count, total, min,
    /// max, mean, p50/p90/p99), from the record table alone: one table entry
    /// per record, no payload or shape read, memory fixed however large the
    /// store. Quantiles are approximate (less than 1/16 high, see
    /// [`LengthStats`]); the rest is exact.
    ///
    /// ```
    /// use zrecord::{Codec, RaggedStore};
    /// # let dir = tempfile::tempdir()?;
    /// let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Zstd)?;
    /// tokens.append_slices(&[vec![1, 2, 3], vec![4], vec![5, 6]])?;
    /// let lengths = tokens.as_dyn().length_stats()?;
    /// assert_eq!((lengths.records, lengths.total), (3, 6));
    /// assert_eq!((lengths.min, lengths.p50, lengths.max), (1, 2, 3));
    /// assert_eq!(lengths.mean, 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] if a table entry is missing, claims more
    /// than the format allows, or holds a byte length that is not a whole
    /// number of elements.
    pub fn length_stats(&self) -> Result<LengthStats> {
        let snap = self.engine.snapshot();
        let size = self.dtype.size() as u64;
        let mut histogram = LengthHistogram::new();
        for index in 0..snap.len() {
            let loc = snap.loc(index, 0)?;
            snap.check_entry(index, loc, snap.is_raw())?;
            let bytes = u64::from(loc.logic_len);
            if bytes % size != 0 {
                return Err(Error::CorruptRecord {
                    path: self.path().into(),
                    index,
                    reason: format!(
                        "its {bytes} payload bytes are not a whole number of {}-byte {} elements",
                        size, self.dtype
                    ),
                });
            }
            histogram.add(bytes / size);
        }
        Ok(histogram.finish())
    }

    /// Trains a zstd dictionary on an evenly strided sample of the payloads,
    /// sized by `tier`, for a new `zstd_dict` store of this data.
    ///
    /// # Errors
    /// [`Error::Dictionary`] when the store is too small to train on.
    pub fn train_dict(&self, tier: DictTier) -> Result<Dictionary> {
        let stats = self.stats()?;
        let mean = stats.logical_bytes / stats.records.max(1);
        let indices = training_indices(self.len(), mean, tier);
        let batch = self.gather_dyn(&indices)?;
        let size = self.dtype.size();
        let sizes: Vec<usize> = batch.layout.lengths().map(|n| n * size).collect();
        train_from_continuous(batch.values.as_bytes(), &sizes, tier)
    }
}

/// A ragged store of `T` records: each record has its own shape (any rank,
/// scalars included), restored exactly on read.
///
/// ```
/// use zrecord::{Codec, RaggedStore};
/// # let dir = tempfile::tempdir()?;
/// let tokens = RaggedStore::<i32>::create(dir.path().join("tokens"), Codec::Zstd)?;
/// tokens.append_slices(&[vec![3, 1, 4], vec![1], vec![5, 9, 2, 6]])?;
/// tokens.append(&[ndarray::arr2(&[[1, 2], [3, 4]]).into_dyn()])?;  // any rank
/// let batch = tokens.gather(&[2, 0, 3])?;        // packed: one buffer, offsets, shapes
/// assert_eq!(batch.values(), &[5, 9, 2, 6, 3, 1, 4, 1, 2, 3, 4]);
/// assert_eq!(batch.layout().offsets(), &[0, 4, 7, 11]);
/// assert_eq!(batch.get(2).unwrap().shape(), &[2, 2]);
/// assert_eq!(tokens.get(1)?.into_raw_vec_and_offset().0, vec![1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RaggedStore<T: Element> {
    inner: DynRaggedStore,
    _element: PhantomData<fn() -> T>,
}

impl<T: Element> RaggedStore<T> {
    /// Creates an empty store at `path` (which must not exist, or be an
    /// empty folder) for records of `T` of any shape.
    /// [`OpenOptions::create`] takes other settings and locations.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if `path` holds anything; [`Error::Io`] when
    /// a file cannot be written (nothing is left behind).
    pub fn create(path: impl AsRef<Path>, codec: Codec) -> Result<Self> {
        OpenOptions::new().create(path.as_ref(), &Schema::ragged(T::DTYPE), codec)
    }

    /// Opens the store at `path`, writable, which must hold ragged `T`
    /// records. [`OpenOptions::open`] opens read-only and with other
    /// settings.
    ///
    /// # Errors
    /// As [`OpenOptions::open`]: [`Error::DTypeMismatch`] if it holds
    /// another dtype, [`Error::KindMismatch`] for a dense store,
    /// [`Error::StoreBusy`] when another handle has it open, ….
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open(path.as_ref())
    }

    /// The dtype-tagged store.
    pub fn into_dyn(self) -> DynRaggedStore {
        self.inner
    }

    /// The dtype-tagged store, borrowed.
    pub fn as_dyn(&self) -> &DynRaggedStore {
        &self.inner
    }

    fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    fn engine_mut(&mut self) -> &mut Engine {
        &mut self.inner.engine
    }

    store_methods!();

    /// Appends arrays of any rank and layout, one record each, zero-element
    /// ones included (shape `[0]`, `[3, 0]`, ...). Returns the first new index.
    ///
    /// # Errors
    /// [`Error::EmptyRecord`] for a zero-element record in a format-1 store,
    /// before anything is written; [`Error::Io`].
    pub fn append<S, D>(&self, records: &[ArrayBase<S, D>]) -> Result<u64>
    where
        S: Data<Elem = T>,
        D: Dimension,
    {
        let values: Vec<Cow<'_, [T]>> = records
            .iter()
            .map(|r| match r.as_slice() {
                Some(v) => Cow::Borrowed(v),
                None => Cow::Owned(r.iter().copied().collect()),
            })
            .collect();
        self.inner.append_records(
            records.len(),
            |k| as_bytes(&values[k]),
            |k| records[k].shape(),
        )
    }

    /// Appends one-dimensional records (token sequences, byte strings).
    ///
    /// # Errors
    /// As [`append`](Self::append).
    pub fn append_slices<R: AsRef<[T]> + Sync>(&self, records: &[R]) -> Result<u64> {
        let shapes: Vec<[usize; 1]> = records.iter().map(|r| [r.as_ref().len()]).collect();
        self.inner.append_records(
            records.len(),
            |k| as_bytes(records[k].as_ref()),
            |k| &shapes[k],
        )
    }

    /// Appends the records of a packed batch.
    ///
    /// # Errors
    /// As [`append`](Self::append).
    pub fn append_batch(&self, batch: &RaggedBatch<T>) -> Result<u64> {
        let layout = &batch.layout;
        self.inner.append_records(
            layout.len(),
            |k| {
                layout
                    .range(k)
                    .and_then(|r| batch.values.get(r))
                    .map_or(&[][..], as_bytes)
            },
            |k| layout.shape(k).unwrap_or(&[]),
        )
    }

    /// Gathers records `indices` (any order, repeats allowed) into `out` in
    /// packed form, reusing its buffers: nothing is allocated per record.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] or [`Error::CorruptRecord`]; `out` is left
    /// empty after an error.
    pub fn gather_into(&self, indices: &[u64], out: &mut RaggedBatch<T>) -> Result<()> {
        let RaggedBatch { values, layout } = out;
        let result = self.inner.gather_with(indices, layout, |total, read| {
            try_resize(values, total, indices.len())?;
            fill_bytes(values, read)
        });
        if result.is_err() {
            out.clear();
        }
        result
    }

    /// Gathers records `indices` into a new packed batch.
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn gather(&self, indices: &[u64]) -> Result<RaggedBatch<T>> {
        let mut out = RaggedBatch::new();
        self.gather_into(indices, &mut out)?;
        Ok(out)
    }

    /// Gathers records `indices` as a list of owned arrays.
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn gather_arrays(&self, indices: &[u64]) -> Result<Vec<ArrayD<T>>> {
        Ok(self.gather(indices)?.to_arrays())
    }

    /// Record `index` as an array of its own shape.
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn get(&self, index: u64) -> Result<ArrayD<T>> {
        self.gather_arrays(&[index])?
            .pop()
            .ok_or(Error::IndexOutOfRange {
                index,
                len: self.len(),
            })
    }

    /// Statistics of the records' lengths in elements, from the record table
    /// alone; see [`DynRaggedStore::length_stats`].
    ///
    /// ```
    /// use zrecord::{Codec, RaggedStore};
    /// # let dir = tempfile::tempdir()?;
    /// let tokens = RaggedStore::<i64>::create(dir.path().join("tokens"), Codec::Zstd)?;
    /// tokens.append_slices(&[vec![1, 2, 3], vec![4], vec![5, 6]])?;
    /// let lengths = tokens.length_stats()?;
    /// assert_eq!((lengths.min, lengths.max, lengths.total), (1, 3, 6));
    /// assert_eq!(lengths.mean, 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`DynRaggedStore::length_stats`].
    pub fn length_stats(&self) -> Result<LengthStats> {
        self.inner.length_stats()
    }

    /// Trains a dictionary on a strided sample of the records; see
    /// [`DynRaggedStore::train_dict`].
    ///
    /// # Errors
    /// As [`DynRaggedStore::train_dict`].
    pub fn train_dict(&self, tier: DictTier) -> Result<Dictionary> {
        self.inner.train_dict(tier)
    }
}
