//! [`LastBatch`]: whether a sequential loader's passes end in a short batch,
//! and the step geometry that follows from it.

use zsampler::{Mode, Sampler};

use crate::{Error, Result};

/// What a loader in [`Mode::Sequential`] does with the records left over
/// when the data does not divide into whole batches.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{LastBatch, Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&(0..10).collect::<Vec<i64>>())?;
/// let mut loader = Loader::builder(4)
///     .stream("label", labels)
///     .mode(Mode::Sequential)
///     .last_batch(LastBatch::Short)
///     .build()?;
/// assert_eq!(loader.steps_per_epoch(), 3);
/// let sizes: Vec<usize> = loader.steps(4).map(|b| b.map(|b| b.len())).collect::<Result<_, _>>()?;
/// assert_eq!(sizes, [4, 4, 2, 4]); // one pass of 10 records, then the next pass
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LastBatch {
    /// Every batch holds the batch size; the sequential window wraps around
    /// the end of the data into its start (the default). For training on a
    /// stream of steps.
    #[default]
    Wrap,
    /// The data is read in passes of `⌈len / batch⌉` steps, each record
    /// exactly once per pass; the last batch of a pass holds what is left.
    /// For evaluation: a pass scores every record once.
    ///
    /// With [`shard`](crate::LoaderBuilder::shard), each rank keeps its slice
    /// of every global batch, so in the short batch a rank gets fewer
    /// records — or none (see [`Loader::batch_len`](crate::Loader::batch_len)).
    ///
    /// Over a [`Mixture`](crate::Mixture) (whose sources may then be in any
    /// mode but [`Mode::Iid`]), a pass serves every record of every source
    /// exactly once, at the mixture's weights while every source has
    /// records left.
    Short,
}

/// Which records each step holds: the sampler's batch, cut short at the end
/// of a pass when the last batch is short.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Passes {
    /// Records in a pass (of the subset, for a subset loader).
    len: u64,
    global: u64,
    local: u64,
    /// First position of this rank's slice in a global batch.
    offset: u64,
    /// `Some(steps per pass)` when passes end in a short batch.
    steps: Option<u64>,
}

impl Passes {
    /// The geometry of `sampler` under `last_batch`.
    ///
    /// # Errors
    /// [`Error::ShortLastBatchNeedsSequential`] for a short last batch in
    /// any mode but [`Mode::Sequential`].
    pub(crate) fn new(sampler: &Sampler, last_batch: LastBatch) -> Result<Passes> {
        match last_batch {
            LastBatch::Wrap => Ok(Passes::with(sampler, sampler.len(), None)),
            LastBatch::Short if sampler.mode() == Mode::Sequential => {
                Ok(Passes::once(sampler, sampler.len()))
            }
            LastBatch::Short => Err(Error::ShortLastBatchNeedsSequential {
                mode: sampler.mode(),
            }),
        }
    }

    /// Passes of `len` records, each served once, the last batch of a pass
    /// short: a mixture's, whatever the sampler's mode.
    pub(crate) fn once(sampler: &Sampler, len: u64) -> Passes {
        let steps = len.div_ceil(sampler.global_batch_size()).max(1);
        Passes::with(sampler, len, Some(steps))
    }

    fn with(sampler: &Sampler, len: u64, steps: Option<u64>) -> Passes {
        Passes {
            len,
            global: sampler.global_batch_size(),
            local: sampler.local_batch_size() as u64,
            offset: sampler.local_offset(),
            steps,
        }
    }

    /// Steps in one pass over the data: `⌈len / batch⌉` for a short last
    /// batch, else `⌊len / batch⌋` (at least 1).
    pub(crate) fn steps_per_pass(&self) -> u64 {
        self.steps.unwrap_or((self.len / self.global).max(1))
    }

    /// The sampler step whose batch (cut to [`batch_len`](Self::batch_len))
    /// is the batch of `step`.
    pub(crate) fn sampler_step(&self, step: u64) -> u64 {
        // Sequential batches are the same every pass: take the first pass's.
        self.steps.map_or(step, |s| step % s)
    }

    /// Records this rank's batch of `step` holds.
    pub(crate) fn batch_len(&self, step: u64) -> usize {
        let Some(steps) = self.steps else {
            return self.local as usize;
        };
        let first = (step % steps) * self.global + self.offset;
        // At most `local`, a usize.
        self.len.saturating_sub(first).min(self.local) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(len: u64, batch: u64, rank: u64, world: u64) -> Passes {
        let sampler = Sampler::builder(len, batch)
            .mode(Mode::Sequential)
            .shard(rank, world)
            .build()
            .unwrap();
        Passes::new(&sampler, LastBatch::Short).unwrap()
    }

    #[test]
    fn a_pass_serves_every_record_once() {
        for len in 1..40u64 {
            for batch in 1..=len + 3 {
                let p = passes(len, batch, 0, 1);
                let served: u64 = (0..p.steps_per_pass()).map(|s| p.batch_len(s) as u64).sum();
                assert_eq!(served, len, "len {len}, batch {batch}");
                assert!((0..p.steps_per_pass()).all(|s| p.batch_len(s) > 0));
                assert_eq!(p.batch_len(p.steps_per_pass()), p.batch_len(0));
            }
        }
    }

    #[test]
    fn ranks_share_the_short_batch_in_order() {
        // 10 records, global batch 8 on 2 ranks: the short step holds 2 records.
        let (r0, r1) = (passes(10, 8, 0, 2), passes(10, 8, 1, 2));
        assert_eq!((r0.batch_len(1), r1.batch_len(1)), (2, 0));
        assert_eq!((r0.batch_len(0), r1.batch_len(0)), (4, 4));
    }

    #[test]
    fn only_sequential_mode_has_a_short_last_batch() {
        let sampler = Sampler::builder(10, 4).mode(Mode::Cyclic).build().unwrap();
        assert!(matches!(
            Passes::new(&sampler, LastBatch::Short),
            Err(Error::ShortLastBatchNeedsSequential { mode: Mode::Cyclic })
        ));
        assert_eq!(
            Passes::new(&sampler, LastBatch::Wrap)
                .unwrap()
                .steps_per_pass(),
            2
        );
    }
}
