//! The crate's one error type.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong reading a store from object storage.
///
/// Reads made by a store (its gathers) reach the caller as a
/// [`zrecord::Error::Io`] naming the object, whose source is this error:
/// `std::error::Error::source` and `downcast_ref` recover it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL names no object store this build can open.
    #[error("cannot open {url}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// Listing the store's objects failed.
    #[error("cannot list {url}")]
    List {
        /// The store's URL.
        url: String,
        /// What the object store said.
        #[source]
        source: object_store::Error,
    },

    /// A ranged read failed for good: the object is missing, access is
    /// denied, or every retry failed.
    #[error("cannot read bytes {}..{} of {object} (after {attempts} attempts)", range.start, range.end)]
    Fetch {
        /// The object's URL.
        object: String,
        /// The bytes asked for.
        range: Range<u64>,
        /// Requests made, retries included.
        attempts: u32,
        /// The last failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A ranged read did not finish within its deadline, retries included.
    #[error(
        "reading bytes {}..{} of {object} took longer than the {deadline:?} deadline",
        range.start, range.end
    )]
    Deadline {
        /// The object's URL.
        object: String,
        /// The bytes asked for.
        range: Range<u64>,
        /// The deadline of one read, retries included.
        deadline: Duration,
    },

    /// A read asked for bytes past the end of an object.
    #[error("bytes {}..{} are past the end of {object} ({len} bytes)", range.start, range.end)]
    OutOfRange {
        /// The object's URL.
        object: String,
        /// The bytes asked for.
        range: Range<u64>,
        /// The object's size.
        len: u64,
    },

    /// An upload (or the check of its size) failed.
    #[error("cannot upload {object}")]
    Upload {
        /// The object's URL.
        object: String,
        /// What the object store said.
        #[source]
        source: object_store::Error,
    },

    /// The folder holds a store's files but not its header `store.zr`,
    /// which a push uploads last: the upload did not finish.
    #[error(
        "{url} is an incomplete upload: {objects} objects but no store.zr (a push sends it last); push again"
    )]
    Incomplete {
        /// The store folder's URL.
        url: String,
        /// Objects found there.
        objects: usize,
    },

    /// A sharded dataset's manifest is damaged, or a shard differs from it
    /// (or does not open as a store).
    #[error("dataset: {0}")]
    Dataset(#[source] zrecord::Error),

    /// A push or pull cannot go on.
    #[error("cannot copy {what}: {reason}")]
    Transfer {
        /// The local folder, URL or object.
        what: String,
        /// Why.
        reason: String,
    },

    /// The local cache folder could not be used.
    #[error("cache {path}: cannot {op}")]
    Cache {
        /// What was being done.
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A check of this crate's own bookkeeping failed: a bug, reported
    /// rather than acted on.
    #[error("internal error in zrecord-remote: {0}; please report it")]
    Internal(String),

    /// The options asked for something impossible.
    #[error("invalid remote options: {0}")]
    Options(String),
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A closure that wraps an I/O error of the cache as [`Error::Cache`].
    pub(crate) fn cache(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Cache { op, path, source }
    }

    /// This error as the store engine reports failures of its storage:
    /// [`zrecord::Error::Io`] naming `object`, with `self` as its source.
    pub(crate) fn into_store_error(self, op: &'static str, object: PathBuf) -> zrecord::Error {
        zrecord::Error::Io {
            op,
            path: object,
            source: std::io::Error::other(self),
        }
    }
}
