//! [`StoreDataset`]: zrecord stores as a Burn [`Dataset`], one typed item per
//! record, so code built on Burn's own `DataLoaderBuilder` keeps working.

use std::sync::Arc;

use burn::data::dataset::{Dataset, DatasetError};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use zrecord::{DType, DynRaggedBatch, DynVec, Element, StoreKind};
use zrecord_loader::{Stream, check_streams};

use crate::{Error, Result};

/// Builds an item from one record of every stream.
type ItemFn<I> = Arc<dyn Fn(Record<'_>) -> Result<I> + Send + Sync>;

/// One or more zrecord stores of equal length as a Burn [`Dataset`]: item
/// `i` is made by a user function from record `i` of every stream.
///
/// [`get_many`](Dataset::get_many) — what Burn's `BatchDataLoader` calls for
/// every batch — reads each stream with **one** batch gather (parallel,
/// decoding straight into place), then builds the items; `get` is the
/// batch-of-one case.
///
/// Unlike Burn's contract, an index past the end is an `Err`
/// ([`zrecord::Error::IndexOutOfRange`] inside the [`DatasetError`]), not a
/// panic. Errors of this crate come back out of a `DatasetError` with
/// [`Error::from_dataset_error`].
///
/// Shuffle with our sampler ([`StoreDataLoader`](crate::StoreDataLoader)),
/// not with `DataLoaderBuilder::shuffle`: Burn's shuffle wraps the dataset so
/// that every item is read on its own with `get`.
///
/// ```
/// use burn::data::dataset::Dataset;
/// use zrecord::{Codec, DenseStore};
/// use zrecord_burn::StoreDataset;
/// # let dir = tempfile::tempdir()?;
///
/// let images = DenseStore::<u8>::create(dir.path().join("images"), &[2, 2], Codec::Zstd)?;
/// images.append(&(0..12).collect::<Vec<u8>>())?;               // three 2×2 images
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&[7, 8, 9])?;
///
/// #[derive(Clone, Debug)]
/// struct Item { pixels: Vec<u8>, label: i64 }
///
/// let dataset = StoreDataset::builder()
///     .stream("image", images)
///     .stream("label", labels)
///     .build(|record| Ok(Item {
///         pixels: record.dense_slice::<u8>("image")?.to_vec(),
///         label: record.dense_slice::<i64>("label")?[0],
///     }))?;
/// assert_eq!(dataset.len(), 3);
/// let items = dataset.get_many(vec![2, 0])?;                   // one gather per stream
/// assert_eq!((items[0].label, &items[1].pixels[..]), (9, &[0, 1, 2, 3][..]));
/// assert!(dataset.get(3).is_err());                            // an error, not a panic
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StoreDataset<I> {
    streams: Arc<[(String, Stream)]>,
    len: u64,
    item: ItemFn<I>,
}

impl<I> Clone for StoreDataset<I> {
    fn clone(&self) -> Self {
        StoreDataset {
            streams: Arc::clone(&self.streams),
            len: self.len,
            item: Arc::clone(&self.item),
        }
    }
}

impl StoreDataset<()> {
    /// A builder: add streams, then [`build`](StoreDatasetBuilder::build) with
    /// the function that makes an item from a [`Record`].
    pub fn builder() -> StoreDatasetBuilder {
        StoreDatasetBuilder {
            streams: Vec::new(),
        }
    }
}

impl<T: Element> StoreDataset<ArrayD<T>> {
    /// A dense store as a dataset of its records, each an array of the
    /// store's item shape.
    ///
    /// # Errors
    /// [`Error::Loader`] with a dtype mismatch when the store does not hold `T`.
    pub fn dense(store: impl Into<Stream>) -> Result<Self> {
        Self::single(store.into(), StoreKind::Dense)
    }

    /// A ragged store as a dataset of its records, each an array of its own shape.
    ///
    /// # Errors
    /// [`Error::Loader`] with a dtype mismatch when the store does not hold `T`.
    pub fn ragged(store: impl Into<Stream>) -> Result<Self> {
        Self::single(store.into(), StoreKind::Ragged)
    }

    /// The dense store at `path`, opened read-only (shared with other
    /// readers and processes; see [`Stream::open`]), as a dataset of its records.
    ///
    /// # Errors
    /// [`Error::Store`] when it does not open; as [`dense`](Self::dense).
    pub fn open_dense(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::dense(Stream::open(path)?)
    }

    /// The ragged store at `path`, opened read-only, as a dataset of its records.
    ///
    /// # Errors
    /// [`Error::Store`] when it does not open; as [`ragged`](Self::ragged).
    pub fn open_ragged(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::ragged(Stream::open(path)?)
    }

    fn single(stream: Stream, kind: StoreKind) -> Result<Self> {
        if stream.kind() != kind {
            return Err(zrecord_loader::Error::WrongKind {
                name: "records".into(),
                expected: kind,
                found: stream.kind(),
            }
            .into());
        }
        if stream.dtype() != T::DTYPE {
            return Err(zrecord_loader::Error::WrongDType {
                name: "records".into(),
                expected: T::DTYPE,
                found: stream.dtype(),
            }
            .into());
        }
        StoreDataset::builder()
            .stream("records", stream)
            .build(move |record| match kind {
                StoreKind::Dense => Ok(record.dense::<T>("records")?.to_owned()),
                StoreKind::Ragged => Ok(record.ragged::<T>("records")?.to_owned()),
            })
    }
}

impl<I> StoreDataset<I> {
    /// Number of records (items).
    pub fn num_records(&self) -> u64 {
        self.len
    }

    /// The streams, in the order they were added.
    pub fn streams(&self) -> impl Iterator<Item = (&str, &Stream)> {
        self.streams.iter().map(|(n, s)| (n.as_str(), s))
    }

    /// Items `indices` (any order, repeats allowed): one gather per stream,
    /// then one call of the item function per index.
    ///
    /// # Errors
    /// The store's error ([`Error::Store`]) for an index out of range or a
    /// record that fails to read; whatever the item function returns.
    pub fn items(&self, indices: &[u64]) -> Result<Vec<I>> {
        let mut columns = Vec::with_capacity(self.streams.len());
        for (_, stream) in self.streams.iter() {
            columns.push(match stream {
                Stream::Dense(store) => {
                    let mut values = DynVec::new(store.dtype());
                    store.gather_into(indices, &mut values)?;
                    Gathered::Dense {
                        values,
                        item_shape: store.item_shape().to_vec(),
                        record_len: store.record_len(),
                    }
                }
                Stream::Ragged(store) => {
                    let mut batch = DynRaggedBatch::new(store.dtype());
                    store.gather_into(indices, &mut batch)?;
                    Gathered::Ragged(batch)
                }
            });
        }
        indices
            .iter()
            .enumerate()
            .map(|(position, &index)| {
                (self.item)(Record {
                    index,
                    position,
                    streams: &self.streams,
                    columns: &columns,
                })
            })
            .collect()
    }
}

impl<I: Send + Sync> Dataset<I> for StoreDataset<I> {
    fn get(&self, index: usize) -> Result<I, DatasetError> {
        let mut items = self.items(&[index as u64])?;
        items.pop().ok_or_else(|| {
            Error::Store(zrecord::Error::IndexOutOfRange {
                index: index as u64,
                len: self.len,
            })
            .into()
        })
    }

    fn get_many(&self, indexes: Vec<usize>) -> Result<Vec<I>, DatasetError> {
        let indices: Vec<u64> = indexes.into_iter().map(|i| i as u64).collect();
        Ok(self.items(&indices)?)
    }

    fn len(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }
}

/// Configures a [`StoreDataset`]; from [`StoreDataset::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct StoreDatasetBuilder {
    streams: Vec<(String, Stream)>,
}

impl StoreDatasetBuilder {
    /// Adds a stream: any store (dense or ragged, any dtype), an `Arc` of a
    /// dtype-tagged one to share it with loaders, or a dataset's stream.
    pub fn stream(mut self, name: impl Into<String>, stream: impl Into<Stream>) -> Self {
        self.streams.push((name.into(), stream.into()));
        self
    }

    /// Adds every stream of a sharded `dataset`, by its names: items are
    /// its global indices.
    pub fn dataset(mut self, dataset: zrecord::Dataset) -> Self {
        for (name, shards) in dataset.into_streams() {
            self.streams.push((name, shards));
        }
        self
    }

    /// Checks the streams and builds the dataset; `item` makes item `i` from
    /// record `i` of every stream.
    ///
    /// # Errors
    /// [`Error::Loader`] with what a loader refuses too:
    /// [`NoStreams`](zrecord_loader::Error::NoStreams),
    /// [`DuplicateStream`](zrecord_loader::Error::DuplicateStream),
    /// [`LengthMismatch`](zrecord_loader::Error::LengthMismatch).
    pub fn build<I, F>(self, item: F) -> Result<StoreDataset<I>>
    where
        F: Fn(Record<'_>) -> Result<I> + Send + Sync + 'static,
    {
        let len = check_streams(&self.streams)?;
        Ok(StoreDataset {
            streams: self.streams.into(),
            len,
            item: Arc::new(item),
        })
    }
}

/// One stream's records for a `get_many` call.
enum Gathered {
    Dense {
        values: DynVec,
        item_shape: Vec<usize>,
        record_len: usize,
    },
    Ragged(DynRaggedBatch),
}

/// Record `index` of every stream, handed to the item function of a
/// [`StoreDataset`]. Views borrow the gathered batch: copy what the item keeps.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    index: u64,
    position: usize,
    streams: &'a [(String, Stream)],
    columns: &'a [Gathered],
}

impl<'a> Record<'a> {
    /// The record's index in the stores.
    pub fn index(&self) -> u64 {
        self.index
    }

    fn column(&self, name: &str) -> Result<&'a Gathered> {
        self.streams
            .iter()
            .position(|(n, _)| n == name)
            .and_then(|at| self.columns.get(at))
            .ok_or_else(|| {
                zrecord_loader::Error::UnknownStream {
                    name: name.into(),
                    available: self.streams.iter().map(|(n, _)| n.clone()).collect(),
                }
                .into()
            })
    }

    /// Dense stream `name`'s record, flat in row-major order.
    ///
    /// # Errors
    /// [`Error::Loader`] for an unknown stream, a ragged stream or another dtype.
    pub fn dense_slice<T: Element>(&self, name: &str) -> Result<&'a [T]> {
        match self.column(name)? {
            Gathered::Dense {
                values, record_len, ..
            } => {
                let all = values
                    .as_slice::<T>()
                    .ok_or_else(|| wrong_dtype(name, T::DTYPE, values.dtype()))?;
                let start = self.position * record_len;
                all.get(start..start + record_len).ok_or_else(|| {
                    Error::InvalidArgument(format!("record {} of {name:?} is missing", self.index))
                })
            }
            Gathered::Ragged(_) => Err(wrong_kind(name, StoreKind::Dense, StoreKind::Ragged)),
        }
    }

    /// Dense stream `name`'s record as an array of the store's item shape.
    ///
    /// # Errors
    /// As [`dense_slice`](Self::dense_slice).
    pub fn dense<T: Element>(&self, name: &str) -> Result<ArrayViewD<'a, T>> {
        let values = self.dense_slice::<T>(name)?;
        match self.column(name)? {
            Gathered::Dense { item_shape, .. } => ArrayViewD::from_shape(IxDyn(item_shape), values)
                .map_err(|e| Error::InvalidArgument(format!("stream {name:?}: {e}"))),
            Gathered::Ragged(_) => Err(wrong_kind(name, StoreKind::Dense, StoreKind::Ragged)),
        }
    }

    /// Ragged stream `name`'s record as an array of its own shape.
    ///
    /// # Errors
    /// [`Error::Loader`] for an unknown stream, a dense stream or another dtype.
    pub fn ragged<T: Element>(&self, name: &str) -> Result<ArrayViewD<'a, T>> {
        match self.column(name)? {
            Gathered::Ragged(batch) => batch.get::<T>(self.position).ok_or_else(|| {
                if batch.dtype() != T::DTYPE {
                    wrong_dtype(name, T::DTYPE, batch.dtype())
                } else {
                    Error::InvalidArgument(format!("record {} of {name:?} is missing", self.index))
                }
            }),
            Gathered::Dense { .. } => Err(wrong_kind(name, StoreKind::Ragged, StoreKind::Dense)),
        }
    }
}

fn wrong_kind(name: &str, expected: StoreKind, found: StoreKind) -> Error {
    zrecord_loader::Error::WrongKind {
        name: name.into(),
        expected,
        found,
    }
    .into()
}

fn wrong_dtype(name: &str, expected: DType, found: DType) -> Error {
    zrecord_loader::Error::WrongDType {
        name: name.into(),
        expected,
        found,
    }
    .into()
}
