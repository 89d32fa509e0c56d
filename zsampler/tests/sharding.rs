//! Elastic sharding: for world sizes that divide the batch (1, 2, 4, 8) and
//! sizes that do not (3, 5, 7), the ranks' slices, in rank order,
//! concatenate to the world-size-1 batch at every tested step.

use proptest::prelude::*;
use zsampler::{Mode, Sampler};

const MODES: [Mode; 4] = [
    Mode::Sequential,
    Mode::Iid,
    Mode::Cyclic,
    Mode::Block {
        block_size: 5,
        window_blocks: 4,
    },
];

fn check(len: u64, batch: u64, seed: u64, mode: Mode, subset: Option<&[u64]>, steps: &[u64]) {
    let builder = |rank, world| {
        match subset {
            Some(subset) => Sampler::builder_subset(subset, batch),
            None => Sampler::builder(len, batch),
        }
        .seed(seed)
        .mode(mode)
        .shard(rank, world)
        .build()
        .unwrap()
    };
    let whole = builder(0, 1);
    for world in [1, 2, 3, 4, 5, 7, 8].into_iter().filter(|&w| w <= batch) {
        let ranks: Vec<Sampler> = (0..world).map(|r| builder(r, world)).collect();
        for (r, rank) in (0..).zip(&ranks) {
            let (start, end) = (r * batch / world, (r + 1) * batch / world);
            assert_eq!(rank.local_offset(), start);
            assert_eq!(rank.local_batch_size() as u64, end - start);
            assert_eq!(rank.global_batch_size(), batch);
        }
        for &step in steps {
            let joined: Vec<u64> = ranks.iter().flat_map(|r| r.batch_at(step)).collect();
            assert_eq!(
                joined,
                whole.batch_at(step),
                "{mode} world {world} step {step}"
            );
        }
    }
}

#[test]
fn slices_concatenate_to_the_global_batch() {
    let steps = [0, 1, 2, 41, 42, 43, 1_000, 123_456_789];
    let subset: Vec<u64> = (0..500).map(|i| 3 * i + 1).collect();
    for mode in MODES {
        check(1000, 24, 7, mode, None, &steps);
        check(337, 8, 8, mode, None, &steps);
        check(1 << 20, 64, 9, mode, None, &steps);
        check((1 << 40) + 7, 16, 10, mode, None, &steps);
        check(0, 40, 11, mode, Some(&subset), &steps);
    }
}

#[test]
fn elastic_iteration_across_a_restart() {
    // 8 ranks run 10 steps, then 2 ranks continue: together they see the
    // world-size-1 stream.
    let whole = Sampler::builder(1000, 32).seed(1).build().unwrap();
    let state = Sampler::builder(1000, 32)
        .seed(1)
        .shard(5, 8)
        .build()
        .unwrap()
        .state();
    let mut before: Vec<Sampler> = (0..8)
        .map(|r| Sampler::resume(&state).shard(r, 8).build().unwrap())
        .collect();
    for step in 0..10 {
        let joined: Vec<u64> = before.iter_mut().flat_map(|r| r.next().unwrap()).collect();
        assert_eq!(joined, whole.batch_at(step));
    }
    let saved = before[3].state();
    assert_eq!(saved.step, 10);
    let mut after: Vec<Sampler> = (0..2)
        .map(|r| Sampler::resume(&saved).shard(r, 2).build().unwrap())
        .collect();
    for step in 10..50 {
        let joined: Vec<u64> = after.iter_mut().flat_map(|r| r.next().unwrap()).collect();
        assert_eq!(joined, whole.batch_at(step));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_batch_size_concatenates(
        len in 64u64..100_000,
        batch in 1u64..64,
        seed: u64,
        mode_index in 0usize..4,
        step in 0u64..1 << 40,
    ) {
        check(len, batch, seed, MODES[mode_index], None, &[step, step + 1]);
    }
}
