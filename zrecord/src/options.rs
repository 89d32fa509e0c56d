//! [`OpenOptions`]: how a store is opened.

use crate::storage::Io;

/// How to open a store: writable and exclusive (the default, what `open`
/// does) or read-only and shared, and whether gathers check raw records'
/// checksums.
///
/// A **read-only** open takes a shared lock: any number of read-only
/// handles, in any number of processes, read one store at once, and a
/// writable open is refused with [`Error::StoreBusy`](crate::Error::StoreBusy)
/// until they close (and the other way round). It works on read-only files
/// and mounts, and never writes, truncates or recovers anything: it reads
/// the store at its last committed state, ignoring bytes a killed append
/// left past it, and refuses with
/// [`Error::NeedsRecovery`](crate::Error::NeedsRecovery) a store whose
/// delete or compaction was killed part way (a writable open finishes it).
/// Writes on a read-only handle fail with
/// [`Error::ReadOnly`](crate::Error::ReadOnly).
///
/// **`verify_on_read`** makes every gather check the CRC-32C of each raw
/// record (and ragged shape record) it reads, as `verify` does; compressed
/// records are always checked (zstd's frame checksum). Stores of format
/// version 1 have no record checksums, so there it checks nothing more.
///
/// ```
/// use zrecord::{Codec, DenseStore, OpenOptions};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("images");
/// DenseStore::<u8>::create(&path, &[4], Codec::Raw)?.append(&[1, 2, 3, 4])?;
///
/// let options = OpenOptions::new().read_only(true).verify_on_read(true);
/// let a = DenseStore::<u8>::open_with(&path, options)?;
/// let b = DenseStore::<u8>::open_read_only(&path)?;      // readers share the store
/// assert_eq!(a.get(0)?, b.get(0)?);
/// assert!(a.append(&[0; 4]).is_err());                     // read-only
/// assert!(DenseStore::<u8>::open(&path).is_err());         // a writer waits for them
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    pub(crate) read_only: bool,
    pub(crate) verify_on_read: bool,
    pub(crate) io: Io,
    pub(crate) zstd_level: Option<i32>,
}

impl OpenOptions {
    /// Writable, exclusive, no read checks: what `open` does.
    pub fn new() -> Self {
        Self::default()
    }

    /// Open read-only, sharing the store with other read-only handles.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// How the store's data files are read: memory-mapped, with explicit
    /// reads (for stores larger than memory), or chosen by size (the
    /// default). See [`Io`].
    #[must_use]
    pub fn io(mut self, io: Io) -> Self {
        self.io = io;
        self
    }

    /// The zstd level this handle's appends compress at, for stores of the
    /// `zstd` and `zstd_dict` codecs (others ignore it). The defaults are
    /// [`ZSTD_LEVEL`](crate::ZSTD_LEVEL) and
    /// [`ZSTD_DICT_LEVEL`](crate::ZSTD_DICT_LEVEL); higher levels write
    /// slower and smaller, and every level reads back the same. zstd's
    /// levels run from its negative fast levels to 22; `open` refuses others.
    ///
    /// ```
    /// use zrecord::{Codec, DenseStore, OpenOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("x");
    /// drop(DenseStore::<u8>::create(&path, &[784], Codec::Zstd)?);
    /// let store = DenseStore::<u8>::open_with(&path, OpenOptions::new().zstd_level(19))?;
    /// store.append(&[7; 784])?;
    /// drop(store);
    /// let refused = DenseStore::<u8>::open_with(&path, OpenOptions::new().zstd_level(99));
    /// assert!(matches!(refused, Err(zrecord::Error::InvalidArgument(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.zstd_level = Some(level);
        self
    }

    /// Check every raw record's checksum on gather, not only in `verify`.
    #[must_use]
    pub fn verify_on_read(mut self, verify_on_read: bool) -> Self {
        self.verify_on_read = verify_on_read;
        self
    }
}
