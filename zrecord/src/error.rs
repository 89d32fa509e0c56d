//! The crate's one error type.

use std::io;
use std::path::PathBuf;

use crate::{DType, StoreKind};

/// Everything that can go wrong in zrecord.
///
/// Variants carry the path, index or value that went wrong, so the message
/// alone tells a user what to fix. A failed call leaves the store as it was:
/// inputs are validated in full before anything is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call on a store file failed.
    #[error("cannot {op} {path}")]
    Io {
        /// What was being done ("read", "write", "create", ...).
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// Another handle — in this process or another — owns the store.
    #[error("store {path} is busy: another handle (this or another process) has it open")]
    StoreBusy {
        /// The store folder.
        path: PathBuf,
    },

    /// The folder does not hold a zrecord store.
    #[error("{path} is not a zrecord store: {reason}")]
    NotAStore {
        /// The folder that was opened.
        path: PathBuf,
        /// What is missing or wrong.
        reason: String,
    },

    /// `create` was pointed at something that already exists and is not an empty folder.
    #[error("cannot create a store at {path}: it already exists and is not an empty folder")]
    AlreadyExists {
        /// The target path.
        path: PathBuf,
    },

    /// A header file starts with the wrong magic bytes.
    #[error("{path}: bad magic {found:?}, expected {expected:?}")]
    BadMagic {
        /// The header file.
        path: PathBuf,
        /// The four bytes found.
        found: [u8; 4],
        /// The four bytes a store has there.
        expected: [u8; 4],
    },

    /// A header was written by a format version this build cannot read.
    #[error(
        "{path}: format version {found} is not supported (this build reads versions 1 to {supported})"
    )]
    UnsupportedVersion {
        /// The header file.
        path: PathBuf,
        /// The version found.
        found: u8,
        /// The newest version this build reads (and the one it writes).
        supported: u8,
    },

    /// A header requires a feature this build does not know (a newer
    /// writer's): reading on could misread the store, so it is refused.
    #[error("{path}: unknown {field} bits {bits:#x}; a newer zrecord wrote this store")]
    UnsupportedFeature {
        /// The header file.
        path: PathBuf,
        /// Which field (`features` of `store.zr`, `flags` of `meta.zr`).
        field: &'static str,
        /// The bits this build does not know.
        bits: u32,
    },

    /// A store file is a symbolic link, folder, FIFO or device: the engine
    /// reads and writes regular files inside the store folder only.
    #[error("{path} is {found}, not a regular file; a store's files are regular files")]
    NotRegularFile {
        /// The file.
        path: PathBuf,
        /// What it is ("a symbolic link", "a FIFO", ...).
        found: &'static str,
    },

    /// A write (append, delete, compact) on a store opened read-only.
    #[error("{path} is open read-only")]
    ReadOnly {
        /// The store folder.
        path: PathBuf,
    },

    /// A read-only open found work a killed writer left (a pending journal);
    /// a writable open finishes it.
    #[error(
        "{path}: {reason}; open the store writable once (or run `zrecord verify --repair`) to finish it"
    )]
    NeedsRecovery {
        /// The file holding the pending work.
        path: PathBuf,
        /// What is pending.
        reason: String,
    },

    /// A gather's output does not fit in memory: its records' sizes, summed
    /// over the (possibly repeated) indices, overflow or cannot be allocated.
    #[error("a batch of {records} records needs {bytes} bytes, more than can be allocated")]
    BatchTooLarge {
        /// Indices in the batch.
        records: usize,
        /// Bytes it needs (`u64::MAX` when the sum overflows).
        bytes: u64,
    },

    /// A tagged field holds a value this build does not know.
    #[error("{path}: unknown {field} value {value}")]
    InvalidTag {
        /// The header file.
        path: PathBuf,
        /// Which field.
        field: &'static str,
        /// The value found.
        value: u64,
    },

    /// The store's files disagree with one another (a truncated file, a
    /// missing chunk, a header that contradicts the data).
    #[error("{path}: corrupt store: {reason}")]
    Corrupt {
        /// The file at fault.
        path: PathBuf,
        /// What is inconsistent.
        reason: String,
    },

    /// One record failed to read back: a bad location, length or frame.
    #[error("{path}: record {index} is corrupt: {reason}")]
    CorruptRecord {
        /// The store folder.
        path: PathBuf,
        /// The logical record index.
        index: u64,
        /// What is wrong with it.
        reason: String,
    },

    /// The store holds another kind of record than the API asked for.
    #[error("{path} is a {found} store, not a {expected} store")]
    KindMismatch {
        /// The store folder.
        path: PathBuf,
        /// The kind the caller asked for.
        expected: StoreKind,
        /// The kind on disk.
        found: StoreKind,
    },

    /// The element type of the data differs from the store's dtype.
    #[error("dtype mismatch: the store holds {store}, the data is {got}")]
    DTypeMismatch {
        /// The store's dtype.
        store: DType,
        /// The dtype the caller used.
        got: DType,
    },

    /// A dense record has another shape than the store's item shape.
    #[error("shape mismatch: the store's records are {expected:?}, got {got:?}")]
    ShapeMismatch {
        /// The store's item shape.
        expected: Vec<usize>,
        /// The shape supplied.
        got: Vec<usize>,
    },

    /// A flat buffer's length does not fit the operation.
    #[error("buffer length mismatch: expected {expected} elements, got {got}")]
    BufferLength {
        /// The length required (or, for appends, a multiple of it).
        expected: usize,
        /// The length supplied.
        got: usize,
    },

    /// A flat buffer does not hold a whole number of records.
    #[error("a buffer of {got} is not a whole number of {record_len}-long records")]
    PartialRecord {
        /// Length of one record (elements or bytes, as the buffer counts).
        record_len: usize,
        /// Length of the buffer.
        got: usize,
    },

    /// A ragged record has zero elements, and the store is of format
    /// version 1, which cannot hold one (version 2 stores can).
    #[error(
        "record {position} of the batch has zero elements (shape {shape:?}); this format-1 store cannot hold empty records"
    )]
    EmptyRecord {
        /// Position of the record in the appended batch.
        position: usize,
        /// Its shape.
        shape: Vec<usize>,
    },

    /// A record is larger than the format allows.
    #[error("record {position} of the batch is {bytes} bytes; the limit is {limit}")]
    RecordTooLarge {
        /// Position of the record in the batch.
        position: usize,
        /// Its size in bytes (after compression where that applies).
        bytes: u64,
        /// The limit in bytes.
        limit: u64,
    },

    /// A sharded dataset's manifest or shards are not what they must be:
    /// a bad manifest, a shard that differs from the others, a missing one.
    #[error("dataset {path}: {reason}")]
    Dataset {
        /// The dataset folder (or its URL).
        path: PathBuf,
        /// What is wrong, naming the shard or manifest line.
        reason: String,
    },

    /// A record index is past the end of the store.
    #[error("index {index} is out of range for a store of {len} records")]
    IndexOutOfRange {
        /// The offending index.
        index: u64,
        /// The store's length.
        len: u64,
    },

    /// A bool record holds a byte other than 0 or 1.
    #[error("byte {offset} is {value}, not a bool (0 or 1)")]
    InvalidBool {
        /// Offset of the byte in the buffer.
        offset: usize,
        /// The byte found.
        value: u8,
    },

    /// A `zstd_dict` store needs a dictionary and none was given or found.
    #[error("{path}: a zstd_dict store needs its dictionary (dict.zr)")]
    MissingDictionary {
        /// The store folder.
        path: PathBuf,
    },

    /// A dictionary could not be trained or loaded.
    #[error("dictionary: {reason}")]
    Dictionary {
        /// What went wrong.
        reason: String,
    },

    /// zstd refused to compress a record.
    #[error("zstd could not compress record {position} of the batch: {reason}")]
    Compress {
        /// Position of the record in the batch.
        position: usize,
        /// zstd's message.
        reason: String,
    },

    /// A file in another format (`.npy`, IDX) is malformed, truncated, or
    /// holds what zrecord does not store.
    #[error("{path}: {reason}")]
    ForeignFile {
        /// The file.
        path: PathBuf,
        /// Its format (".npy", "IDX").
        format: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// An invalid argument that no other variant describes.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Shorthand for `Result<T, zrecord::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the operation and path it happened on.
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }

    /// A [`Error::Corrupt`] for `path`.
    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
