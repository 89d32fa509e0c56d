//! A typed persistent record store for training data.
//!
//! One store is one folder holding one stream of records:
//!
//! * [`DenseStore`] — every record is one array of the store's dtype and item
//!   shape; a batch gather fills one contiguous `(B, *item_shape)` buffer.
//! * [`RaggedStore`] — every record has its own shape (any rank, scalars
//!   included); a batch gather returns a packed [`RaggedBatch`]: one values
//!   buffer, offsets and shapes, with no allocation per record.
//!
//! Both have a dtype-tagged twin ([`DynDenseStore`], [`DynRaggedStore`]) for
//! code that handles many streams of different dtypes. Records are compressed
//! one by one ([`Codec`]: raw, zstd, or zstd against a trained dictionary), so
//! a random batch is gathered — in parallel, decoding straight into the
//! destination — at memory speed. The on-disk format is portable and
//! documented in `FORMAT.md`.
//!
//! ```
//! use zrecord::{Codec, DenseStore, RaggedStore};
//! # let dir = tempfile::tempdir()?;
//!
//! let images = DenseStore::<u8>::create(dir.path().join("images"), &[28, 28], Codec::Zstd)?;
//! images.append(&vec![7u8; 3 * 28 * 28])?;                    // three 28×28 records
//! let batch = images.gather(&[2, 0])?;                          // shape (2, 28, 28)
//! assert_eq!(batch.shape(), &[2, 28, 28]);
//!
//! let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Zstd)?;
//! tokens.append_slices(&[vec![101, 7, 102], vec![101, 102]])?;
//! assert_eq!(tokens.gather(&[1])?.values(), &[101, 102]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Many stores of the same streams — shards, written by parallel import
//! jobs — read as one index space as a [`Dataset`] (see [`dataset`]).
//!
//! # Concurrency
//!
//! `gather` and `append` take `&self` and run from many threads at once (a
//! gather sees only fully committed records, and never waits for an append);
//! `delete` and `compact` take `&mut self`. One writable handle owns a store
//! at a time: a second open, from this process or another, fails with
//! [`Error::StoreBusy`]. Read-only handles ([`OpenOptions`]) share a store
//! with each other, across processes, and exclude a writer. (The lock is an
//! `flock` on `meta.zr`: a child process forked by another thread shares it
//! until the child execs, so an open right after such a fork can briefly see
//! the store busy.)
//!
//! # Durability
//!
//! An append is committed when it returns: payload, then record table, then
//! header, so a process killed at any moment leaves exactly a prefix of whole
//! batches. Deletes and compactions are journaled: after a kill in the
//! middle of one, the next open finishes it (a delete shows all its records
//! gone or none; a compaction loses no record). [`DenseStore::sync`], and
//! closing a writable handle, make committed state survive power loss;
//! appends a writer left unsynced are checked at the next open and kept only
//! when whole. Every record carries a checksum
//! (zstd's, or a CRC-32C for raw records) that `verify` checks, and gathers
//! too when asked ([`OpenOptions::verify_on_read`]). A store whose journal
//! is damaged opens again after [`repair`].
//!
//! # Features
//!
//! * `cli` — the `zrecord` command-line tool (`cargo install zrecord
//!   --features cli`): import (whole, or one shard of a dataset), dataset
//!   join, info, verify, compact, export, train-dict, recode, bench; push
//!   and pull run `zrecord-remote`. Turns on `npy` and `idx`.
//! * `npy` — the `npy` module: `.npy` files read into an `ArrayFile`
//!   (streamed record by record, little-endian) and `.npy` headers written.
//! * `idx` — the `idx` module: IDX files (MNIST's format), plain or
//!   gzipped, read into an `ArrayFile`.
//! * `internals` — not API, with no stability promise: hooks for this
//!   workspace's tests, fuzz targets and benchmarks.
//!
//! # Platforms
//!
//! 64-bit Unix (Linux, macOS) on little-endian CPUs: the mapped read path
//! maps each file's whole address space once.
//!
//! # Storage
//!
//! The engine reaches its files only through [`storage::Storage`]: a folder on
//! disk, read memory-mapped or with explicit reads for stores larger than
//! memory ([`storage::Io`], chosen with [`OpenOptions::io`]), or memory, with
//! a model of power loss for tests.

#[cfg(not(all(unix, target_pointer_width = "64", target_endian = "little")))]
compile_error!(
    "zrecord supports 64-bit little-endian Unix targets (it maps 4 GiB files and stores data little-endian)"
);

mod any_store;
mod bytes;
mod codec;
mod common;
pub mod dataset;
mod dense;
mod dtype;
mod dyn_vec;
mod engine;
mod error;
#[cfg(any(feature = "npy", feature = "idx"))]
mod foreign;
mod format;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod fuzzing;
mod handle;
mod hooks;
mod lengths;
mod options;
mod ragged;
mod ragged_batch;
pub mod storage;

pub use any_store::{AnyBatch, AnyStore, Schema};
pub use codec::{Codec, DictTier, Dictionary, ZSTD_DICT_LEVEL, ZSTD_LEVEL, train_dict};
pub use dataset::{Dataset, DenseShards, RaggedShards, Stream, shard_folder};
pub use dense::{DenseStore, DynDenseStore};
pub use dtype::{DType, Element, StoreKind};
pub use dyn_vec::DynVec;
pub use engine::{CompactProgress, DiscardedJournal, RepairReport, Stats, VerifyReport};
pub use error::{Error, Result};
#[cfg(any(feature = "npy", feature = "idx"))]
pub use foreign::ArrayFile;
#[cfg(feature = "idx")]
pub use foreign::idx;
#[cfg(feature = "npy")]
pub use foreign::npy;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use format::meta::Geometry;
pub use format::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
pub use handle::StoreHandle;
pub use lengths::LengthStats;
pub use options::{Location, OpenOptions};
pub use ragged::{DynRaggedStore, RaggedStore};
/// Not API: the hold points the crash tests kill at (feature `internals`).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod test_hooks {
    pub use crate::hooks::{HELD, HOLD_ENV, NO_RELOCATE_ENV};
}
pub use ragged_batch::{DynRaggedBatch, RaggedBatch, RaggedLayout};

/// Opens the store at `path` writable once, finishing what a killed writer
/// left and rolling back appends since the last sync that a power cut left
/// damaged (as every writable open does), and removes journals that are
/// damaged instead of failing on them; reports what it removed or rolled
/// back and what may be lost with each. Run [`verify`](DenseStore::verify)
/// afterwards.
///
/// The way out for a store that keeps failing to open with a corruption
/// error naming `compact.journal` or `delete.journal` (the command line:
/// `zrecord verify --repair`).
///
/// # Errors
/// As a writable [`open`](OpenOptions::open), for anything but a damaged
/// journal.
pub fn repair(path: impl AsRef<std::path::Path>) -> Result<RepairReport> {
    engine::Engine::repair(path.as_ref())
}

/// Not API (feature `internals`): when a raw gather fans out across rayon's
/// pool, and in how many pieces, so the comparison harness can give the
/// systems it sets beside zrecord the same threads.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod gather_policy {
    pub use crate::engine::{PARALLEL_COPY_BYTES, PIECES_PER_THREAD};
}

// The README's examples run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
