//! Checkpoints: `state()` is O(1) and serialisable; restoring it continues
//! bit-exactly, also with a different world size and for subsets.

use std::sync::Arc;

use proptest::prelude::*;
use zsampler::{Mode, Sampler, SamplerState};

const MODES: [Mode; 4] = [
    Mode::Sequential,
    Mode::Iid,
    Mode::Cyclic,
    Mode::Block {
        block_size: 16,
        window_blocks: 4,
    },
];

fn round_trip(state: &SamplerState) -> SamplerState {
    let bytes = rmp_serde::to_vec_named(state).unwrap();
    assert!(bytes.len() < 200, "{} bytes", bytes.len());
    rmp_serde::from_slice(&bytes).unwrap()
}

#[test]
fn restore_continues_bit_exactly() {
    for mode in MODES {
        let mut original = Sampler::builder(5_000, 40)
            .seed(11)
            .mode(mode)
            .shard(1, 4)
            .build()
            .unwrap();
        original.nth(136);
        let state = round_trip(&original.state());
        assert_eq!(state, original.state());
        assert_eq!(state.step, 137);
        let mut restored = Sampler::from_state(&state).unwrap();
        assert_eq!((restored.rank(), restored.world_size()), (1, 4));
        for _ in 0..300 {
            assert_eq!(restored.next(), original.next());
        }
    }
}

#[test]
fn state_is_constant_size() {
    let small = Sampler::builder(10, 2).build().unwrap().state();
    let large = Sampler::builder(u64::MAX, 1 << 20).build().unwrap().state();
    let subset: Vec<u64> = (0..1_000_000).collect();
    let with_subset = Sampler::builder_subset(subset, 8).build().unwrap().state();
    let size = |s: &SamplerState| rmp_serde::to_vec_named(s).unwrap().len();
    assert!(size(&large) < 200);
    assert!(size(&with_subset) < 200);
    assert!(size(&small) <= size(&large));
    assert_eq!(with_subset.len, 1_000_000);
}

#[test]
fn restore_on_another_world_size() {
    for mode in MODES {
        let whole = Sampler::builder(3_000, 48)
            .seed(12)
            .mode(mode)
            .build()
            .unwrap();
        let mut saver = Sampler::builder(3_000, 48)
            .seed(12)
            .mode(mode)
            .shard(2, 3)
            .build()
            .unwrap();
        saver.seek(77);
        let state = round_trip(&saver.state());
        for world in [1, 2, 4, 6, 8, 12, 16, 48] {
            let mut ranks: Vec<Sampler> = (0..world)
                .map(|r| Sampler::resume(&state).shard(r, world).build().unwrap())
                .collect();
            for step in 77..90 {
                let joined: Vec<u64> = ranks.iter_mut().flat_map(|r| r.next().unwrap()).collect();
                assert_eq!(joined, whole.batch_at(step), "{mode}, world {world}");
            }
        }
    }
}

#[test]
fn restore_a_subset_sampler() {
    let subset: Arc<[u64]> = (0..2_000u64).filter(|i| i % 3 != 0).collect();
    for mode in MODES {
        let mut original = Sampler::builder_subset(Arc::clone(&subset), 30)
            .seed(13)
            .mode(mode)
            .build()
            .unwrap();
        original.seek(1_234);
        let state = round_trip(&original.state());
        assert_eq!(state.len, subset.len() as u64);
        assert_eq!(state.subset_fingerprint, original.subset_fingerprint());
        // The caller passes the subset again (a fresh copy is fine).
        let copy: Vec<u64> = subset.to_vec();
        let mut restored = Sampler::resume_subset(&state, copy)
            .shard(1, 2)
            .build()
            .unwrap();
        let mut other_half = Sampler::resume_subset(&state, Arc::clone(&subset))
            .shard(0, 2)
            .build()
            .unwrap();
        for _ in 0..50 {
            let joined = [other_half.next().unwrap(), restored.next().unwrap()].concat();
            assert_eq!(joined, original.next().unwrap());
        }
    }
}

#[test]
fn start_step_matches_seek() {
    let a = Sampler::builder(100, 10).start_step(42).build().unwrap();
    let mut b = Sampler::builder(100, 10).build().unwrap();
    b.seek(42);
    assert_eq!(a.state(), b.state());
}

#[test]
fn state_serialises_readably() {
    let state = Sampler::builder(100, 10)
        .mode(Mode::Block {
            block_size: 4,
            window_blocks: 2,
        })
        .build()
        .unwrap()
        .state();
    // Field names and the mode tag are part of the format.
    let bytes = rmp_serde::to_vec_named(&state).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for name in [
        "version",
        "mode",
        "block",
        "block_size",
        "window_blocks",
        "seed",
        "step",
        "len",
        "batch_size",
        "rank",
        "world_size",
        "subset_fingerprint",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_state_restores(
        len in 1u64..1 << 40,
        per_rank in 1u64..6,
        seed: u64,
        mode_index in 0usize..4,
        step in 0u64..1 << 50,
        world_exp in 0u32..3,
    ) {
        let world = 1u64 << world_exp;
        let batch = (per_rank * 4).min(len);
        let world = if batch % world == 0 { world } else { 1 };
        let mut sampler = Sampler::builder(len, batch)
            .seed(seed)
            .mode(MODES[mode_index])
            .shard(world - 1, world)
            .start_step(step)
            .build()
            .unwrap();
        let mut restored = Sampler::from_state(&round_trip(&sampler.state())).unwrap();
        for _ in 0..3 {
            prop_assert_eq!(restored.next(), sampler.next());
        }
    }
}
