//! A keyed bijection of `0..len` without a table: a Feistel network over the
//! next power of two, brought into range by cycle-walking.
//!
//! The domain is `2^n` with `n = max(2, ⌈log₂ len⌉)`, split into a high half of
//! `a = n − n/2` bits and a low half of `b = n/2` bits (unbalanced by one bit when
//! `n` is odd). Each of the [`ROUNDS`] rounds maps `(L, R) → (R, L ⊕ F_i(R))`,
//! where `F_i` is truncated to the width of `L`; the widths swap every round and,
//! the number of rounds being even, come back to `(a, b)`. Any `F_i` makes this a
//! bijection of `0..2^n`.
//!
//! The round function is a two-multiply hash of the half and a 64-bit round key:
//! `h = (R ⊕ k_i)·C₁; h ⊕= h ≫ 32; h ·= C₂`, keeping the top bits. Round keys are
//! words `0..ROUNDS` of the counter stream of the permutation's key.
//!
//! Cycle-walking: `walk(x)` applies the bijection until the value lands below
//! `len`. That is again a bijection of `0..len` (each orbit of the big
//! permutation, restricted to `0..len`, is walked in order), and it needs on
//! average `2^n / len < 2` evaluations.

use crate::rng::word;

/// Feistel rounds: the Luby–Rackoff count for a strong pseudo-random permutation.
pub(crate) const ROUNDS: usize = 4;

const C1: u64 = 0x9e37_79b9_7f4a_7c15;
const C2: u64 = 0xd6e8_feb8_6659_fd93;

/// One keyed permutation of `0..2^bits` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Feistel {
    keys: [u64; ROUNDS],
    /// Width of the low half, `b = n / 2`.
    lo_bits: u32,
    /// Width of the high half, `a = n − b`.
    hi_bits: u32,
}

/// `max(2, ⌈log₂ len⌉)`: the number of bits of the power-of-two domain for `len`.
#[inline]
pub(crate) const fn domain_bits(len: u64) -> u32 {
    if len <= 4 {
        2
    } else {
        u64::BITS - (len - 1).leading_zeros()
    }
}

#[inline(always)]
const fn round(half: u64, key: u64, shift: u32) -> u64 {
    let mut h = (half ^ key).wrapping_mul(C1);
    h ^= h >> 32;
    h = h.wrapping_mul(C2);
    h >> shift
}

impl Feistel {
    /// The permutation keyed by `key` over the power-of-two domain covering `len`.
    #[inline]
    pub(crate) const fn new(len: u64, key: u64) -> Self {
        let bits = domain_bits(len);
        let lo_bits = bits / 2;
        let mut keys = [0; ROUNDS];
        let mut i = 0;
        while i < ROUNDS {
            keys[i] = word(key, i as u64);
            i += 1;
        }
        Self {
            keys,
            lo_bits,
            hi_bits: bits - lo_bits,
        }
    }

    /// Size of the power-of-two domain, `2^n` (as `u128`: `n` may be 64).
    #[cfg(test)]
    pub(crate) const fn domain(&self) -> u128 {
        1u128 << (self.lo_bits + self.hi_bits)
    }

    /// The bijection of `0..2^n`; `x` must be below `2^n`.
    #[inline(always)]
    pub(crate) const fn permute(&self, x: u64) -> u64 {
        let (a, b) = (self.hi_bits, self.lo_bits);
        let mut left = x >> b;
        let mut right = x & ((1u64 << b) - 1);
        let mut i = 0;
        while i < ROUNDS {
            // Even rounds: `left` holds `a` bits; odd rounds: `b` bits.
            let width = if i % 2 == 0 { a } else { b };
            let next = left ^ round(right, self.keys[i], u64::BITS - width);
            left = right;
            right = next;
            i += 1;
        }
        (left << b) | right
    }

    /// The inverse of [`permute`](Self::permute).
    #[inline]
    pub(crate) const fn invert(&self, y: u64) -> u64 {
        let (a, b) = (self.hi_bits, self.lo_bits);
        let mut left = y >> b;
        let mut right = y & ((1u64 << b) - 1);
        let mut i = ROUNDS;
        while i > 0 {
            i -= 1;
            let width = if i % 2 == 0 { a } else { b };
            let prev = right ^ round(left, self.keys[i], u64::BITS - width);
            right = left;
            left = prev;
        }
        (left << b) | right
    }

    /// The cycle-walked bijection of `0..len`; `x` must be below `len`.
    #[inline(always)]
    pub(crate) const fn walk(&self, x: u64, len: u64) -> u64 {
        let mut y = self.permute(x);
        while y >= len {
            y = self.permute(y);
        }
        y
    }

    /// The inverse of [`walk`](Self::walk); `y` must be below `len`.
    #[inline]
    pub(crate) const fn walk_back(&self, y: u64, len: u64) -> u64 {
        let mut x = self.invert(y);
        while x >= len {
            x = self.invert(x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_bits_cover_len() {
        assert_eq!(domain_bits(1), 2);
        assert_eq!(domain_bits(4), 2);
        assert_eq!(domain_bits(5), 3);
        assert_eq!(domain_bits(1 << 20), 20);
        assert_eq!(domain_bits((1 << 20) + 1), 21);
        assert_eq!(domain_bits(u64::MAX), 64);
        for len in 1..5000u64 {
            let d = 1u128 << domain_bits(len);
            assert!(d >= u128::from(len));
            assert!(d < 2 * u128::from(len) || d == 4);
        }
    }

    #[test]
    fn permute_is_a_bijection_with_inverse() {
        for bits in 2..=14u32 {
            let f = Feistel::new(1 << bits, 0x1234 + u64::from(bits));
            let domain = f.domain() as u64;
            assert_eq!(domain, 1 << bits);
            let mut seen = vec![false; domain as usize];
            for x in 0..domain {
                let y = f.permute(x);
                assert!(y < domain);
                assert!(!seen[y as usize], "bits {bits}: {y} twice");
                seen[y as usize] = true;
                assert_eq!(f.invert(y), x);
            }
        }
    }

    #[test]
    fn walk_is_a_bijection_with_inverse() {
        for len in [1u64, 2, 3, 5, 17, 100, 1000, 1025] {
            let f = Feistel::new(len, len * 31);
            let mut seen = vec![false; len as usize];
            for x in 0..len {
                let y = f.walk(x, len);
                assert!(y < len);
                assert!(!seen[y as usize]);
                seen[y as usize] = true;
                assert_eq!(f.walk_back(y, len), x);
            }
        }
    }

    #[test]
    fn full_width_domain() {
        let f = Feistel::new(u64::MAX, 99);
        assert_eq!(f.domain(), 1u128 << 64);
        for x in [0, 1, u64::MAX, u64::MAX / 3, 1 << 63] {
            assert_eq!(f.invert(f.permute(x)), x);
            let y = f.walk(x.min(u64::MAX - 1), u64::MAX);
            assert_eq!(f.walk_back(y, u64::MAX), x.min(u64::MAX - 1));
        }
    }

    #[test]
    fn keys_change_the_permutation() {
        let a = Feistel::new(1000, 1);
        let b = Feistel::new(1000, 2);
        let differing = (0..1000)
            .filter(|&x| a.walk(x, 1000) != b.walk(x, 1000))
            .count();
        assert!(differing > 900, "{differing}");
    }
}
