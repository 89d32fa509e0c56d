//! [`StoreDataLoader`]: a Burn [`DataLoader`] driven by `zrecord-loader` —
//! our sampler, our prefetch, our order — in virtual epochs of a chosen
//! number of steps.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use burn::data::dataloader::{DataLoader, DataLoaderIterator, Progress};
use burn::data::dataset::DatasetError;
use burn::tensor::Device;
use zrecord_loader::{Batch, CounterSnapshot, Counters, Loader, LoaderBuilder, Mode, Stream};

use crate::{Error, Result};

/// Turns one loader batch into the model's input, on the worker threads.
type Convert<O> = Arc<dyn Fn(Batch, &Device) -> Result<O> + Send + Sync>;

/// What every call of [`iter`](DataLoader::iter) covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EpochMode {
    /// Each epoch continues the sampler where the last one ended: epoch `e`
    /// is steps `e·S .. (e+1)·S` (for `S` steps per epoch). For training.
    #[default]
    Continue,
    /// Every epoch is the same steps `0 .. S`. For validation and test sets,
    /// usually with [`Mode::Sequential`].
    Repeat,
}

/// Configures a [`StoreDataLoader`]; from [`StoreDataLoader::builder`].
///
/// The loader's own configuration — streams, sampling, threads — is a
/// [`LoaderBuilder`], checked by the loader; this adds the epoch settings.
/// Everything the loader needs to (re)start at any step is kept here, which is
/// what lets [`slice`](DataLoader::slice), [`to_device`](DataLoader::to_device)
/// and a dropped iterator stay deterministic.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct StoreDataLoaderBuilder {
    loader: LoaderBuilder<Batch>,
    steps_per_epoch: Option<u64>,
    epoch_mode: EpochMode,
    first_epoch: u64,
}

/// Setters that configure the inner [`LoaderBuilder`]; each documents its
/// default there.
macro_rules! loader_setters {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $($arg: $ty),*) -> Self {
            self.loader = self.loader.$name($($arg),*);
            self
        }
    )*};
}

impl StoreDataLoaderBuilder {
    loader_setters! {
        /// Adds a stream: see [`LoaderBuilder::stream`].
        fn stream(name: impl Into<String>, stream: impl Into<Stream>);
        /// The sampling mode: see [`LoaderBuilder::mode`].
        fn mode(mode: Mode);
        /// The seed: see [`LoaderBuilder::seed`].
        fn seed(seed: u64);
        /// This process's share of every global batch: see
        /// [`LoaderBuilder::shard`]. [`num_items`](DataLoader::num_items)
        /// counts this rank's items.
        fn shard(rank: u64, world_size: u64);
        /// Samples only these record indices: see [`LoaderBuilder::subset`].
        fn subset(indices: impl Into<Arc<[u64]>>);
        /// The sampler step of epoch 0's first batch: see [`LoaderBuilder::start_step`].
        fn start_step(step: u64);
        /// Worker threads that gather and convert: see [`LoaderBuilder::workers`].
        fn workers(workers: usize);
        /// Batches in flight at once: see [`LoaderBuilder::prefetch`].
        fn prefetch(batches: usize);
    }

    /// Steps in one epoch (default: one pass over the data, `⌊len / batch⌋`).
    pub fn steps_per_epoch(mut self, steps: u64) -> Self {
        self.steps_per_epoch = Some(steps);
        self
    }

    /// Whether epochs continue the sampler or repeat the same steps
    /// (default [`EpochMode::Continue`]).
    pub fn epoch_mode(mut self, mode: EpochMode) -> Self {
        self.epoch_mode = mode;
        self
    }

    /// The epoch the first [`iter`](DataLoader::iter) call serves (default
    /// 0): set it to the epoch a resumed training starts at, so it sees the
    /// batches it would have seen.
    pub fn first_epoch(mut self, epoch: u64) -> Self {
        self.first_epoch = epoch;
        self
    }

    /// Checks the configuration and builds the data loader; `convert` turns
    /// each [`Batch`] into the model's input on the worker threads, with the
    /// device the loader is on (see the [crate converters](crate#converters)).
    ///
    /// A loader is started once to check the configuration and stopped at
    /// once; the worker threads that serve batches start on the first `iter`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for zero steps per epoch, and
    /// [`Error::Loader`] for whatever [`LoaderBuilder::build`] refuses: no
    /// streams, two of one name or of different lengths, a batch larger than
    /// the data in a cyclic mode, a world size that does not divide the
    /// batch, a subset out of range.
    pub fn build<O, F>(self, device: &Device, convert: F) -> Result<StoreDataLoader<O>>
    where
        O: Send + 'static,
        F: Fn(Batch, &Device) -> Result<O> + Send + Sync + 'static,
    {
        if self.steps_per_epoch == Some(0) {
            return Err(Error::InvalidArgument(
                "an epoch needs at least one step".into(),
            ));
        }
        // Build a loader once to check the configuration and learn the batch
        // geometry; it is dropped at once (one worker, one batch).
        let probe = self.loader.clone().workers(1).prefetch(1).build()?;
        let batch_size = probe.batch_size();
        let start_step = probe.step();
        let steps_per_epoch = self.steps_per_epoch.unwrap_or(probe.steps_per_epoch());
        drop(probe);
        let first_epoch = self.first_epoch;
        Ok(StoreDataLoader {
            config: Arc::new(self),
            convert: Arc::new(convert),
            device: device.clone(),
            steps: 0..steps_per_epoch,
            start_step,
            steps_per_epoch,
            batch_size,
            counters: Arc::new(Mutex::new(Vec::new())),
            state: Mutex::new(State {
                loader: None,
                next_epoch: first_epoch,
            }),
        })
    }
}

/// A Burn [`DataLoader`] over zrecord stores, driven by
/// [`zrecord_loader::Loader`]: our sampler chooses every batch, worker
/// threads gather and convert ahead of the training loop, and batches come in
/// step order — the same for any worker count.
///
/// The loader is endless; Burn thinks in epochs, so an epoch here is a
/// **virtual epoch** of `S` steps ([`steps_per_epoch`](StoreDataLoaderBuilder::steps_per_epoch),
/// one pass by default). Every call of [`iter`](DataLoader::iter) serves the
/// next epoch ([`EpochMode::Continue`]) or the same one
/// ([`EpochMode::Repeat`]); epoch `e` is always sampler steps
/// `start + e·S + r` for `r` in the loader's step range, whatever happened
/// before — an iterator dropped half-way, a second iterator, a
/// [`to_device`](DataLoader::to_device) copy. The prefetching threads carry
/// on across an epoch boundary when the next epoch follows on, and restart at
/// the right step when it does not.
///
/// # Items and slices
///
/// [`num_items`](DataLoader::num_items) is steps × this rank's batch size,
/// and [`progress`](DataLoaderIterator::progress) counts the items served.
/// [`slice(start, end)`](DataLoader::slice) keeps Burn's item positions but
/// never splits a batch: it keeps **the steps whose first item lies in
/// `start..end`**, so adjacent slices partition each epoch's steps exactly
/// (what Burn's multi-device training does with `split_dataloader`) and
/// every slice sees the same batches the whole loader would. For
/// data-parallel ranks that each take a share of *every* batch, use
/// [`shard`](StoreDataLoaderBuilder::shard) instead.
///
/// # Errors
///
/// A store error, a converter error or a converter panic at some step comes
/// out of the iterator as `Err(DatasetError)` for that step — Burn's
/// `Learner` stops the training and reports it in `LearningResult::error`;
/// [`Error::from_dataset_error`] recovers this crate's error. A caller that
/// keeps iterating gets the next step; nothing is skipped silently and
/// nothing panics.
///
/// ```
/// use std::sync::Arc;
/// use burn::data::dataloader::DataLoader;
/// use burn::tensor::{Device, Int, Tensor};
/// use zrecord::{Codec, DenseStore};
/// use zrecord_burn::{StoreDataLoader, dense_tensor};
/// # let dir = tempfile::tempdir()?;
///
/// let x = DenseStore::<f32>::create(dir.path().join("x"), &[3], Codec::Zstd)?;
/// x.append(&vec![0.5f32; 100 * 3])?;
/// let y = DenseStore::<i64>::create(dir.path().join("y"), &[], Codec::Raw)?;
/// y.append(&(0..100).collect::<Vec<i64>>())?;
///
/// let loader = StoreDataLoader::builder(10)
///     .stream("x", x)
///     .stream("y", y)
///     .seed(42)
///     .steps_per_epoch(5)
///     .build(&Device::flex(), |mut batch, device| {
///         let x: Tensor<2> = dense_tensor(&mut batch, "x", device)?;
///         let y: Tensor<1, Int> = dense_tensor(&mut batch, "y", device)?;
///         Ok((x, y))
///     })?;
/// let loader: Arc<dyn DataLoader<(Tensor<2>, Tensor<1, Int>)>> = Arc::new(loader);
/// assert_eq!(loader.num_items(), 50);
/// let mut epoch = loader.iter();
/// let (x, y) = epoch.next().unwrap()?;
/// assert_eq!((x.dims(), y.dims()), ([10, 3], [10]));
/// assert_eq!(epoch.progress().items_processed, 10);
/// assert_eq!(epoch.count(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StoreDataLoader<O> {
    config: Arc<StoreDataLoaderBuilder>,
    convert: Convert<O>,
    device: Device,
    /// The steps of each epoch this loader serves, relative to the epoch's start.
    steps: Range<u64>,
    /// The sampler step of epoch 0's first batch.
    start_step: u64,
    steps_per_epoch: u64,
    /// Records per batch on this rank.
    batch_size: usize,
    /// Counters of every loader this one and its copies have run.
    counters: Arc<Mutex<Vec<Arc<Counters>>>>,
    state: Mutex<State<O>>,
}

struct State<O> {
    /// The running loader, if any; its next step may be anywhere.
    loader: Option<Loader<Result<O>>>,
    /// The epoch the next `iter` serves.
    next_epoch: u64,
}

impl StoreDataLoader<()> {
    /// A builder for a data loader yielding batches of `batch_size` records
    /// (the global batch: all ranks together).
    ///
    /// Defaults: [`Mode::Cyclic`], seed 0, rank 0 of 1, 2 workers, prefetch 4,
    /// one pass per epoch, [`EpochMode::Continue`].
    pub fn builder(batch_size: u64) -> StoreDataLoaderBuilder {
        StoreDataLoaderBuilder {
            loader: Loader::builder(batch_size),
            steps_per_epoch: None,
            epoch_mode: EpochMode::Continue,
            first_epoch: 0,
        }
    }
}

impl<O: Send + 'static> StoreDataLoader<O> {
    /// Steps in one (virtual) epoch of the whole loader.
    pub fn steps_per_epoch(&self) -> u64 {
        self.steps_per_epoch
    }

    /// The steps of each epoch this loader serves: `0..steps_per_epoch()`,
    /// or less for a [`slice`](DataLoader::slice).
    pub fn step_range(&self) -> Range<u64> {
        self.steps.clone()
    }

    /// Records in each batch (this rank's share of the global batch).
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The device batches are converted for.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The epoch the next [`iter`](DataLoader::iter) call serves.
    pub fn next_epoch(&self) -> u64 {
        self.lock().next_epoch
    }

    /// The sampler step of position `r` of `epoch` (relative to the epoch's start).
    pub fn step_of(&self, epoch: u64, r: u64) -> u64 {
        self.start_step
            .saturating_add(epoch.saturating_mul(self.steps_per_epoch))
            .saturating_add(r)
    }

    /// The pipeline counters summed over every loader this data loader and
    /// the copies made from it ([`to_device`](DataLoader::to_device),
    /// [`slice`](DataLoader::slice)) have run: steps, bytes, gather,
    /// convert (transform) and wait times. `ready` and `in_flight` are the
    /// live loaders' queues.
    pub fn counters(&self) -> CounterSnapshot {
        let counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let mut total = CounterSnapshot::default();
        for c in counters.iter() {
            let s = c.snapshot();
            total.steps_delivered += s.steps_delivered;
            total.ready += s.ready;
            total.in_flight += s.in_flight;
            total.bytes_gathered += s.bytes_gathered;
            total.gather_time += s.gather_time;
            total.transform_time += s.transform_time;
            total.consumer_wait += s.consumer_wait;
            total.buffers_allocated += s.buffers_allocated;
        }
        total
    }

    fn lock(&self) -> MutexGuard<'_, State<O>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy with another device and step range, serving the same next epoch.
    fn derive(&self, device: &Device, steps: Range<u64>) -> StoreDataLoader<O> {
        StoreDataLoader {
            config: Arc::clone(&self.config),
            convert: Arc::clone(&self.convert),
            device: device.clone(),
            steps,
            start_step: self.start_step,
            steps_per_epoch: self.steps_per_epoch,
            batch_size: self.batch_size,
            counters: Arc::clone(&self.counters),
            state: Mutex::new(State {
                loader: None,
                next_epoch: self.next_epoch(),
            }),
        }
    }

    /// The batch of sampler step `step`, (re)starting the loader there if it
    /// is elsewhere.
    fn batch_at(&self, step: u64) -> Result<O> {
        let mut state = self.lock();
        let running = state.loader.as_ref().is_some_and(|l| l.step() == step);
        if !running {
            state.loader = None; // stop the old threads before starting new ones
            let convert = Arc::clone(&self.convert);
            let device = self.device.clone();
            let loader = self
                .config
                .loader
                .clone()
                .start_step(step)
                .transform(move |batch| convert(batch, &device))
                .build()?;
            self.counters
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(loader.counters());
            state.loader = Some(loader);
        }
        match state.loader.as_mut() {
            Some(loader) => loader.next_batch()?,
            None => Err(Error::InvalidArgument("the loader did not start".into())),
        }
    }
}

impl<O: Send + 'static> DataLoader<O> for StoreDataLoader<O> {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<O> + 'a> {
        let epoch = {
            let mut state = self.lock();
            let epoch = state.next_epoch;
            if self.config.epoch_mode == EpochMode::Continue {
                state.next_epoch = epoch.saturating_add(1);
            }
            epoch
        };
        Box::new(EpochIter {
            loader: self,
            epoch,
            next: self.steps.start,
        })
    }

    fn num_items(&self) -> usize {
        let steps = usize::try_from(self.steps.end - self.steps.start).unwrap_or(usize::MAX);
        steps.saturating_mul(self.batch_size)
    }

    fn to_device(&self, device: &Device) -> Arc<dyn DataLoader<O>> {
        Arc::new(self.derive(device, self.steps.clone()))
    }

    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<O>> {
        let b = self.batch_size.max(1) as u64;
        let first = |item: usize| {
            self.steps
                .start
                .saturating_add((item as u64).div_ceil(b))
                .min(self.steps.end)
        };
        let (from, to) = (first(start), first(end.max(start)));
        Arc::new(self.derive(&self.device, from..to))
    }
}

/// One epoch of a [`StoreDataLoader`].
struct EpochIter<'a, O> {
    loader: &'a StoreDataLoader<O>,
    epoch: u64,
    /// The next position in the epoch (relative step).
    next: u64,
}

impl<O: Send + 'static> Iterator for EpochIter<'_, O> {
    type Item = Result<O, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.loader.steps.end {
            return None;
        }
        let step = self.loader.step_of(self.epoch, self.next);
        self.next += 1;
        Some(self.loader.batch_at(step).map_err(DatasetError::from))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.loader.steps.end.saturating_sub(self.next)).unwrap_or(0);
        (n, Some(n))
    }
}

impl<O: Send + 'static> DataLoaderIterator<O> for EpochIter<'_, O> {
    fn progress(&self) -> Progress {
        let steps = usize::try_from(self.next - self.loader.steps.start).unwrap_or(usize::MAX);
        Progress::new(
            steps.saturating_mul(self.loader.batch_size),
            self.loader.num_items(),
            Some("items".into()),
        )
    }
}
