//! The benchmarks' shared pieces: the workloads of `benches/DATA.md`,
//! generated bit-exactly, their index plans, and the comparison harness.
//!
//! - [`splitmix`]: the SplitMix64 streams `S(seed)` and `bytes(seed)`;
//! - [`workloads`]: (a) dense 256 KiB, (b) dense 784 B, (c) ragged tokens,
//!   full size or a prefix of fewer records for quick runs;
//! - [`plans`]: the random batches `plan(seed, nb, B, N)`;
//! - [`checksum`]: SHA-256 of the arrays;
//! - [`sampler_baselines`]: what one would write instead of zsampler;
//! - [`compare`]: the side-by-side comparison harness (`--bin compare`).

pub mod checksum;
pub mod compare;
pub mod plans;
pub mod sampler_baselines;
pub mod splitmix;
pub mod workloads;

pub use checksum::Verified;
pub use plans::{BATCH, plan};
pub use workloads::{DENSE_A, DENSE_B, DenseWorkload, RaggedTokens};
