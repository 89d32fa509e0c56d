//! [`Stream`]: a store the loader gathers from, shared between loaders.

use std::sync::Arc;

use zrecord::{
    AnyShards, AnyStore, DType, DenseShards, DenseStore, DynDenseStore, DynRaggedStore, Element,
    RaggedShards, RaggedStore, StoreKind,
};

use crate::column::Column;

/// A store — or a sharded dataset's stream — the loader gathers from. Cheap
/// to clone: the stores are shared, so a training and a validation loader
/// can read the same stores.
///
/// Made with [`Stream::open`] (read-only, the way to share a store between
/// processes), or with `From` any store type, an `Arc` of a dtype-tagged
/// one, or a [`zrecord::Dataset`]'s stream (its shards read as one index
/// space; [`LoaderBuilder::dataset`](crate::LoaderBuilder::dataset) adds
/// them all).
#[derive(Clone)]
pub enum Stream {
    /// Dense records: batches are one `(B, *item_shape)` buffer.
    Dense(Arc<DenseShards>),
    /// Ragged records: batches are packed ([`zrecord::DynRaggedBatch`]).
    Ragged(Arc<RaggedShards>),
}

impl Stream {
    /// Opens the store at `path`, of either kind, **read-only**: any number
    /// of loaders, in any number of processes (the data-parallel ranks of
    /// one node, say), read it at once, and it works on read-only files and
    /// mounts. A writer is refused while they read
    /// ([`zrecord::OpenOptions`] says more).
    ///
    /// ```
    /// use zrecord::{Codec, DenseStore};
    /// use zrecord_loader::Stream;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("x");
    /// DenseStore::<f32>::create(&path, &[2], Codec::Zstd)?.append(&[1.0, 2.0])?;
    /// let (a, b) = (Stream::open(&path)?, Stream::open(&path)?); // two readers
    /// assert_eq!((a.len(), b.len()), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`zrecord::OpenOptions::open`].
    pub fn open(path: impl AsRef<std::path::Path>) -> zrecord::Result<Stream> {
        zrecord::OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(path.as_ref())
            .map(Stream::from)
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        match self {
            Stream::Dense(s) => s.len(),
            Stream::Ragged(s) => s.len(),
        }
    }

    /// Whether the store holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Dense or ragged.
    pub fn kind(&self) -> StoreKind {
        match self {
            Stream::Dense(_) => StoreKind::Dense,
            Stream::Ragged(_) => StoreKind::Ragged,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Stream::Dense(s) => s.dtype(),
            Stream::Ragged(s) => s.dtype(),
        }
    }

    /// An empty buffer for this stream's batches.
    pub(crate) fn new_column(&self) -> Column {
        match self {
            Stream::Dense(s) => Column::new_dense(s.dtype()),
            Stream::Ragged(s) => Column::Ragged(zrecord::DynRaggedBatch::new(s.dtype())),
        }
    }

    /// Gathers `indices` into `column` (made by [`new_column`](Self::new_column)),
    /// reusing its buffers. Returns the bytes gathered.
    pub(crate) fn gather_into(&self, indices: &[u64], column: &mut Column) -> zrecord::Result<u64> {
        match (self, column) {
            (Stream::Dense(s), Column::Dense(c)) => {
                s.gather_into(indices, &mut c.values)?;
                c.shape.clear();
                c.shape.push(indices.len());
                c.shape.extend_from_slice(s.item_shape());
                Ok(c.values.as_bytes().len() as u64)
            }
            (Stream::Ragged(s), Column::Ragged(c)) => {
                s.gather_into(indices, c)?;
                Ok(c.values().as_bytes().len() as u64)
            }
            (stream, column) => {
                *column = stream.new_column();
                stream.gather_into(indices, column)
            }
        }
    }
}

impl From<Arc<DenseShards>> for Stream {
    fn from(shards: Arc<DenseShards>) -> Self {
        Stream::Dense(shards)
    }
}

impl From<DenseShards> for Stream {
    fn from(shards: DenseShards) -> Self {
        Stream::Dense(Arc::new(shards))
    }
}

impl From<Arc<RaggedShards>> for Stream {
    fn from(shards: Arc<RaggedShards>) -> Self {
        Stream::Ragged(shards)
    }
}

impl From<RaggedShards> for Stream {
    fn from(shards: RaggedShards) -> Self {
        Stream::Ragged(Arc::new(shards))
    }
}

impl From<AnyShards> for Stream {
    fn from(shards: AnyShards) -> Self {
        match shards {
            AnyShards::Dense(s) => s.into(),
            AnyShards::Ragged(s) => s.into(),
        }
    }
}

impl From<Arc<DynDenseStore>> for Stream {
    fn from(store: Arc<DynDenseStore>) -> Self {
        DenseShards::from(store).into()
    }
}

impl From<DynDenseStore> for Stream {
    fn from(store: DynDenseStore) -> Self {
        Arc::new(store).into()
    }
}

impl<T: Element> From<DenseStore<T>> for Stream {
    fn from(store: DenseStore<T>) -> Self {
        store.into_dyn().into()
    }
}

impl From<Arc<DynRaggedStore>> for Stream {
    fn from(store: Arc<DynRaggedStore>) -> Self {
        RaggedShards::from(store).into()
    }
}

impl From<DynRaggedStore> for Stream {
    fn from(store: DynRaggedStore) -> Self {
        Arc::new(store).into()
    }
}

impl<T: Element> From<RaggedStore<T>> for Stream {
    fn from(store: RaggedStore<T>) -> Self {
        store.into_dyn().into()
    }
}

impl From<AnyStore> for Stream {
    fn from(store: AnyStore) -> Self {
        match store {
            AnyStore::Dense(s) => s.into(),
            AnyStore::Ragged(s) => s.into(),
        }
    }
}
