//! A keyed permutation of `0..len`: an explicit Fisher–Yates table for small
//! domains, a cycle-walked Feistel network above.
//!
//! Up to [`SMALL`] elements, the permutation is a Fisher–Yates shuffle of
//! `0..len` drawn from the key's counter stream (Lemire's unbiased method), held
//! in a 256-byte table: exactly uniform, and cheaper than cycle-walking where a
//! Feistel network is weakest (tiny halves need many rounds to mix). Above, it
//! is the [`Feistel`] network over the next power of two, cycle-walked into
//! `0..len`, evaluated without any table.

use crate::feistel::Feistel;
use crate::kernels;
use crate::rng::word;

/// Largest domain permuted by an explicit table.
pub(crate) const SMALL: u64 = 256;

/// A keyed bijection of `0..len`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Permutation {
    /// `len ≤ SMALL`: `table[x]` is the image of `x`.
    Small { table: [u8; SMALL as usize] },
    /// `len > SMALL`.
    Feistel { feistel: Feistel, len: u64 },
}

impl Permutation {
    /// The permutation of `0..len` keyed by `key` (`len ≥ 1`).
    pub(crate) fn new(len: u64, key: u64) -> Self {
        if len > SMALL {
            return Self::Feistel {
                feistel: Feistel::new(len, key),
                len,
            };
        }
        let mut table = [0u8; SMALL as usize];
        for (i, entry) in table.iter_mut().enumerate() {
            *entry = i as u8;
        }
        // Fisher–Yates, last position first: swap `i` with a uniform `j ≤ i`.
        let mut counter = 0;
        for i in (1..len as usize).rev() {
            let j = uniform_below(key, &mut counter, i as u64 + 1);
            table.swap(i, j as usize);
        }
        Self::Small { table }
    }

    /// The image of `x < len`.
    #[inline]
    pub(crate) fn apply(&self, x: u64) -> u64 {
        match self {
            Self::Small { table } => u64::from(table[x as usize]),
            Self::Feistel { feistel, len } => feistel.walk(x, *len),
        }
    }

    /// The preimage of `y < len`.
    pub(crate) fn invert(&self, y: u64) -> u64 {
        match self {
            Self::Small { table } => table
                .iter()
                .position(|&v| u64::from(v) == y)
                .map_or(0, |x| x as u64),
            Self::Feistel { feistel, len } => feistel.walk_back(y, *len),
        }
    }

    /// `out[i]` = the image of `p0 + i` (all below `len`).
    #[inline]
    pub(crate) fn fill(&self, p0: u64, out: &mut [u64]) {
        match self {
            Self::Small { table } => {
                let start = p0 as usize;
                let end = start + out.len();
                for (slot, &value) in out.iter_mut().zip(&table[start..end]) {
                    *slot = u64::from(value);
                }
            }
            Self::Feistel { feistel, len } => kernels::permute_fill(feistel, *len, p0, out),
        }
    }
}

/// A uniform draw from `0..bound` (`1 ≤ bound ≤ 2^32`), consuming words of the
/// stream `key` from `*counter` on: Lemire's multiply-shift, rejecting the
/// `2^64 mod bound` lowest products (the division only runs when a product
/// falls below `bound`, about once in `2^64 / bound` draws).
fn uniform_below(key: u64, counter: &mut u64, bound: u64) -> u64 {
    loop {
        let m = u128::from(word(key, *counter)) * u128::from(bound);
        *counter += 1;
        let low = m as u64;
        if low >= bound || low >= bound.wrapping_neg() % bound {
            return (m >> 64) as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_is_a_bijection_with_inverse() {
        for len in (1..=600u64).chain([1000, 4097]) {
            let permutation = Permutation::new(len, len * 0x9e37);
            let mut image = vec![0; len as usize];
            permutation.fill(0, &mut image);
            let mut seen = vec![false; len as usize];
            for (x, &y) in image.iter().enumerate() {
                assert!(y < len);
                assert!(!seen[y as usize], "len {len}: {y} twice");
                seen[y as usize] = true;
                assert_eq!(permutation.apply(x as u64), y);
                assert_eq!(permutation.invert(y), x as u64);
            }
        }
    }

    #[test]
    fn small_tables_depend_on_the_key() {
        let a = Permutation::new(200, 1);
        let b = Permutation::new(200, 2);
        let differing = (0..200).filter(|&x| a.apply(x) != b.apply(x)).count();
        assert!(differing > 180, "{differing}");
    }

    #[test]
    fn partial_fills_agree() {
        for len in [7u64, 256, 257, 1000] {
            let permutation = Permutation::new(len, 3);
            let mut whole = vec![0; len as usize];
            permutation.fill(0, &mut whole);
            let mut part = vec![0; 5];
            permutation.fill(len - 5, &mut part);
            assert_eq!(part, whole[len as usize - 5..]);
        }
    }

    #[test]
    fn uniform_below_is_in_range_and_covers() {
        let mut counter = 0;
        let mut seen = [false; 7];
        for _ in 0..200 {
            let x = uniform_below(11, &mut counter, 7);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(counter, 200);
        let mut counter = 0;
        assert_eq!(uniform_below(11, &mut counter, 1), 0);
    }
}
