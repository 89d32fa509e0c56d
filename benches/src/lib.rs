//! Shared pieces of the benchmarks: the exact workload generators of
//! BENCH-DATA.md (`shared/BENCH-DATA.md` of the project), their index plans,
//! and the gather systems the store benchmarks compare.
//!
//! - [`splitmix`]: the SplitMix64 streams `S(seed)` and `bytes(seed)`;
//! - [`workloads`]: (a) dense 256 KiB, (b) dense 784 B, (c) ragged tokens —
//!   full size (checked against BENCH-DATA.md's SHA-256) or a prefix of fewer
//!   records for quick runs (the same generator; prefixes have no checksum);
//! - [`plans`]: the random batches `plan(seed, nb, B, N)`;
//! - [`checksum`]: SHA-256 of the arrays;
//! - [`systems`]: in-memory, memory-mapped, zstd-frames-from-memory and
//!   zrecord gathers, built side by side from the same records;
//! - [`targets`]: issue 2's store targets (zrecord against its reference);
//! - [`sampler_baselines`]: what one would write instead of zsampler;
//! - [`compare`]: the side-by-side comparison harness (`--bin compare`).

pub mod checksum;
pub mod compare;
pub mod plans;
pub mod sampler_baselines;
pub mod splitmix;
pub mod systems;
pub mod targets;
pub mod workloads;

pub use checksum::{ChecksumMismatch, Verified};
pub use plans::{BATCH, plan};
pub use workloads::{DENSE_A, DENSE_B, DenseWorkload, RaggedTokens};
