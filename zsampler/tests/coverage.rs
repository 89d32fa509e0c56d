//! Cyclic and block modes walk a permutation per cycle: for every length
//! 1..=2000 (several batch sizes) each cycle's batches are distinct, exactly
//! `batch_size` long and together cover `len - len % batch_size` distinct
//! indices; large primes, powers of two and 2^40 + 7 are checked by sampling;
//! consecutive cycles and different seeds differ.

use std::collections::HashSet;

use zsampler::{Mode, Sampler};

/// A fixed-size bitset over `0..len`.
struct Seen(Vec<u64>);

impl Seen {
    fn new(len: u64) -> Self {
        Self(vec![0; len.div_ceil(64) as usize])
    }
    /// Marks `i`; false if it was already marked.
    fn insert(&mut self, i: u64) -> bool {
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        let fresh = self.0[word] & bit == 0;
        self.0[word] |= bit;
        fresh
    }
}

/// Checks one whole cycle; returns its indices in order.
fn check_cycle(sampler: &Sampler, cycle: u64) -> Vec<u64> {
    let len = sampler.len();
    let batch = sampler.global_batch_size();
    let steps = sampler.steps_per_cycle().unwrap();
    assert_eq!(steps, len / batch);
    let mut seen = Seen::new(len);
    let mut order = Vec::with_capacity((steps * batch) as usize);
    let mut buffer = vec![0; sampler.local_batch_size()];
    for step in cycle * steps..(cycle + 1) * steps {
        sampler.fill_batch(step, &mut buffer);
        for &i in &buffer {
            assert!(i < len, "{i} out of range, {sampler:?}");
            assert!(seen.insert(i), "{i} twice in cycle {cycle}, {sampler:?}");
        }
        order.extend_from_slice(&buffer);
    }
    assert_eq!(order.len() as u64, len - len % batch);
    order
}

fn block_mode(len: u64) -> Mode {
    // Vary the geometry with the length: full and short last blocks, windows of
    // one block, of a few, and larger than the index space.
    Mode::Block {
        block_size: 1 + len % 13,
        window_blocks: [1, 2, 3, 7, 1000][(len % 5) as usize],
    }
}

/// Every length in `lens`, with several batch sizes, one whole cycle each.
///
/// Small batches cost a whole small-domain table per step in debug builds, so
/// batch 1 runs for the short lengths only and block mode's batch 3 up to 500.
fn every_length(lens: std::ops::RangeInclusive<u64>, mode: impl Fn(u64) -> Mode, small_up_to: u64) {
    for len in lens {
        let mut batches = vec![64, len];
        if len <= small_up_to {
            batches.push(3);
        }
        if len <= small_up_to / 2 {
            batches.push(1);
        }
        batches.retain(|&b| b <= len);
        batches.sort_unstable();
        batches.dedup();
        for (k, &batch) in batches.iter().enumerate() {
            let sampler = Sampler::builder(len, batch)
                .seed(len * 7 + k as u64)
                .mode(mode(len))
                .build()
                .unwrap();
            check_cycle(&sampler, len % 3);
        }
    }
}

// Split in four so the test harness runs them on all cores.

#[test]
fn cyclic_every_length_up_to_1000() {
    every_length(1..=1000, |_| Mode::Cyclic, 2000);
}

#[test]
fn cyclic_every_length_1001_to_2000() {
    every_length(1001..=2000, |_| Mode::Cyclic, 2000);
}

#[test]
fn block_every_length_up_to_1000() {
    every_length(1..=1000, block_mode, 500);
}

#[test]
fn block_every_length_1001_to_2000() {
    every_length(1001..=2000, block_mode, 500);
}

#[test]
fn sharded_cycles_cover_too() {
    for len in (50..=2000u64).step_by(97) {
        for mode in [Mode::Cyclic, block_mode(len)] {
            let whole = Sampler::builder(len, 8)
                .seed(len)
                .mode(mode)
                .build()
                .unwrap();
            let order = check_cycle(&whole, 1);
            let ranks: Vec<Sampler> = (0..4)
                .map(|r| {
                    Sampler::builder(len, 8)
                        .seed(len)
                        .mode(mode)
                        .shard(r, 4)
                        .build()
                        .unwrap()
                })
                .collect();
            let steps = whole.steps_per_cycle().unwrap();
            let joined: Vec<u64> = (steps..2 * steps)
                .flat_map(|s| ranks.iter().flat_map(move |r| r.batch_at(s)))
                .collect();
            assert_eq!(joined, order);
        }
    }
}

/// Checks the first `steps` steps of a huge cycle plus the steps around the
/// cycle boundary: in range, the right size, no index twice within a cycle.
fn check_sampled(len: u64, batch: u64, mode: Mode, steps: u64) {
    let sampler = Sampler::builder(len, batch)
        .seed(len ^ 99)
        .mode(mode)
        .build()
        .unwrap();
    let per_cycle = sampler.steps_per_cycle().unwrap();
    let mut seen = HashSet::new();
    let first = 0..steps.min(per_cycle);
    let last = per_cycle.saturating_sub(steps).max(first.end)..per_cycle;
    for step in first.chain(last) {
        let batch_indices = sampler.batch_at(step);
        assert_eq!(batch_indices.len() as u64, batch);
        for i in batch_indices {
            assert!(i < len, "{i} ≥ {len}");
            assert!(seen.insert(i), "{i} twice, len {len}, {mode}");
        }
    }
    // The next cycle starts afresh (no overlap check across cycles).
    assert!(sampler.batch_at(per_cycle).iter().all(|&i| i < len));
}

#[test]
fn large_lengths_by_sampling() {
    let lens = [
        1_000_003,                 // prime
        2_147_483_647,             // 2^31 - 1, prime
        2_305_843_009_213_693_951, // 2^61 - 1, prime
        1 << 20,
        1 << 32,
        (1 << 32) + 1,
        1 << 40,
        (1 << 40) + 7,
        u64::MAX,
    ];
    for len in lens {
        check_sampled(len, 1000, Mode::Cyclic, 50);
        check_sampled(
            len,
            1000,
            Mode::Block {
                block_size: 4096,
                window_blocks: 8,
            },
            50,
        );
        check_sampled(
            len,
            256,
            Mode::Block {
                block_size: 3,
                window_blocks: 1 << 20,
            },
            20,
        );
    }
}

#[test]
fn consecutive_cycles_differ() {
    for mode in [Mode::Cyclic, block_mode(1000)] {
        for (len, batch) in [(1000, 64), (37, 5), (1 << 12, 1 << 12)] {
            let sampler = Sampler::builder(len, batch)
                .seed(5)
                .mode(mode)
                .build()
                .unwrap();
            let cycles: Vec<Vec<u64>> = (0..4).map(|c| check_cycle(&sampler, c)).collect();
            for pair in cycles.windows(2) {
                assert_ne!(pair[0], pair[1], "len {len}, {mode}");
            }
            if len % batch != 0 {
                // The dropped remainder differs between cycles.
                let dropped = |order: &[u64]| {
                    let kept: HashSet<u64> = order.iter().copied().collect();
                    let mut rest: Vec<u64> = (0..len).filter(|i| !kept.contains(i)).collect();
                    rest.sort_unstable();
                    rest
                };
                assert_ne!(
                    dropped(&cycles[0]),
                    dropped(&cycles[1]),
                    "len {len}, {mode}"
                );
            }
        }
    }
}

#[test]
fn different_seeds_differ() {
    for mode in [Mode::Sequential, Mode::Iid, Mode::Cyclic, block_mode(1000)] {
        let a = Sampler::builder(1000, 50)
            .seed(1)
            .mode(mode)
            .build()
            .unwrap();
        let b = Sampler::builder(1000, 50)
            .seed(2)
            .mode(mode)
            .build()
            .unwrap();
        let differing = (0..20).filter(|&s| a.batch_at(s) != b.batch_at(s)).count();
        if mode == Mode::Sequential {
            // Sequential ignores the seed by definition.
            assert_eq!(differing, 0);
        } else {
            assert_eq!(differing, 20, "{mode}");
        }
    }
}
