//! Dense stores: every record is one array of the store's dtype and item shape.

use std::marker::PhantomData;
use std::path::Path;

use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

use crate::bytes::{as_bytes, batch_len, fill_bytes, try_resize};
use crate::codec::train_from_continuous;
use crate::common::{store_methods, training_indices};
use crate::dtype::validate_bytes;
use crate::engine::Engine;
use crate::format::TypeIdentity;
use crate::{
    Codec, DType, DictTier, Dictionary, DynVec, Element, Error, OpenOptions, Result, Schema,
    StoreKind,
};

/// A dense store whose dtype is known at run time: the API for code that
/// handles many streams of different dtypes at once.
///
/// Its typed twin is [`DenseStore`]; convert with [`DynDenseStore::typed`]
/// and [`DenseStore::into_dyn`].
///
/// ```
/// use zrecord::{Codec, DType, DynDenseStore, DynVec, OpenOptions, Schema};
/// # let dir = tempfile::tempdir()?;
/// let schema = Schema::dense(DType::U16, &[2]);
/// let store: DynDenseStore = OpenOptions::new().create(dir.path().join("pixels"), &schema, Codec::Raw)?;
/// store.append_bytes(DType::U16, &[1, 0, 2, 0, 3, 0, 4, 0])?; // two records of [u16; 2]
/// let mut batch = DynVec::new(DType::U16);
/// store.gather_into(&[1, 0], &mut batch)?;
/// assert_eq!(batch.as_slice::<u16>(), Some(&[3u16, 4, 1, 2][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DynDenseStore {
    engine: Engine,
    dtype: DType,
    item_shape: Vec<usize>,
    /// Elements per record.
    record_len: usize,
}

impl DynDenseStore {
    pub(crate) fn from_engine(engine: Engine) -> Result<Self> {
        match engine.identity().clone() {
            TypeIdentity::Dense { dtype, item_shape } => {
                let record_len = item_shape.iter().product();
                Ok(DynDenseStore {
                    engine,
                    dtype,
                    item_shape,
                    record_len,
                })
            }
            TypeIdentity::Ragged { .. } => Err(Error::KindMismatch {
                path: engine.dir().into(),
                expected: StoreKind::Dense,
                found: StoreKind::Ragged,
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

    /// The shape of every record.
    pub fn item_shape(&self) -> &[usize] {
        &self.item_shape
    }

    /// Elements per record.
    pub fn record_len(&self) -> usize {
        self.record_len
    }

    /// Bytes per record.
    pub fn record_bytes(&self) -> usize {
        self.record_len * self.dtype.size()
    }

    /// The typed store, if its dtype is `T`'s.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`], handing nothing back: reopen to retry.
    pub fn typed<T: Element>(self) -> Result<DenseStore<T>> {
        if self.dtype != T::DTYPE {
            return Err(Error::DTypeMismatch {
                store: self.dtype,
                got: T::DTYPE,
            });
        }
        Ok(DenseStore {
            inner: self,
            _element: PhantomData,
        })
    }

    /// Appends whole records given as little-endian bytes of `dtype`
    /// (`bytes.len()` a multiple of [`record_bytes`](Self::record_bytes)).
    /// Returns the index of the first new record.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`], [`Error::PartialRecord`] or
    /// [`Error::InvalidBool`], each before anything is written.
    pub fn append_bytes(&self, dtype: DType, bytes: &[u8]) -> Result<u64> {
        if dtype != self.dtype {
            return Err(Error::DTypeMismatch {
                store: self.dtype,
                got: dtype,
            });
        }
        let width = self.record_bytes();
        if !bytes.len().is_multiple_of(width) {
            return Err(Error::PartialRecord {
                record_len: width,
                got: bytes.len(),
            });
        }
        validate_bytes(dtype, bytes)?;
        self.engine
            .append(bytes.len() / width, |i| &bytes[i * width..(i + 1) * width])
    }

    /// Appends whole records from a flat slice of `T`.
    ///
    /// # Errors
    /// As [`append_bytes`](Self::append_bytes).
    pub fn append<T: Element>(&self, values: &[T]) -> Result<u64> {
        self.append_bytes(T::DTYPE, as_bytes(values))
    }

    /// Gathers records `indices` (any order, repeats allowed) as bytes into
    /// `out`, which is exactly `indices.len() * record_bytes()` long.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`], [`Error::BufferLength`], or
    /// [`Error::CorruptRecord`] for a record that fails to decode.
    pub fn gather_bytes(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let expected = batch_len(indices.len(), self.record_bytes(), 1)?;
        if out.len() != expected {
            return Err(Error::BufferLength {
                expected,
                got: out.len(),
            });
        }
        self.engine.snapshot().gather_fixed(indices, out)
    }

    /// Gathers records `indices` into `out`, resizing it to
    /// `indices.len() * record_len()` elements and reusing its allocation.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] if `out` holds another dtype; otherwise as
    /// [`gather_bytes`](Self::gather_bytes).
    pub fn gather_into(&self, indices: &[u64], out: &mut DynVec) -> Result<()> {
        if out.dtype() != self.dtype {
            return Err(Error::DTypeMismatch {
                store: self.dtype,
                got: out.dtype(),
            });
        }
        let snap = self.engine.snapshot();
        snap.check_indices(indices)?;
        let len = batch_len(indices.len(), self.record_len, self.dtype.size())?;
        out.fill_bytes(len, indices.len(), |bytes| {
            snap.gather_fixed(indices, bytes)
        })
    }

    /// Gathers records `indices` into a new [`DynVec`].
    ///
    /// # Errors
    /// As [`gather_bytes`](Self::gather_bytes).
    pub fn gather_dyn(&self, indices: &[u64]) -> Result<DynVec> {
        let mut out = DynVec::new(self.dtype);
        self.gather_into(indices, &mut out)?;
        Ok(out)
    }

    /// Trains a zstd dictionary on an evenly strided sample of the records,
    /// sized by `tier`, for a new `zstd_dict` store of this data.
    ///
    /// # Errors
    /// [`Error::Dictionary`] when the store is too small to train on.
    pub fn train_dict(&self, tier: DictTier) -> Result<Dictionary> {
        let width = self.record_bytes();
        let indices = training_indices(self.len(), width as u64, tier);
        let mut sample = vec![0u8; indices.len() * width];
        self.gather_bytes(&indices, &mut sample)?;
        train_from_continuous(&sample, &vec![width; indices.len()], tier)
    }
}

/// A dense store of `T` records: every record is one array of the store's
/// item shape.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("images");
/// let store = DenseStore::<f32>::create(&path, &[2, 3], Codec::Zstd)?;
/// let first = store.append(&[0.0; 12])?;              // two 2×3 records
/// store.append_array(&ndarray::Array3::<f32>::ones((4, 2, 3)))?;
/// let batch = store.gather(&[5, 0, 5])?;               // any order, repeats allowed
/// assert_eq!((first, batch.shape()), (0, &[3, 2, 3][..]));
/// assert_eq!(batch[[0, 1, 2]], 1.0);
/// drop(store);
/// assert!(DenseStore::<u8>::open(&path).is_err());    // the store holds f32
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DenseStore<T: Element> {
    inner: DynDenseStore,
    _element: PhantomData<fn() -> T>,
}

impl<T: Element> DenseStore<T> {
    /// Creates an empty store at `path` (which must not exist, or be an
    /// empty folder) for records of shape `item_shape` (`&[]` for scalars).
    /// [`OpenOptions::create`] takes other settings and locations.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if `path` holds anything;
    /// [`Error::InvalidArgument`] for a zero-element or over-2-GiB item shape;
    /// [`Error::Io`] when a file cannot be written (nothing is left behind).
    pub fn create(path: impl AsRef<Path>, item_shape: &[usize], codec: Codec) -> Result<Self> {
        OpenOptions::new().create(path.as_ref(), &Schema::dense(T::DTYPE, item_shape), codec)
    }

    /// Opens the store at `path`, writable, which must hold dense `T`
    /// records. [`OpenOptions::open`] opens read-only and with other
    /// settings.
    ///
    /// # Errors
    /// As [`OpenOptions::open`]: [`Error::DTypeMismatch`] if it holds
    /// another dtype, [`Error::KindMismatch`] for a ragged store,
    /// [`Error::StoreBusy`] when another handle has it open, ….
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open(path.as_ref())
    }

    /// The dtype-tagged store.
    pub fn into_dyn(self) -> DynDenseStore {
        self.inner
    }

    /// The dtype-tagged store, borrowed.
    pub fn as_dyn(&self) -> &DynDenseStore {
        &self.inner
    }

    fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    fn engine_mut(&mut self) -> &mut Engine {
        &mut self.inner.engine
    }

    store_methods!();

    /// The shape of every record.
    pub fn item_shape(&self) -> &[usize] {
        &self.inner.item_shape
    }

    /// Elements per record.
    pub fn record_len(&self) -> usize {
        self.inner.record_len
    }

    /// Appends whole records from a flat slice (`values.len()` a multiple of
    /// [`record_len`](Self::record_len)). Returns the first new index.
    ///
    /// # Errors
    /// [`Error::PartialRecord`] before anything is written; [`Error::Io`].
    pub fn append(&self, values: &[T]) -> Result<u64> {
        self.inner.append(values)
    }

    /// Appends the records of an array shaped `(n, *item_shape)`; axis 0
    /// indexes records. Any memory layout is accepted.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] before anything is written; [`Error::Io`].
    pub fn append_array<S, D>(&self, records: &ArrayBase<S, D>) -> Result<u64>
    where
        S: Data<Elem = T>,
        D: Dimension,
    {
        let shape = records.shape();
        if shape.is_empty() || shape[1..] != *self.item_shape() {
            let mut expected = vec![shape.first().copied().unwrap_or(0)];
            expected.extend_from_slice(self.item_shape());
            return Err(Error::ShapeMismatch {
                expected,
                got: shape.to_vec(),
            });
        }
        match records.as_slice() {
            Some(values) => self.append(values),
            None => self.append(&records.iter().copied().collect::<Vec<T>>()),
        }
    }

    /// Gathers records `indices` (any order, repeats allowed) into `out`,
    /// which is exactly `indices.len() * record_len()` long. Decodes in
    /// parallel straight into `out` for large batches.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] or [`Error::BufferLength`] before anything
    /// is read; [`Error::CorruptRecord`] for a record that fails to decode.
    pub fn gather_into(&self, indices: &[u64], out: &mut [T]) -> Result<()> {
        let expected = batch_len(indices.len(), self.record_len(), size_of::<T>())?;
        if out.len() != expected {
            return Err(Error::BufferLength {
                expected,
                got: out.len(),
            });
        }
        let snap = self.engine().snapshot();
        fill_bytes(out, |bytes| snap.gather_fixed(indices, bytes))
    }

    /// Gathers records `indices` into a new array shaped `(indices.len(), *item_shape)`.
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn gather(&self, indices: &[u64]) -> Result<ArrayD<T>> {
        self.engine().snapshot().check_indices(indices)?;
        let mut values = Vec::new();
        let len = batch_len(indices.len(), self.record_len(), size_of::<T>())?;
        try_resize(&mut values, len, indices.len())?;
        self.gather_into(indices, &mut values)?;
        let mut shape = vec![indices.len()];
        shape.extend_from_slice(self.item_shape());
        ArrayD::from_shape_vec(IxDyn(&shape), values)
            .map_err(|e| Error::InvalidArgument(format!("batch shape {shape:?}: {e}")))
    }

    /// Record `index`, shaped `item_shape`.
    ///
    /// # Errors
    /// As [`gather_into`](Self::gather_into).
    pub fn get(&self, index: u64) -> Result<ArrayD<T>> {
        let batch = self.gather(&[index])?;
        batch
            .into_shape_with_order(IxDyn(self.item_shape()))
            .map_err(|e| {
                Error::InvalidArgument(format!("record shape {:?}: {e}", self.item_shape()))
            })
    }

    /// Trains a dictionary on a strided sample of the records; see
    /// [`DynDenseStore::train_dict`].
    ///
    /// # Errors
    /// As [`DynDenseStore::train_dict`].
    pub fn train_dict(&self, tier: DictTier) -> Result<Dictionary> {
        self.inner.train_dict(tier)
    }
}
