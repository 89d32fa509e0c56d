//! [`Mixture`]: many sources read as one stream, each global batch split
//! among them in exact proportions.

mod apportion;
mod order;

use std::sync::Arc;

use zrecord::Stream;
use zsampler::Mode;

use crate::{Error, Result, check_streams};

pub(crate) use order::MixOrder;

/// Several sources — each a set of streams with the same names, kinds and
/// dtypes — read by one loader at chosen proportions.
///
/// Each global batch of `B` records is split among the sources by largest
/// remainder, carrying what each source is owed from step to step, so that
/// after any `n` steps source `i` has served within one record of
/// `n·B·wᵢ` (`wᵢ` its normalised weight) — in every batch, not on average.
/// Each source keeps its own order and epochs: its own [`Mode`] (the
/// loader's mode unless [`Source::mode`] says otherwise) over its own
/// records, with a seed derived from the loader's, so a small source cycles
/// many times while a large one goes once, and in a cyclic mode every
/// record of a source is served exactly once per epoch of that source.
///
/// A source's share is one of: a [`weight`](Source::weight); records per
/// mixture epoch ([`choose`](Source::choose)); a [`repeat`](Source::repeat)
/// factor of its size; or nothing, which is `repeat(1.0)` — every source
/// in proportion to its size. Weights cannot be mixed with the other two.
/// A [`Schedule`] makes the weights a function of the step instead.
///
/// The mixture is part of the loader's configuration, not of its state: a
/// [`LoaderState`](crate::LoaderState) records a fingerprint of it, and a
/// loader resumed with the same mixture (at any world size dividing the
/// global batch) serves exactly the records the first one would have in
/// every global batch. Within a rank's batch the records are grouped by
/// source, in source order (each source's run is then one read), so the
/// order within a global batch, unlike its records, follows the world size.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{Loader, Mixture, Source};
/// # let dir = tempfile::tempdir()?;
///
/// let store = |name: &str, first: i64, n: i64| -> zrecord::Result<DenseStore<i64>> {
///     let store = DenseStore::<i64>::create(dir.path().join(name), &[], Codec::Raw)?;
///     store.append(&(first..first + n).collect::<Vec<_>>())?;
///     Ok(store)
/// };
/// let mixture = Mixture::new()
///     .source(Source::new("web").stream("label", store("web", 0, 1000)?).weight(0.7))
///     .source(Source::new("books").stream("label", store("books", 5000, 40)?).weight(0.3));
/// let mut loader = Loader::builder(10).mixture(mixture).seed(1).build()?;
/// let batch = loader.next_batch()?;
/// let books = (0..10).filter(|&k| batch.source(k) == Some("books")).count();
/// assert_eq!(books, 3); // 30 % of every batch, exactly
/// let labels = batch.dense::<i64>("label")?;
/// assert!((0..10).all(|k| (labels[k] >= 5000) == (batch.source(k) == Some("books"))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a mixture does nothing until a loader is built with it"]
pub struct Mixture {
    sources: Vec<Source>,
    schedule: Option<Schedule>,
    /// Each batch's sources spread through it rather than grouped (see
    /// `MixOrder`): set by the packing loader.
    pub(crate) interleave: bool,
}

/// One source of a [`Mixture`]: named streams (like a loader's), a share
/// and, optionally, a mode of its own.
#[derive(Clone, Debug)]
#[must_use = "a source does nothing until added to a mixture"]
pub struct Source {
    name: String,
    streams: Vec<(String, Stream)>,
    share: Option<Share>,
    mode: Option<Mode>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Share {
    Weight(f64),
    Choose(u64),
    Repeat(f64),
}

/// Weights that change with the step: one row of weights (one per source,
/// in the mixture's order) at each of a list of steps, held or interpolated
/// between them. Before the first step the first row holds, after the last
/// the last. A pure function of the step, so a resumed run reproduces
/// every batch.
///
/// ```
/// use zrecord_loader::Schedule;
///
/// // Anneal: 90/10 until step 1000, then linearly to 50/50 at step 2000.
/// let anneal = Schedule::linear([(1000, vec![0.9, 0.1]), (2000, vec![0.5, 0.5])]);
/// // Curriculum: code only from step 500.
/// let phases = Schedule::piecewise([(0, vec![1.0, 0.0]), (500, vec![1.0, 1.0])]);
/// # let _ = (anneal, phases);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    points: Vec<(u64, Vec<f64>)>,
    linear: bool,
}

impl Schedule {
    /// Each row holds from its step until the next row's step.
    pub fn piecewise(points: impl IntoIterator<Item = (u64, Vec<f64>)>) -> Schedule {
        Schedule {
            points: points.into_iter().collect(),
            linear: false,
        }
    }

    /// Weights move linearly from each row to the next between their steps.
    pub fn linear(points: impl IntoIterator<Item = (u64, Vec<f64>)>) -> Schedule {
        Schedule {
            points: points.into_iter().collect(),
            linear: true,
        }
    }

    /// The weights at `step` (checked: one per source, rows in order).
    fn at(&self, step: u64) -> Vec<f64> {
        let after = self.points.partition_point(|(s, _)| *s <= step);
        match (after, self.points.get(after)) {
            (0, _) => self.points[0].1.clone(),
            (_, None) => self.points[after - 1].1.clone(),
            (_, Some((s1, w1))) => {
                let (s0, w0) = &self.points[after - 1];
                if !self.linear {
                    return w0.clone();
                }
                let t = (step - s0) as f64 / (s1 - s0) as f64;
                w0.iter().zip(w1).map(|(a, b)| a + (b - a) * t).collect()
            }
        }
    }
}

impl Mixture {
    /// A mixture of no sources yet.
    pub fn new() -> Mixture {
        Mixture::default()
    }

    /// Adds a source; sources are numbered in the order they are added.
    pub fn source(mut self, source: Source) -> Mixture {
        self.sources.push(source);
        self
    }

    /// Weights by step instead of the sources' shares (which must then be
    /// left unset); each row has one weight per source.
    pub fn schedule(mut self, schedule: Schedule) -> Mixture {
        self.schedule = Some(schedule);
        self
    }

    /// The name and (first source's) stream of a mixture of one stream
    /// per source, as a packing loader reads.
    pub(crate) fn only_stream(&self) -> Result<(String, Stream)> {
        let first = self.sources.first().ok_or(Error::MixtureEmpty)?;
        match &first.streams[..] {
            [(name, stream)] => Ok((name.clone(), stream.clone())),
            streams => Err(Error::MixtureSource {
                name: first.name.clone(),
                reason: format!(
                    "it has {} streams; a packing loader's sources hold one token stream each",
                    streams.len()
                ),
            }),
        }
    }

    /// Records in every source together (each source's first stream).
    pub(crate) fn records(&self) -> u64 {
        let len = |s: &Source| s.streams.first().map_or(0, |(_, stream)| stream.len());
        self.sources.iter().map(len).sum()
    }

    /// Checks the mixture and lays its sources end to end: the streams
    /// every source has (each the sources' stores in order), and the plan
    /// that picks indices in them.
    /// With `once`, the order reads passes that serve every record of
    /// every source exactly once (no source may be iid).
    pub(crate) fn build(
        self,
        batch_size: u64,
        seed: u64,
        mode: Mode,
        once: bool,
    ) -> Result<(Vec<(String, Stream)>, MixOrder)> {
        let first = self.sources.first().ok_or(Error::MixtureEmpty)?;
        let lens = self
            .sources
            .iter()
            .map(|s| {
                let len = check_streams(&s.streams).map_err(|e| Error::MixtureSource {
                    name: s.name.clone(),
                    reason: e.to_string(),
                })?;
                if len == 0 {
                    return Err(Error::MixtureSource {
                        name: s.name.clone(),
                        reason: "it holds no records".into(),
                    });
                }
                Ok(len)
            })
            .collect::<Result<Vec<u64>>>()?;
        for (k, source) in self.sources.iter().enumerate() {
            if self.sources[..k].iter().any(|s| s.name == source.name) {
                return Err(Error::MixtureSource {
                    name: source.name.clone(),
                    reason: "two sources have this name".into(),
                });
            }
        }
        let weights = self.weights(&lens)?;
        let streams = first
            .streams
            .iter()
            .map(|(name, _)| Ok((name.clone(), self.concatenate(name)?)))
            .collect::<Result<Vec<_>>>()?;
        let names = self
            .sources
            .iter()
            .map(|s| Arc::from(s.name.as_str()))
            .collect();
        let modes: Vec<Mode> = self
            .sources
            .iter()
            .map(|s| s.mode.unwrap_or(mode))
            .collect();
        if once && let Some(k) = modes.iter().position(|&m| m == Mode::Iid) {
            return Err(Error::MixtureSource {
                name: self.sources[k].name.clone(),
                reason: "an iid source has no epoch to serve once; a short last batch needs \
                         every source in a sequential, cyclic or block mode"
                    .into(),
            });
        }
        let order = MixOrder::new(
            names,
            lens,
            modes,
            weights,
            batch_size,
            seed,
            order::Reading {
                once,
                interleave: self.interleave,
            },
        )?;
        Ok((streams, order))
    }

    /// The weights as a function of the step, checked.
    fn weights(&self, lens: &[u64]) -> Result<order::Weights> {
        let named = |k: usize| self.sources[k].name.clone();
        if let Some(schedule) = &self.schedule {
            if let Some(k) = self.sources.iter().position(|s| s.share.is_some()) {
                return Err(Error::MixtureShares {
                    name: named(k),
                    reason: "a schedule sets every weight; leave the sources' shares unset".into(),
                });
            }
            if schedule.points.is_empty() {
                return Err(Error::MixtureSchedule {
                    reason: "it has no rows".into(),
                });
            }
            for (row, (step, weights)) in schedule.points.iter().enumerate() {
                if row > 0 && *step <= schedule.points[row - 1].0 {
                    return Err(Error::MixtureSchedule {
                        reason: format!(
                            "row {row} is at step {step}, not after row {}'s step {}",
                            row - 1,
                            schedule.points[row - 1].0
                        ),
                    });
                }
                if weights.len() != self.sources.len() {
                    return Err(Error::MixtureSchedule {
                        reason: format!(
                            "row {row} (step {step}) has {} weights for {} sources",
                            weights.len(),
                            self.sources.len()
                        ),
                    });
                }
                check_weights(weights, &named, Some(*step), true)?;
            }
            return Ok(order::Weights::Schedule(schedule.clone()));
        }
        let uses_weights = self
            .sources
            .iter()
            .map(|s| matches!(s.share, Some(Share::Weight(_))));
        let uses_weights: Vec<bool> = uses_weights.collect();
        if let Some(k) = (0..lens.len()).find(|&k| uses_weights[k] != uses_weights[0]) {
            let k = if uses_weights[0] { k } else { 0 };
            return Err(Error::MixtureShares {
                name: named(k),
                reason: "weights cannot be mixed with choose, repeat or default shares; give every source a weight or none".into(),
            });
        }
        let weights: Vec<f64> = (self.sources.iter().zip(lens))
            .map(|(s, &len)| match s.share {
                Some(Share::Weight(w)) => w,
                Some(Share::Repeat(r)) => r * len as f64,
                Some(Share::Choose(n)) => n as f64,
                None => len as f64,
            })
            .collect();
        check_weights(&weights, &named, None, false)?;
        Ok(order::Weights::Fixed(apportion::quantize(&weights)))
    }

    /// Stream `name` of every source, end to end.
    fn concatenate(&self, name: &str) -> Result<Stream> {
        let mismatch = |source: &Source, reason: String| Error::MixtureSource {
            name: source.name.clone(),
            reason,
        };
        let first = &self.sources[0];
        for source in &self.sources {
            if source.streams.len() != first.streams.len() {
                let names: Vec<&str> = source.streams.iter().map(|(n, _)| n.as_str()).collect();
                let theirs: Vec<&str> = first.streams.iter().map(|(n, _)| n.as_str()).collect();
                return Err(mismatch(
                    source,
                    format!(
                        "it has streams {names:?}, source {:?} has {theirs:?}",
                        first.name
                    ),
                ));
            }
        }
        let path = std::path::PathBuf::from(format!("mixture/{name}"));
        let find = |source: &Source| {
            source
                .streams
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
                .ok_or_else(|| {
                    mismatch(
                        source,
                        format!("it has no stream {name:?}, source {:?} has", first.name),
                    )
                })
        };
        let streams = self
            .sources
            .iter()
            .map(find)
            .collect::<Result<Vec<Stream>>>()?;
        let describe = |s: &Stream| format!("{} {} records", s.kind(), s.dtype());
        for (source, stream) in self.sources.iter().zip(&streams) {
            if (stream.kind(), stream.dtype()) != (streams[0].kind(), streams[0].dtype()) {
                return Err(mismatch(
                    source,
                    format!(
                        "its stream {name:?} holds {}, source {:?}'s holds {}",
                        describe(stream),
                        first.name,
                        describe(&streams[0])
                    ),
                ));
            }
        }
        let joined = match &streams[0] {
            Stream::Dense(_) => {
                let stores = streams
                    .iter()
                    .filter_map(Stream::as_dense)
                    .flat_map(|s| s.shards().iter().cloned());
                zrecord::DenseShards::new(path, stores.collect()).map(Stream::from)
            }
            Stream::Ragged(_) => {
                let stores = streams
                    .iter()
                    .filter_map(Stream::as_ragged)
                    .flat_map(|s| s.shards().iter().cloned());
                zrecord::RaggedShards::new(path, stores.collect()).map(Stream::from)
            }
        };
        joined.map_err(|e| Error::MixtureSource {
            name: streams
                .iter()
                .zip(&self.sources)
                .find(|(s, _)| {
                    s.as_dense().map(|d| d.item_shape())
                        != streams[0].as_dense().map(|d| d.item_shape())
                })
                .map_or_else(|| first.name.clone(), |(_, source)| source.name.clone()),
            reason: format!("its stream {name:?} cannot be read with the other sources': {e}"),
        })
    }
}

/// Where one source of a mixture stands: see
/// [`Loader::sources`](crate::Loader::sources).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceProgress {
    /// The source's name.
    pub name: Arc<str>,
    /// Its records in the global batches before the loader's step (all
    /// ranks together, from step 0).
    pub records: u64,
    /// Its epochs completed: whole passes over its records
    /// (`records / len`).
    pub epochs: u64,
}

/// Weights must be finite, non-negative and not all zero; a fixed weight
/// must also be positive (a source never read is a mistake).
fn check_weights(
    weights: &[f64],
    named: &dyn Fn(usize) -> String,
    step: Option<u64>,
    zero_allowed: bool,
) -> Result<()> {
    for (k, &weight) in weights.iter().enumerate() {
        if !weight.is_finite() || weight < 0.0 || (weight == 0.0 && !zero_allowed) {
            return Err(Error::MixtureWeight {
                name: named(k),
                weight,
                step,
            });
        }
    }
    if weights.iter().all(|&w| w == 0.0) {
        return Err(Error::MixtureAllZero { step });
    }
    Ok(())
}

impl Source {
    /// A source named `name` (in errors, [`Batch::source`](crate::Batch::source)
    /// and the per-source counters), with no streams yet.
    pub fn new(name: impl Into<String>) -> Source {
        Source {
            name: name.into(),
            streams: Vec::new(),
            share: None,
            mode: None,
        }
    }

    /// Adds a stream, as [`LoaderBuilder::stream`](crate::LoaderBuilder::stream) does.
    pub fn stream(mut self, name: impl Into<String>, stream: impl Into<Stream>) -> Source {
        self.streams.push((name.into(), stream.into()));
        self
    }

    /// Adds every stream of a sharded dataset (local or remote).
    pub fn dataset(mut self, dataset: zrecord::Dataset) -> Source {
        self.streams.extend(dataset.into_streams());
        self
    }

    /// A relative weight (positive, finite): the source's share of every
    /// batch is its weight over the sum of all weights.
    pub fn weight(mut self, weight: f64) -> Source {
        self.share = Some(Share::Weight(weight));
        self
    }

    /// `records` of this source per mixture epoch: its share is proportional
    /// to them (Mosaic's `choose`).
    pub fn choose(mut self, records: u64) -> Source {
        self.share = Some(Share::Choose(records));
        self
    }

    /// Its size times `factor` per mixture epoch (Mosaic's `repeat`):
    /// `repeat(3.0)` reads an instruction set three times while every
    /// source left at its default reads once.
    pub fn repeat(mut self, factor: f64) -> Source {
        self.share = Some(Share::Repeat(factor));
        self
    }

    /// This source's own order (default: the loader's mode).
    pub fn mode(mut self, mode: Mode) -> Source {
        self.mode = Some(mode);
        self
    }
}
