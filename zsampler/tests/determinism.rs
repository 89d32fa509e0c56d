//! `batch_at(s)` is the s-th iterator output for every mode; seeking, `nth`,
//! `fill_next` and clones agree; every batch has the local batch size and is in range.
//! (That a configuration gives the same stream in every build and on every
//! platform is `golden.rs`'s job: it checks the streams against an
//! independent reference implementation.)

use proptest::prelude::*;
use zsampler::{Mode, Sampler};

fn modes() -> [Mode; 5] {
    [
        Mode::Sequential,
        Mode::Iid,
        Mode::Cyclic,
        Mode::Block {
            block_size: 8,
            window_blocks: 3,
        },
        Mode::Block {
            block_size: 1,
            window_blocks: 1,
        },
    ]
}

fn configs() -> Vec<Sampler> {
    let subset: Vec<u64> = (0..777).map(|i| i * 13 + 5).collect();
    let mut samplers = Vec::new();
    for mode in modes() {
        samplers.push(
            Sampler::builder(1000, 24)
                .seed(3)
                .mode(mode)
                .build()
                .unwrap(),
        );
        samplers.push(
            Sampler::builder(97, 10)
                .seed(4)
                .mode(mode)
                .shard(1, 2)
                .build()
                .unwrap(),
        );
        samplers.push(
            Sampler::builder_subset(subset.clone(), 30)
                .seed(5)
                .mode(mode)
                .shard(2, 3)
                .build()
                .unwrap(),
        );
        samplers.push(
            Sampler::builder((1 << 40) + 7, 16)
                .seed(6)
                .mode(mode)
                .build()
                .unwrap(),
        );
    }
    samplers
}

#[test]
fn batch_at_equals_the_iterator() {
    for sampler in configs() {
        let direct: Vec<Vec<u64>> = (0..120).map(|s| sampler.batch_at(s)).collect();
        let iterated: Vec<Vec<u64>> = sampler.clone().take(120).collect();
        assert_eq!(direct, iterated, "{sampler:?}");
        for batch in &direct {
            assert_eq!(batch.len(), sampler.local_batch_size());
            assert!(batch.iter().all(|&i| match sampler.subset() {
                Some(subset) => subset.contains(&i),
                None => i < sampler.len(),
            }));
        }
    }
}

#[test]
fn seek_nth_and_fill_next_agree() {
    for mut sampler in configs() {
        let expected = sampler.batch_at(1_000_003);
        sampler.seek(1_000_003);
        assert_eq!(sampler.step(), 1_000_003);
        let mut buffer = vec![0; sampler.local_batch_size()];
        assert_eq!(sampler.fill_next(&mut buffer), 1_000_003);
        assert_eq!(buffer, expected);
        assert_eq!(sampler.step(), 1_000_004);
        sampler.seek(0);
        assert_eq!(sampler.nth(5).unwrap(), sampler.batch_at(5));
        assert_eq!(sampler.step(), 6);
    }
}

#[test]
fn concurrent_use_from_threads() {
    let sampler = Sampler::builder(10_000, 64).seed(1).build().unwrap();
    let expected: Vec<Vec<u64>> = (0..64).map(|s| sampler.batch_at(s)).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let sampler = &sampler;
                scope.spawn(move || {
                    (t..64)
                        .step_by(4)
                        .map(|s| (s, sampler.batch_at(s)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for (step, batch) in handle.join().unwrap() {
                assert_eq!(batch, expected[step as usize]);
            }
        }
    });
}

fn any_mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Sequential),
        Just(Mode::Iid),
        Just(Mode::Cyclic),
        (1u64..50, 1u64..10).prop_map(|(block_size, window_blocks)| Mode::Block {
            block_size,
            window_blocks
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_configuration_is_consistent(
        len in 1u64..5_000,
        batch in 1u64..64,
        seed: u64,
        mode in any_mode(),
        start in 0u64..1 << 48,
    ) {
        let batch = if mode.is_cyclic() { batch.min(len) } else { batch };
        let mut sampler = Sampler::builder(len, batch).seed(seed).mode(mode).build().unwrap();
        sampler.seek(start);
        for step in start..start + 5 {
            let expected = sampler.batch_at(step);
            prop_assert_eq!(expected.len() as u64, batch);
            prop_assert!(expected.iter().all(|&i| i < len));
            prop_assert_eq!(sampler.next().unwrap(), expected);
        }
    }
}

#[test]
fn positions_are_the_global_batches_end_to_end() {
    use zsampler::{Mode, Sampler};
    let modes = [
        Mode::Sequential,
        Mode::Iid,
        Mode::Cyclic,
        Mode::Block {
            block_size: 3,
            window_blocks: 2,
        },
    ];
    for mode in modes {
        for (len, batch) in [(10, 1), (10, 3), (37, 5), (300, 7)] {
            let sampler = Sampler::builder(len, batch)
                .seed(11)
                .mode(mode)
                .build()
                .unwrap();
            let flat: Vec<u64> = (0..20).flat_map(|s| sampler.batch_at(s)).collect();
            for start in [0, 1, 5, 13] {
                let mut out = vec![0; flat.len() - start];
                sampler.fill_positions(start as u64, &mut out);
                assert_eq!(
                    out,
                    flat[start..],
                    "{mode} len {len} batch {batch} from {start}"
                );
            }
        }
    }
}
