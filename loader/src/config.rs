//! [`LoaderConfig`]: how every loader samples and threads — one value, its
//! defaults defined once — and [`config_setters!`](crate::config_setters),
//! the setters every builder exposes for it.

use std::sync::Arc;

use zsampler::Mode;

use crate::{BadRecords, Error, LoaderState, Result, Stream};

/// How a loader samples and threads: the settings [`Loader`](crate::Loader),
/// [`PackedLoader`](crate::PackedLoader) and `zrecord_burn::StoreDataLoader`
/// share, with the same meaning, types and defaults.
///
/// Every builder has a setter of the same name for each setting (made by
/// [`config_setters!`](crate::config_setters)), [`config`](crate::LoaderBuilder::config)
/// to read them and [`with_config`](crate::LoaderBuilder::with_config) to
/// replace them all — to give a training and an evaluation loader the same
/// seed and threads, say. What only one loader has (streams, batch size,
/// [`LastBatch`](crate::LastBatch), packing, epochs) stays on its builder.
///
/// ```
/// use zrecord::{Codec, RaggedStore};
/// use zrecord_loader::{BadRecords, Loader, LoaderConfig, Mode, PackedLoader};
/// # let dir = tempfile::tempdir()?;
///
/// let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Raw)?;
/// tokens.append_slices(&(0..64u32).map(|n| vec![n; 3]).collect::<Vec<_>>())?;
/// let tokens = std::sync::Arc::new(tokens.into_dyn());
///
/// let records = Loader::builder(8).stream("tokens", tokens.clone()).seed(7).workers(4);
/// let mut config = records.config().clone();
/// config.bad_records = BadRecords::Skip;
/// let packed = PackedLoader::builder(16, 2).tokens(tokens).with_config(config);
/// assert_eq!((packed.config().seed, packed.config().workers), (7, 4));
/// assert_eq!(packed.config().mode, Mode::Cyclic); // the default, as everywhere
/// assert_eq!(LoaderConfig::default().prefetch, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoaderConfig {
    /// The seed of the sampling order (default 0): the same seed over the
    /// same data gives the same batches. Substitutes for
    /// [bad records](Self::bad_records) are drawn from it too.
    pub seed: u64,

    /// How records are chosen step by step (default [`Mode::Cyclic`], a
    /// fresh permutation each pass). In the packing loader it orders the
    /// documents.
    pub mode: Mode,

    /// This process's `(rank, world_size)` among data-parallel ranks
    /// (default `None`: rank 0 of 1, or the saved ranks when
    /// [resuming](Self::resume)). Rank `r` gets positions
    /// `⌊r·B/world⌋ .. ⌊(r+1)·B/world⌋` of every global batch of `B`, so the
    /// ranks' batches together are the global batch for any world size up
    /// to `B`. In the packing loader a batch is rows: each rank keeps its
    /// contiguous share of the rows, and the world size must divide them.
    /// `shard_from_env()` on every builder sets it from the launcher's
    /// `RANK` and `WORLD_SIZE` ([`Launcher`](crate::Launcher)).
    pub shard: Option<(u64, u64)>,

    /// Samples only these record indices (default `None`: every record) —
    /// a train/validation split, a filter result. In the packing loader
    /// they are the documents packed.
    pub subset: Option<Arc<[u64]>>,

    /// The first step (default 0); ignored when [resuming](Self::resume).
    /// A loader computes any step directly; the packing loader, whose
    /// batches depend on every window before them, packs the batches before
    /// its first step and drops them (resume it from a
    /// [`PackedState`](crate::PackedState) instead where you can).
    pub start_step: u64,

    /// A saved [`LoaderState`] to continue from (default `None`): its mode,
    /// seed, global batch size and step replace the settings here;
    /// [`shard`](Self::shard) may change the rank and world size. Pass the
    /// same subset again if there was one. The packing loader resumes from
    /// a [`PackedState`](crate::PackedState) instead
    /// ([`PackedLoaderBuilder::resume`](crate::PackedLoaderBuilder::resume))
    /// and refuses a state here.
    pub resume: Option<LoaderState>,

    /// Worker threads that gather and transform (default 2; 0 counts as 1).
    /// Batches are identical for every worker count.
    pub workers: usize,

    /// Batches that may be in flight — being built or ready — at once
    /// (default 4; 0 counts as 1); memory is bounded by it. In the packing
    /// loader it counts windows of documents, each of which feeds many
    /// batches: two would keep it busy, but the default is the same 4 —
    /// two more windows of tokens in memory (a few megabytes at the default
    /// window) for one default that means the same everywhere.
    pub prefetch: usize,

    /// What a batch does when its transform reports a record it cannot use
    /// (default [`BadRecords::Stop`]: the transform's error reaches the
    /// consumer). See [`BadRecords`]. In the packing loader a bad record is
    /// a document holding a token that does not fit `u32`: with
    /// [`BadRecords::Skip`] another document takes its place in the window.
    pub bad_records: BadRecords,
}

impl Default for LoaderConfig {
    fn default() -> Self {
        LoaderConfig {
            seed: 0,
            mode: Mode::Cyclic,
            shard: None,
            subset: None,
            start_step: 0,
            resume: None,
            workers: 2,
            prefetch: 4,
            bad_records: BadRecords::Stop,
        }
    }
}

/// The setters of every [`LoaderConfig`] setting, for a builder that keeps
/// one in field `$field`: each sets the setting of the same name, whose
/// meaning and default [`LoaderConfig`] documents; `shard_from_env` sets
/// the shard from the launcher; `config` and `with_config` read and
/// replace them all. [`LoaderBuilder`](crate::LoaderBuilder),
/// [`PackedLoaderBuilder`](crate::PackedLoaderBuilder) and
/// `zrecord_burn::StoreDataLoaderBuilder` get theirs here, so they cannot
/// drift apart.
///
/// `config_setters!(field)` makes them all; `config_setters!(field; except
/// resume)` leaves out `resume`, for a builder that resumes from a state of
/// its own. The invoking crate must depend on `zrecord-loader` under that
/// name.
///
/// ```
/// use zrecord_loader::LoaderConfig;
///
/// /// A front end of your own over the loader's settings.
/// #[derive(Default)]
/// pub struct MyLoaderBuilder {
///     config: LoaderConfig,
/// }
///
/// impl MyLoaderBuilder {
///     zrecord_loader::config_setters!(config);
/// }
///
/// let builder = MyLoaderBuilder::default().seed(3).shard(1, 4).prefetch(8);
/// assert_eq!(builder.config().shard, Some((1, 4)));
/// assert_eq!(builder.config().workers, LoaderConfig::default().workers);
/// ```
#[macro_export]
macro_rules! config_setters {
    ($($field:ident).+) => {
        $crate::config_setters!($($field).+; except resume);

        /// Sets [`LoaderConfig::resume`](zrecord_loader::LoaderConfig::resume):
        /// continues from a saved state.
        pub fn resume(mut self, state: &$crate::LoaderState) -> Self {
            self.$($field).+.resume = ::core::option::Option::Some(*state);
            self
        }
    };
    ($($field:ident).+; except resume) => {
        /// Sets [`LoaderConfig::seed`](zrecord_loader::LoaderConfig::seed).
        pub fn seed(mut self, seed: u64) -> Self {
            self.$($field).+.seed = seed;
            self
        }

        /// Sets [`LoaderConfig::mode`](zrecord_loader::LoaderConfig::mode).
        pub fn mode(mut self, mode: $crate::Mode) -> Self {
            self.$($field).+.mode = mode;
            self
        }

        /// Sets [`LoaderConfig::shard`](zrecord_loader::LoaderConfig::shard):
        /// this process is `rank` of `world_size` data-parallel ranks.
        pub fn shard(mut self, rank: u64, world_size: u64) -> Self {
            self.$($field).+.shard = ::core::option::Option::Some((rank, world_size));
            self
        }

        /// [`shard`](Self::shard) by the launcher's `RANK` and `WORLD_SIZE`
        /// (see [`Launcher`](zrecord_loader::Launcher)); unchanged when
        /// neither is set.
        ///
        /// # Errors
        /// [`Error::Launcher`](zrecord_loader::Error::Launcher) for a
        /// variable that is set wrong or without its partner.
        pub fn shard_from_env(self) -> $crate::Result<Self> {
            ::core::result::Result::Ok(match $crate::Launcher::from_env()? {
                ::core::option::Option::Some(place) => self.shard(place.rank, place.world_size),
                ::core::option::Option::None => self,
            })
        }

        /// Sets [`LoaderConfig::subset`](zrecord_loader::LoaderConfig::subset):
        /// samples only these record indices.
        pub fn subset(mut self, indices: impl ::core::convert::Into<::std::sync::Arc<[u64]>>) -> Self {
            self.$($field).+.subset = ::core::option::Option::Some(indices.into());
            self
        }

        /// Sets [`LoaderConfig::start_step`](zrecord_loader::LoaderConfig::start_step).
        pub fn start_step(mut self, step: u64) -> Self {
            self.$($field).+.start_step = step;
            self
        }

        /// Sets [`LoaderConfig::workers`](zrecord_loader::LoaderConfig::workers).
        pub fn workers(mut self, workers: usize) -> Self {
            self.$($field).+.workers = workers;
            self
        }

        /// Sets [`LoaderConfig::prefetch`](zrecord_loader::LoaderConfig::prefetch).
        pub fn prefetch(mut self, prefetch: usize) -> Self {
            self.$($field).+.prefetch = prefetch;
            self
        }

        /// Sets [`LoaderConfig::bad_records`](zrecord_loader::LoaderConfig::bad_records):
        /// what a batch does with a record its transform cannot use.
        pub fn bad_records(mut self, policy: $crate::BadRecords) -> Self {
            self.$($field).+.bad_records = policy;
            self
        }

        /// The sampling and threading settings as they stand.
        pub fn config(&self) -> &$crate::LoaderConfig {
            &self.$($field).+
        }

        /// Replaces every sampling and threading setting with `config`.
        pub fn with_config(mut self, config: $crate::LoaderConfig) -> Self {
            self.$($field).+ = config;
            self
        }
    };
}

/// Checks that named streams can be read side by side — at least one, no
/// name twice, every one of the same length — and returns that length.
///
/// [`LoaderBuilder::build`](crate::LoaderBuilder::build) runs this check;
/// code that reads streams without a loader (a dataset over the same
/// stores) runs it to refuse exactly what a loader refuses.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{Error, Stream, check_streams};
/// # let dir = tempfile::tempdir()?;
///
/// let a = DenseStore::<u8>::create(dir.path().join("a"), &[], Codec::Raw)?;
/// a.append(&[1, 2, 3])?;
/// let b = DenseStore::<u8>::create(dir.path().join("b"), &[], Codec::Raw)?;
/// b.append(&[4, 5])?;
/// let streams = vec![("a".to_string(), Stream::from(a)), ("b".to_string(), Stream::from(b))];
/// assert!(matches!(check_streams(&streams), Err(Error::LengthMismatch { other_len: 2, .. })));
/// assert_eq!(check_streams(&streams[..1])?, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::NoStreams`], [`Error::DuplicateStream`],
/// [`Error::LengthMismatch`] (naming the first stream and the one that differs).
pub fn check_streams(streams: &[(String, Stream)]) -> Result<u64> {
    let (first_name, first) = streams.first().ok_or(Error::NoStreams)?;
    let len = first.len();
    for (k, (name, stream)) in streams.iter().enumerate() {
        if streams[..k].iter().any(|(n, _)| n == name) {
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
    Ok(len)
}
