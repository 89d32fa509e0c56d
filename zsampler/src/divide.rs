//! Division by a loop-invariant `u64` without a `div` instruction.
//!
//! libdivide's branch-free unsigned 64-bit scheme (Granlund & Montgomery's
//! round-up method with the "add" fix-up): for a divisor `d` that is not a power
//! of two, `magic = ⌊2^(64+ℓ+1) / d⌋ + 1 − 2^64`-ish and
//! `n / d = (((n − hi) ≫ 1) + hi) ≫ ℓ` with `hi = ⌊magic·n / 2^64⌋`, `ℓ = ⌊log₂ d⌋`,
//! exact for every `u64` `n`. Powers of two are a shift.

/// A precomputed divisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Divider {
    /// 0 for powers of two (division is `n >> shift`).
    magic: u64,
    shift: u32,
}

impl Divider {
    /// Prepares division by `d` (`d ≥ 1`).
    pub(crate) const fn new(d: u64) -> Self {
        assert!(d > 0, "division by zero");
        let log = u64::BITS - 1 - d.leading_zeros();
        if d.is_power_of_two() {
            return Self {
                magic: 0,
                shift: log,
            };
        }
        // 2^(64 + log) / d < 2^64 because d > 2^log.
        let numerator = 1u128 << (64 + log);
        let proposed = (numerator / d as u128) as u64;
        let remainder = (numerator % d as u128) as u64;
        let mut magic = proposed.wrapping_add(proposed);
        let twice = remainder.wrapping_add(remainder);
        if twice >= d || twice < remainder {
            magic = magic.wrapping_add(1);
        }
        Self {
            magic: magic.wrapping_add(1),
            shift: log,
        }
    }

    /// `n / d`.
    #[inline(always)]
    pub(crate) const fn divide(&self, n: u64) -> u64 {
        if self.magic == 0 {
            n >> self.shift
        } else {
            let hi = ((self.magic as u128 * n as u128) >> 64) as u64;
            (((n - hi) >> 1) + hi) >> self.shift
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn small_divisors_exhaustive_numerators() {
        for d in 1..200u64 {
            let div = Divider::new(d);
            for n in 0..2000u64 {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
            for n in [u64::MAX, u64::MAX - 1, u64::MAX / 2, 1 << 63, (1 << 63) - 1] {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn extreme_divisors() {
        for d in [
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
            (1 << 63) + 1,
            (1 << 32) + 1,
            3,
        ] {
            let div = Divider::new(d);
            for n in [0, 1, d - 1, d, d.saturating_add(1), u64::MAX, u64::MAX - 1] {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }

    proptest! {
        #[test]
        fn matches_hardware_division(d in 1u64.., n: u64) {
            prop_assert_eq!(Divider::new(d).divide(n), n / d);
        }

        #[test]
        fn matches_for_small_divisors(d in 1u64..100_000, n: u64) {
            prop_assert_eq!(Divider::new(d).divide(n), n / d);
        }
    }
}
