//! [`StoreDataLoader`]: a Burn [`DataLoader`] driven by `zrecord-loader` —
//! our sampler, our prefetch, our order — in virtual epochs of a chosen
//! number of steps.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use burn::data::dataloader::{DataLoader, DataLoaderIterator, Progress};
use burn::data::dataset::DatasetError;
use burn::tensor::Device;
use zrecord_loader::{
    Batch, CounterSnapshot, Counters, LastBatch, Loader, LoaderBuilder, LoaderConfig, Mixture,
    Mode, Plan, SourceProgress, Stream,
};

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
    /// with [`Mode::Sequential`]: then each epoch is, by default, one pass
    /// that sees every record exactly once (see
    /// [`last_batch`](StoreDataLoaderBuilder::last_batch)).
    Repeat,
}

/// Configures a [`StoreDataLoader`]; from [`StoreDataLoader::builder`].
///
/// The loader's own configuration — streams, and the sampling and threading
/// setters of every `zrecord-loader` loader ([`LoaderConfig`] documents each
/// setting and its default) — is checked by the loader; this adds the epoch
/// settings. Everything the loader needs to (re)start at any step is kept
/// here, which is what lets [`slice`](DataLoader::slice),
/// [`to_device`](DataLoader::to_device) and a dropped iterator stay
/// deterministic.
///
/// [`shard`](Self::shard) splits every global batch: then
/// [`num_items`](DataLoader::num_items) counts this rank's items.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct StoreDataLoaderBuilder {
    streams: Vec<(String, Stream)>,
    mixture: Option<Mixture>,
    /// The global batch: all ranks together.
    batch_size: u64,
    config: LoaderConfig,
    last_batch: Option<LastBatch>,
    steps_per_epoch: Option<u64>,
    epoch_mode: EpochMode,
    first_epoch: u64,
}

impl StoreDataLoaderBuilder {
    zrecord_loader::config_setters!(config);

    /// Adds a stream: see [`LoaderBuilder::stream`].
    pub fn stream(mut self, name: impl Into<String>, stream: impl Into<Stream>) -> Self {
        self.streams.push((name.into(), stream.into()));
        self
    }

    /// Adds every stream of a sharded dataset: see [`LoaderBuilder::dataset`].
    pub fn dataset(mut self, dataset: zrecord::Dataset) -> Self {
        for (name, shards) in dataset.into_streams() {
            self.streams.push((name, shards));
        }
        self
    }

    /// Reads a mixture of sources instead of streams: see
    /// [`LoaderBuilder::mixture`]. An epoch's default length is then
    /// `⌊records of all sources / batch⌋` steps.
    ///
    /// ```
    /// # use zrecord::{Codec, DenseStore};
    /// use zrecord_burn::StoreDataLoader;
    /// use zrecord_loader::{Mixture, Source};
    /// # let dir = tempfile::tempdir()?;
    /// # let store = |name: &str, n: usize| -> zrecord::Result<DenseStore<f32>> {
    /// #     let s = DenseStore::<f32>::create(dir.path().join(name), &[2], Codec::Raw)?;
    /// #     s.append(&vec![1.0; 2 * n])?;
    /// #     Ok(s)
    /// # };
    /// let mixture = Mixture::new()
    ///     .source(Source::new("large").stream("x", store("large", 900)?).weight(0.7))
    ///     .source(Source::new("small").stream("x", store("small", 40)?).weight(0.3));
    /// let device = Default::default();
    /// let small = |batch: zrecord_loader::Batch, _: &_| {
    ///     Ok((0..batch.len()).filter(|&k| batch.source(k) == Some("small")).count())
    /// };
    /// let loader = StoreDataLoader::builder(10).mixture(mixture.clone()).build(&device, small)?;
    /// # use burn::data::dataloader::DataLoader;
    /// assert_eq!(loader.num_items(), 940 / 10 * 10);
    /// assert!(loader.iter().all(|small| small.is_ok_and(|n| n == 3))); // 30 % of every batch
    ///
    /// // Evaluation: every record of both sources once an epoch, the last batch short.
    /// let eval = StoreDataLoader::builder(10)
    ///     .mixture(mixture)
    ///     .last_batch(zrecord_loader::LastBatch::Short)
    ///     .build(&device, small)?;
    /// assert_eq!(eval.num_items(), 940);
    /// assert_eq!(eval.iter().map(|small| small.unwrap()).sum::<usize>(), 40);
    /// let served = eval.sources(eval.next_epoch()).expect("a mixture");
    /// assert_eq!((served[1].records, served[1].epochs), (40, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mixture(mut self, mixture: Mixture) -> Self {
        self.mixture = Some(mixture);
        self
    }

    /// The mode the sampler will run in: the one given, or the saved one
    /// when resuming.
    fn sampling_mode(&self) -> Mode {
        self.config
            .resume
            .map_or(self.config.mode, |state| state.sampler.mode)
    }

    /// The inner loader's builder, starting at sampler step `step` when given.
    fn loader(&self, last_batch: LastBatch, step: Option<u64>) -> LoaderBuilder<Batch> {
        let mut config = self.config.clone();
        if let Some(step) = step {
            match &mut config.resume {
                Some(state) => state.sampler.step = step,
                None => config.start_step = step,
            }
        }
        let mut loader = Loader::builder(self.batch_size)
            .with_config(config)
            .last_batch(last_batch);
        for (name, stream) in &self.streams {
            loader = loader.stream(name.clone(), stream.clone());
        }
        match &self.mixture {
            Some(mixture) => loader.mixture(mixture.clone()),
            None => loader,
        }
    }

    /// What a [`Mode::Sequential`] loader does with the records that do not
    /// fill a whole batch: see [`LastBatch`].
    ///
    /// The default is [`LastBatch::Short`] for [`Mode::Sequential`] with
    /// [`EpochMode::Repeat`] — a validation or test loader, whose every
    /// epoch then scores each record exactly once, the last batch holding
    /// what is left — and [`LastBatch::Wrap`] otherwise.
    pub fn last_batch(mut self, last_batch: LastBatch) -> Self {
        self.last_batch = Some(last_batch);
        self
    }

    /// Steps in one epoch (default: one pass over the data, `⌊len / batch⌋`
    /// steps, or `⌈len / batch⌉` with a short last batch).
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
    /// The configuration is checked here, without reading data; the worker
    /// threads that serve batches start on the first `iter`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for zero steps per epoch, and
    /// [`Error::Loader`] for whatever [`LoaderBuilder::build`] refuses: no
    /// streams, two of one name or of different lengths, a batch larger than
    /// the data in a cyclic mode, a world size larger than the batch, a
    /// subset out of range.
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
        let last_batch = self.last_batch.unwrap_or(
            if self.sampling_mode() == Mode::Sequential && self.epoch_mode == EpochMode::Repeat {
                LastBatch::Short
            } else {
                LastBatch::Wrap
            },
        );
        // The configuration's checks and batch geometry, without starting a
        // loader: a probe's workers would read (and fetch) data unaccounted.
        let plan = self.loader(last_batch, None).plan()?;
        let batch_size = plan.batch_size();
        let start_step = plan.step();
        let pass = plan.steps_per_epoch();
        let short = (last_batch == LastBatch::Short).then(|| (pass, plan.batch_len(pass - 1)));
        // A rank whose slice of the short batch is empty ends its pass a step
        // early; its epochs still start a whole pass apart.
        let (steps_per_epoch, epoch_stride) = match (self.steps_per_epoch, short) {
            (Some(steps), _) => (steps, steps),
            (None, Some((pass, 0))) => (pass - 1, pass),
            (None, _) => (pass, pass),
        };
        let first_epoch = self.first_epoch;
        let mut loader = StoreDataLoader {
            config: Arc::new(self),
            last_batch,
            convert: Arc::new(convert),
            device: device.clone(),
            steps: 0..steps_per_epoch,
            start_step,
            steps_per_epoch,
            epoch_stride,
            batch_size,
            short,
            plan,
            num_items: 0,
            counters: Arc::new(Mutex::new(Vec::new())),
            state: Mutex::new(State {
                loader: None,
                next_epoch: first_epoch,
            }),
        };
        loader.num_items = loader.items_of_epoch(first_epoch);
        Ok(loader)
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
/// `start + e·S + r` for `r` in the loader's step range (`S` a whole pass
/// for a rank whose slice of a short last batch is empty), whatever happened
/// before — an iterator dropped half-way, a second iterator, a
/// [`to_device`](DataLoader::to_device) copy. The prefetching threads carry
/// on across an epoch boundary when the next epoch follows on, and restart at
/// the right step when it does not.
///
/// # Items and slices
///
/// [`num_items`](DataLoader::num_items) is the records an epoch serves
/// this rank — steps × batch size, less what a short last batch lacks — and
/// [`progress`](DataLoaderIterator::progress) counts the records served.
///
/// A training loader ([`Mode::Cyclic`]) serves `⌊len / batch⌋` full batches
/// per epoch, each epoch a fresh permutation (the records left over differ
/// every epoch). A validation or test loader — [`Mode::Sequential`] with
/// [`EpochMode::Repeat`] — serves every record exactly once per epoch, in
/// `⌈len / batch⌉` batches, the last one short, for any batch size.
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
/// keeps iterating gets the next step; nothing panics.
///
/// A converter error about one record — an image that does not decode —
/// comes under the [`bad_records`](StoreDataLoaderBuilder::bad_records)
/// policy: by default it stops the training as any error does; with
/// [`BadRecords::Skip`](zrecord_loader::BadRecords::Skip) the record is
/// replaced by a substitute every rank and every resumed run agree on, and
/// [`counters`](StoreDataLoader::counters) count it
/// (`bad_records_skipped`).
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
    /// The last batch the builder settled on.
    last_batch: LastBatch,
    convert: Convert<O>,
    device: Device,
    /// The steps of each epoch this loader serves, relative to the epoch's start.
    steps: Range<u64>,
    /// The sampler step of epoch 0's first batch.
    start_step: u64,
    steps_per_epoch: u64,
    /// Sampler steps from one epoch's first batch to the next one's.
    epoch_stride: u64,
    /// Records per batch on this rank.
    batch_size: usize,
    /// With a short last batch: steps per pass, and this rank's records in
    /// the pass's last batch.
    short: Option<(u64, usize)>,
    /// Records of [`steps`](Self::steps) in the first epoch served.
    num_items: usize,
    /// The checked configuration's plan (a mixture's order, for [`sources`](Self::sources)).
    plan: Plan,
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
    /// Defaults: those of [`LoaderConfig`], one pass per epoch,
    /// [`EpochMode::Continue`].
    pub fn builder(batch_size: u64) -> StoreDataLoaderBuilder {
        StoreDataLoaderBuilder {
            streams: Vec::new(),
            mixture: None,
            batch_size,
            config: LoaderConfig::default(),
            last_batch: None,
            steps_per_epoch: None,
            epoch_mode: EpochMode::Continue,
            first_epoch: 0,
        }
    }
}

impl<O: Send + 'static> StoreDataLoader<O> {
    /// The next epoch's batches, in step order: Burn's
    /// [`DataLoader::iter`], here as well so that a plain training loop
    /// needs no trait import.
    ///
    /// ```
    /// # use burn::tensor::{Device, Tensor};
    /// # use zrecord::{Codec, DenseStore};
    /// # use zrecord_burn::{StoreDataLoader, dense_tensor};
    /// # let dir = tempfile::tempdir()?;
    /// # let x = DenseStore::<f32>::create(dir.path().join("x"), &[3], Codec::Raw)?;
    /// # x.append(&vec![0.5f32; 40 * 3])?;
    /// let loader = StoreDataLoader::builder(10)
    ///     .stream("x", x)
    ///     .build(&Device::flex(), |mut batch, device| {
    ///         let x: Tensor<2> = dense_tensor(&mut batch, "x", device)?;
    ///         Ok(x)
    ///     })?;
    /// for batch in loader.iter() {
    ///     let x: Tensor<2> = batch?;
    ///     assert_eq!(x.dims(), [10, 3]);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> Box<dyn DataLoaderIterator<O> + '_> {
        DataLoader::iter(self)
    }

    /// Steps in one (virtual) epoch of the whole loader.
    pub fn steps_per_epoch(&self) -> u64 {
        self.steps_per_epoch
    }

    /// The steps of each epoch this loader serves: `0..steps_per_epoch()`,
    /// or less for a [`slice`](DataLoader::slice).
    pub fn step_range(&self) -> Range<u64> {
        self.steps.clone()
    }

    /// Records in each batch (this rank's share of the global batch); the
    /// last batch of a pass may hold fewer ([`LastBatch::Short`]).
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Records this rank's batch of sampler step `step` holds.
    pub fn batch_len(&self, step: u64) -> usize {
        match self.short {
            Some((pass, last)) if step % pass == pass - 1 => last,
            _ => self.batch_size,
        }
    }

    /// Records in this loader's steps of `epoch`.
    fn items_of_epoch(&self, epoch: u64) -> usize {
        self.steps
            .clone()
            .map(|r| self.batch_len(self.step_of(epoch, r)))
            .fold(0usize, usize::saturating_add)
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
            .saturating_add(epoch.saturating_mul(self.epoch_stride))
            .saturating_add(r)
    }

    /// Over a [`Mixture`]: each source's records served and epochs
    /// completed in the global batches before `epoch` starts (all ranks
    /// together) — after an epoch, `sources(next_epoch())` counts all it
    /// served; `None` otherwise.
    pub fn sources(&self, epoch: u64) -> Option<Vec<SourceProgress>> {
        self.plan.sources(self.step_of(epoch, 0))
    }

    /// The pipeline counters summed over every loader this data loader and
    /// the copies made from it ([`to_device`](DataLoader::to_device),
    /// [`slice`](DataLoader::slice)) have run: steps, bytes, gather,
    /// convert (transform) and wait times, reads and cache work. `ready`
    /// and `in_flight` are the live loaders' queues.
    pub fn counters(&self) -> CounterSnapshot {
        let counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let mut total = CounterSnapshot::default();
        for c in counters.iter() {
            total += c.snapshot();
        }
        total
    }

    fn lock(&self) -> MutexGuard<'_, State<O>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy with another device and step range, serving the same next epoch.
    fn derive(&self, device: &Device, steps: Range<u64>) -> StoreDataLoader<O> {
        let mut derived = StoreDataLoader {
            config: Arc::clone(&self.config),
            last_batch: self.last_batch,
            convert: Arc::clone(&self.convert),
            device: device.clone(),
            steps,
            start_step: self.start_step,
            steps_per_epoch: self.steps_per_epoch,
            epoch_stride: self.epoch_stride,
            batch_size: self.batch_size,
            short: self.short,
            plan: self.plan.clone(),
            num_items: 0,
            counters: Arc::clone(&self.counters),
            state: Mutex::new(State {
                loader: None,
                next_epoch: self.next_epoch(),
            }),
        };
        derived.num_items = derived.items_of_epoch(self.config.first_epoch);
        derived
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
                .loader(self.last_batch, Some(step))
                .try_transform(move |batch| convert(batch, &device))
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
            items: 0,
        })
    }

    fn num_items(&self) -> usize {
        self.num_items
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
    /// Records in the batches served so far.
    items: usize,
}

impl<O: Send + 'static> Iterator for EpochIter<'_, O> {
    type Item = Result<O, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.loader.steps.end {
            return None;
        }
        let step = self.loader.step_of(self.epoch, self.next);
        self.next += 1;
        self.items = self.items.saturating_add(self.loader.batch_len(step));
        Some(self.loader.batch_at(step).map_err(DatasetError::from))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.loader.steps.end.saturating_sub(self.next)).unwrap_or(0);
        (n, Some(n))
    }
}

impl<O: Send + 'static> DataLoaderIterator<O> for EpochIter<'_, O> {
    fn progress(&self) -> Progress {
        Progress::new(self.items, self.loader.num_items(), Some("items".into()))
    }
}
