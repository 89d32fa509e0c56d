//! [`PackedBatch`]: one step of packed rows.

use ndarray::ArrayView2;

/// `rows × seq_len` tokens with their segment ids and positions, row-major.
///
/// * `tokens` — the token ids; padding holds the packer's pad token.
/// * `segment_ids` — 1, 2, 3, … for the segments of a row in order (a
///   segment is a document, or the part of one that the row holds);
///   0 marks padding.
/// * `positions` — 0, 1, 2, … from the start of each segment; 0 on padding.
///
/// Tokens attend only within their segment: see
/// `zrecord_burn::block_causal_mask` for the matching attention mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedBatch {
    pub(crate) step: u64,
    pub(crate) rows: usize,
    pub(crate) seq_len: usize,
    pub(crate) tokens: Vec<u32>,
    pub(crate) segment_ids: Vec<u32>,
    pub(crate) positions: Vec<u32>,
}

impl PackedBatch {
    pub(crate) fn new(step: u64, rows: usize, seq_len: usize) -> PackedBatch {
        let n = rows * seq_len;
        PackedBatch {
            step,
            rows,
            seq_len,
            tokens: Vec::with_capacity(n),
            segment_ids: Vec::with_capacity(n),
            positions: Vec::with_capacity(n),
        }
    }

    /// The step this batch belongs to.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Rows in this batch (this rank's share of the global batch).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Tokens per row.
    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// Token ids, row-major `(rows, seq_len)`.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Segment ids, row-major: 1-based per row, 0 for padding.
    pub fn segment_ids(&self) -> &[u32] {
        &self.segment_ids
    }

    /// Positions within each segment, row-major.
    pub fn positions(&self) -> &[u32] {
        &self.positions
    }

    /// The tokens as a `(rows, seq_len)` array view.
    pub fn tokens_view(&self) -> ArrayView2<'_, u32> {
        self.view(&self.tokens)
    }

    /// The segment ids as a `(rows, seq_len)` array view.
    pub fn segment_ids_view(&self) -> ArrayView2<'_, u32> {
        self.view(&self.segment_ids)
    }

    /// The positions as a `(rows, seq_len)` array view.
    pub fn positions_view(&self) -> ArrayView2<'_, u32> {
        self.view(&self.positions)
    }

    /// Padding tokens (segment id 0).
    pub fn padding(&self) -> usize {
        self.segment_ids.iter().filter(|&&s| s == 0).count()
    }

    /// `(tokens, segment_ids, positions)`, to hand to tensors without a copy.
    pub fn into_parts(self) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        (self.tokens, self.segment_ids, self.positions)
    }

    fn view<'a>(&self, values: &'a [u32]) -> ArrayView2<'a, u32> {
        ArrayView2::from_shape((self.rows, self.seq_len), values)
            .unwrap_or_else(|_| unreachable!("a packed batch holds rows × seq_len values"))
    }

    /// Appends a segment of `tokens` to the current row as segment `segment`.
    pub(crate) fn push_segment(&mut self, tokens: &[u32], segment: u32) {
        self.tokens.extend_from_slice(tokens);
        let n = self.segment_ids.len();
        self.segment_ids.resize(n + tokens.len(), segment);
        self.positions.extend(0..tokens.len() as u32);
    }

    /// Fills the rest of the current row (of `used` tokens) with padding.
    pub(crate) fn pad_row(&mut self, used: usize, pad: u32) {
        let n = self.tokens.len() + (self.seq_len - used);
        self.tokens.resize(n, pad);
        self.segment_ids.resize(n, 0);
        self.positions.resize(n, 0);
    }
}
