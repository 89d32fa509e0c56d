//! The checkpoint of a sampler: O(1) in size, serde-serialisable.

use serde::{Deserialize, Serialize};

use crate::Mode;

/// Everything needed to continue a [`Sampler`](crate::Sampler) bit-exactly,
/// in a few dozen bytes whatever the size of the index space.
///
/// Get one from [`Sampler::state`](crate::Sampler::state), store it with any
/// serde format next to the model checkpoint, and continue with
/// [`Sampler::from_state`](crate::Sampler::from_state) — or
/// [`Sampler::resume`](crate::Sampler::resume) to change the rank and world
/// size (elastic resume: the global batch of every step is the same for every
/// world size dividing the global batch size). A subset sampler stores only the
/// subset's length and a 64-bit fingerprint of its contents; resume it with
/// [`Sampler::resume_subset`](crate::Sampler::resume_subset) and the same subset.
///
/// ```
/// use zsampler::{Mode, Sampler, SamplerState};
///
/// let mut sampler = Sampler::builder(10_000, 64).seed(7).mode(Mode::Iid).build()?;
/// sampler.seek(123);
/// let state: SamplerState = sampler.state();
/// assert_eq!((state.step, state.len, state.batch_size), (123, 10_000, 64));
///
/// let mut resumed = Sampler::from_state(&state)?;
/// assert_eq!(resumed.next(), sampler.next());
/// # Ok::<(), zsampler::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplerState {
    /// Format version of this state ([`SamplerState::VERSION`] when written by
    /// this build).
    pub version: u32,
    /// The sampling mode.
    pub mode: Mode,
    /// The seed.
    pub seed: u64,
    /// The next step the sampler's iterator yields.
    pub step: u64,
    /// Length of the index space (the subset's length for a subset sampler).
    pub len: u64,
    /// The global batch size (all ranks together).
    pub batch_size: u64,
    /// The rank that saved the state.
    pub rank: u64,
    /// The world size of the run that saved the state.
    pub world_size: u64,
    /// The subset's fingerprint, or `None` for a sampler over `0..len`.
    #[serde(default)]
    pub subset_fingerprint: Option<u64>,
}

impl SamplerState {
    /// The state format version this build writes and reads.
    ///
    /// Version 1: the fields above; every mode's stream is as documented in
    /// the crate docs of zsampler 0.1.
    pub const VERSION: u32 = 1;
}
