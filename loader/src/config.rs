//! [`Config`]: everything a loader is made of except its transform — one
//! value, checked in one place.

use std::sync::Arc;

use zsampler::{Mode, Sampler, SamplerState};

use crate::{Error, LastBatch, Result, Stream};

/// A loader's configuration: its streams, how it samples, and its threads.
///
/// [`LoaderBuilder`](crate::LoaderBuilder) is this plus a transform; the
/// loader starts from it once [`check`](Config::check) has built the sampler.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) streams: Vec<(String, Stream)>,
    pub(crate) batch_size: u64,
    pub(crate) seed: u64,
    pub(crate) mode: Mode,
    pub(crate) last_batch: LastBatch,
    pub(crate) shard: Option<(u64, u64)>,
    pub(crate) subset: Option<Arc<[u64]>>,
    pub(crate) start_step: u64,
    pub(crate) resume: Option<SamplerState>,
    pub(crate) workers: usize,
    pub(crate) prefetch: usize,
}

impl Config {
    /// The defaults: [`Mode::Cyclic`], [`LastBatch::Wrap`], seed 0, rank 0 of 1, step 0, 2
    /// workers, prefetch 4.
    pub(crate) fn new(batch_size: u64) -> Config {
        Config {
            streams: Vec::new(),
            batch_size,
            seed: 0,
            mode: Mode::Cyclic,
            last_batch: LastBatch::Wrap,
            shard: None,
            subset: None,
            start_step: 0,
            resume: None,
            workers: 2,
            prefetch: 4,
        }
    }

    /// Checks the streams, the subset and the sampling settings; returns the
    /// sampler positioned at the first step.
    pub(crate) fn check(&self) -> Result<Sampler> {
        let len = check_streams(&self.streams)?;
        if let Some(subset) = &self.subset
            && let Some((position, &index)) = subset.iter().enumerate().find(|&(_, &i)| i >= len)
        {
            return Err(Error::SubsetOutOfRange {
                position,
                index,
                len,
            });
        }
        let builder = match (&self.resume, &self.subset) {
            (Some(state), subset) => {
                if subset.is_none() && state.len != len {
                    return Err(Error::StateMismatch {
                        state_len: state.len,
                        len,
                    });
                }
                match subset {
                    Some(s) => Sampler::resume_subset(state, Arc::clone(s)),
                    None => Sampler::resume(state),
                }
            }
            (None, Some(subset)) => Sampler::builder_subset(Arc::clone(subset), self.batch_size)
                .seed(self.seed)
                .mode(self.mode)
                .start_step(self.start_step),
            (None, None) => Sampler::builder(len, self.batch_size)
                .seed(self.seed)
                .mode(self.mode)
                .start_step(self.start_step),
        };
        let builder = match self.shard {
            Some((rank, world)) => builder.shard(rank, world),
            None => builder,
        };
        Ok(builder.build()?)
    }
}

/// Checks that named streams can be read side by side — at least one, no
/// name twice, every one of the same length — and returns that length.
///
/// [`LoaderBuilder::build`](crate::LoaderBuilder::build) runs this check;
/// code that reads streams without a loader (a dataset over the same
/// stores) runs it to refuse exactly what a loader refuses.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{Error, Stream, check_streams};
/// # let dir = tempfile::tempdir()?;
///
/// let a = DenseStore::<u8>::create(dir.path().join("a"), &[], Codec::Raw)?;
/// a.append(&[1, 2, 3])?;
/// let b = DenseStore::<u8>::create(dir.path().join("b"), &[], Codec::Raw)?;
/// b.append(&[4, 5])?;
/// let streams = vec![("a".to_string(), Stream::from(a)), ("b".to_string(), Stream::from(b))];
/// assert!(matches!(check_streams(&streams), Err(Error::LengthMismatch { other_len: 2, .. })));
/// assert_eq!(check_streams(&streams[..1])?, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::NoStreams`], [`Error::DuplicateStream`],
/// [`Error::LengthMismatch`] (naming the first stream and the one that differs).
pub fn check_streams(streams: &[(String, Stream)]) -> Result<u64> {
    let (first_name, first) = streams.first().ok_or(Error::NoStreams)?;
    let len = first.len();
    for (k, (name, stream)) in streams.iter().enumerate() {
        if streams[..k].iter().any(|(n, _)| n == name) {
            return Err(Error::DuplicateStream { name: name.clone() });
        }
        if stream.len() != len {
            return Err(Error::LengthMismatch {
                first: first_name.clone(),
                first_len: len,
                other: name.clone(),
                other_len: stream.len(),
            });
        }
    }
    Ok(len)
}
