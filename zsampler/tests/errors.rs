//! Every bad configuration is a typed error at construction, never a panic later.

use std::sync::Arc;

use zsampler::{Error, Mode, Sampler, SamplerState};

const BLOCK: Mode = Mode::Block {
    block_size: 4,
    window_blocks: 2,
};

#[test]
fn empty_index_space() {
    for mode in [Mode::Sequential, Mode::Iid, Mode::Cyclic, BLOCK] {
        let err = Sampler::builder(0, 1).mode(mode).build().unwrap_err();
        assert_eq!(err, Error::EmptyIndexSpace);
        let err = Sampler::builder_subset(Vec::new(), 1)
            .mode(mode)
            .build()
            .unwrap_err();
        assert_eq!(err, Error::EmptyIndexSpace);
    }
}

#[test]
fn zero_batch() {
    for mode in [Mode::Sequential, Mode::Iid, Mode::Cyclic, BLOCK] {
        let err = Sampler::builder(10, 0).mode(mode).build().unwrap_err();
        assert_eq!(err, Error::ZeroBatchSize);
    }
}

#[test]
fn batch_larger_than_a_cycle() {
    for mode in [Mode::Cyclic, BLOCK] {
        let err = Sampler::builder(10, 11).mode(mode).build().unwrap_err();
        assert_eq!(
            err,
            Error::BatchExceedsLen {
                batch_size: 11,
                len: 10,
                mode
            }
        );
        let err = Sampler::builder_subset(vec![5, 6, 7], 4)
            .mode(mode)
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            Error::BatchExceedsLen {
                batch_size: 4,
                len: 3,
                ..
            }
        ));
        // Exactly one cycle per step is fine.
        assert!(Sampler::builder(10, 10).mode(mode).build().is_ok());
    }
    // With replacement / wrapping, a batch may exceed len.
    for mode in [Mode::Sequential, Mode::Iid] {
        let sampler = Sampler::builder(3, 10).mode(mode).build().unwrap();
        assert!(sampler.batch_at(5).iter().all(|&i| i < 3));
    }
}

#[test]
fn bad_blocks() {
    let zero_block = Mode::Block {
        block_size: 0,
        window_blocks: 1,
    };
    let zero_window = Mode::Block {
        block_size: 1,
        window_blocks: 0,
    };
    assert_eq!(
        Sampler::builder(10, 2)
            .mode(zero_block)
            .build()
            .unwrap_err(),
        Error::ZeroBlockSize
    );
    assert_eq!(
        Sampler::builder(10, 2)
            .mode(zero_window)
            .build()
            .unwrap_err(),
        Error::ZeroWindowBlocks
    );
    // Blocks and windows larger than the index space are fine.
    let huge = Mode::Block {
        block_size: u64::MAX,
        window_blocks: u64::MAX,
    };
    let sampler = Sampler::builder(10, 2).mode(huge).build().unwrap();
    let mut all: Vec<u64> = (0..5).flat_map(|s| sampler.batch_at(s)).collect();
    all.sort_unstable();
    assert!(all.iter().copied().eq(0..10));
}

#[test]
fn bad_shards() {
    assert_eq!(
        Sampler::builder(100, 8).shard(0, 0).build().unwrap_err(),
        Error::ZeroWorldSize
    );
    assert_eq!(
        Sampler::builder(100, 8).shard(4, 4).build().unwrap_err(),
        Error::RankOutOfRange {
            rank: 4,
            world_size: 4
        }
    );
    assert_eq!(
        Sampler::builder(100, 8).shard(0, 16).build().unwrap_err(),
        Error::WorldExceedsBatch {
            batch_size: 8,
            world_size: 16
        }
    );
    // A world size that does not divide the batch splits it unevenly.
    let sizes: Vec<usize> = (0..3)
        .map(|r| {
            Sampler::builder(100, 8)
                .shard(r, 3)
                .build()
                .unwrap()
                .local_batch_size()
        })
        .collect();
    assert_eq!(sizes, [2, 3, 3]);
    assert!(Sampler::builder(100, 8).shard(7, 8).build().is_ok());
}

#[test]
fn batch_too_large_for_memory() {
    let err = Sampler::builder(10, u64::MAX)
        .mode(Mode::Iid)
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        Error::BatchTooLarge {
            local_batch_size: u64::MAX,
            ..
        }
    ));
}

#[test]
fn state_errors() {
    let subset: Arc<[u64]> = (0..50).map(|i| i * 2).collect();
    let from_subset = Sampler::builder_subset(Arc::clone(&subset), 5)
        .build()
        .unwrap()
        .state();
    let from_range = Sampler::builder(50, 5).build().unwrap().state();
    let fingerprint = from_subset.subset_fingerprint.unwrap();

    assert_eq!(
        Sampler::from_state(&from_subset).unwrap_err(),
        Error::SubsetRequired {
            len: 50,
            fingerprint
        }
    );
    assert_eq!(
        Sampler::resume_subset(&from_range, Arc::clone(&subset))
            .build()
            .unwrap_err(),
        Error::UnexpectedSubset { len: 50 }
    );
    let mut other: Vec<u64> = subset.to_vec();
    other.swap(0, 1);
    let err = Sampler::resume_subset(&from_subset, other)
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        Error::SubsetMismatch {
            expected_len: 50,
            found_len: 50,
            expected_fingerprint,
            found_fingerprint,
        } if expected_fingerprint == fingerprint && found_fingerprint != fingerprint
    ));
    let err = Sampler::resume_subset(&from_subset, &subset[..49])
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::SubsetMismatch { found_len: 49, .. }));

    let mut future = from_range;
    future.version = SamplerState::VERSION + 1;
    assert_eq!(
        Sampler::from_state(&future).unwrap_err(),
        Error::UnsupportedStateVersion {
            found: SamplerState::VERSION + 1,
            supported: SamplerState::VERSION
        }
    );
    // A restored state is validated like any configuration.
    let mut bad_rank = from_range;
    bad_rank.rank = 3;
    assert!(matches!(
        Sampler::from_state(&bad_rank).unwrap_err(),
        Error::RankOutOfRange {
            rank: 3,
            world_size: 1
        }
    ));
}

#[test]
fn messages_name_the_values() {
    let err = Sampler::builder(100, 10).shard(0, 11).build().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("world size 11") && text.contains("batch size 10"),
        "{text}"
    );
    let err = Sampler::builder(10, 11).build().unwrap_err();
    assert!(err.to_string().contains("cyclic"), "{err}");
}

#[test]
#[should_panic(expected = "local batch size is 4")]
fn fill_batch_checks_the_buffer_length() {
    let sampler = Sampler::builder(100, 8).shard(1, 2).build().unwrap();
    sampler.fill_batch(0, &mut [0; 8]);
}
