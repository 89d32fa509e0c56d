//! The pieces of the `compare` binary: zrecord side by side with the
//! physical limits and the stores a Rust user would otherwise pick, on the
//! workloads of BENCH-DATA.md, printed as tables (and JSON).
//!
//! - [`options`]: the command line;
//! - [`machine`]: what the run ran on;
//! - [`report`]: result rows, markdown tables and the JSON file;
//! - [`measure`]: interleaved timing rounds, medians and percentiles;
//! - [`disk`]: allocated bytes on disk, durable writes;
//! - [`copy`]: record copies with zrecord's thread policy (the "same threads");
//! - [`frames`]: per-record zstd frames in memory (the decode limit) and
//!   grouped frames (a ratio reference);
//! - [`npy`], [`arrow_ipc`], [`safetensors_file`] (and `hdf5_file` behind the
//!   `hdf5` feature): the peers' files, written and memory-mapped;
//! - [`dense`], [`ragged`]: every system of the store tables;
//! - [`store_table`], [`dense_run`], [`ragged_run`]: workloads (a), (b) and (c);
//! - [`summary`]: the issues' targets, reached or not;
//! - [`sampler_table`]: workload (d);
//! - [`loader_table`], [`loader_child`], [`rss`]: workload (e), measured in
//!   child processes so peak RSS is the loader's own.

pub mod arrow_ipc;
pub mod copy;
pub mod dense;
pub mod dense_run;
pub mod disk;
pub mod frames;
#[cfg(feature = "hdf5")]
pub mod hdf5_file;
pub mod loader_child;
pub mod loader_table;
pub mod machine;
pub mod measure;
pub mod npy;
pub mod options;
pub mod ragged;
pub mod ragged_run;
pub mod report;
pub mod rss;
pub mod safetensors_file;
pub mod sampler_table;
pub mod store_table;
pub mod summary;
