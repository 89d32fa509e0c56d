//! [`Column`]: one stream of a batch, dense or ragged, and the buffers the
//! loader recycles.

use ndarray::{ArrayViewD, IxDyn};
use zrecord::{DType, DynRaggedBatch, DynVec, Element, StoreKind, Stream};

/// One stream of a batch. Its own enum, not a [`zrecord::AnyBatch`],
/// because a dense column keeps its batch shape for array views.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// A dense stream: one `(B, *item_shape)` buffer.
    Dense(DenseColumn),
    /// A ragged stream in packed form.
    Ragged(DynRaggedBatch),
}

impl Column {
    /// An empty buffer for `stream`'s batches.
    pub(crate) fn for_stream(stream: &Stream) -> Column {
        match stream {
            Stream::Dense(s) => Column::Dense(DenseColumn {
                values: DynVec::new(s.dtype()),
                shape: Vec::new(),
            }),
            Stream::Ragged(s) => Column::Ragged(DynRaggedBatch::new(s.dtype())),
        }
    }

    /// Gathers `indices` of `stream` into this column, reusing its buffers
    /// (a column of another kind or dtype is replaced). Returns the bytes
    /// gathered.
    pub(crate) fn gather(&mut self, stream: &Stream, indices: &[u64]) -> zrecord::Result<u64> {
        match (stream, &mut *self) {
            (Stream::Dense(s), Column::Dense(c)) if c.values.dtype() == s.dtype() => {
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
                *column = Column::for_stream(stream);
                column.gather(stream, indices)
            }
        }
    }

    /// Dense or ragged.
    pub fn kind(&self) -> StoreKind {
        match self {
            Column::Dense(_) => StoreKind::Dense,
            Column::Ragged(_) => StoreKind::Ragged,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Column::Dense(c) => c.values.dtype(),
            Column::Ragged(c) => c.dtype(),
        }
    }

    /// A pointer to the values' bytes, to lend the batch's buffer to
    /// another language without a copy while the [`Batch`](crate::Batch)
    /// lives (see [`DynVec::as_mut_ptr`]).
    pub fn values_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Column::Dense(c) => c.values.as_mut_ptr(),
            Column::Ragged(c) => c.values_mut_ptr(),
        }
    }
}

/// A dense stream of a batch: values in row-major order and their shape
/// `(B, *item_shape)`.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseColumn {
    pub(crate) values: DynVec,
    pub(crate) shape: Vec<usize>,
}

impl DenseColumn {
    /// The values, dtype-tagged.
    pub fn values(&self) -> &DynVec {
        &self.values
    }

    /// `(B, *item_shape)`.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// An array view, if the elements are `T`.
    pub fn view<T: Element>(&self) -> Option<ArrayViewD<'_, T>> {
        ArrayViewD::from_shape(IxDyn(&self.shape), self.values.as_slice::<T>()?).ok()
    }

    /// The values and shape, without a copy: hand the typed `Vec` to a tensor
    /// with [`DynVec::into_vec`].
    pub fn into_parts(self) -> (DynVec, Vec<usize>) {
        (self.values, self.shape)
    }
}
