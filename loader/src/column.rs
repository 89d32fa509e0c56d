//! [`Column`]: one stream of a batch, dense or ragged, and the buffers the
//! loader recycles.

use ndarray::{ArrayViewD, IxDyn};
use zrecord::{DType, DynRaggedBatch, DynVec, Element, StoreKind};

/// One stream of a batch.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// A dense stream: one `(B, *item_shape)` buffer.
    Dense(DenseColumn),
    /// A ragged stream in packed form.
    Ragged(DynRaggedBatch),
}

impl Column {
    pub(crate) fn new_dense(dtype: DType) -> Column {
        Column::Dense(DenseColumn {
            values: DynVec::new(dtype),
            shape: Vec::new(),
        })
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
