//! [`LoaderBuilder`]: a loader's streams, its [`LoaderConfig`] and its
//! transform.

use std::sync::Arc;

use zsampler::Sampler;

use crate::last_batch::Passes;
use crate::loader::{Loader, Outcome, Transform};
use crate::{
    Batch, Error, LastBatch, LoaderConfig, Plan, RecordError, Result, Stream, check_streams,
};

/// Configures a [`Loader`]; every check happens in [`build`](Self::build).
///
/// From [`Loader::builder`]. The sampling and threading setters are those
/// of every loader; [`LoaderConfig`] documents each setting and its default.
#[must_use = "a builder does nothing until `build` is called"]
pub struct LoaderBuilder<T> {
    streams: Vec<(String, Stream)>,
    /// The global batch: all ranks together.
    batch_size: u64,
    last_batch: LastBatch,
    config: LoaderConfig,
    transform: Transform<T>,
    mixture: Option<crate::Mixture>,
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
            streams: self.streams.clone(),
            batch_size: self.batch_size,
            last_batch: self.last_batch,
            config: self.config.clone(),
            transform: Arc::clone(&self.transform),
            mixture: self.mixture.clone(),
        }
    }
}

impl Loader<Batch> {
    /// A builder for a loader yielding batches of `batch_size` records (the
    /// global batch: all ranks together), with the [`LoaderConfig`]
    /// defaults, [`LastBatch::Wrap`] and no transform.
    pub fn builder(batch_size: u64) -> LoaderBuilder<Batch> {
        LoaderBuilder {
            streams: Vec::new(),
            batch_size,
            last_batch: LastBatch::default(),
            config: LoaderConfig::default(),
            transform: Arc::new(Outcome::Done),
            mixture: None,
        }
    }
}

impl<T> LoaderBuilder<T> {
    crate::config_setters!(config);
}

impl<T: Send + 'static> LoaderBuilder<T> {
    /// Adds a stream: any store (dense or ragged, any dtype), or an `Arc` of a
    /// dtype-tagged one to share it with other loaders.
    pub fn stream(mut self, name: impl Into<String>, stream: impl Into<Stream>) -> Self {
        self.streams.push((name.into(), stream.into()));
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
            self.streams.push((name, shards));
        }
        self
    }

    /// Reads a [`Mixture`](crate::Mixture) of sources instead of streams
    /// added one by one: its streams are those every source has, and each
    /// global batch is split among the sources by their weights. The
    /// loader's [`mode`](LoaderConfig::mode) is every source's unless it
    /// sets its own; a subset and streams added with
    /// [`stream`](Self::stream) or [`dataset`](Self::dataset) are refused
    /// with it. With [`LastBatch::Short`] the loader reads passes that serve
    /// every record of every source exactly once (for evaluation): the
    /// weights hold while every source has records left, the rest of the
    /// pass mixes those left, and the last batch of a pass is short. [`Batch::source`](crate::Batch::source) names each
    /// record's source and [`Loader::sources`](crate::Loader::sources)
    /// counts records and epochs per source.
    pub fn mixture(mut self, mixture: crate::Mixture) -> Self {
        self.mixture = Some(mixture);
        self
    }

    /// What a sequential loader does at the end of the data (default
    /// [`LastBatch::Wrap`]); [`LastBatch::Short`] reads the data in passes
    /// that see every record exactly once, for evaluation. Not part of a
    /// [`LoaderState`](crate::LoaderState): set it again when resuming.
    pub fn last_batch(mut self, last_batch: LastBatch) -> Self {
        self.last_batch = last_batch;
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
        let f = Arc::new(f);
        self.then(move |batch: Outcome<T>| batch.map(&f))
    }

    /// Runs a fallible `f` on every batch on the worker threads, as
    /// [`transform`](Self::transform) does; an error of `f` that names a
    /// record of its batch ([`RecordError`], such as
    /// [`Error::BadRecord`](crate::Error::BadRecord)) comes under the
    /// [`bad_records`](LoaderConfig::bad_records) policy: with
    /// [`BadRecords::Skip`](crate::BadRecords::Skip) the loader replaces
    /// the record and runs `f` again; otherwise the consumer gets the error.
    /// Transforms added after this one see only the batch that is delivered.
    pub fn try_transform<U, E, F>(self, f: F) -> LoaderBuilder<Result<U, E>>
    where
        F: Fn(T) -> Result<U, E> + Send + Sync + 'static,
        U: Send + 'static,
        E: RecordError + Send + 'static,
    {
        let f = Arc::new(f);
        self.then(move |batch: Outcome<T>| match batch.map(&f) {
            Outcome::Done(Err(e)) => match e.bad_record() {
                Some(position) => Outcome::Bad {
                    position,
                    delivered: Box::new(move || Err(e)),
                },
                None => Outcome::Done(Err(e)),
            },
            other => other,
        })
    }

    /// This builder with `next` run on what its transform gives.
    fn then<U>(
        self,
        next: impl Fn(Outcome<T>) -> Outcome<U> + Send + Sync + 'static,
    ) -> LoaderBuilder<U> {
        let inner = self.transform;
        LoaderBuilder {
            streams: self.streams,
            batch_size: self.batch_size,
            last_batch: self.last_batch,
            config: self.config,
            transform: Arc::new(move |batch| next(inner(batch))),
            mixture: self.mixture,
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
        let (streams, plan) = self.prepare()?;
        Loader::start(streams, &self.config, self.transform, plan)
    }

    /// Checks the configuration as [`build`](Self::build) does (all its
    /// errors but [`Spawn`](crate::Error::Spawn)) and returns what the loader
    /// would serve, without starting it or reading any data.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn plan(&self) -> Result<Plan> {
        Ok(self.prepare()?.1)
    }

    /// The streams to read (a mixture's, laid end to end) and the checked plan.
    fn prepare(&self) -> Result<(Vec<(String, Stream)>, Plan)> {
        let Some(mixture) = &self.mixture else {
            let sampler = self.sampler(&self.streams, 0)?;
            let passes = Passes::new(&sampler, self.last_batch)?;
            return Ok((
                self.streams.clone(),
                Plan {
                    sampler,
                    passes,
                    mix: None,
                },
            ));
        };
        let refuse = |setting| Err(Error::MixtureUnsupported { setting });
        if !self.streams.is_empty() {
            return refuse("streams of its own");
        }
        if self.config.subset.is_some() {
            return refuse("a subset (give each source the records it should read)");
        }
        let config = &self.config;
        let (seed, batch_size) = match &config.resume {
            Some(state) => (state.sampler.seed, state.sampler.batch_size),
            None => (config.seed, self.batch_size),
        };
        let mode = config.resume.map_or(config.mode, |s| s.sampler.mode);
        let once = self.last_batch == LastBatch::Short;
        let (streams, order) = mixture.clone().build(batch_size, seed, mode, once)?;
        if let Some(state) = &config.resume
            && state.mixture != Some(order.fingerprint)
        {
            return Err(Error::MixtureStateMismatch {
                state: state.mixture,
                loader: Some(order.fingerprint),
            });
        }
        // The sampler positions ranks and steps, and keeps the mode and
        // seed a state records; the mixture picks the indices.
        // A cyclic source smaller than the batch is fine in a mixture: the
        // sampler's length only has to admit the batch.
        let sampler = self.sampler(&streams, batch_size)?;
        let passes = match once {
            true => Passes::once(&sampler, order.total()),
            false => Passes::new(&sampler, LastBatch::Wrap)?,
        };
        Ok((
            streams,
            Plan {
                sampler,
                passes,
                mix: Some(Arc::new(order)),
            },
        ))
    }

    /// Checks `streams`, the subset and the sampling settings; returns the
    /// sampler positioned at the first step.
    /// At least `min_len` records are assumed, for a mixture's sampler.
    fn sampler(&self, streams: &[(String, Stream)], min_len: u64) -> Result<Sampler> {
        if self.mixture.is_none()
            && let Some(state) = &self.config.resume
            && state.mixture.is_some()
        {
            return Err(Error::MixtureStateMismatch {
                state: state.mixture,
                loader: None,
            });
        }
        let len = check_streams(streams)?.max(min_len);
        let config = &self.config;
        if let Some(subset) = &config.subset
            && let Some((position, &index)) = subset.iter().enumerate().find(|&(_, &i)| i >= len)
        {
            return Err(Error::SubsetOutOfRange {
                position,
                index,
                len,
            });
        }
        let builder = match (&config.resume, &config.subset) {
            (Some(state), subset) => {
                let state = &state.sampler;
                if subset.is_none() && state.len != len {
                    return Err(Error::StateMismatch {
                        state_len: state.len,
                        len,
                    });
                }
                match subset {
                    Some(s) => Sampler::resume_subset(state, Arc::clone(s)),
                    None => Sampler::resume(state),
                }
            }
            (None, Some(subset)) => Sampler::builder_subset(Arc::clone(subset), self.batch_size)
                .seed(config.seed)
                .mode(config.mode)
                .start_step(config.start_step),
            (None, None) => Sampler::builder(len, self.batch_size)
                .seed(config.seed)
                .mode(config.mode)
                .start_step(config.start_step),
        };
        let builder = match config.shard {
            Some((rank, world)) => builder.shard(rank, world),
            None => builder,
        };
        Ok(builder.build()?)
    }
}
