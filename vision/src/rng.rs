//! The random choices of one image: a SplitMix64 stream keyed by
//! `(seed, step, position)`, so any image's crop and flip can be recomputed
//! from those three numbers alone — a resumed run reproduces them exactly,
//! whatever thread draws them and in whatever order.

/// SplitMix64's finaliser: a bijective mix of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A random stream for one image.
#[derive(Clone, Debug)]
pub(crate) struct ImageRng {
    state: u64,
}

impl ImageRng {
    /// The stream of image `position` in the batch of `step`, under `seed`.
    pub(crate) fn new(seed: u64, step: u64, position: u64) -> ImageRng {
        let key = mix(mix(mix(seed ^ GOLDEN) ^ step) ^ position.wrapping_mul(GOLDEN));
        ImageRng { state: key }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[low, high)` (or `low` when the range is empty).
    pub(crate) fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// Uniform integer in `0..=max`, unbiased (Lemire's multiply, rejecting
    /// the short tail).
    pub(crate) fn below_or_eq(&mut self, max: u32) -> u32 {
        let range = u64::from(max) + 1; // 1 ..= 2^32
        let threshold = (1u64 << 32) % range;
        loop {
            let m = (self.next_u64() >> 32) * range;
            if m & 0xFFFF_FFFF >= threshold {
                return (m >> 32) as u32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_depend_on_every_key_part() {
        let first = |s, t, p| ImageRng::new(s, t, p).next_u64();
        let base = first(1, 2, 3);
        assert_eq!(base, first(1, 2, 3));
        assert_ne!(base, first(0, 2, 3));
        assert_ne!(base, first(1, 3, 3));
        assert_ne!(base, first(1, 2, 4));
        // Swapped parts give different streams.
        assert_ne!(first(2, 3, 0), first(3, 2, 0));
    }

    #[test]
    fn below_or_eq_covers_its_range_evenly() {
        let mut rng = ImageRng::new(7, 0, 0);
        let mut counts = [0u32; 5];
        for _ in 0..50_000 {
            counts[rng.below_or_eq(4) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
        assert_eq!(ImageRng::new(1, 1, 1).below_or_eq(0), 0);
    }
}
