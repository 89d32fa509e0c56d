//! [`AnyStore`]: open a store without knowing its kind.

use std::path::Path;

use crate::engine::Engine;
use crate::format::TypeIdentity;
use crate::{DType, DynDenseStore, DynRaggedStore, OpenOptions, Result, StoreKind};

/// A store of either kind, opened by [`AnyStore::open`] — for tools and
/// loaders that take whatever store a path holds.
///
/// ```
/// use zrecord::{AnyStore, Codec, DType, RaggedStore, StoreKind};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("t");
/// RaggedStore::<i64>::create(&path, Codec::Raw)?;
/// let store = AnyStore::open(&path)?;
/// assert_eq!((store.kind(), store.dtype()), (StoreKind::Ragged, DType::I64));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub enum AnyStore {
    /// A dense store.
    Dense(DynDenseStore),
    /// A ragged store.
    Ragged(DynRaggedStore),
}

impl AnyStore {
    /// Opens the store at `path`, whichever kind it is.
    ///
    /// # Errors
    /// As [`DynDenseStore::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<AnyStore> {
        Self::open_with(path, OpenOptions::new())
    }

    /// Opens the store at `path` read-only, whichever kind it is, sharing it
    /// with other read-only handles (see [`OpenOptions`]).
    ///
    /// # Errors
    /// As [`DynDenseStore::open_read_only`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<AnyStore> {
        Self::open_with(path, OpenOptions::new().read_only(true))
    }

    /// Opens the store at `path` as `options` say, whichever kind it is.
    ///
    /// # Errors
    /// As [`DynDenseStore::open_with`].
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<AnyStore> {
        let engine = Engine::open(path.as_ref(), options)?;
        Ok(match engine.identity() {
            TypeIdentity::Dense { .. } => AnyStore::Dense(DynDenseStore::from_engine(engine)?),
            TypeIdentity::Ragged { .. } => AnyStore::Ragged(DynRaggedStore::from_engine(engine)?),
        })
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

    /// The store's on-disk format version (1 or 2).
    pub fn format_version(&self) -> u8 {
        match self {
            AnyStore::Dense(s) => s.format_version(),
            AnyStore::Ragged(s) => s.format_version(),
        }
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        match self {
            AnyStore::Dense(s) => s.len(),
            AnyStore::Ragged(s) => s.len(),
        }
    }

    /// Whether the store holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
