//! The sampler, its builder and its iterator.

use core::fmt;
use core::iter::FusedIterator;
use std::sync::Arc;

use crate::block::BlockPlan;
use crate::kernels;
use crate::permutation::Permutation;
use crate::rng::{derive, tag, word};
use crate::{CounterRng, Error, Mode, SamplerState};

/// Indices as a pure function of `(seed, step)`: any step's batch is computed
/// directly, and iterating is just counting steps.
///
/// Build one with [`Sampler::builder`] (over `0..len`) or
/// [`Sampler::builder_subset`] (over a list of indices). A sampler is cheap to
/// clone (a subset is shared, not copied) and `Send + Sync`; [`batch_at`] and
/// [`fill_batch`] take `&self`, so worker threads can compute batches of any
/// step concurrently from one sampler.
///
/// With `world_size > 1`, rank `r` gets positions
/// `⌊r·batch/world⌋ .. ⌊(r+1)·batch/world⌋` of the global batch of each step
/// (equal slices when the world size divides the batch, else slices that
/// differ by at most one); the global batch does not depend on the world size.
///
/// As an [`Iterator`] it is endless: each `next()` yields the batch of the
/// current [`step`](Sampler::step) and advances it by one.
///
/// ```
/// use zsampler::{Mode, Sampler};
///
/// let mut sampler = Sampler::builder(1_000, 100).seed(1).mode(Mode::Cyclic).build()?;
/// let first = sampler.next().unwrap();
/// assert_eq!(first, sampler.batch_at(0));
/// assert_eq!(sampler.step(), 1);
/// // One cycle (10 steps) visits every index exactly once.
/// let mut seen: Vec<u64> = (0..10).flat_map(|s| sampler.batch_at(s)).collect();
/// seen.sort_unstable();
/// assert!(seen.iter().copied().eq(0..1_000));
/// # Ok::<(), zsampler::Error>(())
/// ```
///
/// [`batch_at`]: Sampler::batch_at
/// [`fill_batch`]: Sampler::fill_batch
#[derive(Clone)]
pub struct Sampler {
    len: u64,
    batch_size: u64,
    local: usize,
    /// First position of this rank's slice in the global batch.
    offset: u64,
    rank: u64,
    world_size: u64,
    seed: u64,
    mode: Mode,
    step: u64,
    plan: Plan,
    subset: Option<Subset>,
}

/// Per-mode constants, derived once from the configuration.
#[derive(Clone, Copy, Debug)]
enum Plan {
    Sequential,
    Iid {
        base: u64,
        threshold: u64,
    },
    Cyclic {
        base: u64,
        steps_per_cycle: u64,
    },
    Block {
        plan: BlockPlan,
        steps_per_cycle: u64,
    },
}

#[derive(Clone)]
struct Subset {
    indices: Arc<[u64]>,
    fingerprint: u64,
}

impl Sampler {
    /// A builder for a sampler over `0..len` with `batch_size` indices per step
    /// (the global batch, all ranks together).
    ///
    /// Defaults: seed 0, [`Mode::Cyclic`], rank 0 of world size 1, step 0.
    pub fn builder(len: u64, batch_size: u64) -> SamplerBuilder {
        SamplerBuilder::new(Source::Range(len), batch_size)
    }

    /// A builder for a sampler over an explicit list of indices (a
    /// train/validation split, a filter result): the modes select positions in
    /// `0..indices.len()` and yield `indices[position]`.
    ///
    /// The list is shared, not copied: pass an `Arc<[u64]>` to share it with
    /// other samplers. Duplicates are allowed and sampled as separate entries.
    /// Building hashes the list once (its fingerprint, for checkpoints).
    ///
    /// ```
    /// use zsampler::Sampler;
    ///
    /// let validation: Vec<u64> = (0..1_000).filter(|i| i % 10 == 0).collect();
    /// let sampler = Sampler::builder_subset(validation, 20).seed(3).build()?;
    /// assert_eq!(sampler.len(), 100);
    /// assert!(sampler.batch_at(0).iter().all(|i| i % 10 == 0));
    /// # Ok::<(), zsampler::Error>(())
    /// ```
    pub fn builder_subset(indices: impl Into<Arc<[u64]>>, batch_size: u64) -> SamplerBuilder {
        SamplerBuilder::new(Source::Subset(indices.into()), batch_size)
    }

    /// A builder that continues the sampler `state` was saved from (over
    /// `0..len`), at its step, with its seed, mode and global batch size.
    ///
    /// Change the topology with [`shard`](SamplerBuilder::shard): the global
    /// batches stay the same for every world size dividing the batch size.
    /// [`build`](SamplerBuilder::build) fails with [`Error::SubsetRequired`] if
    /// the state belongs to a subset sampler, and with
    /// [`Error::UnsupportedStateVersion`] for a state from a newer format.
    ///
    /// ```
    /// use zsampler::{Mode, Sampler};
    ///
    /// // Saved by rank 0 of 2 at step 50 ...
    /// let mut old = Sampler::builder(1_000, 64).mode(Mode::Cyclic).shard(0, 2).build()?;
    /// old.seek(50);
    /// let state = old.state();
    ///
    /// // ... resumed on 4 ranks: rank 0 and 1 of 4 together hold rank 0 of 2's slice.
    /// let r0 = Sampler::resume(&state).shard(0, 4).build()?;
    /// let r1 = Sampler::resume(&state).shard(1, 4).build()?;
    /// assert_eq!([r0.batch_at(50), r1.batch_at(50)].concat(), old.batch_at(50));
    /// # Ok::<(), zsampler::Error>(())
    /// ```
    pub fn resume(state: &SamplerState) -> SamplerBuilder {
        SamplerBuilder::from_state(state, Source::Range(state.len))
    }

    /// Like [`resume`](Self::resume), for a state saved by a subset sampler:
    /// `indices` must be the same subset (same length, same fingerprint), or
    /// [`build`](SamplerBuilder::build) fails with [`Error::SubsetMismatch`]
    /// ([`Error::UnexpectedSubset`] if the state was saved over `0..len`).
    pub fn resume_subset(state: &SamplerState, indices: impl Into<Arc<[u64]>>) -> SamplerBuilder {
        SamplerBuilder::from_state(state, Source::Subset(indices.into()))
    }

    /// Rebuilds the sampler `state` was saved from (over `0..len`), same rank
    /// and world size, positioned at the saved step: `Sampler::resume(state).build()`.
    ///
    /// # Errors
    ///
    /// As [`SamplerBuilder::build`]; in particular [`Error::SubsetRequired`]
    /// for a state saved by a subset sampler.
    pub fn from_state(state: &SamplerState) -> Result<Self, Error> {
        Self::resume(state).build()
    }

    /// The length of the index space (of the subset, for a subset sampler).
    #[must_use]
    #[expect(
        clippy::len_without_is_empty,
        reason = "a sampler is never empty: an empty index space is a build error"
    )]
    pub const fn len(&self) -> u64 {
        self.len
    }

    /// The global batch size: indices per step over all ranks.
    #[must_use]
    pub const fn global_batch_size(&self) -> u64 {
        self.batch_size
    }

    /// This rank's batch size: `⌊(rank+1)·B/world⌋ − ⌊rank·B/world⌋` of the
    /// global batch size `B` (`B / world_size` when the world size divides
    /// it), the length of every batch this sampler yields.
    #[must_use]
    pub const fn local_batch_size(&self) -> usize {
        self.local
    }

    /// Where this rank's slice starts in the global batch: `⌊rank·B/world⌋`.
    #[must_use]
    pub const fn local_offset(&self) -> u64 {
        self.offset
    }

    /// This sampler's rank.
    #[must_use]
    pub const fn rank(&self) -> u64 {
        self.rank
    }

    /// The world size.
    #[must_use]
    pub const fn world_size(&self) -> u64 {
        self.world_size
    }

    /// The seed.
    #[must_use]
    pub const fn seed(&self) -> u64 {
        self.seed
    }

    /// The mode.
    #[must_use]
    pub const fn mode(&self) -> Mode {
        self.mode
    }

    /// The subset this sampler draws from, or `None` for `0..len`.
    #[must_use]
    pub fn subset(&self) -> Option<&Arc<[u64]>> {
        self.subset.as_ref().map(|s| &s.indices)
    }

    /// The subset's 64-bit fingerprint (what a [`SamplerState`] records), or
    /// `None` for a sampler over `0..len`.
    #[must_use]
    pub fn subset_fingerprint(&self) -> Option<u64> {
        self.subset.as_ref().map(|s| s.fingerprint)
    }

    /// Steps per cycle for the modes without replacement
    /// (`⌊len / global_batch_size⌋`), `None` for sequential and iid.
    #[must_use]
    pub const fn steps_per_cycle(&self) -> Option<u64> {
        match self.plan {
            Plan::Cyclic {
                steps_per_cycle, ..
            }
            | Plan::Block {
                steps_per_cycle, ..
            } => Some(steps_per_cycle),
            Plan::Sequential | Plan::Iid { .. } => None,
        }
    }

    /// This rank's batch at `step`: `local_batch_size()` indices.
    ///
    /// A pure function of the configuration and `step`: any step, in any order,
    /// from any thread. Allocates the result; [`fill_batch`](Self::fill_batch)
    /// writes into a buffer instead.
    #[must_use]
    pub fn batch_at(&self, step: u64) -> Vec<u64> {
        let mut out = vec![0; self.local];
        self.fill_batch(step, &mut out);
        out
    }

    /// Writes this rank's batch at `step` into `out`, without allocating.
    ///
    /// # Panics
    ///
    /// If `out.len()` is not [`local_batch_size()`](Self::local_batch_size).
    ///
    /// ```
    /// use zsampler::{Mode, Sampler};
    ///
    /// let sampler = Sampler::builder(1 << 20, 1024).mode(Mode::Iid).build()?;
    /// let mut buffer = vec![0; sampler.local_batch_size()];
    /// for step in 0..10 {
    ///     sampler.fill_batch(step, &mut buffer);
    ///     assert!(buffer.iter().all(|&i| i < 1 << 20));
    /// }
    /// # Ok::<(), zsampler::Error>(())
    /// ```
    pub fn fill_batch(&self, step: u64, out: &mut [u64]) {
        assert_eq!(
            out.len(),
            self.local,
            "fill_batch: the buffer holds {} indices but the local batch size is {}",
            out.len(),
            self.local
        );
        match self.plan {
            Plan::Sequential => {
                let first =
                    u128::from(step) * u128::from(self.batch_size) + u128::from(self.offset);
                // Below `len`, so it fits.
                let start = (first % u128::from(self.len)) as u64;
                fill_sequential(start, self.len, out);
            }
            Plan::Iid { base, threshold } => {
                kernels::iid_fill(word(base, step), self.offset, self.len, threshold, out);
            }
            Plan::Cyclic {
                base,
                steps_per_cycle,
            } => {
                let (cycle, position) = self.cycle_position(step, steps_per_cycle);
                Permutation::new(self.len, word(base, cycle)).fill(position, out);
            }
            Plan::Block {
                plan,
                steps_per_cycle,
            } => {
                let (cycle, position) = self.cycle_position(step, steps_per_cycle);
                plan.fill(cycle, position, out);
            }
        }
        if let Some(subset) = &self.subset {
            kernels::gather(&subset.indices, out);
        }
    }

    /// Writes the index stream's positions `position .. position + out.len()`
    /// into `out`: the global batches end to end, step `s` holding
    /// positions `s·B .. (s+1)·B` of a global batch of `B`, whatever this
    /// sampler's rank. With a batch size of 1 every position is a step of
    /// its own, so a cyclic sampler's cycles are whole permutations of the
    /// index space: a reader that takes any number of indices at a time
    /// (a source of a mixture, say) still sees every index once per cycle.
    ///
    /// ```
    /// use zsampler::{Mode, Sampler};
    ///
    /// let sampler = Sampler::builder(10, 1).seed(4).mode(Mode::Cyclic).build()?;
    /// let mut run = vec![0; 25];
    /// sampler.fill_positions(3, &mut run);
    /// assert_eq!(run[..2], [sampler.batch_at(3)[0], sampler.batch_at(4)[0]]);
    /// let mut cycle = run[7..17].to_vec(); // positions 10..20: the second cycle
    /// cycle.sort_unstable();
    /// assert!(cycle.into_iter().eq(0..10));
    /// # Ok::<(), zsampler::Error>(())
    /// ```
    pub fn fill_positions(&self, position: u64, out: &mut [u64]) {
        let mut done = 0;
        while done < out.len() {
            let p = position.wrapping_add(done as u64);
            // The run up to the end of what one kernel call can fill.
            let room = match self.plan {
                Plan::Sequential => u64::MAX,
                Plan::Iid { .. } => self.batch_size - p % self.batch_size,
                Plan::Cyclic {
                    steps_per_cycle, ..
                }
                | Plan::Block {
                    steps_per_cycle, ..
                } => steps_per_cycle * self.batch_size - p % (steps_per_cycle * self.batch_size),
            };
            let n = (out.len() - done).min(usize::try_from(room).unwrap_or(usize::MAX));
            let chunk = &mut out[done..done + n];
            match self.plan {
                Plan::Sequential => fill_sequential(p % self.len, self.len, chunk),
                Plan::Iid { base, threshold } => {
                    let (step, slot) = (p / self.batch_size, p % self.batch_size);
                    kernels::iid_fill(word(base, step), slot, self.len, threshold, chunk);
                }
                Plan::Cyclic {
                    base,
                    steps_per_cycle,
                } => {
                    let span = steps_per_cycle * self.batch_size;
                    Permutation::new(self.len, word(base, p / span)).fill(p % span, chunk);
                }
                Plan::Block {
                    plan,
                    steps_per_cycle,
                } => {
                    let span = steps_per_cycle * self.batch_size;
                    plan.fill(p / span, p % span, chunk);
                }
            }
            done += n;
        }
        if let Some(subset) = &self.subset {
            kernels::gather(&subset.indices, out);
        }
    }

    /// The cycle of `step` and the cycle position of this rank's first index.
    #[inline]
    const fn cycle_position(&self, step: u64, steps_per_cycle: u64) -> (u64, u64) {
        let cycle = step / steps_per_cycle;
        let within = step % steps_per_cycle;
        // within · batch + offset < steps_per_cycle · batch ≤ len.
        (cycle, within * self.batch_size + self.offset)
    }

    /// The step the iterator yields next.
    #[must_use]
    pub const fn step(&self) -> u64 {
        self.step
    }

    /// Moves the iterator to `step` (O(1): nothing is replayed).
    pub const fn seek(&mut self, step: u64) {
        self.step = step;
    }

    /// Writes the batch of the current step into `out` and advances: the
    /// allocation-free form of [`next`](Iterator::next). Returns the step written.
    ///
    /// # Panics
    ///
    /// If `out.len()` is not [`local_batch_size()`](Self::local_batch_size).
    pub fn fill_next(&mut self, out: &mut [u64]) -> u64 {
        let step = self.step;
        self.fill_batch(step, out);
        self.step = step.wrapping_add(1);
        step
    }

    /// The checkpoint of this sampler, positioned at [`step()`](Self::step).
    #[must_use]
    pub fn state(&self) -> SamplerState {
        SamplerState {
            version: SamplerState::VERSION,
            mode: self.mode,
            seed: self.seed,
            step: self.step,
            len: self.len,
            batch_size: self.batch_size,
            rank: self.rank,
            world_size: self.world_size,
            subset_fingerprint: self.subset_fingerprint(),
        }
    }

    /// A random stream for `step`, keyed by `(seed, step)` and independent of
    /// the indices: for reproducible per-step randomness (augmentations,
    /// dropout masks) that resumes with the sampler. The same for every rank;
    /// derive per-sample streams from its words or use
    /// [`CounterRng::new`] with your own stream numbers.
    ///
    /// ```
    /// use rand_core::Rng;
    /// use zsampler::Sampler;
    ///
    /// let sampler = Sampler::builder(100, 10).seed(5).build()?;
    /// let a = sampler.step_rng(3).next_u64();
    /// assert_eq!(a, sampler.step_rng(3).next_u64());
    /// assert_ne!(a, sampler.step_rng(4).next_u64());
    /// # Ok::<(), zsampler::Error>(())
    /// ```
    #[must_use]
    pub const fn step_rng(&self, step: u64) -> CounterRng {
        CounterRng::new(self.seed, step)
    }
}

/// `out[i] = (start + i) mod len`, with `start < len`.
#[inline]
fn fill_sequential(start: u64, len: u64, out: &mut [u64]) {
    let mut value = start;
    for slot in out {
        *slot = value;
        value += 1;
        if value == len {
            value = 0;
        }
    }
}

impl Iterator for Sampler {
    type Item = Vec<u64>;

    /// The batch of the current step; advances the step. Never `None`.
    fn next(&mut self) -> Option<Vec<u64>> {
        let batch = self.batch_at(self.step);
        self.step = self.step.wrapping_add(1);
        Some(batch)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }

    /// Skips `n` steps in O(1).
    fn nth(&mut self, n: usize) -> Option<Vec<u64>> {
        self.step = self.step.wrapping_add(n as u64);
        self.next()
    }
}

impl FusedIterator for Sampler {}

impl fmt::Debug for Sampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampler")
            .field("mode", &self.mode)
            .field("len", &self.len)
            .field("batch_size", &self.batch_size)
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("seed", &self.seed)
            .field("step", &self.step)
            .field("subset_fingerprint", &self.subset_fingerprint())
            .finish_non_exhaustive()
    }
}

/// Where the indices come from.
#[derive(Clone)]
enum Source {
    Range(u64),
    Subset(Arc<[u64]>),
}

/// What a resumed builder must match.
#[derive(Clone, Copy, Debug)]
struct Expected {
    version: u32,
    len: u64,
    fingerprint: Option<u64>,
}

/// Configures a [`Sampler`]; every check happens in [`build`](Self::build).
///
/// From [`Sampler::builder`], [`Sampler::builder_subset`],
/// [`Sampler::resume`] or [`Sampler::resume_subset`].
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SamplerBuilder {
    source: Source,
    batch_size: u64,
    seed: u64,
    mode: Mode,
    rank: u64,
    world_size: u64,
    step: u64,
    expected: Option<Expected>,
}

impl SamplerBuilder {
    const fn new(source: Source, batch_size: u64) -> Self {
        Self {
            source,
            batch_size,
            seed: 0,
            mode: Mode::Cyclic,
            rank: 0,
            world_size: 1,
            step: 0,
            expected: None,
        }
    }

    fn from_state(state: &SamplerState, source: Source) -> Self {
        Self {
            source,
            batch_size: state.batch_size,
            seed: state.seed,
            mode: state.mode,
            rank: state.rank,
            world_size: state.world_size,
            step: state.step,
            expected: Some(Expected {
                version: state.version,
                len: state.len,
                fingerprint: state.subset_fingerprint,
            }),
        }
    }

    /// The seed (default 0). Samplers with different seeds yield unrelated streams.
    pub const fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The mode (default [`Mode::Cyclic`]).
    pub const fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// This process's `rank` among `world_size` data-parallel ranks (default
    /// rank 0 of 1). Rank `r` gets positions `⌊r·B/world⌋ .. ⌊(r+1)·B/world⌋`
    /// of each global batch of `B` indices, so the ranks' batches together are
    /// the global batch whatever the world size; the world size may be at
    /// most `B`.
    pub const fn shard(mut self, rank: u64, world_size: u64) -> Self {
        self.rank = rank;
        self.world_size = world_size;
        self
    }

    /// The step the iterator starts at (default 0; a resumed builder starts at
    /// the saved step).
    pub const fn start_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Checks the configuration and builds the sampler (O(1), plus one pass
    /// over a subset to fingerprint it).
    ///
    /// # Errors
    ///
    /// - [`Error::EmptyIndexSpace`]: `len` is 0 or the subset is empty;
    /// - [`Error::ZeroBatchSize`];
    /// - [`Error::BatchExceedsLen`]: cyclic or block mode with a batch larger than `len`;
    /// - [`Error::ZeroBlockSize`], [`Error::ZeroWindowBlocks`]: block mode;
    /// - [`Error::ZeroWorldSize`], [`Error::RankOutOfRange`],
    ///   [`Error::WorldExceedsBatch`]: a bad [`shard`](Self::shard);
    /// - [`Error::BatchTooLarge`]: the local batch cannot be allocated on this platform;
    /// - resumed builders: [`Error::UnsupportedStateVersion`],
    ///   [`Error::SubsetRequired`], [`Error::UnexpectedSubset`],
    ///   [`Error::SubsetMismatch`].
    pub fn build(self) -> Result<Sampler, Error> {
        if let Some(expected) = self.expected
            && expected.version != SamplerState::VERSION
        {
            return Err(Error::UnsupportedStateVersion {
                found: expected.version,
                supported: SamplerState::VERSION,
            });
        }
        let (len, subset) = match &self.source {
            Source::Range(len) => (*len, None),
            Source::Subset(indices) => {
                let fingerprint = kernels::fingerprint(indices);
                (
                    indices.len() as u64,
                    Some(Subset {
                        indices: Arc::clone(indices),
                        fingerprint,
                    }),
                )
            }
        };
        if let Some(expected) = self.expected {
            check_resumed_source(expected, len, subset.as_ref())?;
        }
        if len == 0 {
            return Err(Error::EmptyIndexSpace);
        }
        let batch_size = self.batch_size;
        if batch_size == 0 {
            return Err(Error::ZeroBatchSize);
        }
        let plan = self.plan(len)?;
        if self.world_size == 0 {
            return Err(Error::ZeroWorldSize);
        }
        if self.rank >= self.world_size {
            return Err(Error::RankOutOfRange {
                rank: self.rank,
                world_size: self.world_size,
            });
        }
        if self.world_size > batch_size {
            return Err(Error::WorldExceedsBatch {
                batch_size,
                world_size: self.world_size,
            });
        }
        // ⌊r·B/w⌋ in 128 bits: the product can exceed u64; the quotient
        // is at most B.
        let bound =
            |r: u64| (u128::from(r) * u128::from(batch_size) / u128::from(self.world_size)) as u64;
        let offset = bound(self.rank);
        let local = bound(self.rank + 1) - offset;
        // A `Vec<u64>` holds at most `isize::MAX` bytes.
        let max = isize::MAX as u64 / size_of::<u64>() as u64;
        let local_usize =
            usize::try_from(local)
                .ok()
                .filter(|_| local <= max)
                .ok_or(Error::BatchTooLarge {
                    local_batch_size: local,
                    max,
                })?;
        Ok(Sampler {
            len,
            batch_size,
            local: local_usize,
            offset,
            rank: self.rank,
            world_size: self.world_size,
            seed: self.seed,
            mode: self.mode,
            step: self.step,
            plan,
            subset,
        })
    }

    fn plan(&self, len: u64) -> Result<Plan, Error> {
        let (seed, batch_size) = (self.seed, self.batch_size);
        if let Mode::Block {
            block_size,
            window_blocks,
        } = self.mode
        {
            if block_size == 0 {
                return Err(Error::ZeroBlockSize);
            }
            if window_blocks == 0 {
                return Err(Error::ZeroWindowBlocks);
            }
        }
        if self.mode.is_cyclic() && batch_size > len {
            return Err(Error::BatchExceedsLen {
                batch_size,
                len,
                mode: self.mode,
            });
        }
        Ok(match self.mode {
            Mode::Sequential => Plan::Sequential,
            Mode::Iid => Plan::Iid {
                base: derive(seed, tag::IID),
                threshold: len.wrapping_neg() % len,
            },
            Mode::Cyclic => Plan::Cyclic {
                base: derive(seed, tag::CYCLIC),
                steps_per_cycle: len / batch_size,
            },
            Mode::Block {
                block_size,
                window_blocks,
            } => Plan::Block {
                plan: BlockPlan::new(seed, len, block_size, window_blocks),
                steps_per_cycle: len / batch_size,
            },
        })
    }
}

fn check_resumed_source(
    expected: Expected,
    len: u64,
    subset: Option<&Subset>,
) -> Result<(), Error> {
    match (expected.fingerprint, subset) {
        (Some(fingerprint), None) => Err(Error::SubsetRequired {
            len: expected.len,
            fingerprint,
        }),
        (None, Some(_)) => Err(Error::UnexpectedSubset { len: expected.len }),
        (Some(fingerprint), Some(subset))
            if fingerprint != subset.fingerprint || expected.len != len =>
        {
            Err(Error::SubsetMismatch {
                expected_len: expected.len,
                expected_fingerprint: fingerprint,
                found_len: len,
                found_fingerprint: subset.fingerprint,
            })
        }
        _ => Ok(()),
    }
}

impl fmt::Debug for SamplerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("SamplerBuilder");
        match &self.source {
            Source::Range(len) => s.field("len", len),
            Source::Subset(indices) => s.field("subset_len", &indices.len()),
        };
        s.field("batch_size", &self.batch_size)
            .field("seed", &self.seed)
            .field("mode", &self.mode)
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("step", &self.step)
            .field("resumed", &self.expected.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_clone<T: Send + Sync + Clone>() {}

    #[test]
    fn sampler_is_send_sync_clone() {
        assert_send_sync_clone::<Sampler>();
        assert_send_sync_clone::<SamplerBuilder>();
    }

    #[test]
    fn sequential_wraps() {
        let mut out = [0; 7];
        fill_sequential(3, 5, &mut out);
        assert_eq!(out, [3, 4, 0, 1, 2, 3, 4]);
        let mut out = [0; 3];
        fill_sequential(0, 1, &mut out);
        assert_eq!(out, [0, 0, 0]);
    }

    #[test]
    fn sequential_survives_huge_steps() {
        let sampler = Sampler::builder(10, 3)
            .mode(Mode::Sequential)
            .build()
            .unwrap();
        // (u64::MAX · 3) mod 10 = 5
        assert_eq!(sampler.batch_at(u64::MAX), vec![5, 6, 7]);
    }

    #[test]
    fn debug_does_not_dump_the_subset() {
        let sampler = Sampler::builder_subset(vec![1u64; 10_000], 4)
            .build()
            .unwrap();
        let text = format!("{sampler:?}");
        assert!(text.len() < 300, "{text}");
        let builder = Sampler::builder_subset(vec![1u64; 10_000], 4);
        assert!(format!("{builder:?}").contains("subset_len: 10000"));
    }

    #[test]
    fn huge_steps_do_not_overflow() {
        for mode in [
            Mode::Iid,
            Mode::Cyclic,
            Mode::Block {
                block_size: 3,
                window_blocks: 2,
            },
        ] {
            let sampler = Sampler::builder(1000, 7).mode(mode).build().unwrap();
            assert!(sampler.batch_at(u64::MAX).iter().all(|&i| i < 1000));
        }
    }
}
