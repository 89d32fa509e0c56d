//! [`Stream`]: records of one kind and dtype read as one index space — one
//! store, or a dataset's shards of one stream.

use std::path::Path;
use std::sync::Arc;

use crate::{
    AnyStore, DType, DenseShards, DenseStore, DynDenseStore, DynRaggedStore, Element, OpenOptions,
    RaggedShards, RaggedStore, Result, StoreKind,
};

/// A stream of records: one store, or the shards of one stream of a
/// [`Dataset`](crate::Dataset), read as one index space. What a loader
/// gathers from.
///
/// Its own enum, not an [`AnyStore`], because a stream may span many
/// stores. Cheap to clone: the stores are shared, so a training and a
/// validation loader can read the same open stores. Made `From` any store
/// type (or an `Arc` of a dtype-tagged one), or by [`open`](Stream::open).
///
/// ```
/// use zrecord::{Codec, DenseStore, Stream};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("x");
/// DenseStore::<f32>::create(&path, &[2], Codec::Zstd)?.append(&[1.0, 2.0])?;
/// let (a, b) = (Stream::open(&path)?, Stream::open(&path)?); // two readers
/// assert_eq!((a.len(), b.len()), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub enum Stream {
    /// Dense records: a gather fills one `(B, *item_shape)` buffer.
    Dense(Arc<DenseShards>),
    /// Ragged records: a gather gives a packed batch.
    Ragged(Arc<RaggedShards>),
}

impl Stream {
    /// Opens the store at `path`, of either kind, **read-only**: any number
    /// of readers, in any number of processes (the ranks of one node, say),
    /// read it at once, also on read-only files and mounts; a writer is
    /// refused while they read ([`OpenOptions`] says more).
    ///
    /// # Errors
    /// As [`OpenOptions::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Stream> {
        OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(path.as_ref())
            .map(Stream::from)
    }

    /// The dense shards, if the stream is dense.
    pub fn as_dense(&self) -> Option<&DenseShards> {
        match self {
            Stream::Dense(s) => Some(s),
            Stream::Ragged(_) => None,
        }
    }

    /// The ragged shards, if the stream is ragged.
    pub fn as_ragged(&self) -> Option<&RaggedShards> {
        match self {
            Stream::Ragged(s) => Some(s),
            Stream::Dense(_) => None,
        }
    }

    /// Records in all shards.
    pub fn len(&self) -> u64 {
        match self {
            Stream::Dense(s) => s.len(),
            Stream::Ragged(s) => s.len(),
        }
    }

    /// Whether the stream holds no records.
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
