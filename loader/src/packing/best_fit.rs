//! Best-fit decreasing over one window of documents (Ding et al., "Fewer
//! Truncations Improve Language Modeling", ICML 2024): documents are cut
//! only where longer than a row, and every piece goes whole into the
//! fullest row that still has room for it.

use std::ops::Range;

use super::Documents;

/// A run of tokens of one document placed in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// First token, as an offset into the window's flat token buffer.
    pub(crate) start: usize,
    /// Tokens in the piece (1..=seq_len).
    pub(crate) len: usize,
}

/// The rows of one window: row `r` holds `pieces[ends[r - 1]..ends[r]]`
/// (from 0 for the first), in the order they were placed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) pieces: Vec<Piece>,
    pub(crate) ends: Vec<usize>,
}

impl Plan {
    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.ends.len()
    }

    /// The pieces of row `r`.
    pub(crate) fn row(&self, r: usize) -> &[Piece] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        &self.pieces[start..self.ends[r]]
    }
}

/// Packs `docs` into rows of `seq_len` tokens.
///
/// Pieces: every document cut into `seq_len`-token parts (only the last may
/// be shorter; empty documents give none). They are placed longest first —
/// ties in document order — each into the open row with the least room that
/// still fits it (ties: the row that reached that room last), or a new row.
/// Rows come out in the order they were opened. `O(pieces + seq_len / 64 ·
/// rows)`; deterministic.
pub(crate) fn plan(docs: &Documents, seq_len: usize) -> Plan {
    assert!(seq_len > 0, "checked when the packer is built");
    let pieces = pieces(docs, seq_len);
    // Counting sort by length, longest first, stable.
    let mut count = vec![0usize; seq_len + 1];
    for p in &pieces {
        count[seq_len - p.len] += 1;
    }
    let mut at = 0;
    for c in &mut count {
        (*c, at) = (at, at + *c);
    }
    let mut sorted = vec![Piece { start: 0, len: 0 }; pieces.len()];
    for p in pieces {
        let slot = &mut count[seq_len - p.len];
        sorted[*slot] = p;
        *slot += 1;
    }

    // Open rows by their room: `by_room[c]` is a stack of rows with exactly
    // c tokens free, `free` a bit set of the non-empty stacks.
    let mut by_room: Vec<Vec<usize>> = vec![Vec::new(); seq_len];
    let mut free = Bits::new(seq_len);
    let mut rows: Vec<Vec<Piece>> = Vec::new();
    for piece in sorted {
        let row = match free.first_at_or_after(piece.len) {
            Some(room) => {
                let stack = &mut by_room[room];
                let row = stack.pop().unwrap_or_default();
                if stack.is_empty() {
                    free.clear(room);
                }
                let left = room - piece.len;
                if left > 0 {
                    by_room[left].push(row);
                    free.set(left);
                }
                row
            }
            None => {
                let row = rows.len();
                rows.push(Vec::new());
                let left = seq_len - piece.len;
                if left > 0 {
                    by_room[left].push(row);
                    free.set(left);
                }
                row
            }
        };
        rows[row].push(piece);
    }
    let mut plan = Plan::default();
    for row in rows {
        plan.pieces.extend(row);
        plan.ends.push(plan.pieces.len());
    }
    plan
}

/// The documents cut into pieces of at most `seq_len` tokens, in order.
fn pieces(docs: &Documents, seq_len: usize) -> Vec<Piece> {
    let mut out = Vec::with_capacity(docs.len());
    for d in docs.offsets().windows(2) {
        let Range { mut start, end } = d[0]..d[1];
        while start < end {
            let len = (end - start).min(seq_len);
            out.push(Piece { start, len });
            start += len;
        }
    }
    out
}

/// A fixed-size bit set with "first set bit at or after i".
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    fn first_at_or_after(&self, i: usize) -> Option<usize> {
        let mut word = i / 64;
        let mut bits = *self.0.get(word)? & (u64::MAX << (i % 64));
        loop {
            if bits != 0 {
                return Some(word * 64 + bits.trailing_zeros() as usize);
            }
            word += 1;
            bits = *self.0.get(word)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(lengths: &[usize]) -> Documents {
        let mut docs = Documents::new();
        let mut next = 0u32;
        for &n in lengths {
            let doc: Vec<u32> = (next..next + n as u32).collect();
            next += n as u32;
            docs.push(&doc);
        }
        docs
    }

    fn row_lengths(plan: &Plan) -> Vec<Vec<usize>> {
        (0..plan.rows())
            .map(|r| plan.row(r).iter().map(|p| p.len).collect())
            .collect()
    }

    #[test]
    fn hand_computed() {
        // seq_len 8; documents 5, 3, 6, 2, 12 (cut into 8 + 4), 1, 0.
        // Sorted: 8(d4) 6(d2) 5(d0) 4(d4b) 3(d1) 2(d3) 1(d5).
        // 8 → row 0 full; 6 → row 1 (room 2); 5 → row 2 (room 3);
        // 4 → row 3 (room 4); 3 → row 2 (room 3, the least that fits) full;
        // 2 → row 1 (room 2) full; 1 → row 3 (room 4 → 3).
        let plan = plan(&docs(&[5, 3, 6, 2, 12, 1, 0]), 8);
        assert_eq!(
            row_lengths(&plan),
            vec![vec![8], vec![6, 2], vec![5, 3], vec![4, 1]]
        );
        assert_eq!(plan.row(0)[0].start, 16); // document 4 starts after 5+3+6+2 tokens
        assert_eq!(plan.row(3)[0].start, 24); // its second piece
    }

    #[test]
    fn bits_find_the_next_set_bit() {
        let mut bits = Bits::new(200);
        assert_eq!(bits.first_at_or_after(0), None);
        bits.set(3);
        bits.set(130);
        assert_eq!(bits.first_at_or_after(0), Some(3));
        assert_eq!(bits.first_at_or_after(3), Some(3));
        assert_eq!(bits.first_at_or_after(4), Some(130));
        bits.clear(130);
        assert_eq!(bits.first_at_or_after(4), None);
        assert_eq!(bits.first_at_or_after(199), None);
    }
}
