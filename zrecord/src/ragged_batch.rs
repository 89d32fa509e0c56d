//! The packed form of a batch of ragged records: one values buffer, per-record
//! element offsets and shapes — no allocation per record.

use std::ops::Range;

use ndarray::{ArrayD, ArrayViewD, IxDyn};

use crate::{DType, DynVec, Element, Error, Result};

/// Where each record of a packed ragged batch lies and what shape it has.
///
/// Record `k` holds elements `offsets[k]..offsets[k + 1]` of the values
/// buffer, with shape `shape(k)` (empty for a scalar).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaggedLayout {
    offsets: Vec<usize>,
    dims: Vec<usize>,
    dim_offsets: Vec<usize>,
}

impl Default for RaggedLayout {
    fn default() -> Self {
        RaggedLayout {
            offsets: vec![0],
            dims: Vec::new(),
            dim_offsets: vec![0],
        }
    }
}

impl RaggedLayout {
    /// An empty layout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element offsets: `len() + 1` values starting at 0.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Total elements.
    pub fn total(&self) -> usize {
        self.offsets[self.offsets.len() - 1]
    }

    /// The elements of record `k`, or `None` past the end.
    pub fn range(&self, k: usize) -> Option<Range<usize>> {
        Some(*self.offsets.get(k)?..*self.offsets.get(k + 1)?)
    }

    /// The shape of record `k`, or `None` past the end.
    pub fn shape(&self, k: usize) -> Option<&[usize]> {
        self.dims
            .get(*self.dim_offsets.get(k)?..*self.dim_offsets.get(k + 1)?)
    }

    /// Element count of each record.
    pub fn lengths(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.offsets.windows(2).map(|w| w[1] - w[0])
    }

    /// Adds a record of `shape`; returns its element count.
    pub fn push(&mut self, shape: &[usize]) -> Result<usize> {
        let elements = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| Error::InvalidArgument(format!("shape {shape:?} overflows")))?;
        self.push_checked(shape, elements);
        Ok(elements)
    }

    /// Makes room for `records` more records with `dims` dimensions in all
    /// (for rank-1 records, `dims == records`) without reallocating.
    pub fn reserve(&mut self, records: usize, dims: usize) {
        self.offsets.reserve(records);
        self.dim_offsets.reserve(records);
        self.dims.reserve(dims);
    }

    /// Adds a record whose `elements` the caller computed from `shape`.
    pub(crate) fn push_checked(&mut self, shape: &[usize], elements: usize) {
        self.dims.extend_from_slice(shape);
        self.finish_record(elements);
    }

    /// Closes a record whose dimensions were appended to `dims_mut`.
    pub(crate) fn finish_record(&mut self, elements: usize) {
        self.offsets.push(self.total() + elements);
        self.dim_offsets.push(self.dims.len());
    }

    pub(crate) fn dims_mut(&mut self) -> &mut Vec<usize> {
        &mut self.dims
    }

    /// Removes every record, keeping the allocations.
    pub fn clear(&mut self) {
        self.offsets.truncate(1);
        self.dims.clear();
        self.dim_offsets.truncate(1);
    }
}

/// A batch of ragged `T` records in packed form.
///
/// ```
/// use zrecord::RaggedBatch;
/// let mut batch = RaggedBatch::<i32>::new();
/// batch.push(&[3], &[1, 2, 3])?;
/// batch.push(&[], &[7])?;             // a scalar record
/// assert_eq!(batch.values(), &[1, 2, 3, 7]);
/// assert_eq!(batch.layout().offsets(), &[0, 3, 4]);
/// assert_eq!(batch.get(1).unwrap().ndim(), 0);
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RaggedBatch<T> {
    pub(crate) values: Vec<T>,
    pub(crate) layout: RaggedLayout,
}

impl<T: Element> Default for RaggedBatch<T> {
    fn default() -> Self {
        RaggedBatch {
            values: Vec::new(),
            layout: RaggedLayout::new(),
        }
    }
}

impl<T: Element> RaggedBatch<T> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// A batch from its parts.
    ///
    /// # Errors
    /// [`Error::BufferLength`] unless `values` holds exactly the layout's elements.
    pub fn from_parts(values: Vec<T>, layout: RaggedLayout) -> Result<Self> {
        if values.len() != layout.total() {
            return Err(Error::BufferLength {
                expected: layout.total(),
                got: values.len(),
            });
        }
        Ok(RaggedBatch { values, layout })
    }

    /// Adds a record.
    ///
    /// # Errors
    /// [`Error::BufferLength`] unless `values` has exactly the elements `shape` has.
    pub fn push(&mut self, shape: &[usize], values: &[T]) -> Result<()> {
        let elements = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if elements != Some(values.len()) {
            return Err(Error::BufferLength {
                expected: elements.unwrap_or(usize::MAX),
                got: values.len(),
            });
        }
        self.layout.push_checked(shape, values.len());
        self.values.extend_from_slice(values);
        Ok(())
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.layout.is_empty()
    }

    /// All records' elements, end to end.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Offsets and shapes.
    pub fn layout(&self) -> &RaggedLayout {
        &self.layout
    }

    /// The values and layout, without a copy.
    pub fn into_parts(self) -> (Vec<T>, RaggedLayout) {
        (self.values, self.layout)
    }

    /// Record `k` as an array view, or `None` past the end.
    pub fn get(&self, k: usize) -> Option<ArrayViewD<'_, T>> {
        let values = self.values.get(self.layout.range(k)?)?;
        ArrayViewD::from_shape(IxDyn(self.layout.shape(k)?), values).ok()
    }

    /// Every record as an array view.
    pub fn iter(&self) -> impl Iterator<Item = ArrayViewD<'_, T>> + '_ {
        (0..self.len()).filter_map(move |k| self.get(k))
    }

    /// Every record as an owned array.
    pub fn to_arrays(&self) -> Vec<ArrayD<T>> {
        self.iter().map(|v| v.to_owned()).collect()
    }

    /// Removes every record, keeping the allocations.
    pub fn clear(&mut self) {
        self.values.clear();
        self.layout.clear();
    }
}

/// A packed ragged batch whose dtype is known at run time.
#[derive(Clone, Debug, PartialEq)]
pub struct DynRaggedBatch {
    pub(crate) values: DynVec,
    pub(crate) layout: RaggedLayout,
}

impl DynRaggedBatch {
    /// An empty batch of `dtype`.
    pub fn new(dtype: DType) -> Self {
        DynRaggedBatch {
            values: DynVec::new(dtype),
            layout: RaggedLayout::new(),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.layout.is_empty()
    }

    /// All records' elements, end to end.
    pub fn values(&self) -> &DynVec {
        &self.values
    }

    /// Offsets and shapes.
    pub fn layout(&self) -> &RaggedLayout {
        &self.layout
    }

    /// The values and layout, without a copy.
    pub fn into_parts(self) -> (DynVec, RaggedLayout) {
        (self.values, self.layout)
    }

    /// A pointer to the values' bytes: as [`DynVec::as_mut_ptr`], without
    /// giving out the vector (its length must stay the layout's).
    pub fn values_mut_ptr(&mut self) -> *mut u8 {
        self.values.as_mut_ptr()
    }

    /// Record `k` as a view of `T`, or `None` past the end or for another dtype.
    pub fn get<T: Element>(&self, k: usize) -> Option<ArrayViewD<'_, T>> {
        let values = self.values.as_slice::<T>()?.get(self.layout.range(k)?)?;
        ArrayViewD::from_shape(IxDyn(self.layout.shape(k)?), values).ok()
    }

    /// The typed batch, or `self` back for another dtype.
    pub fn into_typed<T: Element>(self) -> std::result::Result<RaggedBatch<T>, DynRaggedBatch> {
        match self.values.into_vec::<T>() {
            Ok(values) => Ok(RaggedBatch {
                values,
                layout: self.layout,
            }),
            Err(values) => Err(DynRaggedBatch {
                values,
                layout: self.layout,
            }),
        }
    }
}

impl<T: Element> From<RaggedBatch<T>> for DynRaggedBatch {
    fn from(batch: RaggedBatch<T>) -> Self {
        DynRaggedBatch {
            values: batch.values.into(),
            layout: batch.layout,
        }
    }
}
