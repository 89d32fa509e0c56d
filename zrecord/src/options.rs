//! [`OpenOptions`]: the one way to open and create a store, with every
//! setting a handle has; [`Location`]: where the store is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::format::Geometry;
use crate::handle::StoreHandle;
use crate::storage::{Io, Storage};
use crate::{Codec, Error, Result, Schema};

/// How to open or create a store, and the settings of the handle it gives.
///
/// Every store handle — [`DenseStore`](crate::DenseStore),
/// [`RaggedStore`](crate::RaggedStore), their dtype-tagged twins
/// [`DynDenseStore`](crate::DynDenseStore) and
/// [`DynRaggedStore`](crate::DynRaggedStore), and [`AnyStore`](crate::AnyStore)
/// — is made by [`open`](Self::open) or [`create`](Self::create) here, at a
/// [`Location`]: a folder on disk or a [`Storage`] of your own (in memory,
/// object storage). `DenseStore::open(path)` and its few siblings are
/// shorthands for the defaults.
///
/// ```
/// use zrecord::{Codec, DType, DenseStore, DynDenseStore, OpenOptions, Schema};
/// use zrecord::storage::Io;
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("images");
/// let images: DynDenseStore = OpenOptions::new()
///     .zstd_level(9)
///     .create(&path, &Schema::dense(DType::U8, &[4]), Codec::Zstd)?;
/// images.append_bytes(DType::U8, &[1, 2, 3, 4])?;
/// drop(images);
///
/// let reader = OpenOptions::new().read_only(true).io(Io::Direct);
/// let a: DenseStore<u8> = reader.open(&path)?;
/// let b: DenseStore<u8> = reader.open(&path)?;           // readers share the store
/// assert_eq!(a.get(0)?, b.get(0)?);
/// assert!(a.append(&[0; 4]).is_err());                    // read-only
/// assert!(DenseStore::<u8>::open(&path).is_err());        // a writer waits for them
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **Read-only** handles take a shared lock: any number of them, in any
/// number of processes, read one store at once, and a writable open is
/// refused with [`Error::StoreBusy`] until they close (and the other way
/// round). A read-only open works on read-only files and mounts, and never
/// writes, truncates or recovers anything: it reads the store at its last
/// committed state, ignoring bytes a killed append left past it, and
/// refuses with [`Error::NeedsRecovery`] a store whose delete or compaction
/// was killed part way (a writable open finishes it). Writes on a read-only
/// handle fail with [`Error::ReadOnly`].
///
/// # Environment
///
/// Two settings take their default from the environment, so that a whole
/// test suite or program can be switched without changing code:
/// `ZRECORD_O_DIRECT=1` turns [`o_direct`](Self::o_direct) on and
/// `ZRECORD_IO_URING=0` turns [`io_uring`](Self::io_uring) off. A setter
/// called in code wins over the environment. No other setting reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    pub(crate) read_only: bool,
    pub(crate) verify_on_read: bool,
    pub(crate) io: Io,
    pub(crate) o_direct: bool,
    pub(crate) io_uring: bool,
    pub(crate) zstd_level: Option<i32>,
    pub(crate) geometry: Geometry,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read_only: false,
            verify_on_read: false,
            io: Io::Auto,
            o_direct: std::env::var_os("ZRECORD_O_DIRECT").is_some_and(|v| v == "1"),
            io_uring: std::env::var_os("ZRECORD_IO_URING").is_none_or(|v| v != "0"),
            zstd_level: None,
            geometry: Geometry::default(),
        }
    }
}

impl OpenOptions {
    /// Writable and exclusive, [`Io::Auto`], the codec's zstd level, no
    /// extra read checks; `O_DIRECT` off and `io_uring` on unless the
    /// environment says otherwise (see [Environment](#environment)).
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the store at `location` as a handle of type `S`, taking its
    /// lock.
    ///
    /// # Errors
    /// [`Error::NotAStore`] for a folder without a store;
    /// [`Error::KindMismatch`] / [`Error::DTypeMismatch`] for a store that
    /// `S` cannot hold; [`Error::StoreBusy`] when another handle has it
    /// open; [`Error::NeedsRecovery`] (read-only) for a store a killed
    /// delete or compaction left for a writable open to finish; a typed
    /// error for any damaged header ([`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`], [`Error::InvalidTag`],
    /// [`Error::Corrupt`]); [`Error::InvalidArgument`] for a zstd level
    /// outside zstd's range.
    pub fn open<S: StoreHandle>(&self, location: impl Into<Location>) -> Result<S> {
        let engine = match location.into() {
            Location::Path(dir) => crate::engine::Engine::open(&dir, *self)?,
            Location::Storage(storage) => crate::engine::Engine::open_in(storage, *self)?,
        };
        S::from_any(crate::AnyStore::from_engine(engine)?)
    }

    /// Creates an empty store of `schema` at `location` — a folder that must
    /// not exist or be empty, or an empty [`Storage`] — and opens it as a
    /// handle of type `S` with these settings.
    ///
    /// Nothing is left behind when it fails: the store appears whole or
    /// not at all.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if the location holds anything;
    /// [`Error::KindMismatch`] / [`Error::DTypeMismatch`] when `S` cannot
    /// hold a store of `schema` (checked before anything is written);
    /// [`Error::InvalidArgument`] for a zero-element or over-2-GiB item
    /// shape, or for a read-only create; [`Error::Io`] when a file cannot
    /// be written.
    pub fn create<S: StoreHandle>(
        &self,
        location: impl Into<Location>,
        schema: &Schema,
        codec: Codec,
    ) -> Result<S> {
        let location = location.into();
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{}: a store cannot be created read-only",
                location.path().display()
            )));
        }
        S::accepts(schema, location.path())?;
        let engine = crate::engine::Engine::create_at(location, schema.identity(), codec, *self)?;
        S::from_any(crate::AnyStore::from_engine(engine)?)
    }

    /// Open read-only, sharing the store with other read-only handles.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// How the store's data files are read: memory-mapped, with explicit
    /// reads (for stores larger than memory), or chosen by size (the
    /// default). See [`Io`]. A [`Storage`] of your own decides for itself.
    #[must_use]
    pub fn io(mut self, io: Io) -> Self {
        self.io = io;
        self
    }

    /// With [`Io::Direct`], read data files around the page cache
    /// (`O_DIRECT`: whole 4 KiB blocks, copied out) where the file system
    /// allows it (not tmpfs). Off by default: cached reads with readahead
    /// off were as fast or faster on the disks measured, and the page cache
    /// they fill is reclaimable. Default from `ZRECORD_O_DIRECT=1`.
    #[must_use]
    pub fn o_direct(mut self, o_direct: bool) -> Self {
        self.o_direct = o_direct;
        self
    }

    /// With [`Io::Direct`], submit small reads through an `io_uring` per
    /// reading thread where the kernel allows it (not under Docker's
    /// default seccomp profile); otherwise, and for large reads, a pool of
    /// threads blocked in `pread`. On by default; off with
    /// `ZRECORD_IO_URING=0`.
    #[must_use]
    pub fn io_uring(mut self, io_uring: bool) -> Self {
        self.io_uring = io_uring;
        self
    }

    /// The zstd level this handle's appends compress at, for stores of the
    /// `zstd` and `zstd_dict` codecs (others ignore it). The defaults are
    /// [`ZSTD_LEVEL`](crate::ZSTD_LEVEL) and
    /// [`ZSTD_DICT_LEVEL`](crate::ZSTD_DICT_LEVEL); higher levels write
    /// slower and smaller, and every level reads back the same. zstd's
    /// levels run from its negative fast levels to 22; others are refused.
    ///
    /// ```
    /// use zrecord::{Codec, DenseStore, OpenOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("x");
    /// drop(DenseStore::<u8>::create(&path, &[784], Codec::Zstd)?);
    /// let store: DenseStore<u8> = OpenOptions::new().zstd_level(19).open(&path)?;
    /// store.append(&[7; 784])?;
    /// drop(store);
    /// let refused = OpenOptions::new().zstd_level(99).open::<DenseStore<u8>>(&path);
    /// assert!(matches!(refused, Err(zrecord::Error::InvalidArgument(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.zstd_level = Some(level);
        self
    }

    /// Check every raw record's checksum (CRC-32C) on gather, not only in
    /// `verify`; compressed records are always checked (zstd's frame
    /// checksum). Stores of format version 1 have no record checksums, so
    /// there it checks nothing more.
    #[must_use]
    pub fn verify_on_read(mut self, verify_on_read: bool) -> Self {
        self.verify_on_read = verify_on_read;
        self
    }

    /// Not API (feature `internals`): the file geometry of a store this
    /// creates — tiny chunks and table segments make tests exercise file
    /// rollover.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    #[must_use]
    pub fn geometry(mut self, geometry: Geometry) -> Self {
        self.geometry = geometry;
        self
    }
}

/// Where a store is: a folder on disk, or a [`Storage`] of your own.
///
/// Made by `From` a path (`&Path`, `PathBuf`, `&str`, `String`, …) or an
/// `Arc` of any storage, so [`OpenOptions::open`] takes either.
#[derive(Clone, Debug)]
pub enum Location {
    /// A store folder on a local file system.
    Path(PathBuf),
    /// A storage of your own (memory, object storage, a fault injector).
    Storage(Arc<dyn Storage>),
}

impl Location {
    /// The path errors name the store by.
    pub fn path(&self) -> &Path {
        match self {
            Location::Path(path) => path,
            Location::Storage(storage) => storage.location(),
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Location::Path(path.into())
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::Path(path)
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Location::Path(path.clone())
    }
}

impl From<&str> for Location {
    fn from(path: &str) -> Self {
        Location::Path(path.into())
    }
}

impl From<String> for Location {
    fn from(path: String) -> Self {
        Location::Path(path.into())
    }
}

impl From<Arc<dyn Storage>> for Location {
    fn from(storage: Arc<dyn Storage>) -> Self {
        Location::Storage(storage)
    }
}

impl From<&Arc<dyn Storage>> for Location {
    fn from(storage: &Arc<dyn Storage>) -> Self {
        Location::Storage(Arc::clone(storage))
    }
}

impl<S: Storage + 'static> From<Arc<S>> for Location {
    fn from(storage: Arc<S>) -> Self {
        Location::Storage(storage)
    }
}

impl<S: Storage + 'static> From<&Arc<S>> for Location {
    fn from(storage: &Arc<S>) -> Self {
        Location::Storage(Arc::clone(storage) as Arc<dyn Storage>)
    }
}
