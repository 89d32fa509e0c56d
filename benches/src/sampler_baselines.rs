//! The iterations timed by the criterion bench `sampler` and `compare`'s
//! table (d): zsampler, and what a Rust user would write instead, over
//! [`LEN`] indices in batches of [`BATCH`]. Every call of an iteration
//! goes on where the last ended and returns the indices it produced.

use std::hint::black_box;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use zsampler::{Mode, Sampler};

/// Index space.
pub const LEN: u64 = 1_000_000;
/// Batch size.
pub const BATCH: usize = 1024;
/// Batches of one epoch (the remainder dropped).
pub const EPOCH_BATCHES: u64 = LEN / BATCH as u64;
/// Seed of every sampler and baseline.
pub const SEED: u64 = 42;
/// The block-shuffled mode timed.
pub const BLOCK: Mode = Mode::Block {
    block_size: 256,
    window_blocks: 16,
};

/// A `SmallRng` seeded with `seed`.
pub fn small_rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}

/// `batches` batches of zsampler in `mode` per call.
pub fn zsampler(mode: Mode, batches: u64) -> impl FnMut() -> usize {
    let sampler = Sampler::builder(LEN, BATCH as u64)
        .seed(SEED)
        .mode(mode)
        .build()
        .expect("a valid sampler configuration");
    let (mut buf, mut step) = (vec![0u64; BATCH], 0);
    move || {
        for _ in 0..batches {
            sampler.fill_batch(step, &mut buf);
            step += 1;
            black_box(&buf);
        }
        batches as usize * BATCH
    }
}

/// The iid baseline: `batches` batches of [`iid_random_range`] per call.
pub fn iid_baseline(batches: u64) -> impl FnMut() -> usize {
    let (mut rng, mut buf) = (small_rng(SEED), vec![0u64; BATCH]);
    move || {
        for _ in 0..batches {
            iid_random_range(&mut rng, LEN, &mut buf);
            black_box(&buf);
        }
        batches as usize * BATCH
    }
}

/// The epoch baseline: one epoch of [`fisher_yates_epoch`] per call.
pub fn epoch_baseline() -> impl FnMut() -> usize {
    let (mut rng, mut buf) = (small_rng(SEED), vec![0u64; BATCH]);
    let mut permutation: Vec<u64> = (0..LEN).collect();
    move || {
        fisher_yates_epoch(&mut rng, &mut permutation, &mut buf, |b| {
            black_box(b);
        });
        EPOCH_BATCHES as usize * BATCH
    }
}

/// iid baseline: fills `batch` with `rng.random_range(0..len)`.
#[inline]
pub fn iid_random_range(rng: &mut SmallRng, len: u64, batch: &mut [u64]) {
    for slot in batch {
        *slot = rng.random_range(0..len);
    }
}

/// Epoch baseline: shuffles the materialised `permutation` (Fisher–Yates,
/// `SliceRandom::shuffle`), then copies it out batch by batch into `batch`,
/// calling `sink` on every full batch (the remainder is dropped).
#[inline]
pub fn fisher_yates_epoch(
    rng: &mut SmallRng,
    permutation: &mut [u64],
    batch: &mut [u64],
    mut sink: impl FnMut(&[u64]),
) {
    permutation.shuffle(rng);
    for chunk in permutation.chunks_exact(batch.len()) {
        batch.copy_from_slice(chunk);
        sink(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_produce_valid_indices() {
        let mut rng = small_rng(1);
        let mut batch = vec![0u64; 64];
        iid_random_range(&mut rng, 100, &mut batch);
        assert!(batch.iter().all(|&i| i < 100));
        let mut perm: Vec<u64> = (0..1000).collect();
        let mut seen = Vec::new();
        fisher_yates_epoch(&mut rng, &mut perm, &mut batch, |b| {
            seen.extend_from_slice(b)
        });
        assert_eq!(seen.len(), 1000 / 64 * 64);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 1000 / 64 * 64, "no repeats within an epoch");
    }
}
