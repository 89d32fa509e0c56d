//! An endless, step-based prefetching loader over named zrecord streams.
//!
//! A [`Loader`] gathers every stream — any mix of dense and ragged stores, any
//! dtypes — at the same indices, chosen per step by a [`zsampler::Sampler`]
//! (sequential, iid, cyclic or block shuffles, sharded across ranks). Worker
//! threads build batches ahead of the consumer and run an optional
//! transform; batches arrive strictly in step order and are the same for any
//! worker count. A [`LoaderState`] of a few dozen bytes resumes exactly, also
//! on another world size; [`Counters`] show where the time goes.
//!
//! Every loader here — [`Loader`], [`PackedLoader`], and `zrecord-burn`'s
//! `StoreDataLoader` — samples and threads by one [`LoaderConfig`], set by
//! the same setters on each builder. Its [`BadRecords`] policy says what a
//! batch does with a record its transform cannot use: stop, or skip it for a
//! substitute every rank and every resumed run agree on.
//!
//! ```
//! use zrecord::{Codec, DenseStore, RaggedStore};
//! use zrecord_loader::{Loader, Mode};
//! # let dir = tempfile::tempdir()?;
//!
//! let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Zstd)?;
//! tokens.append_slices(&(0..64u32).map(|n| vec![n; 1 + n as usize % 5]).collect::<Vec<_>>())?;
//! let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
//! labels.append(&(0..64).collect::<Vec<i64>>())?;
//!
//! // A transform runs on the worker threads: here, the longest sequence per batch.
//! let mut loader = Loader::builder(16)
//!     .stream("tokens", tokens)
//!     .stream("label", labels)
//!     .mode(Mode::Iid)
//!     .seed(42)
//!     .transform(|batch| {
//!         let tokens = batch.ragged::<u32>("tokens")?;
//!         Ok::<_, zrecord_loader::Error>(tokens.layout().lengths().max())
//!     })
//!     .build()?;
//! let longest = loader.next_batch()??;
//! assert!(longest.is_some_and(|n| (1..=5).contains(&n)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The setters `config_setters!` makes link to `zrecord_loader::…`, which
// must resolve here as in the crates that invoke it.
extern crate self as zrecord_loader;

mod bad_records;
mod batch;
mod builder;
mod column;
mod config;
mod counters;
mod error;
mod last_batch;
mod launcher;
mod loader;
mod mixture;
mod packing;
mod padding;
mod plan;
mod pool;
mod state;

pub use bad_records::{BadRecords, RecordError};
pub use batch::{Batch, RaggedView};
pub use builder::LoaderBuilder;
pub use column::{Column, DenseColumn};
pub use config::{LoaderConfig, check_streams};
pub use counters::{CounterSnapshot, Counters};
pub use error::{Error, Result};
pub use last_batch::LastBatch;
pub use launcher::Launcher;
pub use loader::{Loader, Steps};
pub use mixture::{Mixture, Schedule, Source, SourceProgress};
pub use packing::{
    Cursor, DEFAULT_WINDOW, Documents, PackedBatch, PackedLoader, PackedLoaderBuilder, PackedState,
    Packer, Packing,
};
pub use padding::{PaddedBatch, Padding};
pub use plan::Plan;
pub use state::LoaderState;
pub use zrecord::Stream;
pub use zsampler::{Mode, SamplerState};

// The README's examples run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
