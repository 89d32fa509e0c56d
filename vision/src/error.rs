//! [`Error`]: what can go wrong decoding and transforming images.

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an image could not be decoded or transformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a JPEG or a PNG. `found` names the format the
    /// leading bytes announce, when it is one we know by name.
    #[error("not a JPEG or PNG image ({found})")]
    UnsupportedFormat {
        /// "WebP", "GIF", …, or "unknown".
        found: &'static str,
    },
    /// A JPEG that the decoder refuses: truncated, corrupt, or a kind it does
    /// not decode (12-bit, arithmetic coding).
    #[error("corrupt or unsupported JPEG: {0}")]
    Jpeg(String),
    /// A PNG that the decoder refuses: truncated, corrupt, a bad checksum.
    #[error("corrupt PNG: {0}")]
    Png(String),
    /// The header announces more pixels than [`MAX_PIXELS`](crate::MAX_PIXELS)
    /// (or a zero side): refused before anything is allocated.
    #[error("image of {width}x{height} pixels is outside 1..={max} pixels")]
    BadSize {
        /// Width the header announces.
        width: u64,
        /// Height the header announces.
        height: u64,
        /// The limit.
        max: u64,
    },
    /// A file or folder could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file or folder.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An image folder or list that does not describe a data set.
    #[error("{0}")]
    Layout(String),
    /// A transform setting out of range (a zero size, an empty scale range, …).
    #[error("invalid transform: {0}")]
    InvalidArgument(String),
    /// The output buffer does not hold the batch: `expected` elements.
    #[error("output buffer of {got} elements, the batch needs {expected}")]
    OutputSize {
        /// Elements the batch writes.
        expected: usize,
        /// Elements the buffer has.
        got: usize,
    },
    /// Image `position` of the batch of `step` (record `record`, when the
    /// caller named the records) failed.
    #[error("image at position {position} of step {step}{}", record.map(|r| format!(" (record {r})")).unwrap_or_default())]
    Batch {
        /// The step the batch belongs to.
        step: u64,
        /// Position of the image in the batch.
        position: usize,
        /// The record index, when known.
        record: Option<u64>,
        /// What went wrong with it.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// The position in its batch of the image this error is about, when the
    /// image itself is at fault — not a JPEG or PNG, corrupt or truncated, of
    /// a refused size — rather than a setting or the output buffer. A loader
    /// may replace such an image and carry on (`zrecord_loader::BadRecords`).
    ///
    /// ```
    /// use zrecord_vision::{BatchKey, Transform};
    ///
    /// let good = zrecord_vision::testing::png_rgb(8, 8, 1);
    /// let transform = Transform::center_crop(8, 8);
    /// let mut out = vec![0f32; 2 * transform.image_len()];
    /// let key = BatchKey { seed: 0, step: 0, first_position: 0, records: &[] };
    /// let e = transform.batch_f32([&good[..], &good[..20]], key, &mut out).unwrap_err();
    /// assert_eq!(e.bad_image(), Some(1));
    /// let e = Transform::center_crop(4, 8).batch_f32([&good[..]], key, &mut out[..192]).unwrap_err();
    /// assert_eq!(e.bad_image(), None); // a crop larger than its resize: a setting
    /// ```
    pub fn bad_image(&self) -> Option<usize> {
        match self {
            Error::Batch {
                position, source, ..
            } if matches!(
                **source,
                Error::UnsupportedFormat { .. }
                    | Error::Jpeg(_)
                    | Error::Png(_)
                    | Error::BadSize { .. }
            ) =>
            {
                Some(*position)
            }
            _ => None,
        }
    }
}
