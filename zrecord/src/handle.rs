//! [`StoreHandle`]: the handle types [`OpenOptions`](crate::OpenOptions)
//! opens and creates, and how each takes a store of either kind.

use std::path::Path;

use crate::{
    AnyStore, DenseStore, DynDenseStore, DynRaggedStore, Element, Error, RaggedStore, Result,
    Schema, StoreKind,
};

/// A store handle: [`DenseStore`], [`RaggedStore`], [`DynDenseStore`],
/// [`DynRaggedStore`] or [`AnyStore`] — what
/// [`OpenOptions::open`](crate::OpenOptions::open) and
/// [`OpenOptions::create`](crate::OpenOptions::create) return. Sealed: the
/// store decides which handles exist.
pub trait StoreHandle: sealed::Handle {}

pub(crate) mod sealed {
    use super::*;

    /// How a handle type takes an opened store, and which schemas it holds.
    pub trait Handle: Sized {
        /// The handle over `store`, or why this type cannot hold it.
        fn from_any(store: AnyStore) -> Result<Self>;

        /// Whether a new store of `schema` at `path` fits this type: checked
        /// before anything is written.
        fn accepts(schema: &Schema, path: &Path) -> Result<()>;
    }
}

fn kind_mismatch(path: &Path, expected: StoreKind, found: StoreKind) -> Error {
    Error::KindMismatch {
        path: path.into(),
        expected,
        found,
    }
}

fn dtype_check<T: Element>(schema: &Schema) -> Result<()> {
    if schema.dtype() == T::DTYPE {
        return Ok(());
    }
    Err(Error::DTypeMismatch {
        store: schema.dtype(),
        got: T::DTYPE,
    })
}

impl StoreHandle for AnyStore {}
impl sealed::Handle for AnyStore {
    fn from_any(store: AnyStore) -> Result<Self> {
        Ok(store)
    }

    fn accepts(_: &Schema, _: &Path) -> Result<()> {
        Ok(())
    }
}

impl StoreHandle for DynDenseStore {}
impl sealed::Handle for DynDenseStore {
    fn from_any(store: AnyStore) -> Result<Self> {
        match store {
            AnyStore::Dense(store) => Ok(store),
            AnyStore::Ragged(store) => Err(kind_mismatch(
                store.path(),
                StoreKind::Dense,
                StoreKind::Ragged,
            )),
        }
    }

    fn accepts(schema: &Schema, path: &Path) -> Result<()> {
        match schema.kind() {
            StoreKind::Dense => Ok(()),
            found => Err(kind_mismatch(path, StoreKind::Dense, found)),
        }
    }
}

impl StoreHandle for DynRaggedStore {}
impl sealed::Handle for DynRaggedStore {
    fn from_any(store: AnyStore) -> Result<Self> {
        match store {
            AnyStore::Ragged(store) => Ok(store),
            AnyStore::Dense(store) => Err(kind_mismatch(
                store.path(),
                StoreKind::Ragged,
                StoreKind::Dense,
            )),
        }
    }

    fn accepts(schema: &Schema, path: &Path) -> Result<()> {
        match schema.kind() {
            StoreKind::Ragged => Ok(()),
            found => Err(kind_mismatch(path, StoreKind::Ragged, found)),
        }
    }
}

impl<T: Element> StoreHandle for DenseStore<T> {}
impl<T: Element> sealed::Handle for DenseStore<T> {
    fn from_any(store: AnyStore) -> Result<Self> {
        DynDenseStore::from_any(store)?.typed()
    }

    fn accepts(schema: &Schema, path: &Path) -> Result<()> {
        DynDenseStore::accepts(schema, path)?;
        dtype_check::<T>(schema)
    }
}

impl<T: Element> StoreHandle for RaggedStore<T> {}
impl<T: Element> sealed::Handle for RaggedStore<T> {
    fn from_any(store: AnyStore) -> Result<Self> {
        DynRaggedStore::from_any(store)?.typed()
    }

    fn accepts(schema: &Schema, path: &Path) -> Result<()> {
        DynRaggedStore::accepts(schema, path)?;
        dtype_check::<T>(schema)
    }
}
