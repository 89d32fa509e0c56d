//! The crate's one error type.

use zrecord::DType;

/// Everything that can go wrong turning zrecord data into candle tensors, or
/// serving a model over them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A store failed: an I/O error, a corrupt record, an index out of range.
    #[error(transparent)]
    Store(#[from] zrecord::Error),

    /// The loader or a batch failed: a gather at some step, or a batch that
    /// lacks the stream asked for, holds it as the other kind or another
    /// dtype, or had it taken out already.
    #[error(transparent)]
    Loader(#[from] zrecord_loader::Error),

    /// An image failed to decode or transform (feature `vision`).
    #[cfg(feature = "vision")]
    #[error(transparent)]
    Image(#[from] zrecord_vision::Error),

    /// candle failed: a tensor operation, a device transfer, or the model.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A `u64` value above `i64::MAX`: candle has no `u64`, and such a value
    /// has no lossless place in its `i64` (see the crate's dtype table).
    #[error(
        "{stream}: element {index} is {value}, which does not fit candle's i64 (candle has no u64; values up to i64::MAX convert without loss)"
    )]
    OutOfRange {
        /// The stream (or `"values"` for a bare buffer).
        stream: String,
        /// Position of the element in the buffer.
        index: usize,
        /// The value.
        value: u64,
    },

    /// A zrecord dtype this version of the crate has no candle mapping for
    /// (zrecord's `DType` may grow).
    #[error("zrecord dtype {dtype} has no candle mapping in this version of zrecord-candle")]
    UnsupportedDType {
        /// The dtype.
        dtype: DType,
    },

    /// A shape that does not hold exactly the buffer's elements.
    #[error("{stream}: shape {shape:?} does not hold {elements} elements")]
    Shape {
        /// The stream (or `"values"` for a bare buffer).
        stream: String,
        /// The shape given.
        shape: Vec<usize>,
        /// The elements in the buffer.
        elements: usize,
    },

    /// A length would exceed what its type can count.
    #[error("{stream}: {what} overflows")]
    Overflow {
        /// The stream.
        stream: String,
        /// What overflowed.
        what: &'static str,
    },

    /// A request names more records than a batch holds.
    #[error("a request may name at most {max} ids, this one names {got}")]
    TooManyIds {
        /// Ids in the request.
        got: usize,
        /// The largest batch the server runs.
        max: usize,
    },

    /// A request names records the store does not have.
    #[error("{count} unknown id(s), first {ids:?}: the store holds ids 0..{len}")]
    UnknownIds {
        /// The first few unknown ids (at most 16), in request order.
        ids: Vec<u64>,
        /// How many ids of the request are unknown.
        count: usize,
        /// Records in the store.
        len: u64,
    },

    /// The model's output does not have one row per input record.
    #[error("the model returned {got} rows for a batch of {expected} records")]
    OutputRows {
        /// Records in the batch.
        expected: usize,
        /// Rows returned (the size of axis 0; 0 for a scalar).
        got: usize,
    },

    /// The request queue is full: the server is overloaded. Retry later.
    #[error("the server is overloaded ({queue} requests queued); retry later")]
    Overloaded {
        /// The queue's capacity.
        queue: usize,
    },

    /// The batcher is shutting down or has stopped.
    #[error("the server is shutting down")]
    ShuttingDown,

    /// The predictor panicked on a batch (the batcher carries on).
    #[error("the model panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },

    /// A batcher or server setting is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),

    /// A thread could not be started, or the HTTP server could not bind.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// An error about one record of a loader batch — an image that does not
/// decode (`image_tensor`, feature `vision`), a
/// [`zrecord_loader::Error::BadRecord`] — comes under the loader's
/// [`BadRecords`](zrecord_loader::BadRecords) policy when the transform
/// that returns it is a
/// [`try_transform`](zrecord_loader::LoaderBuilder::try_transform).
impl zrecord_loader::RecordError for Error {
    fn bad_record(&self) -> Option<usize> {
        match self {
            Error::Loader(e) => e.bad_record(),
            #[cfg(feature = "vision")]
            Error::Image(e) => e.bad_image(),
            _ => None,
        }
    }
}

/// Shorthand for `Result<T, zrecord_candle::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
