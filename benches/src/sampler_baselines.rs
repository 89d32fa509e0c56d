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

/// The iid baseline: `batches` batches of `SmallRng::random_range(0..LEN)`
/// per call.
pub fn iid_baseline(batches: u64) -> impl FnMut() -> usize {
    let (mut rng, mut buf) = (SmallRng::seed_from_u64(SEED), vec![0u64; BATCH]);
    move || {
        for _ in 0..batches {
            buf.fill_with(|| rng.random_range(0..LEN));
            black_box(&buf);
        }
        batches as usize * BATCH
    }
}

/// The epoch baseline: per call, the materialised permutation shuffled
/// (Fisher–Yates, `SliceRandom::shuffle`) and copied out batch by batch.
pub fn epoch_baseline() -> impl FnMut() -> usize {
    let (mut rng, mut buf) = (SmallRng::seed_from_u64(SEED), vec![0u64; BATCH]);
    let mut permutation: Vec<u64> = (0..LEN).collect();
    move || {
        permutation.shuffle(&mut rng);
        for chunk in permutation.chunks_exact(BATCH) {
            buf.copy_from_slice(chunk);
            black_box(&buf);
        }
        EPOCH_BATCHES as usize * BATCH
    }
}
