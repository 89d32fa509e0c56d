//! The sampling modes.

use core::fmt;

use serde::{Deserialize, Serialize};

/// How a [`Sampler`](crate::Sampler) turns `(seed, step)` into indices.
///
/// All modes select positions in `0..len` (the positions of a subset, for a
/// subset sampler). See the crate documentation for the exact algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mode {
    /// A window sliding over the circular index space: step `s` holds
    /// `s·batch .. (s+1)·batch` modulo `len`; the tail wraps, never truncates.
    Sequential,
    /// Uniform with replacement: every index independently and without bias
    /// (Lemire's method with rejection) from a counter-based stream keyed by
    /// `(seed, step)`.
    Iid,
    /// Without replacement: each cycle of `⌊len / batch⌋` steps is a fresh keyed
    /// permutation of `0..len` (a cycle-walked Feistel network), cut into batches;
    /// the `len mod batch` positions left over are dropped, a different set each
    /// cycle. The default.
    #[default]
    Cyclic,
    /// The two-phase shuffle for locality on cold storage: per cycle, a keyed
    /// permutation of blocks of `block_size` contiguous indices, then a keyed
    /// shuffle inside each window of `window_blocks` consecutive blocks. Still a
    /// permutation of `0..len` per cycle, batched like [`Mode::Cyclic`].
    Block {
        /// Contiguous indices per block (at least 1); the last block may be short.
        block_size: u64,
        /// Blocks shuffled together (at least 1).
        window_blocks: u64,
    },
}

impl Mode {
    /// Whether the mode walks cycles without replacement (cyclic and block).
    #[must_use]
    pub const fn is_cyclic(&self) -> bool {
        matches!(self, Self::Cyclic | Self::Block { .. })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sequential => f.write_str("sequential"),
            Self::Iid => f.write_str("iid"),
            Self::Cyclic => f.write_str("cyclic"),
            Self::Block {
                block_size,
                window_blocks,
            } => write!(
                f,
                "block (block_size {block_size}, window_blocks {window_blocks})"
            ),
        }
    }
}
