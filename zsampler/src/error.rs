//! The crate's one error type.

use crate::Mode;

/// Why a [`Sampler`](crate::Sampler) could not be built or restored.
///
/// Every bad configuration is reported here, by
/// [`SamplerBuilder::build`](crate::SamplerBuilder::build); a built sampler
/// never fails or panics later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The index space is empty: `len` is 0 or the subset has no indices.
    #[error("the index space is empty; a sampler needs at least one index")]
    EmptyIndexSpace,

    /// The global batch size is 0.
    #[error("the batch size is 0; it must be at least 1")]
    ZeroBatchSize,

    /// A cyclic or block batch is larger than a cycle (the whole index space).
    #[error(
        "the batch size {batch_size} exceeds the {len} indices of one {mode} cycle; \
         use a batch size of at most {len}, or iid or sequential mode"
    )]
    BatchExceedsLen {
        /// The global batch size asked for.
        batch_size: u64,
        /// The length of the index space.
        len: u64,
        /// The mode that samples without replacement.
        mode: Mode,
    },

    /// Block mode with `block_size` 0.
    #[error("the block size is 0; a block holds at least 1 index")]
    ZeroBlockSize,

    /// Block mode with `window_blocks` 0.
    #[error("window_blocks is 0; a shuffle window holds at least 1 block")]
    ZeroWindowBlocks,

    /// The world size is 0.
    #[error("the world size is 0; it must be at least 1")]
    ZeroWorldSize,

    /// The rank is not below the world size.
    #[error("rank {rank} is out of range for world size {world_size}; ranks are 0..{world_size}")]
    RankOutOfRange {
        /// The rank asked for.
        rank: u64,
        /// The world size it must be below.
        world_size: u64,
    },

    /// More ranks than indices in a global batch: some ranks would get none.
    #[error(
        "world size {world_size} exceeds the global batch size {batch_size}; \
         every rank needs at least one index per step"
    )]
    WorldExceedsBatch {
        /// The global batch size.
        batch_size: u64,
        /// The world size.
        world_size: u64,
    },

    /// One rank's share of the batch cannot be held in memory on this platform.
    #[error(
        "a local batch of {local_batch_size} indices is too large for this platform (at most {max})"
    )]
    BatchTooLarge {
        /// The local (per-rank) batch size.
        local_batch_size: u64,
        /// The largest local batch size this platform can allocate.
        max: u64,
    },

    /// The state was written by a newer, incompatible version of this crate.
    #[error("sampler state version {found} is not supported; this build reads version {supported}")]
    UnsupportedStateVersion {
        /// The version in the state.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },

    /// The state was saved by a sampler over a subset, but no subset was given.
    #[error(
        "the state was saved by a sampler over a subset of {len} indices \
         (fingerprint {fingerprint:#018x}); resume it with Sampler::resume_subset and the same subset"
    )]
    SubsetRequired {
        /// The length of the subset in the state.
        len: u64,
        /// The fingerprint of the subset in the state.
        fingerprint: u64,
    },

    /// A subset was given, but the state was saved by a sampler over `0..len`.
    #[error(
        "the state was saved by a sampler over the range 0..{len}, not over a subset; \
         resume it with Sampler::resume"
    )]
    UnexpectedSubset {
        /// The length of the range in the state.
        len: u64,
    },

    /// The subset given differs from the one the state was saved with.
    #[error(
        "the subset differs from the one the state was saved with: expected {expected_len} \
         indices with fingerprint {expected_fingerprint:#018x}, got {found_len} indices with \
         fingerprint {found_fingerprint:#018x}"
    )]
    SubsetMismatch {
        /// The subset length in the state.
        expected_len: u64,
        /// The subset fingerprint in the state.
        expected_fingerprint: u64,
        /// The length of the subset given.
        found_len: u64,
        /// The fingerprint of the subset given.
        found_fingerprint: u64,
    },
}
