//! [`Documents`]: token documents end to end in one buffer — the unit that
//! packing works on (one window of the document stream).

use zrecord::{DType, DynRaggedBatch, DynVec};

use crate::{Error, Result};

/// Token documents in one flat buffer: document `d` is
/// `tokens()[offsets()[d]..offsets()[d + 1]]`.
///
/// ```
/// use zrecord_loader::Documents;
///
/// let mut docs = Documents::new();
/// docs.push(&[5, 6, 7]);
/// docs.push(&[]);          // an empty document packs to nothing
/// docs.push(&[8]);
/// assert_eq!((docs.len(), docs.get(2)), (3, Some(&[8u32][..])));
/// assert_eq!(docs.offsets(), &[0, 3, 3, 4]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Documents {
    tokens: Vec<u32>,
    offsets: Vec<usize>,
}

impl Default for Documents {
    fn default() -> Self {
        Documents {
            tokens: Vec::new(),
            offsets: vec![0],
        }
    }
}

impl Documents {
    /// No documents.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a document.
    pub fn push(&mut self, tokens: &[u32]) {
        self.tokens.extend_from_slice(tokens);
        self.offsets.push(self.tokens.len());
    }

    /// The documents of a gathered ragged token batch, each record flattened,
    /// without a copy when the tokens are `u32`.
    ///
    /// # Errors
    /// [`Error::TokenDType`] unless the dtype is an integer type;
    /// [`Error::TokenOutOfRange`] for a token that is negative or above
    /// `u32::MAX`.
    pub fn from_ragged(batch: DynRaggedBatch) -> Result<Documents> {
        Self::from_ragged_locating(batch).map_err(|(_, e)| e)
    }

    /// As [`from_ragged`](Self::from_ragged); a token out of range comes
    /// with the document that holds it.
    pub(crate) fn from_ragged_locating(
        batch: DynRaggedBatch,
    ) -> Result<Documents, (Option<usize>, Error)> {
        let dtype = batch.dtype();
        let (values, layout) = batch.into_parts();
        let offsets = layout.offsets();
        let in_document = |(at, e): (usize, Error)| {
            let document = offsets.partition_point(|&o| o <= at).saturating_sub(1);
            (Some(document), e)
        };
        let tokens = match values {
            DynVec::U32(v) => v,
            DynVec::U8(v) => v.into_iter().map(u32::from).collect(),
            DynVec::U16(v) => v.into_iter().map(u32::from).collect(),
            DynVec::I8(v) => narrow(&v, dtype).map_err(in_document)?,
            DynVec::I16(v) => narrow(&v, dtype).map_err(in_document)?,
            DynVec::I32(v) => narrow(&v, dtype).map_err(in_document)?,
            DynVec::U64(v) => narrow(&v, dtype).map_err(in_document)?,
            DynVec::I64(v) => narrow(&v, dtype).map_err(in_document)?,
            _ => return Err((None, Error::TokenDType { dtype })),
        };
        Ok(Documents {
            tokens,
            offsets: offsets.to_vec(),
        })
    }

    /// Whether records of `dtype` can hold token ids (the integer types).
    pub fn holds_tokens(dtype: DType) -> bool {
        use DType::*;
        matches!(dtype, U8 | I8 | U16 | I16 | U32 | I32 | U64 | I64)
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Document `d`, or `None` past the end.
    pub fn get(&self, d: usize) -> Option<&[u32]> {
        self.tokens
            .get(*self.offsets.get(d)?..*self.offsets.get(d + 1)?)
    }

    /// All tokens, end to end.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Token offsets: `len() + 1` values starting at 0.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}

/// Converts signed or wide tokens to `u32`, refusing what does not fit (and
/// saying where it is).
fn narrow<T: Copy + TryInto<u32> + Into<i128>>(
    values: &[T],
    dtype: DType,
) -> Result<Vec<u32>, (usize, Error)> {
    values
        .iter()
        .enumerate()
        .map(|(at, &v)| {
            v.try_into().map_err(|_| {
                let value = v.into();
                (at, Error::TokenOutOfRange { dtype, value })
            })
        })
        .collect()
}
