//! The crate's one error type.

use zrecord::DType;

/// Everything that can go wrong turning zrecord data into Burn data.
///
/// Inside Burn's data traits an error travels as a
/// [`DatasetError`](burn::data::dataset::DatasetError) wrapping this type;
/// [`source`](std::error::Error::source) on it, or
/// [`downcast`](Error::from_dataset_error), gets it back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A store failed (an I/O error, a corrupt record, an index out of range).
    #[error(transparent)]
    Store(#[from] zrecord::Error),

    /// The loader failed: a gather at some step, a panicking converter, a
    /// configuration it refuses (no streams, two of one name or of different
    /// lengths, a bad sampling setting), or a batch that lacks the stream a
    /// converter asked for.
    #[error(transparent)]
    Loader(#[from] zrecord_loader::Error),

    /// An image failed to decode or transform (feature `vision`): the error
    /// names its step, position and record.
    #[cfg(feature = "vision")]
    #[error(transparent)]
    Image(#[from] zrecord_vision::Error),

    /// A tensor of rank `expected` was asked for data of another rank.
    #[error("stream {stream:?}: a rank-{expected} tensor cannot hold data shaped {shape:?}")]
    Rank {
        /// The stream.
        stream: String,
        /// The tensor rank asked for.
        expected: usize,
        /// The shape of the data.
        shape: Vec<usize>,
    },

    /// A stream holds a dtype the requested tensor kind cannot take.
    #[error("stream {stream:?} holds {dtype}, which a {kind} tensor cannot hold")]
    UnsupportedDType {
        /// The stream.
        stream: String,
        /// Its dtype.
        dtype: DType,
        /// The tensor kind asked for ("float", "int", "bool").
        kind: &'static str,
    },

    /// Burn refused the data (for example a dtype conversion it does not support).
    #[error("stream {stream:?}: {reason}")]
    Tensor {
        /// The stream.
        stream: String,
        /// Burn's message.
        reason: String,
    },

    /// An invalid argument that no other variant describes.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// An error from user code (an item or batch converter).
    #[error(transparent)]
    User(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl Error {
    /// Wraps any error from user code.
    pub fn user(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Error {
        Error::User(error.into())
    }

    /// The zrecord error inside a Burn [`DatasetError`](burn::data::dataset::DatasetError)
    /// that this crate produced, if it is one.
    pub fn from_dataset_error(error: &burn::data::dataset::DatasetError) -> Option<&Error> {
        std::error::Error::source(error).and_then(|e| e.downcast_ref::<Error>())
    }
}

/// A converter's error about one record of its batch — an image that does
/// not decode (`image_tensor`, feature `vision`), a
/// [`zrecord_loader::Error::BadRecord`] — comes under the data loader's
/// [`BadRecords`](zrecord_loader::BadRecords) policy.
impl zrecord_loader::RecordError for Error {
    fn bad_record(&self) -> Option<usize> {
        match self {
            Error::Loader(e) => e.bad_record(),
            #[cfg(feature = "vision")]
            Error::Image(e) => e.bad_image(),
            Error::User(e) => e
                .downcast_ref::<zrecord_loader::Error>()
                .and_then(zrecord_loader::RecordError::bad_record),
            _ => None,
        }
    }
}

impl From<Error> for burn::data::dataset::DatasetError {
    fn from(error: Error) -> Self {
        burn::data::dataset::DatasetError::new(error)
    }
}

/// Shorthand for `Result<T, zrecord_burn::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
