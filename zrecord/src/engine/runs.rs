//! The run index of a table segment: which pages of entries lie end to end
//! in one chunk, as appends lay out the fixed-size raw records of a dense
//! store, so a gather computes such a record's location from its page
//! instead of loading its table entry.
//!
//! A gather of small records is bound by memory latency, and a record's
//! table entry is a cache miss of its own, in a table too large for the
//! cache, that must arrive before the record's bytes can be fetched. The
//! index keeps 8 bytes per page of 256 entries (4 KiB of table): 3 MiB for
//! 100 million records, so the part a gather uses stays in cache and the
//! record's bytes can be fetched without waiting for its entry.
//!
//! A page is classified the first time a gather needs one of its records
//! and all of its entries are committed. Every entry is checked against the
//! run — the same chunk, offsets one stride apart, the store's record sizes,
//! inside the chunk's committed bytes — so a location computed from a run
//! has passed the checks its own entry would. Committed entries only change
//! when a delete or a compaction rewrites them or a delete shortens the
//! table, and those forget the pages they touch.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::format::RecordLoc;

/// Table entries per page (a segment of fewer entries is one page).
const PAGE_ENTRIES: u64 = 256;
/// Pages per block of the index: blocks are allocated when first used, so
/// a small store costs one block, not a segment's worth.
const BLOCK_PAGES: u64 = 4096;

/// A page nobody has classified yet.
const UNKNOWN: u64 = 0;
/// A page that is not a run.
const SCATTERED: u64 = 1;

/// The sizes every record of a run has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunShape {
    /// Logical bytes of a record.
    pub(crate) logic_len: u32,
    /// Stored bytes (the logical bytes and the checksum): the run's stride.
    pub(crate) phys_len: u32,
}

/// What the index knows of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Page {
    Unknown,
    Scattered,
    /// Entry `k` of the page is at `offset + k * stride` of `chunk`.
    Run {
        chunk: u32,
        offset: u32,
    },
}

impl Page {
    /// One word: 0 unknown, 1 scattered, else `(chunk + 1) << 32 | offset`
    /// (a run in chunk `u32::MAX` is stored as scattered: it only costs
    /// that page the faster path).
    fn encode(self) -> u64 {
        match self {
            Page::Run { chunk, offset } if chunk < u32::MAX => {
                (u64::from(chunk) + 1) << 32 | u64::from(offset)
            }
            Page::Unknown => UNKNOWN,
            _ => SCATTERED,
        }
    }

    fn decode(word: u64) -> Page {
        match word >> 32 {
            0 if word == UNKNOWN => Page::Unknown,
            0 => Page::Scattered,
            chunk => Page::Run {
                chunk: (chunk - 1) as u32,
                offset: word as u32,
            },
        }
    }
}

/// The run index of one table segment. Entries are named by their place
/// in the segment (`at`).
pub(crate) struct RunIndex {
    shape: RunShape,
    /// Entries per page, `1 << page_bits`: [`PAGE_ENTRIES`], or the whole
    /// segment if smaller.
    page_bits: u32,
    blocks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl RunIndex {
    /// An index of a segment of `segment_entries` entries (a power of two)
    /// in which nothing is known yet.
    pub(crate) fn new(segment_entries: u64, shape: RunShape) -> RunIndex {
        let page_entries = PAGE_ENTRIES.min(segment_entries).max(1);
        let pages = segment_entries.div_ceil(page_entries);
        let blocks = pages.div_ceil(BLOCK_PAGES) as usize;
        RunIndex {
            shape,
            page_bits: page_entries.trailing_zeros(),
            blocks: (0..blocks).map(|_| OnceLock::new()).collect(),
        }
    }

    pub(crate) fn shape(&self) -> RunShape {
        self.shape
    }

    /// The entries of the page holding entry `at`.
    pub(crate) fn page_entries(&self, at: u64) -> std::ops::Range<u64> {
        let first = at >> self.page_bits << self.page_bits;
        first..first + (1 << self.page_bits)
    }

    fn slot(&self, at: u64) -> Option<&AtomicU64> {
        let page = at >> self.page_bits;
        let block = self.blocks.get((page / BLOCK_PAGES) as usize)?;
        block.get()?.get((page % BLOCK_PAGES) as usize)
    }

    /// What is known of the page holding entry `at`.
    #[inline(always)]
    pub(crate) fn page(&self, at: u64) -> Page {
        self.slot(at).map_or(Page::Unknown, |word| {
            Page::decode(word.load(Ordering::Relaxed))
        })
    }

    /// Records what the page holding entry `at` is. Concurrent classifiers
    /// of one page store the same value: they read the same committed entries.
    pub(crate) fn set(&self, at: u64, state: Page) {
        let page = at >> self.page_bits;
        let Some(block) = self.blocks.get((page / BLOCK_PAGES) as usize) else {
            return;
        };
        let words = block.get_or_init(|| (0..BLOCK_PAGES).map(|_| AtomicU64::new(0)).collect());
        words[(page % BLOCK_PAGES) as usize].store(state.encode(), Ordering::Relaxed);
    }

    /// The location of entry `at`, in a page that is a run starting at
    /// `offset` of `chunk`.
    #[inline(always)]
    pub(crate) fn loc(&self, chunk: u32, offset: u32, at: u64) -> RecordLoc {
        let k = at & ((1 << self.page_bits) - 1);
        RecordLoc {
            // In range: classifying the page checked every entry's offset.
            offset: offset + (k * u64::from(self.shape.phys_len)) as u32,
            phys_len: self.shape.phys_len,
            logic_len: self.shape.logic_len,
            chunk,
        }
    }

    /// Forgets the page holding entry `at`.
    pub(crate) fn forget(&self, at: u64) {
        let page = at >> self.page_bits;
        self.forget_pages(page..page + 1);
    }

    /// Forgets every page holding an entry from `at` on.
    pub(crate) fn forget_from(&self, at: u64) {
        self.forget_pages(at >> self.page_bits..u64::MAX);
    }

    fn forget_pages(&self, pages: std::ops::Range<u64>) {
        for (b, block) in self.blocks.iter().enumerate() {
            let Some(words) = block.get() else { continue };
            let first = b as u64 * BLOCK_PAGES;
            for (k, word) in words.iter().enumerate() {
                if pages.contains(&(first + k as u64)) {
                    word.store(UNKNOWN, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Whether `entries` (a whole page, in order) lie end to end in one chunk
/// with `shape`'s sizes, ending at or before `committed(chunk)`: the page's
/// first location if so.
pub(crate) fn classify(
    entries: impl IntoIterator<Item = RecordLoc>,
    shape: RunShape,
    committed: impl Fn(u32) -> Option<u64>,
) -> Page {
    let same_shape =
        |loc: &RecordLoc| loc.phys_len == shape.phys_len && loc.logic_len == shape.logic_len;
    let mut entries = entries.into_iter();
    let Some(start) = entries.next().filter(same_shape) else {
        return Page::Scattered;
    };
    let mut end = start.end();
    for loc in entries {
        if loc.chunk != start.chunk || u64::from(loc.offset) != end || !same_shape(&loc) {
            return Page::Scattered;
        }
        end = loc.end();
    }
    if committed(start.chunk).is_some_and(|c| end <= c) {
        Page::Run {
            chunk: start.chunk,
            offset: start.offset,
        }
    } else {
        Page::Scattered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: RunShape = RunShape {
        logic_len: 10,
        phys_len: 14,
    };

    fn loc(chunk: u32, offset: u32) -> RecordLoc {
        RecordLoc {
            offset,
            phys_len: 14,
            logic_len: 10,
            chunk,
        }
    }

    fn run(chunk: u32, from: u32, n: u32) -> Vec<RecordLoc> {
        (0..n).map(|k| loc(chunk, from + 14 * k)).collect()
    }

    #[test]
    fn pages_encode_and_decode() {
        for page in [
            Page::Unknown,
            Page::Scattered,
            Page::Run {
                chunk: 0,
                offset: 0,
            },
            Page::Run {
                chunk: 7,
                offset: u32::MAX - 14,
            },
            Page::Run {
                chunk: u32::MAX - 1,
                offset: 1,
            },
        ] {
            assert_eq!(Page::decode(page.encode()), page);
        }
        let last = Page::Run {
            chunk: u32::MAX,
            offset: 0,
        };
        assert_eq!(Page::decode(last.encode()), Page::Scattered);
    }

    #[test]
    fn a_run_is_every_entry_end_to_end_inside_committed_bytes() {
        let committed = |c: u32| (c == 3).then_some(14 * 300);
        assert_eq!(
            classify(run(3, 28, 256), SHAPE, committed),
            Page::Run {
                chunk: 3,
                offset: 28
            }
        );
        // Past the committed bytes, or in a chunk that does not exist.
        assert_eq!(
            classify(run(3, 14 * 50, 256), SHAPE, committed),
            Page::Scattered
        );
        assert_eq!(classify(run(4, 0, 256), SHAPE, committed), Page::Scattered);
        // One entry moved, another size, another chunk, a gap.
        let broken: [fn(&mut Vec<RecordLoc>); 4] = [
            |e| e.swap(3, 9),
            |e| e[5].logic_len = 9,
            |e| e[255].chunk = 2,
            |e| e[100].offset += 1,
        ];
        for (n, damage) in broken.iter().enumerate() {
            let mut entries = run(3, 0, 256);
            damage(&mut entries);
            assert_eq!(classify(entries, SHAPE, committed), Page::Scattered, "{n}");
        }
        assert_eq!(classify([], SHAPE, committed), Page::Scattered);
    }

    #[test]
    fn the_index_remembers_and_forgets_pages() {
        let index = RunIndex::new(1 << 28, SHAPE);
        assert_eq!(index.page_entries(5000 * 256 + 7), 5000 * 256..5001 * 256);
        let run = Page::Run {
            chunk: 1,
            offset: 42,
        };
        let page = |p: u64| index.page(p * 256 + 100);
        assert_eq!(page(5000), Page::Unknown);
        for p in [0, 5000, 5001, 9000] {
            index.set(p * 256, run);
        }
        index.set(256 + 255, Page::Scattered);
        assert_eq!(page(5000), run);
        assert_eq!(page(1), Page::Scattered);
        assert_eq!(index.loc(1, 42, 5000 * 256 + 3), loc(1, 42 + 3 * 14));

        index.forget(5000 * 256 + 255);
        assert_eq!(page(5000), Page::Unknown);
        assert_eq!(page(5001), run);
        index.forget_from(5001 * 256 + 1);
        assert_eq!((page(5001), page(9000)), (Page::Unknown, Page::Unknown));
        assert_eq!((page(0), page(1)), (run, Page::Scattered));
        // Past the segment: ignored.
        index.set(1 << 28, run);
        assert_eq!(index.page(1 << 28), Page::Unknown);
        // A segment smaller than a page is one page.
        assert_eq!(RunIndex::new(4, SHAPE).page_entries(3), 0..4);
    }
}
