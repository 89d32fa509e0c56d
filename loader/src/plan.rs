//! [`Plan`]: what a configuration will serve, known without starting a loader.

use std::sync::Arc;

use zsampler::Sampler;

use crate::mixture::MixOrder;

use crate::last_batch::Passes;

/// A checked configuration's batch geometry and first step: what a loader
/// built from it serves, known without starting its workers (and so without
/// reading any data). From [`LoaderBuilder::plan`](crate::LoaderBuilder::plan).
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{LastBatch, Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&(0..100).collect::<Vec<i64>>())?;
/// let plan = Loader::builder(32)
///     .stream("label", labels)
///     .mode(Mode::Sequential)
///     .last_batch(LastBatch::Short)
///     .plan()?;
/// assert_eq!((plan.batch_size(), plan.steps_per_epoch()), (32, 4));
/// assert_eq!(plan.batch_len(3), 4); // 100 = 3 × 32 + 4
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) sampler: Sampler,
    pub(crate) passes: Passes,
    /// A mixture's order, which picks the indices instead of the sampler.
    pub(crate) mix: Option<Arc<MixOrder>>,
}

impl Plan {
    /// The step the first batch belongs to.
    pub fn step(&self) -> u64 {
        self.sampler.step()
    }

    /// The sampler choosing each step's indices.
    pub fn sampler(&self) -> &Sampler {
        &self.sampler
    }

    /// Records in each of this rank's batches (in every batch but the last
    /// of a pass with [`LastBatch::Short`](crate::LastBatch::Short)).
    pub fn batch_size(&self) -> usize {
        self.sampler.local_batch_size()
    }

    /// Records in this rank's batch of `step`: the batch size, or what is
    /// left of the pass in a short last batch (0 for a rank whose slice
    /// lies past the end of the data).
    pub fn batch_len(&self, step: u64) -> usize {
        self.passes.batch_len(step)
    }

    /// Writes this rank's indices at `step` into `out` (resized to
    /// [`batch_len(step)`](Self::batch_len)): what the loader's batch of
    /// `step` gathers, before any bad record is replaced — to log or check
    /// what a run will read without reading it. For a
    /// [`Mixture`](crate::Mixture), indices into its sources laid end to end.
    pub fn fill_indices(&self, step: u64, out: &mut Vec<u64>) {
        let sampler_step = self.passes.sampler_step(step);
        let len = self.passes.batch_len(step);
        match &self.mix {
            Some(mix) => {
                out.resize(len, 0);
                mix.fill(sampler_step, self.sampler.local_offset(), out);
            }
            None => {
                out.resize(self.sampler.local_batch_size(), 0);
                self.sampler.fill_batch(sampler_step, out);
                out.truncate(len);
            }
        }
    }

    /// For a [`Mixture`](crate::Mixture): each source's records served and
    /// epochs completed in the global batches before `step` (all ranks
    /// together, counted from step 0); `None` otherwise.
    pub fn sources(&self, step: u64) -> Option<Vec<crate::SourceProgress>> {
        Some(self.mix.as_ref()?.progress(step))
    }

    /// Steps that make one pass over the data (`⌊len / global batch⌋`, at
    /// least 1; `⌈len / global batch⌉` with
    /// [`LastBatch::Short`](crate::LastBatch::Short)).
    pub fn steps_per_epoch(&self) -> u64 {
        self.passes.steps_per_pass()
    }
}
