//! With a short last batch, a sequential pass serves every record exactly
//! once, whatever the length, batch size, subset and ranks.

use std::sync::Arc;

use proptest::prelude::*;
use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_loader::{Error, LastBatch, Loader, Mode};

/// Loads one pass on every rank, checking each batch holds the records the
/// loader promised; returns the records served (labels equal indices).
fn one_pass(len: u64, batch: u64, world: u64, subset: Option<Vec<u64>>) -> Vec<i64> {
    let dir = tempfile::tempdir().unwrap();
    let labels = DenseStore::<i64>::create(dir.path().join("y"), &[], Codec::Raw).unwrap();
    labels.append(&(0..len as i64).collect::<Vec<_>>()).unwrap();
    let tokens = RaggedStore::<u32>::create(dir.path().join("t"), Codec::Zstd).unwrap();
    let records: Vec<Vec<u32>> = (0..len as u32)
        .map(|i| vec![i; 1 + i as usize % 3])
        .collect();
    tokens.append_slices(&records).unwrap();
    // Shared by every rank's loader.
    let (labels, tokens) = (Arc::new(labels.into_dyn()), Arc::new(tokens.into_dyn()));
    let mut served = Vec::new();
    for rank in 0..world {
        let mut builder = Loader::builder(batch)
            .stream("y", Arc::clone(&labels))
            .stream("t", Arc::clone(&tokens))
            .mode(Mode::Sequential)
            .last_batch(LastBatch::Short)
            .shard(rank, world);
        if let Some(s) = &subset {
            builder = builder.subset(s.clone());
        }
        let mut loader = builder.build().unwrap();
        let steps = loader.steps_per_epoch();
        for step in 0..steps {
            let expected = loader.batch_len(step);
            let batch = loader.next_batch().unwrap();
            assert_eq!(batch.len(), expected);
            let y = batch.dense::<i64>("y").unwrap();
            let t = batch.ragged::<u32>("t").unwrap();
            assert_eq!((y.len(), t.len()), (expected, expected));
            for (k, &label) in y.iter().enumerate() {
                assert_eq!(t.get(k).unwrap()[0], label as u32, "streams stay aligned");
            }
            served.extend(y.iter().copied());
        }
    }
    served
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_pass_serves_each_record_once(len in 1u64..60, batch in 1u64..24, world_pow in 0u32..3) {
        let world = 1u64 << world_pow;
        let batch = batch.div_ceil(world) * world; // the world divides the batch
        let mut served = one_pass(len, batch, world, None);
        served.sort_unstable();
        prop_assert_eq!(served, (0..len as i64).collect::<Vec<_>>());
    }

    #[test]
    fn a_pass_over_a_subset_serves_the_subset_once(len in 2u64..60, batch in 1u64..16) {
        let subset: Vec<u64> = (0..len).filter(|i| i % 3 != 1).rev().collect();
        let served = one_pass(len, batch, 1, Some(subset.clone()));
        prop_assert_eq!(served, subset.iter().map(|&i| i as i64).collect::<Vec<_>>());
    }
}

#[test]
fn every_batch_size_of_a_small_split() {
    // The split a user scores: 10 records at every batch size from 1 to 12.
    for batch in 1..=12 {
        assert_eq!(
            one_pass(10, batch, 1, None),
            (0..10).collect::<Vec<i64>>(),
            "batch {batch}"
        );
    }
}

#[test]
fn passes_repeat_and_wrap_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let labels = DenseStore::<i64>::create(dir.path().join("y"), &[], Codec::Raw).unwrap();
    labels.append(&(0..10).collect::<Vec<i64>>()).unwrap();
    let labels = Arc::new(labels.into_dyn());
    let build = |last| {
        Loader::builder(4)
            .stream("y", labels.clone())
            .mode(Mode::Sequential)
            .last_batch(last)
            .build()
            .unwrap()
    };
    let take = |mut l: Loader<_>, n| -> Vec<Vec<u64>> {
        l.steps(n)
            .map(|b: Result<zrecord_loader::Batch, _>| b.unwrap().indices().to_vec())
            .collect()
    };
    let short = take(build(LastBatch::Short), 4);
    assert_eq!(
        short,
        [
            vec![0, 1, 2, 3],
            vec![4, 5, 6, 7],
            vec![8, 9],
            vec![0, 1, 2, 3]
        ]
    );
    let wrap = take(build(LastBatch::Wrap), 3);
    assert_eq!(wrap[2], [8, 9, 0, 1]);
}

#[test]
fn a_shuffling_mode_refuses_a_short_last_batch() {
    let dir = tempfile::tempdir().unwrap();
    let labels = DenseStore::<i64>::create(dir.path().join("y"), &[], Codec::Raw).unwrap();
    labels.append(&(0..10).collect::<Vec<i64>>()).unwrap();
    let result = Loader::builder(4)
        .stream("y", labels)
        .last_batch(LastBatch::Short)
        .build();
    let error = result.err().expect("cyclic mode has no short last batch");
    assert!(matches!(
        error,
        Error::ShortLastBatchNeedsSequential { mode: Mode::Cyclic }
    ));
    assert!(error.to_string().contains("cyclic"), "{error}");
}
