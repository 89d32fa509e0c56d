//! [`LoaderState`]: where a loader is, to continue it exactly.

use serde::{Deserialize, Serialize};
use zsampler::SamplerState;

/// A loader's checkpoint: a few dozen bytes, serde-serialisable. It records
/// the sampler (mode, seed, global batch size, length, rank and world size)
/// and the next step the consumer will receive; batches prefetched but not
/// delivered are not part of it, so a resumed loader continues with exactly
/// the next batch.
///
/// Resume with [`LoaderBuilder::resume`](crate::LoaderBuilder::resume) over
/// the same stores (the same data in the same order), with any worker count,
/// and — with [`shard`](crate::LoaderBuilder::shard) — any world size up to
/// the global batch size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderState {
    /// The sampler's state; its `step` is the next step to deliver.
    pub sampler: SamplerState,
    /// The fingerprint of the loader's [`Mixture`](crate::Mixture) (its
    /// sources' names, lengths and modes and its weights), or `None` for a
    /// loader over plain streams: resume with the same mixture again.
    #[serde(default)]
    pub mixture: Option<u64>,
}
