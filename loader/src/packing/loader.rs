//! [`PackedLoader`]: a token stream read in windows of documents on the
//! loader's worker threads, packed into fixed-length rows.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use zsampler::Mode;

use super::packer::{Cursor, Packer, Packing, Window};
use super::{Documents, PackedBatch};
use crate::{Counters, Error, Loader, LoaderState, Result, Stream};

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
/// permutation each cycle, iid, block shuffles, over a subset if given.
/// [`Packer`] turns the windows into batches.
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
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Clone)]
pub struct PackedLoaderBuilder {
    tokens: Option<Stream>,
    seq_len: usize,
    rows: usize,
    packing: Packing,
    window: Option<u64>,
    pad: u32,
    mode: Mode,
    seed: u64,
    subset: Option<Arc<[u64]>>,
    shard: (usize, usize),
    workers: usize,
    prefetch: usize,
    resume: Option<PackedState>,
}

impl PackedLoader {
    /// A builder for batches of `rows` rows (the global batch: all ranks
    /// together) of `seq_len` tokens.
    ///
    /// Defaults: [`Packing::ConcatSplit`], windows of [`DEFAULT_WINDOW`]
    /// documents, [`Mode::Cyclic`], seed 0, pad token 0, rank 0 of 1,
    /// 2 workers, 2 windows prefetched.
    pub fn builder(seq_len: usize, rows: usize) -> PackedLoaderBuilder {
        PackedLoaderBuilder {
            tokens: None,
            seq_len,
            rows,
            packing: Packing::default(),
            window: None,
            pad: 0,
            mode: Mode::Cyclic,
            seed: 0,
            subset: None,
            shard: (0, 1),
            workers: 2,
            prefetch: 2,
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
}

impl Iterator for PackedLoader {
    type Item = Result<PackedBatch>;

    /// Always `Some`: the loader is endless.
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_batch())
    }
}

impl PackedLoaderBuilder {
    /// The token stream: a ragged store of an integer dtype whose values fit
    /// `u32`, one document per record.
    pub fn tokens(mut self, stream: impl Into<Stream>) -> Self {
        self.tokens = Some(stream.into());
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

    /// The order of the documents (default [`Mode::Cyclic`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The seed (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Packs only these documents (a train/validation split).
    pub fn subset(mut self, indices: impl Into<Arc<[u64]>>) -> Self {
        self.subset = Some(indices.into());
        self
    }

    /// This process's `rank` among `world_size` data-parallel ranks: each
    /// keeps its contiguous slice of the rows of every batch. `world_size`
    /// must divide the rows.
    pub fn shard(mut self, rank: usize, world_size: usize) -> Self {
        self.shard = (rank, world_size);
        self
    }

    /// Worker threads that gather windows (default 2).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Windows gathered ahead (default 2).
    pub fn prefetch(mut self, windows: usize) -> Self {
        self.prefetch = windows;
        self
    }

    /// Continues from a saved [`PackedState`]: its order, seed, window and
    /// step replace this builder's; [`shard`](Self::shard) may change the
    /// rank and world size. Pass the same subset again if there was one.
    pub fn resume(mut self, state: &PackedState) -> Self {
        self.resume = Some(*state);
        self
    }

    /// Checks the configuration and starts the window loader.
    ///
    /// # Errors
    /// [`Error::NoStreams`] without [`tokens`](Self::tokens);
    /// [`Error::WrongKind`] / [`Error::TokenDType`] for a dense or
    /// non-integer stream; [`Error::Packing`] for zero rows or length, a
    /// world size that does not divide the rows, or a state saved with
    /// another packing; the [`Loader`] builder's errors for the window
    /// sampler.
    pub fn build(self) -> Result<PackedLoader> {
        let tokens = self.tokens.ok_or(Error::NoStreams)?;
        match &tokens {
            Stream::Dense(_) => {
                return Err(Error::WrongKind {
                    name: TOKENS.into(),
                    expected: zrecord::StoreKind::Ragged,
                    found: zrecord::StoreKind::Dense,
                });
            }
            Stream::Ragged(s) if !Documents::holds_tokens(s.dtype()) => {
                return Err(Error::TokenDType { dtype: s.dtype() });
            }
            Stream::Ragged(_) => {}
        }
        let (packing, seq_len, rows) = (self.packing, self.seq_len, self.rows);
        let documents = self
            .subset
            .as_ref()
            .map_or(tokens.len(), |s| s.len() as u64);
        let mut packer = Packer::new(packing, seq_len, rows)?
            .shard(self.shard.0, self.shard.1)?
            .pad_token(self.pad);
        let mut windows =
            Loader::builder(self.window.unwrap_or(DEFAULT_WINDOW).min(documents).max(1))
                .stream(TOKENS, tokens)
                .mode(self.mode)
                .seed(self.seed)
                .workers(self.workers)
                .prefetch(self.prefetch);
        if let Some(subset) = self.subset {
            windows = windows.subset(subset);
        }
        if let Some(state) = &self.resume {
            if (state.packing, state.seq_len, state.rows) != (packing, seq_len as u64, rows as u64)
            {
                return Err(Error::Packing(format!(
                    "the state was saved packing {:?} rows of {} × {}, not {packing:?} rows of {rows} × {seq_len}",
                    state.packing, state.rows, state.seq_len
                )));
            }
            windows = windows.resume(&state.window);
            packer = packer.resume(state.step, state.cursor);
        }
        let windows = windows
            .transform(move |mut batch| {
                let docs = Documents::from_ragged(batch.take_ragged(TOKENS)?)?;
                Ok(Window::new(docs, packing, seq_len))
            })
            .build()?;
        let first = windows.state();
        let per_pass = documents.div_ceil(windows.batch_size().max(1) as u64);
        Ok(PackedLoader {
            packer: packer.empty_limit(2 * per_pass + 2),
            windows,
            first,
            packing,
            seq_len,
            rows,
        })
    }
}
