//! zrecord stores in object storage — S3 and S3-compatible servers, GCS,
//! Azure, plain HTTP, local files — read through a bounded on-disk cache
//! that the processes of one node share.
//!
//! A [`Remote`] is a store folder in object storage as zrecord's storage
//! seam sees it: open stores in it with `OpenOptions::open`, read-only, and gather
//! as from a local store. Reads are ranged GETs, near ones of a batch
//! merged into one request, many in flight, each retried with backoff on
//! 5xx answers, throttling, dropped connections, short bodies and
//! timeouts, and bounded by a deadline: a read that cannot succeed fails
//! with an [`Error`] naming the object and the byte range, never hangs.
//!
//! With a cache ([`RemoteOptions::cache`]), fetched blocks are kept in a
//! folder you name, bounded by bytes; eight ranks of one node reading one
//! dataset download each block once, and eviction keeps the least recently
//! used blocks. Locks are the operating system's: a killed process leaves
//! none behind.
//!
//! ```no_run
//! use std::sync::Arc;
//! use zrecord::{DenseStore, OpenOptions};
//! use zrecord_remote::{Remote, RemoteOptions};
//!
//! // Credentials, region and endpoint come from the environment
//! // (AWS_ACCESS_KEY_ID, AWS_REGION, …; the README's "Credentials and
//! // endpoints"); a missing one is an error naming its variable.
//! let options = RemoteOptions::new().cache("/mnt/nvme/zrecord-cache", 100 << 30);
//! let remote = Arc::new(Remote::open("s3://datasets/mnist/train/images", options)?);
//! let images = OpenOptions::new().read_only(true).open::<DenseStore<u8>>(remote.clone())?;
//! let batch = images.gather(&[3, 1, 4, 1, 5])?;
//! assert_eq!(batch.len(), 5 * 784);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A sharded dataset (`zrecord::Dataset`: shards written by parallel
//! imports, joined by a manifest) opens with [`open_dataset`]: one listing,
//! one cache, its streams read as one index space by the loader and the
//! Burn and candle integrations.
//!
//! [`push`] uploads a local store, folder of stores or dataset, each store's
//! header after its data and a dataset's manifest last, so an interrupted
//! upload is never taken for a whole one; [`pull`] downloads one.
//!
//! The crate's features choose the backends: `aws` (default), `gcp`,
//! `azure`, `http`; `file://` URLs always work. HTTPS is rustls with the
//! `ring` provider, which the crate installs as rustls' process default
//! when it opens a URL, unless the program installed one first.

mod cache;
mod dataset;
mod error;
mod fetch;
mod lock;
mod options;
mod ranges;
mod remote;
mod runtime;
mod stats;
mod stores;
mod transfer;

pub use dataset::{join_dataset, open_dataset, open_dataset_with_store, read_manifest};
pub use error::{Error, Result};
pub use options::RemoteOptions;
pub use remote::Remote;
pub use stats::CacheStats;
pub use transfer::{TransferReport, list, pull, push, remove};

// The README's examples run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
