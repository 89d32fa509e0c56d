//! Block mode: the two-phase shuffle, still an exact permutation of `0..len`
//! per cycle.
//!
//! The index space is cut into `blocks = ⌈len / block_size⌉` blocks of
//! `block_size` contiguous indices; the last one is short when `block_size`
//! does not divide `len`. Per cycle `c`:
//!
//! 1. **Order the blocks.** A keyed bijection `P` of `0..blocks` (a
//!    [`Permutation`]) puts block `P(s)` in slot `s`.
//! 2. **Group slots into windows** of `window_blocks` consecutive slots (the last
//!    window may hold fewer). A window's positions are the indices of its blocks;
//!    windows follow each other in the cycle's order.
//! 3. **Shuffle inside each window** with another keyed bijection `π_w` of the
//!    window's positions. Local position `o' = π_w(o)` is decoded as
//!    `(j, offset) = (o' / block_size, o' % block_size)` → block `P(slot_j)`.
//!    The window that holds the short block lays it out last (`j = m − 1`), so
//!    every window is a dense `0..window_len` range.
//!
//! Reading a batch therefore touches at most a few windows of `window_blocks`
//! blocks each — large contiguous reads on cold storage — while the order
//! inside a window is a full shuffle. `window_blocks ≥ blocks` is a full shuffle
//! of the cycle; `window_blocks = 1` shuffles blocks and rows within each block.
//!
//! Keys: the cycle key is word `c` of `derive(seed, BLOCK)`; `P` is keyed by
//! `mix64(cycle_key ⊕ BLOCK_ORDER)` and `π_w` by word `w` of
//! `mix64(cycle_key ⊕ WINDOW)`.

use crate::divide::Divider;
use crate::permutation::Permutation;
use crate::rng::{derive, mix64, tag, word};

/// The constants of one block-mode configuration (everything but the cycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockPlan {
    base: u64,
    len: u64,
    block_size: u64,
    blocks: u64,
    /// `min(window_blocks, blocks)`.
    window: u64,
    /// `block_size − len(short block)`; 0 when all blocks are full.
    deficit: u64,
    /// Indices in a full window: `window · block_size` (may exceed `u64`).
    span: u128,
    by_block: Divider,
}

/// The per-cycle part: the block order and where the short block landed.
struct Cycle {
    key: u64,
    order: Permutation,
    /// Slot of the short block, or `u64::MAX` when there is none.
    short_slot: u64,
    /// Window of the short block, or `u64::MAX` when there is none.
    short_window: u64,
}

impl BlockPlan {
    /// `len`, `block_size` and `window_blocks` are at least 1.
    pub(crate) fn new(seed: u64, len: u64, block_size: u64, window_blocks: u64) -> Self {
        debug_assert!(len > 0 && block_size > 0 && window_blocks > 0);
        let blocks = (len - 1) / block_size + 1;
        let window = window_blocks.min(blocks);
        let short = len - (blocks - 1) * block_size;
        Self {
            base: derive(seed, tag::BLOCK),
            len,
            block_size,
            blocks,
            window,
            deficit: block_size - short,
            span: u128::from(window) * u128::from(block_size),
            by_block: Divider::new(block_size),
        }
    }

    fn cycle(&self, cycle: u64) -> Cycle {
        let key = word(self.base, cycle);
        let order = Permutation::new(self.blocks, mix64(key ^ tag::BLOCK_ORDER));
        let (short_slot, short_window) = if self.deficit == 0 {
            (u64::MAX, u64::MAX)
        } else {
            let slot = order.invert(self.blocks - 1);
            (slot, slot / self.window)
        };
        Cycle {
            key,
            order,
            short_slot,
            short_window,
        }
    }

    /// The window holding cycle position `p`.
    fn window_of(&self, cycle: &Cycle, p: u64) -> u64 {
        let p = u128::from(p);
        // Windows after the short block's start `deficit` indices early.
        let w = if p < u128::from(cycle.short_window) * self.span {
            p / self.span
        } else {
            (p + u128::from(self.deficit)) / self.span
        };
        w as u64
    }

    /// `(first cycle position, length, slots)` of window `w`.
    fn window_extent(&self, cycle: &Cycle, w: u64) -> (u64, u64, u64) {
        let slots = self.window.min(self.blocks - w * self.window);
        let full_start = u128::from(w) * self.span;
        let full_len = u128::from(slots) * u128::from(self.block_size);
        let deficit = u128::from(self.deficit);
        let (start, len) = match w.cmp(&cycle.short_window) {
            core::cmp::Ordering::Less => (full_start, full_len),
            core::cmp::Ordering::Equal => (full_start, full_len - deficit),
            core::cmp::Ordering::Greater => (full_start - deficit, full_len),
        };
        // A window lies inside the cycle `0..len`, so both fit in `u64`.
        (start as u64, len as u64, slots)
    }

    /// Fills `out` with cycle `cycle`'s indices at positions `p0..p0 + out.len()`
    /// (all below `len`).
    pub(crate) fn fill(&self, cycle: u64, p0: u64, out: &mut [u64]) {
        let cycle = self.cycle(cycle);
        let window_key = mix64(cycle.key ^ tag::WINDOW);
        let mut p = p0;
        let mut rest = out;
        while !rest.is_empty() {
            let w = self.window_of(&cycle, p);
            let (start, window_len, slots) = self.window_extent(&cycle, w);
            let local = p - start;
            let take =
                usize::try_from(window_len - local).map_or(rest.len(), |n| n.min(rest.len()));
            let (segment, tail) = rest.split_at_mut(take);
            // Phase 2 first: the shuffled local positions, by the vectorised kernel.
            Permutation::new(window_len, word(window_key, w)).fill(local, segment);
            // Phase 1: local position → (block of the window, offset) → index.
            let first_slot = w * self.window;
            let block_start = |j: u64| -> u64 {
                let block = if w != cycle.short_window {
                    cycle.order.apply(first_slot + j)
                } else if j == slots - 1 {
                    // The short block is laid out last in its window.
                    self.blocks - 1
                } else {
                    let slot = first_slot + j;
                    cycle
                        .order
                        .apply(slot + u64::from(slot >= cycle.short_slot))
                };
                block * self.block_size
            };
            if slots <= TABLE as u64 && slots <= take as u64 {
                // Few blocks, many positions: look each block up once.
                let mut table = [0u64; TABLE];
                for (j, entry) in table.iter_mut().take(slots as usize).enumerate() {
                    *entry = block_start(j as u64);
                }
                for value in segment.iter_mut() {
                    let j = self.by_block.divide(*value);
                    *value = table[j as usize] + (*value - j * self.block_size);
                }
            } else {
                for value in segment.iter_mut() {
                    let j = self.by_block.divide(*value);
                    *value = block_start(j) + (*value - j * self.block_size);
                }
            }
            p += take as u64;
            rest = tail;
        }
    }
}

/// Windows of at most this many blocks look their blocks up once per batch.
const TABLE: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    fn full_cycle(plan: &BlockPlan, cycle: u64) -> Vec<u64> {
        let mut out = vec![0; plan.len as usize];
        plan.fill(cycle, 0, &mut out);
        out
    }

    #[test]
    fn every_cycle_is_a_permutation() {
        for len in 1..=300u64 {
            for (block_size, window_blocks) in
                [(1, 1), (1, 4), (3, 1), (3, 2), (7, 3), (16, 100), (500, 2)]
            {
                let plan = BlockPlan::new(len ^ block_size, len, block_size, window_blocks);
                let mut got = full_cycle(&plan, len % 3);
                got.sort_unstable();
                assert!(
                    got.iter().copied().eq(0..len),
                    "len {len}, block {block_size}, window {window_blocks}"
                );
            }
        }
    }

    #[test]
    fn any_split_of_the_range_agrees() {
        let plan = BlockPlan::new(5, 1003, 10, 4);
        let whole = full_cycle(&plan, 2);
        let mut pieces = Vec::new();
        let mut p = 0;
        for take in [1usize, 7, 40, 41, 300, 614] {
            let mut out = vec![0; take];
            plan.fill(2, p, &mut out);
            pieces.extend_from_slice(&out);
            p += take as u64;
        }
        assert_eq!(pieces, whole);
    }

    #[test]
    fn windows_keep_locality() {
        // Blocks of 64, windows of 2 blocks: every run of 128 positions inside a
        // window touches exactly 2 blocks.
        let plan = BlockPlan::new(1, 64 * 64, 64, 2);
        let order = full_cycle(&plan, 0);
        for window in order.chunks(128) {
            let mut blocks: Vec<u64> = window.iter().map(|&i| i / 64).collect();
            blocks.sort_unstable();
            blocks.dedup();
            assert_eq!(blocks.len(), 2);
        }
    }

    #[test]
    fn short_block_window_is_consistent() {
        // The short block lands in different windows across cycles; check many.
        let plan = BlockPlan::new(9, 95, 10, 3);
        for cycle in 0..50 {
            let mut got = full_cycle(&plan, cycle);
            got.sort_unstable();
            assert!(got.iter().copied().eq(0..95), "cycle {cycle}");
        }
    }
}
