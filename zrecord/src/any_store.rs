//! [`AnyStore`]: a store of either kind, for tools that take whatever store
//! a path holds — with the operations every store has, so they need not ask
//! which kind it is.

use std::path::Path;

use crate::common::store_methods;
use crate::engine::Engine;
use crate::format::TypeIdentity;
use crate::{
    DType, DictTier, Dictionary, DynDenseStore, DynRaggedBatch, DynRaggedStore, DynVec, Error,
    OpenOptions, Result, StoreKind,
};

/// A store of either kind, opened by [`AnyStore::open`] or made by
/// [`OpenOptions::create`] from a [`Schema`] — for tools and loaders that
/// take whatever store a path holds.
///
/// It has every operation both kinds share (length, stats, verify, compact,
/// dictionaries, gather and append of an [`AnyBatch`]); match on the variants
/// only where the kinds really differ.
///
/// ```
/// use zrecord::{AnyBatch, AnyStore, Codec, DType, OpenOptions, RaggedStore, StoreKind};
/// # let dir = tempfile::tempdir()?;
/// # let (path, copy) = (dir.path().join("t"), dir.path().join("copy"));
/// let tokens = RaggedStore::<i64>::create(&path, Codec::Raw)?;
/// tokens.append_slices(&[vec![1, 2], vec![3]])?;
/// drop(tokens);
///
/// let store = AnyStore::open(&path)?;
/// assert_eq!((store.kind(), store.dtype(), store.len()), (StoreKind::Ragged, DType::I64, 2));
///
/// // Copy it, whatever it holds: same schema, another codec.
/// let out: AnyStore = OpenOptions::new().create(&copy, &store.schema(), Codec::Zstd)?;
/// let mut batch = store.new_batch();
/// store.gather_into(&[1, 0], &mut batch)?;
/// out.append(&batch)?;
/// assert_eq!(out.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub enum AnyStore {
    /// A dense store.
    Dense(DynDenseStore),
    /// A ragged store.
    Ragged(DynRaggedStore),
}

/// What a store's records are — kind, dtype and, for a dense store, the
/// shape of every record — fixed when the store is created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schema {
    /// Every record is one array of `dtype` shaped `item_shape`.
    Dense {
        /// The element type.
        dtype: DType,
        /// The shape of every record (`[]` for scalars).
        item_shape: Vec<usize>,
    },
    /// Every record is an array of `dtype` with its own shape.
    Ragged {
        /// The element type.
        dtype: DType,
    },
}

impl Schema {
    /// Dense records of `dtype`, every one shaped `item_shape` (`&[]` for scalars).
    pub fn dense(dtype: DType, item_shape: &[usize]) -> Schema {
        Schema::Dense {
            dtype,
            item_shape: item_shape.to_vec(),
        }
    }

    /// Ragged records of `dtype`, each of its own shape.
    pub fn ragged(dtype: DType) -> Schema {
        Schema::Ragged { dtype }
    }

    /// The type identity a new store of this schema records.
    pub(crate) fn identity(&self) -> TypeIdentity {
        match self {
            Schema::Dense { dtype, item_shape } => TypeIdentity::Dense {
                dtype: *dtype,
                item_shape: item_shape.clone(),
            },
            Schema::Ragged { dtype } => TypeIdentity::Ragged { dtype: *dtype },
        }
    }

    /// Dense or ragged.
    pub fn kind(&self) -> StoreKind {
        match self {
            Schema::Dense { .. } => StoreKind::Dense,
            Schema::Ragged { .. } => StoreKind::Ragged,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Schema::Dense { dtype, .. } | Schema::Ragged { dtype } => *dtype,
        }
    }

    /// The shape of every record of a dense store; `None` for a ragged one.
    pub fn item_shape(&self) -> Option<&[usize]> {
        match self {
            Schema::Dense { item_shape, .. } => Some(item_shape),
            Schema::Ragged { .. } => None,
        }
    }
}

/// Records gathered from, or to append to, an [`AnyStore`]: dense records
/// end to end, or a packed ragged batch.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyBatch {
    /// Dense records, row-major, one after another.
    Dense(DynVec),
    /// Ragged records in packed form.
    Ragged(DynRaggedBatch),
}

impl AnyBatch {
    /// The elements of every record, end to end, as little-endian bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            AnyBatch::Dense(values) => values.as_bytes(),
            AnyBatch::Ragged(batch) => batch.values().as_bytes(),
        }
    }

    fn kind(&self) -> StoreKind {
        match self {
            AnyBatch::Dense(_) => StoreKind::Dense,
            AnyBatch::Ragged(_) => StoreKind::Ragged,
        }
    }
}

impl AnyStore {
    /// Opens the store at `path`, writable, whichever kind it is.
    /// [`OpenOptions::open`] opens read-only, with other settings, and in
    /// other storage; [`OpenOptions::create`] makes a store of a [`Schema`].
    ///
    /// # Errors
    /// As [`OpenOptions::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<AnyStore> {
        OpenOptions::new().open(path.as_ref())
    }

    /// The handle over an opened engine, of the kind it holds.
    pub(crate) fn from_engine(engine: Engine) -> Result<AnyStore> {
        Ok(match engine.identity() {
            TypeIdentity::Dense { .. } => AnyStore::Dense(DynDenseStore::from_engine(engine)?),
            TypeIdentity::Ragged { .. } => AnyStore::Ragged(DynRaggedStore::from_engine(engine)?),
        })
    }

    fn engine(&self) -> &Engine {
        match self {
            AnyStore::Dense(s) => s.engine(),
            AnyStore::Ragged(s) => s.engine(),
        }
    }

    fn engine_mut(&mut self) -> &mut Engine {
        match self {
            AnyStore::Dense(s) => s.engine_mut(),
            AnyStore::Ragged(s) => s.engine_mut(),
        }
    }

    store_methods!();

    /// What the records are: kind, dtype and item shape.
    pub fn schema(&self) -> Schema {
        match self {
            AnyStore::Dense(s) => Schema::Dense {
                dtype: s.dtype(),
                item_shape: s.item_shape().to_vec(),
            },
            AnyStore::Ragged(s) => Schema::Ragged { dtype: s.dtype() },
        }
    }

    /// Dense or ragged.
    pub fn kind(&self) -> StoreKind {
        match self {
            AnyStore::Dense(_) => StoreKind::Dense,
            AnyStore::Ragged(_) => StoreKind::Ragged,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            AnyStore::Dense(s) => s.dtype(),
            AnyStore::Ragged(s) => s.dtype(),
        }
    }

    /// The dense store.
    ///
    /// # Errors
    /// [`Error::KindMismatch`] for a ragged store.
    pub fn as_dense(&self) -> Result<&DynDenseStore> {
        match self {
            AnyStore::Dense(s) => Ok(s),
            AnyStore::Ragged(_) => Err(self.kind_mismatch(StoreKind::Dense)),
        }
    }

    /// The ragged store.
    ///
    /// # Errors
    /// [`Error::KindMismatch`] for a dense store.
    pub fn as_ragged(&self) -> Result<&DynRaggedStore> {
        match self {
            AnyStore::Ragged(s) => Ok(s),
            AnyStore::Dense(_) => Err(self.kind_mismatch(StoreKind::Ragged)),
        }
    }

    fn kind_mismatch(&self, expected: StoreKind) -> Error {
        Error::KindMismatch {
            path: self.path().into(),
            expected,
            found: self.kind(),
        }
    }

    /// Trains a zstd dictionary on a strided sample of the records; see
    /// [`DynDenseStore::train_dict`].
    ///
    /// # Errors
    /// [`Error::Dictionary`] when the store is too small to train on.
    pub fn train_dict(&self, tier: DictTier) -> Result<Dictionary> {
        match self {
            AnyStore::Dense(s) => s.train_dict(tier),
            AnyStore::Ragged(s) => s.train_dict(tier),
        }
    }

    /// An empty batch of this store's kind and dtype, for
    /// [`gather_into`](Self::gather_into).
    pub fn new_batch(&self) -> AnyBatch {
        match self {
            AnyStore::Dense(s) => AnyBatch::Dense(DynVec::new(s.dtype())),
            AnyStore::Ragged(s) => AnyBatch::Ragged(DynRaggedBatch::new(s.dtype())),
        }
    }

    /// Gathers records `indices` (any order, repeats allowed) into `out`,
    /// reusing its buffers; a batch of another kind or dtype is replaced by
    /// one of this store's.
    ///
    /// # Errors
    /// As [`DynDenseStore::gather_into`] and [`DynRaggedStore::gather_into`].
    pub fn gather_into(&self, indices: &[u64], out: &mut AnyBatch) -> Result<()> {
        match (self, out) {
            (AnyStore::Dense(s), AnyBatch::Dense(values)) if values.dtype() == s.dtype() => {
                s.gather_into(indices, values)
            }
            (AnyStore::Ragged(s), AnyBatch::Ragged(batch)) => s.gather_into(indices, batch),
            (_, out) => {
                *out = self.new_batch();
                self.gather_into(indices, out)
            }
        }
    }

    /// Appends the records of `batch`. Returns the index of the first.
    ///
    /// # Errors
    /// [`Error::KindMismatch`] for a batch of the other kind; otherwise as
    /// [`DynDenseStore::append_bytes`] and [`DynRaggedStore::append_batch`],
    /// each before anything is written.
    pub fn append(&self, batch: &AnyBatch) -> Result<u64> {
        match (self, batch) {
            (AnyStore::Dense(s), AnyBatch::Dense(values)) => {
                s.append_bytes(values.dtype(), values.as_bytes())
            }
            (AnyStore::Ragged(s), AnyBatch::Ragged(batch)) => s.append_batch(batch),
            (_, batch) => Err(Error::KindMismatch {
                path: self.path().into(),
                expected: batch.kind(),
                found: self.kind(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Codec, RaggedBatch};

    #[test]
    fn the_wrong_kind_is_a_typed_error_not_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        let dense = Schema::Dense {
            dtype: DType::U8,
            item_shape: vec![2],
        };
        let store: AnyStore = OpenOptions::new()
            .create(dir.path().join("d"), &dense, Codec::Raw)
            .unwrap();
        assert_eq!((store.schema(), store.len()), (dense, 0));
        let ragged = AnyBatch::Ragged(RaggedBatch::<u8>::new().into());
        let kind = |r: Result<_>| {
            matches!(
                r,
                Err(Error::KindMismatch {
                    expected: StoreKind::Ragged,
                    found: StoreKind::Dense,
                    ..
                })
            )
        };
        assert!(kind(store.append(&ragged).map(drop)));
        assert!(kind(store.as_ragged().map(drop)));
        assert_eq!(store.len(), 0);

        store
            .append(&AnyBatch::Dense(vec![1u8, 2, 3, 4].into()))
            .unwrap();
        let mut out = ragged; // replaced by a dense batch of the store's dtype
        store.gather_into(&[1, 0], &mut out).unwrap();
        assert_eq!(out, AnyBatch::Dense(vec![3u8, 4, 1, 2].into()));
    }
}
