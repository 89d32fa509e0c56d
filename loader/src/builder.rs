//! [`LoaderBuilder`]: a loader's configuration and its transform.

use std::sync::Arc;

use zsampler::Mode;

use crate::config::Config;
use crate::last_batch::Passes;
use crate::loader::{Loader, Transform};
use crate::{Batch, LastBatch, LoaderState, Plan, Result, Stream};

/// Configures a [`Loader`]; every check happens in [`build`](Self::build).
///
/// From [`Loader::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct LoaderBuilder<T> {
    config: Config,
    transform: Transform<T>,
}

/// A copy of the configuration (streams share their open stores): the way to
/// build loaders that differ in one setting, such as a training loader and an
/// evaluation loader over a different subset.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&(0..100).collect::<Vec<i64>>())?;
/// let base = Loader::builder(10).stream("label", labels).seed(7);
/// let mut train = base.clone().subset((0..80).collect::<Vec<u64>>()).build()?;
/// let mut valid = base.subset((80..100).collect::<Vec<u64>>()).mode(Mode::Sequential).build()?;
/// assert!(train.next_batch()?.indices().iter().all(|&i| i < 80));
/// assert_eq!(valid.next_batch()?.indices(), (80..90).collect::<Vec<u64>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<T> Clone for LoaderBuilder<T> {
    fn clone(&self) -> Self {
        LoaderBuilder {
            config: self.config.clone(),
            transform: Arc::clone(&self.transform),
        }
    }
}

impl Loader<Batch> {
    /// A builder for a loader yielding batches of `batch_size` records (the
    /// global batch: all ranks together).
    ///
    /// Defaults: [`Mode::Cyclic`], seed 0, rank 0 of 1, 2 workers, prefetch 4,
    /// no transform.
    pub fn builder(batch_size: u64) -> LoaderBuilder<Batch> {
        LoaderBuilder {
            config: Config::new(batch_size),
            transform: Arc::new(|batch| batch),
        }
    }
}

impl<T: Send + 'static> LoaderBuilder<T> {
    /// Adds a stream: any store (dense or ragged, any dtype), or an `Arc` of a
    /// dtype-tagged one to share it with other loaders.
    pub fn stream(mut self, name: impl Into<String>, stream: impl Into<Stream>) -> Self {
        self.config.streams.push((name.into(), stream.into()));
        self
    }

    /// Adds every stream of a sharded `dataset`, by its names: the loader
    /// reads its shards as one index space.
    ///
    /// ```
    /// use zrecord::{Codec, Dataset, DenseStore, shard_folder};
    /// use zrecord_loader::{Loader, Mode};
    /// # let dir = tempfile::tempdir()?;
    /// # let dir = dir.path();
    /// for k in 0..3 {
    ///     let shard = dir.join(shard_folder(k, 3));
    ///     std::fs::create_dir_all(&shard)?;
    ///     let labels = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw)?;
    ///     labels.append(&[10 * k as i64, 10 * k as i64 + 1])?;
    /// }
    /// Dataset::join(dir)?;
    /// let mut loader = Loader::builder(6)
    ///     .dataset(Dataset::open(dir)?)
    ///     .mode(Mode::Sequential)
    ///     .build()?;
    /// let batch = loader.next_batch()?;
    /// assert_eq!(batch.dense::<i64>("label")?.as_slice(), Some(&[0, 1, 10, 11, 20, 21][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dataset(mut self, dataset: zrecord::Dataset) -> Self {
        for (name, shards) in dataset.into_streams() {
            self.config.streams.push((name, shards.into()));
        }
        self
    }

    /// The sampling mode (default [`Mode::Cyclic`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self
    }

    /// What a sequential loader does at the end of the data (default
    /// [`LastBatch::Wrap`]); [`LastBatch::Short`] reads the data in passes
    /// that see every record exactly once, for evaluation. Not part of a
    /// [`LoaderState`]: set it again when resuming.
    pub fn last_batch(mut self, last_batch: LastBatch) -> Self {
        self.config.last_batch = last_batch;
        self
    }

    /// The seed (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// This process's `rank` among `world_size` data-parallel ranks: rank `r`
    /// gets positions `⌊r·B/world⌋ .. ⌊(r+1)·B/world⌋` of every global batch
    /// of `B`, so the ranks' batches together are the global batch for any
    /// world size up to `B`. See also [`shard_from_env`](Self::shard_from_env).
    pub fn shard(mut self, rank: u64, world_size: u64) -> Self {
        self.config.shard = Some((rank, world_size));
        self
    }

    /// [`shard`](Self::shard) by the launcher's `RANK` and `WORLD_SIZE`
    /// (see [`Launcher`](crate::Launcher)); unchanged when neither is set.
    ///
    /// # Errors
    /// [`Error::Launcher`](crate::Error::Launcher) for a variable that is
    /// set wrong or without its partner.
    pub fn shard_from_env(self) -> Result<Self> {
        Ok(match crate::Launcher::from_env()? {
            Some(place) => self.shard(place.rank, place.world_size),
            None => self,
        })
    }

    /// Samples only these record indices (a train/validation split, a filter result).
    pub fn subset(mut self, indices: impl Into<Arc<[u64]>>) -> Self {
        self.config.subset = Some(indices.into());
        self
    }

    /// The first step (default 0).
    pub fn start_step(mut self, step: u64) -> Self {
        self.config.start_step = step;
        self
    }

    /// Continues from a saved [`LoaderState`]: its mode, seed, batch size and
    /// step replace this builder's; [`shard`](Self::shard) may change the
    /// rank and world size. Pass the same subset again if there was one.
    pub fn resume(mut self, state: &LoaderState) -> Self {
        self.config.resume = Some(state.sampler);
        self
    }

    /// Worker threads that gather and transform (default 2; at least 1).
    /// Batches are identical for every worker count.
    pub fn workers(mut self, workers: usize) -> Self {
        self.config.workers = workers.max(1);
        self
    }

    /// Batches that may be in flight — being built or ready — at once
    /// (default 4; at least 1). Memory is bounded by it.
    pub fn prefetch(mut self, batches: usize) -> Self {
        self.config.prefetch = batches.max(1);
        self
    }

    /// Runs `f` on every batch on the worker threads (collate, cast, pad,
    /// move to a device); the loader then yields what `f` returns. A panic in
    /// `f` reaches the consumer as
    /// [`Error::TransformPanicked`](crate::Error::TransformPanicked).
    pub fn transform<U, F>(self, f: F) -> LoaderBuilder<U>
    where
        F: Fn(T) -> U + Send + Sync + 'static,
        U: Send + 'static,
    {
        let inner = self.transform;
        LoaderBuilder {
            config: self.config,
            transform: Arc::new(move |batch| f(inner(batch))),
        }
    }

    /// Checks the configuration, builds the sampler and starts the workers.
    ///
    /// # Errors
    /// [`NoStreams`], [`DuplicateStream`], [`LengthMismatch`] (naming both
    /// streams), [`SubsetOutOfRange`], [`Sampler`] for a bad sampling
    /// configuration (batch larger than the data for cyclic modes, a world
    /// size larger than the batch, ...), [`StateMismatch`] for a
    /// state saved over other data, [`ShortLastBatchNeedsSequential`],
    /// [`Spawn`].
    ///
    /// [`NoStreams`]: crate::Error::NoStreams
    /// [`DuplicateStream`]: crate::Error::DuplicateStream
    /// [`LengthMismatch`]: crate::Error::LengthMismatch
    /// [`SubsetOutOfRange`]: crate::Error::SubsetOutOfRange
    /// [`Sampler`]: crate::Error::Sampler
    /// [`StateMismatch`]: crate::Error::StateMismatch
    /// [`ShortLastBatchNeedsSequential`]: crate::Error::ShortLastBatchNeedsSequential
    /// [`Spawn`]: crate::Error::Spawn
    pub fn build(self) -> Result<Loader<T>> {
        let plan = self.plan()?;
        Loader::start(self.config, self.transform, plan)
    }

    /// Checks the configuration as [`build`](Self::build) does (all its
    /// errors but [`Spawn`](crate::Error::Spawn)) and returns what the loader
    /// would serve, without starting it or reading any data.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn plan(&self) -> Result<Plan> {
        let sampler = self.config.check()?;
        let passes = Passes::new(&sampler, self.config.last_batch)?;
        Ok(Plan { sampler, passes })
    }
}
