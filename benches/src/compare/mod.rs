//! The pieces of the `compare` binary: zrecord side by side with the
//! physical limits and the stores a Rust user would otherwise pick, on the
//! workloads of `benches/DATA.md`, printed as tables (and JSON). A module
//! per table (`*_table`; (e) measures in child processes, `loader_child`, so
//! peak RSS is the loader's own), and the pieces they share: the gathering
//! systems (`systems`, `peers`, `frames`), timing ([`measure`]), memory
//! (`rss`), the machine ([`machine`]) and the output ([`report`]).

#[cfg(feature = "peers")]
mod arrow_ipc;
pub mod cold_table;
mod disk;
mod frames;
#[cfg(feature = "hdf5")]
mod hdf5_file;
pub mod levels_table;
pub mod loader_child;
pub mod loader_table;
pub mod machine;
pub mod measure;
mod peers;
pub mod report;
mod rss;
pub mod sampler_table;
pub mod store_table;
pub mod summary;
mod systems;

/// The harness's errors, boxed.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
