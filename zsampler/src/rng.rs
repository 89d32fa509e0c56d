//! The keyed counter stream every mode draws from, and its `rand_core` face.
//!
//! All randomness in this crate is `mix64(key + (counter + 1) * GAMMA)`: the
//! SplitMix64 output function (Steele, Lea & Flood 2014, with Stafford's "Mix13"
//! finaliser) evaluated at an arbitrary counter. It is a bijection of the 64-bit
//! input, passes BigCrush as a sequential generator, and — being counter based —
//! any word of any stream is computable directly, which is what makes every
//! batch a pure function of `(seed, step, position)`.

use core::convert::Infallible;

use rand_core::{SeedableRng, TryRng, utils};

/// The SplitMix64 increment: 2^64 / φ, odd.
pub(crate) const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Domain-separation tags: each use of the seed gets its own key.
pub(crate) mod tag {
    const fn tag(bytes: &[u8; 8]) -> u64 {
        u64::from_le_bytes(*bytes)
    }
    /// iid: per-step keys.
    pub(crate) const IID: u64 = tag(b"zs:iid\0\0");
    /// iid: the rare resampling after a Lemire rejection.
    pub(crate) const RETRY: u64 = tag(b"zs:retry");
    /// cyclic: per-cycle Feistel keys.
    pub(crate) const CYCLIC: u64 = tag(b"zs:cycle");
    /// block: per-cycle keys.
    pub(crate) const BLOCK: u64 = tag(b"zs:block");
    /// block: the permutation of the blocks within a cycle.
    pub(crate) const BLOCK_ORDER: u64 = tag(b"zs:order");
    /// block: the permutation inside each window.
    pub(crate) const WINDOW: u64 = tag(b"zs:windw");
    /// [`Sampler::step_rng`](crate::Sampler::step_rng): user streams.
    pub(crate) const USER: u64 = tag(b"zs:user\0");
    /// Subset fingerprints.
    pub(crate) const FINGERPRINT: u64 = tag(b"zs:fprnt");
}

/// SplitMix64's output function (Stafford's Mix13): a bijection on `u64`.
#[inline(always)]
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Word `counter` of the stream keyed by `key` (SplitMix64 seeded with `key`).
#[inline(always)]
pub(crate) const fn word(key: u64, counter: u64) -> u64 {
    mix64(word_state(key, counter))
}

/// The state SplitMix64 mixes into word `counter`: `key + (counter + 1)·γ`.
/// Word `counter + 1`'s is this plus [`GAMMA`], which loops use to step it.
#[inline(always)]
pub(crate) const fn word_state(key: u64, counter: u64) -> u64 {
    key.wrapping_add(counter.wrapping_add(1).wrapping_mul(GAMMA))
}

/// The base key of one use (`tag`) of a user seed.
#[inline]
pub(crate) const fn derive(seed: u64, tag: u64) -> u64 {
    mix64(seed ^ tag)
}

/// A seekable, counter-based 64-bit generator: SplitMix64 with random access.
///
/// Word `i` of the stream keyed by `key` is `mix64(key + (i + 1)·γ)`, so
/// [`CounterRng::from_key(k)`](CounterRng::from_key) yields exactly the sequence
/// of SplitMix64 seeded with `k`, and [`word_at`](CounterRng::word_at) reads any
/// word without advancing. This is the stream the sampler's modes are built on;
/// it implements [`rand_core::TryRng`] (hence [`rand_core::Rng`]) and
/// [`SeedableRng`], so everything in `rand` works on top of it.
///
/// Not cryptographically secure.
///
/// ```
/// use rand_core::Rng;
/// use zsampler::CounterRng;
///
/// let mut rng = CounterRng::from_key(0);
/// assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf); // SplitMix64(0)'s first output
/// assert_eq!(rng.word_at(0), 0xe220_a839_7b1d_cdaf);
/// rng.set_counter(0);
/// assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterRng {
    key: u64,
    counter: u64,
}

impl CounterRng {
    /// The stream keyed by `key`, positioned at its first word.
    #[must_use]
    pub const fn from_key(key: u64) -> Self {
        Self { key, counter: 0 }
    }

    /// Stream number `stream` of `seed`: independent streams for independent
    /// uses (one per step, per worker, per augmentation), all reproducible.
    ///
    /// This is the same derivation as [`Sampler::step_rng`](crate::Sampler::step_rng)
    /// and is separated from the streams the sampler's modes draw indices from.
    #[must_use]
    pub const fn new(seed: u64, stream: u64) -> Self {
        Self::from_key(word(derive(seed, tag::USER), stream))
    }

    /// The key of this stream.
    #[must_use]
    pub const fn key(&self) -> u64 {
        self.key
    }

    /// The counter of the next word [`next_u64`](rand_core::Rng::next_u64) returns.
    #[must_use]
    pub const fn counter(&self) -> u64 {
        self.counter
    }

    /// Moves to word `counter` (the next word returned is `word_at(counter)`).
    pub const fn set_counter(&mut self, counter: u64) {
        self.counter = counter;
    }

    /// Word `counter` of this stream, without moving the stream.
    #[inline]
    #[must_use]
    pub const fn word_at(&self, counter: u64) -> u64 {
        word(self.key, counter)
    }
}

impl TryRng for CounterRng {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let [hi, _] = split(self.try_next_u64()?);
        Ok(hi)
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let value = self.word_at(self.counter);
        self.counter = self.counter.wrapping_add(1);
        Ok(value)
    }

    #[inline]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        utils::fill_bytes_via_next_word(dst, || self.try_next_u64())
    }
}

/// The high and low halves of a word (the high half is the better one to keep).
const fn split(x: u64) -> [u32; 2] {
    [(x >> 32) as u32, x as u32]
}

impl SeedableRng for CounterRng {
    type Seed = [u8; 8];

    /// The stream keyed by the little-endian `u64` in `seed`.
    fn from_seed(seed: Self::Seed) -> Self {
        Self::from_key(u64::from_le_bytes(seed))
    }

    /// The stream keyed by `state`: the sequence of SplitMix64 seeded with `state`.
    fn seed_from_u64(state: u64) -> Self {
        Self::from_key(state)
    }
}

#[cfg(test)]
mod tests {
    use rand_core::Rng;

    use super::*;

    /// Reference SplitMix64 as published by Vigna (`splitmix64.c`).
    struct SplitMix64(u64);
    impl SplitMix64 {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(GAMMA);
            mix64(self.0)
        }
    }

    #[test]
    fn matches_splitmix64() {
        for seed in [0, 1, 42, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut reference = SplitMix64(seed);
            let mut rng = CounterRng::seed_from_u64(seed);
            for i in 0..100 {
                let expected = reference.next();
                assert_eq!(rng.word_at(i), expected);
                assert_eq!(rng.next_u64(), expected);
            }
        }
    }

    #[test]
    fn known_splitmix64_outputs() {
        // First outputs of SplitMix64 seeded with 0, widely published.
        let mut rng = CounterRng::from_key(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn u32_and_bytes_are_little_endian_views() {
        let mut a = CounterRng::from_key(7);
        let mut b = a.clone();
        let w0 = b.next_u64();
        let w1 = b.next_u64();
        assert_eq!(a.next_u32(), (w0 >> 32) as u32);
        let mut bytes = [0u8; 12];
        a.fill_bytes(&mut bytes);
        assert_eq!(bytes[..8], w1.to_le_bytes());
        assert_eq!(a.counter(), 3);
    }

    #[test]
    fn from_seed_is_le_key() {
        let rng = CounterRng::from_seed(5u64.to_le_bytes());
        assert_eq!(rng.key(), 5);
        assert_ne!(CounterRng::new(1, 0).key(), CounterRng::new(1, 1).key());
        assert_ne!(CounterRng::new(1, 0).key(), CounterRng::new(2, 0).key());
    }
}
