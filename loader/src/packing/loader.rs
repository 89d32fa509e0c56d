//! [`PackedLoader`]: a token stream read in windows of documents on the
//! loader's worker threads, packed into fixed-length rows.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::packer::{Cursor, Packer, Packing, Window};
use super::{Documents, PackedBatch};
use crate::{
    BadRecords, Counters, Error, Loader, LoaderConfig, LoaderState, Mixture, Result, Stream,
};

/// Name of the token stream inside the window loader.
const TOKENS: &str = "tokens";

/// Documents per window unless set (fewer if the stream has fewer).
pub const DEFAULT_WINDOW: u64 = 4096;

/// Packed batches of a ragged token stream: `rows × seq_len` tokens with
/// segment ids and positions ([`PackedBatch`]), endless.
///
/// The documents are read in windows — one step of an ordinary [`Loader`]
/// over the token stream, gathered (and, for best fit, planned) on its
/// worker threads — in the order of its sampler: sequential, a fresh
/// permutation each cycle, iid, block shuffles, over a subset if given —
/// or from a [`Mixture`] of corpora
/// ([`mixture`](PackedLoaderBuilder::mixture)). [`Packer`] turns the
/// windows into batches.
///
/// **Exact and resumable.** A batch is a pure function of where its window
/// and the packer's cursor stand; [`state`](Self::state) saves that in a few
/// dozen bytes ([`PackedState`]) and [`PackedLoaderBuilder::resume`]
/// continues with exactly the next batch. Every rank packs the same global
/// batches and keeps its own rows, so a run may resume on another world size.
///
/// ```
/// use zrecord::{Codec, RaggedStore};
/// use zrecord_loader::{Mode, PackedLoader, Packing};
/// # let dir = tempfile::tempdir()?;
///
/// let store = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Zstd)?;
/// store.append_slices(&[vec![1, 2, 3], vec![4, 5], vec![6, 7, 8, 9, 10]])?;
///
/// let mut loader = PackedLoader::builder(4, 2)
///     .tokens(store)
///     .packing(Packing::BestFit)
///     .mode(Mode::Sequential)
///     .build()?;
/// let batch = loader.next_batch()?;
/// // best fit: 6 7 8 9 fills a row; 1 2 3 leave room for the 10 cut off it
/// assert_eq!(batch.tokens(), &[6, 7, 8, 9, 1, 2, 3, 10]);
/// assert_eq!(batch.segment_ids(), &[1, 1, 1, 1, 1, 1, 1, 2]);
/// let state = loader.state(); // resume here later, exactly
/// # let _ = state;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PackedLoader {
    windows: Loader<Result<Window>>,
    packer: Packer,
    /// The window loader's state at its first window.
    first: LoaderState,
    packing: Packing,
    seq_len: usize,
    rows: usize,
}

/// A [`PackedLoader`]'s checkpoint: the window being packed (as the window
/// loader's state), the cursor in it and the next step. Serde-serialisable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackedState {
    /// The window loader at the window the next batch starts in.
    pub window: LoaderState,
    /// Where in that window the next batch starts.
    pub cursor: Cursor,
    /// The next step.
    pub step: u64,
    /// How the rows were packed.
    pub packing: Packing,
    /// Tokens per row.
    pub seq_len: u64,
    /// Rows of the global batch.
    pub rows: u64,
}

/// Configures a [`PackedLoader`]: from [`PackedLoader::builder`].
///
/// The sampling and threading setters are those of every loader;
/// [`LoaderConfig`] documents each setting, its default, and what differs
/// here: a batch is rows (each rank keeps its share of them), prefetch counts
/// windows of documents, a start step is reached by packing the batches
/// before it, and a run resumes from a [`PackedState`]
/// ([`resume`](Self::resume)).
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Clone)]
pub struct PackedLoaderBuilder {
    tokens: Option<Stream>,
    mixture: Option<Mixture>,
    seq_len: usize,
    rows: usize,
    packing: Packing,
    window: Option<u64>,
    pad: u32,
    config: LoaderConfig,
    resume: Option<PackedState>,
}

impl PackedLoader {
    /// A builder for batches of `rows` rows (the global batch: all ranks
    /// together) of `seq_len` tokens.
    ///
    /// Defaults: [`Packing::ConcatSplit`], windows of [`DEFAULT_WINDOW`]
    /// documents, pad token 0, and those of [`LoaderConfig`].
    pub fn builder(seq_len: usize, rows: usize) -> PackedLoaderBuilder {
        PackedLoaderBuilder {
            tokens: None,
            mixture: None,
            seq_len,
            rows,
            packing: Packing::default(),
            window: None,
            pad: 0,
            config: LoaderConfig::default(),
            resume: None,
        }
    }

    /// The next batch.
    ///
    /// # Errors
    /// The window loader's errors ([`Error::Gather`], ...), a token that does
    /// not fit `u32`, or [`Error::Packing`] for a stream with no tokens.
    pub fn next_batch(&mut self) -> Result<PackedBatch> {
        let windows = &mut self.windows;
        self.packer.next_batch_from(|| windows.next_batch()?)
    }

    /// The step of the next batch.
    pub fn step(&self) -> u64 {
        self.packer.step()
    }

    /// A checkpoint: resuming from it continues with exactly the next batch.
    pub fn state(&self) -> PackedState {
        let (window, cursor) = self.packer.position();
        let mut state = self.first;
        state.sampler.step += window;
        PackedState {
            window: state,
            cursor,
            step: self.packer.step(),
            packing: self.packing,
            seq_len: self.seq_len as u64,
            rows: self.rows as u64,
        }
    }

    /// The window loader's counters (windows gathered, bytes, times).
    pub fn counters(&self) -> Arc<Counters> {
        self.windows.counters()
    }

    /// Over a [`Mixture`]: each source's documents and epochs in the
    /// windows read so far (all ranks together; the window being packed
    /// included), as [`Loader::sources`] counts them; `None` otherwise.
    pub fn sources(&self) -> Option<Vec<crate::SourceProgress>> {
        self.windows.sources()
    }
}

impl Iterator for PackedLoader {
    type Item = Result<PackedBatch>;

    /// Always `Some`: the loader is endless.
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_batch())
    }
}

impl PackedLoaderBuilder {
    crate::config_setters!(config; except resume);

    /// The token stream: a ragged store of an integer dtype whose values fit
    /// `u32`, one document per record.
    pub fn tokens(mut self, stream: impl Into<Stream>) -> Self {
        self.tokens = Some(stream.into());
        self
    }

    /// Documents from a [`Mixture`] of corpora instead of one token stream:
    /// each source holds one ragged token stream (the same name in every
    /// source), and every window of documents is split among the sources
    /// by their weights, exactly, as a [`Loader`]'s batches are — so the
    /// packed rows hold the corpora in those proportions of documents.
    ///
    /// ```
    /// use zrecord::{Codec, RaggedStore};
    /// use zrecord_loader::{Mixture, PackedLoader, Source};
    /// # let dir = tempfile::tempdir()?;
    ///
    /// let corpus = |name: &str, token: u32| -> zrecord::Result<Source> {
    ///     let store = RaggedStore::<u32>::create(dir.path().join(name), Codec::Zstd)?;
    ///     store.append_slices(&vec![vec![token; 3]; 100])?;
    ///     Ok(Source::new(name).stream("tokens", store))
    /// };
    /// let mixture = Mixture::new()
    ///     .source(corpus("books", 1)?.weight(0.75))
    ///     .source(corpus("code", 2)?.weight(0.25));
    /// let mut loader = PackedLoader::builder(12, 4).mixture(mixture).window(16).build()?;
    /// let batch = loader.next_batch()?;
    /// let code = batch.tokens().iter().filter(|&&t| t == 2).count();
    /// assert_eq!(code, 12); // a quarter of the 16 documents, 3 tokens each
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mixture(mut self, mixture: Mixture) -> Self {
        self.mixture = Some(mixture);
        self
    }

    /// How documents become rows (default [`Packing::ConcatSplit`]).
    pub fn packing(mut self, packing: Packing) -> Self {
        self.packing = packing;
        self
    }

    /// Documents per window (default [`DEFAULT_WINDOW`], at most the
    /// number of documents). Best fit packs each window on its own: a larger
    /// window packs tighter and holds more tokens in memory.
    pub fn window(mut self, documents: u64) -> Self {
        self.window = Some(documents);
        self
    }

    /// The token written into padding (default 0).
    pub fn pad_token(mut self, pad: u32) -> Self {
        self.pad = pad;
        self
    }

    /// Continues from a saved [`PackedState`]: its order, seed, window and
    /// step replace this builder's (and its start step);
    /// [`shard`](Self::shard) may change the rank and world size. Pass the
    /// same subset again if there was one.
    pub fn resume(mut self, state: &PackedState) -> Self {
        self.resume = Some(*state);
        self
    }

    /// Checks the configuration and starts the window loader (and packs the
    /// batches before the [start step](LoaderConfig::start_step), if any).
    ///
    /// # Errors
    /// [`Error::NoStreams`] without [`tokens`](Self::tokens);
    /// [`Error::WrongKind`] / [`Error::TokenDType`] for a dense or
    /// non-integer stream; [`Error::Packing`] for zero rows or length, a
    /// world size that does not divide the rows, a state saved with another
    /// packing, or a [`LoaderState`] given to resume from in place of a
    /// [`PackedState`]; for a [`mixture`](Self::mixture),
    /// [`Error::MixtureSource`] for a source of other than one stream and
    /// [`Error::MixtureUnsupported`] beside [`tokens`](Self::tokens); the
    /// [`Loader`] builder's errors for the window sampler (a mixture's
    /// among them); the errors of the batches packed to reach the start
    /// step.
    pub fn build(self) -> Result<PackedLoader> {
        let (name, tokens) = match (self.tokens, &self.mixture) {
            (Some(tokens), None) => (TOKENS.to_string(), tokens),
            (None, Some(mixture)) => mixture.only_stream()?,
            (None, None) => return Err(Error::NoStreams),
            (Some(_), Some(_)) => {
                return Err(Error::MixtureUnsupported {
                    setting: "a token stream of its own",
                });
            }
        };
        match &tokens {
            Stream::Dense(_) => {
                return Err(Error::WrongKind {
                    name,
                    expected: zrecord::StoreKind::Ragged,
                    found: zrecord::StoreKind::Dense,
                });
            }
            Stream::Ragged(s) if !Documents::holds_tokens(s.dtype()) => {
                return Err(Error::TokenDType { dtype: s.dtype() });
            }
            Stream::Ragged(_) => {}
        }
        if self.config.resume.is_some() {
            return Err(Error::Packing(
                "a packing loader resumes from its PackedState (PackedLoaderBuilder::resume), \
                 not from a LoaderState"
                    .into(),
            ));
        }
        let (packing, seq_len, rows) = (self.packing, self.seq_len, self.rows);
        let config = self.config;
        let documents = match (&config.subset, &self.mixture) {
            (Some(subset), _) => subset.len() as u64,
            (None, Some(mixture)) => mixture.records(),
            (None, None) => tokens.len(),
        };
        let (rank, world_size) = config.shard.unwrap_or((0, 1));
        let place = |n: u64| {
            usize::try_from(n).map_err(|_| {
                Error::Packing(format!(
                    "rank {rank} of {world_size}: the world size must divide the {rows} rows of a batch"
                ))
            })
        };
        let mut packer = Packer::new(packing, seq_len, rows)?
            .shard(place(rank)?, place(world_size)?)?
            .pad_token(self.pad);
        // Every rank packs the same global batches: the windows are not sharded.
        let windows = Loader::builder(self.window.unwrap_or(DEFAULT_WINDOW).min(documents).max(1));
        let mut windows = match self.mixture {
            // Documents are packed in window order: spread each window's sources through it.
            Some(mut mixture) => {
                mixture.interleave = true;
                windows.mixture(mixture)
            }
            None => windows.stream(TOKENS, tokens),
        }
        .with_config(LoaderConfig {
            shard: None,
            start_step: 0,
            ..config
        });
        let start_step = match &self.resume {
            Some(state) => {
                if (state.packing, state.seq_len, state.rows)
                    != (packing, seq_len as u64, rows as u64)
                {
                    return Err(Error::Packing(format!(
                        "the state was saved packing {:?} rows of {} × {}, not {packing:?} rows of {rows} × {seq_len}",
                        state.packing, state.rows, state.seq_len
                    )));
                }
                windows = windows.resume(&state.window);
                packer = packer.resume(state.step, state.cursor);
                None
            }
            None => Some(config.start_step),
        };
        // A document with a token that does not fit `u32` is a bad record
        // only where the policy replaces it; otherwise its error is the
        // one it always was.
        let skip = config.bad_records == BadRecords::Skip;
        let windows = windows
            .try_transform(move |mut batch| {
                let docs = match Documents::from_ragged_locating(batch.take_ragged(&name)?) {
                    Ok(docs) => docs,
                    Err((Some(document), e)) if skip => {
                        return Err(batch.bad_record(document, e.to_string()));
                    }
                    Err((_, e)) => return Err(e),
                };
                Ok(Window::new(docs, packing, seq_len))
            })
            .build()?;
        let first = windows.state();
        let per_pass = documents.div_ceil(windows.batch_size().max(1) as u64);
        let mut loader = PackedLoader {
            packer: packer.empty_limit(2 * per_pass + 2),
            windows,
            first,
            packing,
            seq_len,
            rows,
        };
        if let Some(steps) = start_step {
            let windows = &mut loader.windows;
            loader.packer.skip(steps, || windows.next_batch()?)?;
        }
        Ok(loader)
    }
}
