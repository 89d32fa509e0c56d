//! [`Packer`]: windows of documents in, batches of packed rows out.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::best_fit::{self, Plan};
use super::{Documents, PackedBatch};
use crate::{Error, Result};

/// How documents become rows of `seq_len` tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Packing {
    /// Documents end to end, cut every `seq_len` tokens: no padding at all,
    /// but a document may be cut at a row end (its rest starts the next row).
    #[default]
    ConcatSplit,
    /// Best-fit decreasing within each window of documents: a document is
    /// cut only where it is longer than a row, every piece goes whole into
    /// the fullest row with room for it, the rest of a row is padding.
    BestFit,
}

/// One window of documents, ready to be packed (planned on a worker thread).
#[derive(Debug)]
pub(crate) struct Window {
    docs: Documents,
    /// Best fit's rows; `None` for concat-and-split.
    plan: Option<Plan>,
}

impl Window {
    pub(crate) fn new(docs: Documents, packing: Packing, seq_len: usize) -> Window {
        let plan = match packing {
            Packing::ConcatSplit => None,
            Packing::BestFit => Some(best_fit::plan(&docs, seq_len)),
        };
        Window { docs, plan }
    }

    /// Whether `cursor` lies within this window (at its end included).
    fn holds(&self, cursor: Cursor) -> bool {
        match &self.plan {
            None => match self.docs.get(cursor.item as usize) {
                Some(doc) => cursor.offset < doc.len() as u64 || cursor.offset == 0,
                None => cursor.item == self.docs.len() as u64 && cursor.offset == 0,
            },
            Some(plan) => cursor.item <= plan.rows() as u64 && cursor.offset == 0,
        }
    }

    fn exhausted(&self, cursor: Cursor) -> bool {
        match &self.plan {
            None => cursor.item >= self.docs.len() as u64,
            Some(plan) => cursor.item >= plan.rows() as u64,
        }
    }
}

/// Where the packer stands within its current window: the next document and
/// the tokens of it already packed (concat-and-split), or the next row of
/// the window's plan (best fit; `offset` 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cursor {
    /// The next document (concat-and-split) or row (best fit) of the window.
    pub item: u64,
    /// Tokens of that document already packed.
    pub offset: u64,
}

/// Packs windows of documents into batches of `rows × seq_len` tokens, the
/// same for every rank: rank `r` of `w` keeps rows `r·rows/w .. (r+1)·rows/w`
/// of each batch.
///
/// The single-threaded core of [`PackedLoader`](crate::PackedLoader), usable
/// on its own over documents in memory:
///
/// ```
/// use zrecord_loader::{Documents, Packer, Packing};
///
/// let mut window = Documents::new();
/// for doc in [&[1, 2, 3][..], &[4, 5], &[6, 7, 8, 9, 10]] {
///     window.push(doc);
/// }
/// let mut windows = vec![window].into_iter();
/// let mut packer = Packer::new(Packing::ConcatSplit, 4, 2)?;
/// let batch = packer.next_batch(|| windows.next())?;
/// assert_eq!(batch.tokens(), &[1, 2, 3, 4, 5, 6, 7, 8]);
/// assert_eq!(batch.segment_ids(), &[1, 1, 1, 2, 1, 2, 2, 2]);
/// assert_eq!(batch.positions(), &[0, 1, 2, 0, 0, 0, 1, 2]);
/// # Ok::<(), zrecord_loader::Error>(())
/// ```
#[derive(Debug)]
pub struct Packer {
    packing: Packing,
    seq_len: usize,
    rows: usize,
    keep: Range<usize>,
    pad: u32,
    window: Option<Window>,
    cursor: Cursor,
    /// Windows taken so far; the current one is number `windows - 1`.
    windows: u64,
    step: u64,
    /// Where the first window is entered (a resumed packer).
    resume_at: Option<Cursor>,
    /// Consecutive windows without a token that make the stream "empty".
    empty_limit: u64,
}

impl Packer {
    /// A packer of `rows × seq_len` batches.
    ///
    /// # Errors
    /// [`Error::Packing`] when `seq_len` or `rows` is 0, or `seq_len`
    /// exceeds `u32::MAX`.
    pub fn new(packing: Packing, seq_len: usize, rows: usize) -> Result<Packer> {
        if seq_len == 0 || rows == 0 || u32::try_from(seq_len).is_err() {
            return Err(Error::Packing(format!(
                "rows ({rows}) and seq_len ({seq_len}) must be at least 1, and seq_len below 2^32"
            )));
        }
        Ok(Packer {
            packing,
            seq_len,
            rows,
            keep: 0..rows,
            pad: 0,
            window: None,
            cursor: Cursor::default(),
            windows: 0,
            step: 0,
            resume_at: None,
            empty_limit: 1024,
        })
    }

    /// Keeps only rank `rank`'s rows of each batch of `world_size` ranks.
    ///
    /// # Errors
    /// [`Error::Packing`] unless `rank < world_size` and `world_size`
    /// divides the rows.
    pub fn shard(mut self, rank: usize, world_size: usize) -> Result<Packer> {
        if world_size == 0 || rank >= world_size || !self.rows.is_multiple_of(world_size) {
            return Err(Error::Packing(format!(
                "rank {rank} of {world_size}: the world size must divide the {} rows of a batch",
                self.rows
            )));
        }
        let share = self.rows / world_size;
        self.keep = rank * share..(rank + 1) * share;
        Ok(self)
    }

    /// The token written into padding (default 0).
    pub fn pad_token(mut self, pad: u32) -> Packer {
        self.pad = pad;
        self
    }

    /// Starts at step `step`, `cursor` into the first window it is given.
    pub(crate) fn resume(mut self, step: u64, cursor: Cursor) -> Packer {
        self.step = step;
        self.resume_at = Some(cursor);
        self
    }

    pub(crate) fn empty_limit(mut self, windows: u64) -> Packer {
        self.empty_limit = windows.max(1);
        self
    }

    /// The next batch, taking windows from `next_window` as needed.
    ///
    /// # Errors
    /// [`Error::Packing`] when `next_window` runs out (returns `None`)
    /// before the batch is full.
    pub fn next_batch(
        &mut self,
        mut next_window: impl FnMut() -> Option<Documents>,
    ) -> Result<PackedBatch> {
        let (packing, seq_len) = (self.packing, self.seq_len);
        self.next_batch_from(|| match next_window() {
            Some(docs) => Ok(Window::new(docs, packing, seq_len)),
            None => Err(Error::Packing(
                "the documents ran out before the batch was full".into(),
            )),
        })
    }

    /// The step of the next batch.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Where the next batch starts: the window (counted from the first one
    /// this packer was given, which is 0) and the cursor in it.
    pub(crate) fn position(&self) -> (u64, Cursor) {
        match &self.window {
            Some(w) if w.exhausted(self.cursor) => (self.windows, Cursor::default()),
            Some(_) => (self.windows - 1, self.cursor),
            None => (0, self.resume_at.unwrap_or_default()),
        }
    }

    pub(crate) fn next_batch_from(
        &mut self,
        mut next_window: impl FnMut() -> Result<Window>,
    ) -> Result<PackedBatch> {
        let mut batch = PackedBatch::new(self.step, self.keep.len(), self.seq_len);
        for row in 0..self.rows {
            let keep = self.keep.contains(&row);
            match self.packing {
                Packing::ConcatSplit => self.concat_row(&mut batch, keep, &mut next_window)?,
                Packing::BestFit => self.best_fit_row(&mut batch, keep, &mut next_window)?,
            }
        }
        self.step += 1;
        Ok(batch)
    }

    /// Packs `steps` batches and drops them without copying a token: how a
    /// loader reaches its start step.
    pub(crate) fn skip(
        &mut self,
        steps: u64,
        mut next_window: impl FnMut() -> Result<Window>,
    ) -> Result<()> {
        let keep = std::mem::replace(&mut self.keep, 0..0);
        let skipped = (0..steps).try_for_each(|_| self.next_batch_from(&mut next_window).map(drop));
        self.keep = keep;
        skipped
    }

    /// Makes sure the current window has something left at the cursor.
    fn ready(&mut self, next_window: &mut impl FnMut() -> Result<Window>) -> Result<()> {
        let mut empty = 0;
        while self
            .window
            .as_ref()
            .is_none_or(|w| w.exhausted(self.cursor))
        {
            let window = next_window()?;
            self.windows += 1;
            self.cursor = match self.resume_at.take() {
                Some(cursor) if window.holds(cursor) => cursor,
                Some(cursor) => {
                    return Err(Error::Packing(format!(
                        "the saved position {cursor:?} is not within its window: \
                         the state was saved over other data or another packing"
                    )));
                }
                None => Cursor::default(),
            };
            if window.docs.tokens().is_empty() {
                empty += 1;
                if empty >= self.empty_limit {
                    return Err(Error::Packing(format!(
                        "{empty} windows in a row hold no token: there is nothing to pack"
                    )));
                }
            }
            self.window = Some(window);
        }
        Ok(())
    }

    /// The current window (after [`ready`](Self::ready)).
    fn current(&self) -> &Window {
        self.window
            .as_ref()
            .unwrap_or_else(|| unreachable!("ready() took a window"))
    }

    fn concat_row(
        &mut self,
        batch: &mut PackedBatch,
        keep: bool,
        next_window: &mut impl FnMut() -> Result<Window>,
    ) -> Result<()> {
        let (mut used, mut segment) = (0, 0);
        while used < self.seq_len {
            self.ready(next_window)?;
            let (seq_len, mut cursor) = (self.seq_len, self.cursor);
            let window = self.current();
            let doc = window.docs.get(cursor.item as usize).unwrap_or_default();
            let rest = &doc[cursor.offset as usize..];
            let n = rest.len().min(seq_len - used);
            if n > 0 && keep {
                segment += 1;
                batch.push_segment(&rest[..n], segment);
            }
            used += n;
            cursor.offset += n as u64;
            if cursor.offset == doc.len() as u64 {
                cursor = Cursor {
                    item: cursor.item + 1,
                    offset: 0,
                };
            }
            self.cursor = cursor;
        }
        Ok(())
    }

    fn best_fit_row(
        &mut self,
        batch: &mut PackedBatch,
        keep: bool,
        next_window: &mut impl FnMut() -> Result<Window>,
    ) -> Result<()> {
        self.ready(next_window)?;
        let (r, pad) = (self.cursor.item as usize, self.pad);
        let window = self.current();
        if keep {
            let plan = window.plan.as_ref().unwrap_or_else(|| unreachable!());
            let tokens = window.docs.tokens();
            let mut used = 0;
            for (k, piece) in plan.row(r).iter().enumerate() {
                batch.push_segment(&tokens[piece.start..piece.start + piece.len], k as u32 + 1);
                used += piece.len;
            }
            batch.pad_row(used, pad);
        }
        self.cursor.item += 1;
        Ok(())
    }
}
