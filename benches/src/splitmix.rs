//! SplitMix64 streams `S(seed)` and their byte streams `bytes(seed)`
//! (`benches/DATA.md`, "Randomness").
//!
//! Output `k` of `S(seed)` depends only on `seed + (k + 1) * GAMMA`, so any
//! output — and any byte of `bytes(seed)` — can be computed on its own. The
//! generators use that to fill disjoint pieces of a workload in parallel.

/// The SplitMix64 increment (the golden ratio in 64-bit fixed point).
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function applied to a state value.
#[inline]
pub const fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Output `k` (counting from 0) of `S(seed)`.
#[inline]
pub const fn output(seed: u64, k: u64) -> u64 {
    mix(seed.wrapping_add(k.wrapping_add(1).wrapping_mul(GAMMA)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_access_matches_the_sequence() {
        assert_eq!(output(0, 0), 0xE220_A839_7B1D_CDAF);
        for seed in [0, 1, 2, 3, 4, 5, u64::MAX] {
            // The textbook generator: the state steps by GAMMA, then is mixed.
            let mut state = seed;
            for k in 0..100 {
                state = state.wrapping_add(GAMMA);
                assert_eq!(output(seed, k), mix(state));
            }
        }
    }
}
