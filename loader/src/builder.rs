//! [`LoaderBuilder`]: streams, sampling, threads and the transform.

use std::sync::Arc;

use zsampler::{Mode, Sampler, SamplerState};

use crate::loader::Loader;
use crate::{Batch, Error, LoaderState, Result, Stream};

/// The transform run on worker threads: a batch in, anything out.
pub(crate) type Transform<T> = Arc<dyn Fn(Batch) -> T + Send + Sync>;

/// Configures a [`Loader`]; every check happens in [`build`](Self::build).
///
/// From [`Loader::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct LoaderBuilder<T> {
    pub(crate) streams: Vec<(String, Stream)>,
    batch_size: u64,
    seed: u64,
    mode: Mode,
    shard: Option<(u64, u64)>,
    subset: Option<Arc<[u64]>>,
    start_step: u64,
    resume: Option<SamplerState>,
    pub(crate) workers: usize,
    pub(crate) prefetch: usize,
    pub(crate) transform: Transform<T>,
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
            seed: self.seed,
            mode: self.mode,
            shard: self.shard,
            subset: self.subset.clone(),
            start_step: self.start_step,
            resume: self.resume,
            workers: self.workers,
            prefetch: self.prefetch,
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
            streams: Vec::new(),
            batch_size,
            seed: 0,
            mode: Mode::Cyclic,
            shard: None,
            subset: None,
            start_step: 0,
            resume: None,
            workers: 2,
            prefetch: 4,
            transform: Arc::new(|batch| batch),
        }
    }
}

impl<T: Send + 'static> LoaderBuilder<T> {
    /// Adds a stream: any store (dense or ragged, any dtype), or an `Arc` of a
    /// dtype-tagged one to share it with other loaders.
    pub fn stream(mut self, name: impl Into<String>, stream: impl Into<Stream>) -> Self {
        self.streams.push((name.into(), stream.into()));
        self
    }

    /// The sampling mode (default [`Mode::Cyclic`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The seed (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// This process's `rank` among `world_size` data-parallel ranks: each
    /// gets its contiguous slice of every global batch. `world_size` must
    /// divide the batch size.
    pub fn shard(mut self, rank: u64, world_size: u64) -> Self {
        self.shard = Some((rank, world_size));
        self
    }

    /// Samples only these record indices (a train/validation split, a filter result).
    pub fn subset(mut self, indices: impl Into<Arc<[u64]>>) -> Self {
        self.subset = Some(indices.into());
        self
    }

    /// The first step (default 0).
    pub fn start_step(mut self, step: u64) -> Self {
        self.start_step = step;
        self
    }

    /// Continues from a saved [`LoaderState`]: its mode, seed, batch size and
    /// step replace this builder's; [`shard`](Self::shard) may change the
    /// rank and world size. Pass the same subset again if there was one.
    pub fn resume(mut self, state: &LoaderState) -> Self {
        self.resume = Some(state.sampler);
        self
    }

    /// Worker threads that gather and transform (default 2; at least 1).
    /// Batches are identical for every worker count.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Batches that may be in flight — being built or ready — at once
    /// (default 4; at least 1). Memory is bounded by it.
    pub fn prefetch(mut self, batches: usize) -> Self {
        self.prefetch = batches.max(1);
        self
    }

    /// Runs `f` on every batch on the worker threads (collate, cast, pad,
    /// move to a device); the loader then yields what `f` returns. A panic in
    /// `f` reaches the consumer as [`Error::TransformPanicked`].
    pub fn transform<U, F>(self, f: F) -> LoaderBuilder<U>
    where
        F: Fn(T) -> U + Send + Sync + 'static,
        U: Send + 'static,
    {
        let inner = self.transform;
        LoaderBuilder {
            streams: self.streams,
            batch_size: self.batch_size,
            seed: self.seed,
            mode: self.mode,
            shard: self.shard,
            subset: self.subset,
            start_step: self.start_step,
            resume: self.resume,
            workers: self.workers,
            prefetch: self.prefetch,
            transform: Arc::new(move |batch| f(inner(batch))),
        }
    }

    /// Checks the configuration, builds the sampler and starts the workers.
    ///
    /// # Errors
    /// [`Error::NoStreams`], [`Error::DuplicateStream`],
    /// [`Error::LengthMismatch`] (naming both streams),
    /// [`Error::SubsetOutOfRange`], [`Error::Sampler`] for a bad sampling
    /// configuration (batch larger than the data for cyclic modes, a world
    /// size that does not divide the batch, ...), [`Error::StateMismatch`]
    /// for a state saved over other data, [`Error::Spawn`].
    pub fn build(self) -> Result<Loader<T>> {
        let (first_name, first) = self.streams.first().ok_or(Error::NoStreams)?;
        let len = first.len();
        for (k, (name, stream)) in self.streams.iter().enumerate() {
            if self.streams[..k].iter().any(|(n, _)| n == name) {
                return Err(Error::DuplicateStream { name: name.clone() });
            }
            if stream.len() != len {
                return Err(Error::LengthMismatch {
                    first: first_name.clone(),
                    first_len: len,
                    other: name.clone(),
                    other_len: stream.len(),
                });
            }
        }
        if let Some(subset) = &self.subset
            && let Some((position, &index)) = subset.iter().enumerate().find(|&(_, &i)| i >= len)
        {
            return Err(Error::SubsetOutOfRange {
                position,
                index,
                len,
            });
        }
        let sampler = self.sampler(len)?;
        Loader::start(self, sampler)
    }

    fn sampler(&self, len: u64) -> Result<Sampler> {
        let builder = match (&self.resume, &self.subset) {
            (Some(state), subset) => {
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
                .seed(self.seed)
                .mode(self.mode)
                .start_step(self.start_step),
            (None, None) => Sampler::builder(len, self.batch_size)
                .seed(self.seed)
                .mode(self.mode)
                .start_step(self.start_step),
        };
        let builder = match self.shard {
            Some((rank, world)) => builder.shard(rank, world),
            None => builder,
        };
        Ok(builder.build()?)
    }
}
