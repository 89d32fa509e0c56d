//! `StoreDataLoader` as a Burn `DataLoader`: virtual epochs, `num_items`,
//! `progress`, `slice` and `to_device` keep the sampler's batches exactly;
//! errors come out of the iterator as `Err`s, never as panics or skips.

use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::tensor::Device;
use zrecord::{Codec, DenseStore};
use zrecord_burn::{EpochMode, Error, LastBatch, Mode, StoreDataLoader, StoreDataLoaderBuilder};

/// 100 records whose value is their index.
fn builder(dir: &std::path::Path, name: &str, batch: u64) -> StoreDataLoaderBuilder {
    let store = DenseStore::<i64>::create(dir.join(name), &[], Codec::Zstd).unwrap();
    store.append(&(0..100).collect::<Vec<i64>>()).unwrap();
    StoreDataLoader::builder(batch).stream("v", store).seed(11)
}

/// A loader whose batches are the record values (checked against the indices).
fn values(builder: StoreDataLoaderBuilder) -> StoreDataLoader<Vec<i64>> {
    builder
        .build(&Device::flex(), |batch, _device| {
            let v: Vec<i64> = batch.dense::<i64>("v")?.iter().copied().collect();
            let indices: Vec<i64> = batch.indices().iter().map(|&i| i as i64).collect();
            assert_eq!(v, indices);
            Ok(v)
        })
        .unwrap()
}

fn epoch(loader: &dyn DataLoader<Vec<i64>>) -> Vec<Vec<i64>> {
    loader.iter().map(Result::unwrap).collect()
}

#[test]
fn epochs_count_steps_and_items() {
    let dir = tempfile::tempdir().unwrap();
    let loader = values(builder(dir.path(), "a", 16));
    assert_eq!(loader.steps_per_epoch(), 6); // ⌊100 / 16⌋
    assert_eq!(loader.num_items(), 96);
    let mut iter = loader.iter();
    assert_eq!(iter.progress().items_processed, 0);
    assert_eq!(iter.progress().items_total, 96);
    let mut seen = Vec::new();
    while let Some(batch) = iter.next() {
        seen.extend(batch.unwrap());
        assert_eq!(iter.progress().items_processed, seen.len());
    }
    assert!(iter.progress().is_completed());
    // A cyclic epoch is a permutation with the remainder dropped.
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 96);

    let custom = values(builder(dir.path(), "c", 10).steps_per_epoch(3));
    assert_eq!(custom.num_items(), 30);
    assert_eq!(custom.iter().count(), 3);
}

#[test]
fn batches_are_deterministic_across_workers_and_copies() {
    let dir = tempfile::tempdir().unwrap();
    let one = values(builder(dir.path(), "a", 8).workers(1).prefetch(1));
    let three = values(builder(dir.path(), "b", 8).workers(3).prefetch(7));
    let a: Vec<_> = (0..3).map(|_| epoch(&one)).collect();
    let b: Vec<_> = (0..3).map(|_| epoch(&three)).collect();
    assert_eq!(a, b);
    assert_ne!(a[0], a[1], "each epoch continues the sampler");

    // A copy made by to_device serves the same next epoch, then goes its own way.
    let fresh = values(builder(dir.path(), "c", 8));
    let moved = fresh.to_device(&Device::flex());
    assert_eq!(epoch(moved.as_ref()), a[0]);
    assert_eq!(epoch(moved.as_ref()), a[1]);
    assert_eq!(epoch(&fresh), a[0]);
}

#[test]
fn a_dropped_iterator_does_not_shift_later_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let reference = values(builder(dir.path(), "a", 8));
    let epochs: Vec<_> = (0..3).map(|_| epoch(&reference)).collect();

    let loader = values(builder(dir.path(), "b", 8));
    let first: Vec<_> = loader.iter().take(2).map(Result::unwrap).collect();
    assert_eq!(first[..], epochs[0][..2]);
    assert_eq!(epoch(&loader), epochs[1]);
    // Two live iterators each keep to their own epoch.
    let mut x = loader.iter();
    let mut y = loader.iter();
    let (y0, x0, y1) = (y.next(), x.next(), y.next());
    assert_eq!(x0.unwrap().unwrap(), epochs[2][0]);
    assert_eq!(
        y0.unwrap().unwrap(),
        epoch(&values(builder(dir.path(), "c", 8).first_epoch(3),))[0]
    );
    assert!(y1.is_some());
}

#[test]
fn repeat_mode_serves_the_same_steps_every_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let loader = values(
        builder(dir.path(), "a", 20)
            .mode(Mode::Sequential)
            .epoch_mode(EpochMode::Repeat),
    );
    let first = epoch(&loader);
    assert_eq!(first.concat(), (0..100).collect::<Vec<i64>>());
    assert_eq!(epoch(&loader), first);
    assert_eq!(epoch(&loader), first);
}

/// A validation loader over the first `len` of the 100 records.
fn validation(dir: &std::path::Path, name: &str, len: u64, batch: u64) -> StoreDataLoaderBuilder {
    builder(dir, name, batch)
        .subset((0..len).collect::<Vec<u64>>())
        .mode(Mode::Sequential)
        .epoch_mode(EpochMode::Repeat)
}

#[test]
fn a_validation_epoch_serves_every_record_once_at_any_batch_size() {
    let dir = tempfile::tempdir().unwrap();
    for len in [1u64, 7, 10, 31] {
        for batch in 1..=len + 2 {
            let loader = values(validation(
                dir.path(),
                &format!("v{len}-{batch}"),
                len,
                batch,
            ));
            assert_eq!(loader.num_items(), len as usize, "len {len}, batch {batch}");
            for _ in 0..2 {
                let mut iter = loader.iter();
                let mut seen = Vec::new();
                while let Some(b) = iter.next() {
                    seen.extend(b.unwrap());
                    assert_eq!(iter.progress().items_processed, seen.len());
                }
                assert_eq!(seen, (0..len as i64).collect::<Vec<_>>(), "batch {batch}");
            }
        }
    }
}

#[test]
fn validation_ranks_and_slices_together_serve_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    // 10 records, global batch 8 over 2 ranks: rank 1 has no share of the
    // short last batch, so its epoch is one step.
    let ranks: Vec<_> = (0..2)
        .map(|r| values(validation(dir.path(), &format!("r{r}"), 10, 8).shard(r, 2)))
        .collect();
    assert_eq!(
        ranks.iter().map(|r| r.num_items()).collect::<Vec<_>>(),
        [6, 4]
    );
    assert_eq!(
        ranks
            .iter()
            .map(|r| r.steps_per_epoch())
            .collect::<Vec<_>>(),
        [2, 1]
    );
    for _ in 0..2 {
        let mut all: Vec<i64> = ranks.iter().flat_map(|r| epoch(r).concat()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
    }
    // Burn's split_dataloader over a validation loader: 23 records in 5 steps.
    let whole: Arc<dyn DataLoader<Vec<i64>>> = Arc::new(values(validation(dir.path(), "s", 23, 5)));
    let parts = [whole.slice(0, 12), whole.slice(12, 23)];
    assert_eq!(parts.iter().map(|p| p.num_items()).sum::<usize>(), 23);
    let joined: Vec<i64> = parts
        .iter()
        .flat_map(|p| epoch(p.as_ref()).concat())
        .collect();
    assert_eq!(joined, (0..23).collect::<Vec<_>>());
}

#[test]
fn a_wrapping_validation_loader_is_still_available() {
    let dir = tempfile::tempdir().unwrap();
    let loader = values(validation(dir.path(), "w", 10, 4).last_batch(LastBatch::Wrap));
    assert_eq!((loader.steps_per_epoch(), loader.num_items()), (2, 8));
    let short = values(
        validation(dir.path(), "s", 10, 4)
            .epoch_mode(EpochMode::Continue)
            .last_batch(LastBatch::Short),
    );
    let epochs: Vec<Vec<i64>> = (0..2).map(|_| epoch(&short).concat()).collect();
    assert_eq!(epochs[0], (0..10).collect::<Vec<_>>());
    assert_eq!(epochs[1], epochs[0]);
}

#[test]
fn first_epoch_resumes_where_a_training_left_off() {
    let dir = tempfile::tempdir().unwrap();
    let loader = values(builder(dir.path(), "a", 8));
    let epochs: Vec<_> = (0..4).map(|_| epoch(&loader)).collect();
    let resumed = values(builder(dir.path(), "b", 8).first_epoch(2));
    assert_eq!(epoch(&resumed), epochs[2]);
    assert_eq!(epoch(&resumed), epochs[3]);
}

#[test]
fn slices_partition_each_epoch_into_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let whole = values(builder(dir.path(), "a", 10)); // 10 steps of 10
    let epochs: Vec<_> = (0..2).map(|_| epoch(&whole)).collect();

    // Burn's split_dataloader cuts num_items evenly: here at items 33 and 66.
    let fresh: Arc<dyn DataLoader<Vec<i64>>> = Arc::new(values(builder(dir.path(), "b", 10)));
    let parts = [
        fresh.slice(0, 33),
        fresh.slice(33, 66),
        fresh.slice(66, 100),
    ];
    // A step belongs to the slice holding its first item: 0..4, 4..7, 7..10.
    let items: Vec<usize> = parts.iter().map(|p| p.num_items()).collect();
    assert_eq!(items, vec![40, 30, 30]);
    for e in &epochs {
        let joined: Vec<Vec<i64>> = parts.iter().flat_map(|p| epoch(p.as_ref())).collect();
        assert_eq!(&joined, e);
    }
    // Slices of slices and empty slices.
    let inner = parts[0].slice(10, 30);
    assert_eq!(inner.num_items(), 20);
    assert_eq!(fresh.slice(50, 50).num_items(), 0);
    assert_eq!(fresh.slice(60, 10).iter().count(), 0);
    let device = Device::flex();
    assert_eq!(parts[1].to_device(&device).num_items(), 30);
}

#[test]
fn shards_count_their_own_items() {
    let dir = tempfile::tempdir().unwrap();
    let global = values(builder(dir.path(), "a", 20));
    let rank1 = values(builder(dir.path(), "b", 20).shard(1, 4));
    assert_eq!(rank1.num_items(), 25); // 5 steps × 5 records
    let g = epoch(&global);
    let r = epoch(&rank1);
    for (g, r) in g.iter().zip(&r) {
        assert_eq!(&g[5..10], &r[..]);
    }
}

#[test]
fn errors_come_out_of_the_iterator_and_the_next_step_follows() {
    let dir = tempfile::tempdir().unwrap();
    let loader = builder(dir.path(), "a", 10)
        .mode(Mode::Sequential)
        .build(&Device::flex(), |batch, _| match batch.step() {
            1 => Err(Error::user(std::io::Error::other("bad step"))),
            2 => Ok(batch.dense::<u8>("v")?.len()), // a wrong dtype: i64 stream
            3 => panic!("converter panic"),
            _ => Ok(batch.len()),
        })
        .unwrap();
    let results: Vec<_> = loader.iter().take(5).collect();
    assert!(results[0].is_ok());
    let err = |k: usize| {
        let e = results[k].as_ref().unwrap_err();
        format!("{:?}", Error::from_dataset_error(e))
    };
    assert!(err(1).contains("bad step"));
    assert!(err(2).contains("WrongDType"));
    assert!(err(3).contains("TransformPanicked"));
    assert!(results[4].is_ok(), "the step after an error is served");
}

#[test]
fn bad_configurations_fail_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let build = |b: StoreDataLoaderBuilder| b.build(&Device::flex(), |batch, _| Ok(batch.len()));
    assert!(matches!(
        build(StoreDataLoader::builder(4)),
        Err(Error::Loader(zrecord_loader::Error::NoStreams))
    ));
    assert!(matches!(
        build(builder(dir.path(), "a", 200)),
        Err(Error::Loader(zrecord_loader::Error::Sampler(_)))
    ));
    assert!(matches!(
        build(builder(dir.path(), "b", 10).steps_per_epoch(0)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        build(builder(dir.path(), "c", 10).shard(0, 11)),
        Err(Error::Loader(_))
    ));
}

#[test]
fn counters_add_up_over_copies() {
    let dir = tempfile::tempdir().unwrap();
    let loader = values(builder(dir.path(), "a", 10));
    let moved = loader.to_device(&Device::flex());
    let _ = epoch(moved.as_ref());
    let _ = epoch(&loader);
    let c = loader.counters();
    assert_eq!(c.steps_delivered, 20);
    assert!(c.bytes_gathered >= 20 * 10 * 8); // prefetch may run ahead
}

#[test]
fn a_sharded_dataset_serves_the_batches_of_one_store_and_slices_alike() {
    let dir = tempfile::tempdir().unwrap();
    // The same 100 records in shards of 30, 0, 45 and 25.
    let data = dir.path().join("data");
    let mut next = 0i64;
    for (k, n) in [30i64, 0, 45, 25].into_iter().enumerate() {
        let shard = data.join(zrecord::shard_folder(k as u64, 4));
        std::fs::create_dir_all(&shard).unwrap();
        let store = DenseStore::<i64>::create(shard.join("v"), &[], Codec::Raw).unwrap();
        store
            .append(&(next..next + n).collect::<Vec<i64>>())
            .unwrap();
        next += n;
    }
    zrecord::Dataset::join(&data).unwrap();
    let sharded = || {
        let dataset = zrecord::Dataset::open(&data).unwrap();
        StoreDataLoader::builder(10).dataset(dataset).seed(11)
    };
    let whole = values(builder(dir.path(), "one", 10));
    let expected: Vec<_> = (0..2).map(|_| epoch(&whole)).collect();
    let from_shards = values(sharded());
    let got: Vec<_> = (0..2).map(|_| epoch(&from_shards)).collect();
    assert_eq!(got, expected);

    let fresh: Arc<dyn DataLoader<Vec<i64>>> = Arc::new(values(sharded()));
    let parts = [fresh.slice(0, 50), fresh.slice(50, 100)];
    for e in &expected {
        let joined: Vec<Vec<i64>> = parts.iter().flat_map(|p| epoch(p.as_ref())).collect();
        assert_eq!(&joined, e);
    }
}
