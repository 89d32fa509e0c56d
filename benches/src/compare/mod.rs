//! The pieces of the `compare` binary: zrecord side by side with the
//! physical limits and the stores a Rust user would otherwise pick, on the
//! workloads of `benches/DATA.md`, printed as tables (and JSON).
//!
//! - [`machine`]: what the run ran on;
//! - [`report`]: result rows, markdown tables and the JSON file;
//! - [`measure`]: interleaved timing rounds, medians and percentiles;
//! - [`disk`]: allocated bytes, durable writes, read-only maps;
//! - [`copy`]: record copies with zrecord's thread policy (the "same threads");
//! - [`frames`]: a store's zstd frames in memory (the decode limit) and
//!   grouped frames (a ratio reference);
//! - [`systems`]: one trait for every system of the store tables, and the
//!   limits and zrecord;
//! - [`peers`]: the other stores — `.npy` ([`npy`]), and with the `peers`
//!   feature Arrow IPC (`arrow_ipc`) and safetensors (`safetensors_file`),
//!   with `hdf5` HDF5 (`hdf5_file`);
//! - [`store_table`]: workloads (a), (b) and (c), one run for all three;
//! - [`cold_table`]: the same workloads read cold from disk, against `fio`;
//! - [`sampler_table`]: workload (d);
//! - [`loader_table`], [`loader_child`], [`rss`]: workload (e), measured in
//!   child processes so peak RSS is the loader's own;
//! - [`summary`]: the targets, reached or not.

#[cfg(feature = "peers")]
pub mod arrow_ipc;
pub mod cold_table;
pub mod copy;
pub mod disk;
pub mod frames;
#[cfg(feature = "hdf5")]
pub mod hdf5_file;
pub mod levels_table;
pub mod loader_child;
pub mod loader_table;
pub mod machine;
pub mod measure;
pub mod npy;
pub mod peers;
pub mod report;
pub mod rss;
#[cfg(feature = "peers")]
pub mod safetensors_file;
pub mod sampler_table;
pub mod store_table;
pub mod summary;
pub mod systems;

/// The harness's errors, boxed.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
