//! [`Batch`]: one step's indices and every stream gathered at them.

use std::sync::Arc;

use ndarray::{ArrayViewD, IxDyn};
use zrecord::{DType, DynRaggedBatch, Element, RaggedLayout, StoreKind};

use crate::column::{Column, DenseColumn};
use crate::padding::{PaddedBatch, Padding};
use crate::pool::Pool;
use crate::{Error, Result};

/// A typed view of a ragged stream of a batch.
#[derive(Clone, Copy, Debug)]
pub struct RaggedView<'a, T> {
    values: &'a [T],
    layout: &'a RaggedLayout,
}

impl<'a, T: Element> RaggedView<'a, T> {
    /// All records' elements, end to end.
    pub fn values(&self) -> &'a [T] {
        self.values
    }

    /// Offsets and shapes of the records.
    pub fn layout(&self) -> &'a RaggedLayout {
        self.layout
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.layout.is_empty()
    }

    /// Record `k` as an array view, or `None` past the end.
    pub fn get(&self, k: usize) -> Option<ArrayViewD<'a, T>> {
        let values = self.values.get(self.layout.range(k)?)?;
        ArrayViewD::from_shape(IxDyn(self.layout.shape(k)?), values).ok()
    }
}

/// One step of the loader: its indices and every stream gathered at them.
///
/// Record `k` of every stream is the record at `indices()[k]`, so streams
/// stay aligned. Dropping a batch returns its buffers to the loader for reuse;
/// [`take_dense`](Batch::take_dense) moves one out (to hand to a tensor
/// without a copy) and the loader allocates a new one.
#[derive(Debug)]
pub struct Batch {
    pub(crate) step: u64,
    /// The global-batch position of record 0: this rank's offset.
    pub(crate) first_position: u64,
    pub(crate) indices: Vec<u64>,
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) columns: Vec<Option<Column>>,
    pub(crate) pool: Option<Arc<Pool>>,
    /// A mixture's order, which knows each record's source.
    pub(crate) mix: Option<Arc<crate::mixture::MixOrder>>,
}

impl Batch {
    /// The step this batch belongs to.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The position of record 0 in the step's global batch (all ranks
    /// together): this rank's offset, `⌊rank·B/world⌋` for a global batch of
    /// `B`; 0 for one process. Record `k` is at global position
    /// `first_position() + k`, which is what keys per-record random choices
    /// (image crops, bad-record substitutes) the same on any world size.
    pub fn first_position(&self) -> u64 {
        self.first_position
    }

    /// The name of the [`Source`](crate::Source) record `k` came from, for
    /// a loader over a [`Mixture`](crate::Mixture); `None` for one over
    /// plain streams or past the end.
    pub fn source(&self, k: usize) -> Option<&str> {
        let mix = self.mix.as_ref()?;
        Some(mix.source_of(*self.indices.get(k)?))
    }

    /// The record indices, in batch order: record `k` of every stream is
    /// record `indices()[k]` of its store (or dataset).
    pub fn indices(&self) -> &[u64] {
        &self.indices
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The error that reports the record at `position` of this batch as one
    /// the transform cannot use, for `reason`: returned from a
    /// [`try_transform`](crate::LoaderBuilder::try_transform), it lets the
    /// loader's [`BadRecords`](crate::BadRecords) policy replace the record.
    pub fn bad_record(&self, position: usize, reason: impl Into<String>) -> Error {
        Error::BadRecord {
            step: self.step,
            position,
            record: self.indices.get(position).copied(),
            reason: reason.into(),
        }
    }

    /// The stream names, in the order they were added to the loader.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    fn position(&self, name: &str) -> Result<usize> {
        self.names
            .iter()
            .position(|n| &**n == name)
            .ok_or_else(|| Error::UnknownStream {
                name: name.into(),
                available: self.names.iter().map(|n| n.to_string()).collect(),
            })
    }

    /// Stream `name`.
    ///
    /// # Errors
    /// [`Error::UnknownStream`], or [`Error::Taken`] after a `take_*`.
    pub fn column(&self, name: &str) -> Result<&Column> {
        let at = self.position(name)?;
        self.columns[at]
            .as_ref()
            .ok_or_else(|| Error::Taken { name: name.into() })
    }

    /// Stream `name`, mutably: its buffer stays the batch's, recycled when
    /// the batch is dropped.
    ///
    /// # Errors
    /// As [`column`](Self::column).
    pub fn column_mut(&mut self, name: &str) -> Result<&mut Column> {
        let at = self.position(name)?;
        self.columns[at]
            .as_mut()
            .ok_or_else(|| Error::Taken { name: name.into() })
    }

    /// Dense stream `name`.
    ///
    /// # Errors
    /// As [`column`](Self::column), and [`Error::WrongKind`] for a ragged stream.
    pub fn dense_column(&self, name: &str) -> Result<&DenseColumn> {
        match self.column(name)? {
            Column::Dense(c) => Ok(c),
            Column::Ragged(_) => Err(wrong_kind(name, StoreKind::Dense, StoreKind::Ragged)),
        }
    }

    /// Dense stream `name` as a `(B, *item_shape)` array view of `T`.
    ///
    /// # Errors
    /// As [`dense_column`](Self::dense_column), and [`Error::WrongDType`].
    pub fn dense<T: Element>(&self, name: &str) -> Result<ArrayViewD<'_, T>> {
        let column = self.dense_column(name)?;
        column
            .view::<T>()
            .ok_or_else(|| wrong_dtype(name, T::DTYPE, column.dtype()))
    }

    /// Ragged stream `name` in packed form.
    ///
    /// # Errors
    /// As [`column`](Self::column), and [`Error::WrongKind`] for a dense stream.
    pub fn ragged_batch(&self, name: &str) -> Result<&DynRaggedBatch> {
        match self.column(name)? {
            Column::Ragged(c) => Ok(c),
            Column::Dense(_) => Err(wrong_kind(name, StoreKind::Ragged, StoreKind::Dense)),
        }
    }

    /// Ragged stream `name` as a typed view: packed values plus per-record views.
    ///
    /// # Errors
    /// As [`ragged_batch`](Self::ragged_batch), and [`Error::WrongDType`].
    pub fn ragged<T: Element>(&self, name: &str) -> Result<RaggedView<'_, T>> {
        let batch = self.ragged_batch(name)?;
        let values = batch
            .values()
            .as_slice::<T>()
            .ok_or_else(|| wrong_dtype(name, T::DTYPE, batch.dtype()))?;
        Ok(RaggedView {
            values,
            layout: batch.layout(),
        })
    }

    /// Ragged stream `name` padded into one dense array, with a mask and
    /// each record's length: see [`Padding`] (pass a plain fill value to pad
    /// every axis to the batch's largest extent). The stream stays in the batch.
    ///
    /// ```
    /// use zrecord::{Codec, RaggedStore};
    /// use zrecord_loader::Padding;
    /// use zrecord_loader::{Loader, Mode};
    /// # let dir = tempfile::tempdir()?;
    ///
    /// let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Raw)?;
    /// tokens.append_slices(&[vec![5, 6, 7], vec![8]])?;
    /// let mut loader = Loader::builder(2).stream("tokens", tokens).mode(Mode::Sequential).build()?;
    /// let batch = loader.next_batch()?;
    /// let padded = batch.padded::<u32>("tokens", 0)?;
    /// assert_eq!((padded.shape, padded.values), (vec![2, 3], vec![5, 6, 7, 8, 0, 0]));
    /// let capped = batch.padded("tokens", Padding::new(0u32).max_len(2))?;
    /// assert_eq!(capped.lengths, [2, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`ragged`](Self::ragged), and [`Error::Pad`] naming the stream
    /// when the records cannot be padded (see [`Padding::pad`]).
    pub fn padded<T: Element>(
        &self,
        name: &str,
        padding: impl Into<Padding<T>>,
    ) -> Result<PaddedBatch<T>> {
        let view = self.ragged::<T>(name)?;
        padding
            .into()
            .pad(view.values(), view.layout())
            .map_err(|source| Error::Pad {
                stream: name.into(),
                source: Box::new(source),
            })
    }

    /// Moves stream `name` out of the batch.
    ///
    /// # Errors
    /// As [`column`](Self::column).
    pub fn take(&mut self, name: &str) -> Result<Column> {
        let at = self.position(name)?;
        self.columns[at]
            .take()
            .ok_or_else(|| Error::Taken { name: name.into() })
    }

    /// Moves dense stream `name` out of the batch, to hand its `Vec` to a
    /// tensor without a copy.
    ///
    /// # Errors
    /// As [`dense_column`](Self::dense_column); a ragged stream stays in the batch.
    pub fn take_dense(&mut self, name: &str) -> Result<DenseColumn> {
        self.dense_column(name)?;
        match self.take(name)? {
            Column::Dense(c) => Ok(c),
            Column::Ragged(_) => Err(wrong_kind(name, StoreKind::Dense, StoreKind::Ragged)),
        }
    }

    /// Moves ragged stream `name` out of the batch.
    ///
    /// # Errors
    /// As [`ragged_batch`](Self::ragged_batch); a dense stream stays in the batch.
    pub fn take_ragged(&mut self, name: &str) -> Result<DynRaggedBatch> {
        self.ragged_batch(name)?;
        match self.take(name)? {
            Column::Ragged(c) => Ok(c),
            Column::Dense(_) => Err(wrong_kind(name, StoreKind::Ragged, StoreKind::Dense)),
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give(
                std::mem::take(&mut self.indices),
                std::mem::take(&mut self.columns),
            );
        }
    }
}

fn wrong_kind(name: &str, expected: StoreKind, found: StoreKind) -> Error {
    Error::WrongKind {
        name: name.into(),
        expected,
        found,
    }
}

fn wrong_dtype(name: &str, expected: DType, found: DType) -> Error {
    Error::WrongDType {
        name: name.into(),
        expected,
        found,
    }
}
