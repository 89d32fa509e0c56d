//! Failures reach the consumer as errors naming the step (and stream), never
//! a hang or a skipped step; dropping the loader stops and joins its threads.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use zrecord_loader::{Error, Loader};

#[test]
fn a_panicking_transform_is_an_error_at_its_step() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    common::within(30, move || {
        let mut loader = Loader::builder(10)
            .stream("label", streams.label.clone())
            .workers(3)
            .transform(|batch| {
                if batch.step() == 5 {
                    panic!("bad record in step 5");
                }
                batch.step()
            })
            .build()
            .unwrap();
        for step in 0..5 {
            assert_eq!(loader.next_batch().unwrap(), step);
        }
        let err = loader.next_batch().unwrap_err();
        assert!(
            matches!(&err, Error::TransformPanicked { step: 5, message } if message.contains("bad record")),
            "{err}"
        );
        // The loader carries on after the failed step.
        assert_eq!(loader.next_batch().unwrap(), 6);
        drop(loader);
    });
}

#[test]
fn a_store_error_names_the_step_and_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad");
    let store = zrecord::DenseStore::<u8>::create(&path, &[64], zrecord::Codec::Zstd).unwrap();
    store.append(&vec![3u8; 64 * 50]).unwrap();
    store.sync().unwrap();
    drop(store);
    // Damage every frame's last (checksum) byte.
    let loc = std::fs::read(path.join("0.loc")).unwrap();
    let mut chunk = std::fs::read(path.join("0.chunk")).unwrap();
    for entry in loc.chunks(16) {
        let end = u32::from_le_bytes(entry[0..4].try_into().unwrap())
            + u32::from_le_bytes(entry[4..8].try_into().unwrap());
        chunk[end as usize - 1] ^= 0xFF;
    }
    std::fs::write(path.join("0.chunk"), chunk).unwrap();
    let store = zrecord::DenseStore::<u8>::open(&path).unwrap();
    let labels =
        zrecord::DenseStore::<i64>::create(dir.path().join("labels"), &[], zrecord::Codec::Raw)
            .unwrap();
    labels.append(&(0..50).collect::<Vec<_>>()).unwrap();
    common::within(30, move || {
        let mut loader = Loader::builder(5)
            .stream("label", labels)
            .stream("pixels", store)
            .build()
            .unwrap();
        let err = loader.next_batch().unwrap_err();
        assert!(
            matches!(&err, Error::Gather { step: 0, stream, source: zrecord::Error::CorruptRecord { .. } } if stream == "pixels"),
            "{err}"
        );
        assert!(matches!(
            loader.next_batch(),
            Err(Error::Gather { step: 1, .. })
        ));
    });
}

/// Worker threads that ran a transform and have not ended yet.
static LIVE_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Lives in a worker's thread-local storage from its first transform; its
/// destructor runs as the thread ends — slowly, so a drop that does not wait
/// for the thread returns before it.
struct WorkerExit;

impl Drop for WorkerExit {
    fn drop(&mut self) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        LIVE_WORKERS.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    static EXIT: std::cell::OnceCell<WorkerExit> = const { std::cell::OnceCell::new() };
}

#[test]
fn dropping_a_loader_with_full_queues_joins_its_threads() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let built = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&built);
    let seen = common::within(30, move || {
        let loader = Loader::builder(10)
            .stream("image", streams.image.clone())
            .workers(4)
            .prefetch(3)
            .transform(move |b| {
                counter.fetch_add(1, Ordering::SeqCst);
                EXIT.with(|exit| {
                    exit.get_or_init(|| {
                        LIVE_WORKERS.fetch_add(1, Ordering::SeqCst);
                        WorkerExit
                    });
                });
                b
            })
            .build()
            .unwrap();
        // Let the workers fill the queue and block on the prefetch bound.
        while loader.counters().snapshot().ready < 3 {
            std::thread::yield_now();
        }
        let seen = LIVE_WORKERS.load(Ordering::SeqCst);
        drop(loader); // must not hang
        // Every worker has ended — its thread-local storage destroyed — by
        // the time drop returns, and the transform (with its captures) is gone.
        assert_eq!(
            LIVE_WORKERS.load(Ordering::SeqCst),
            0,
            "drop returned before its threads ended"
        );
        seen
    });
    assert!(seen >= 1, "no worker ran a transform");
    assert_eq!(
        Arc::strong_count(&built),
        1,
        "the transform outlived the loader"
    );
    assert_eq!(
        built.load(Ordering::SeqCst),
        3,
        "no more than the prefetch depth was built"
    );
}

#[test]
#[should_panic(expected = "a panic in the closure")]
fn within_reports_a_panic_as_a_panic() {
    common::within(30, || panic!("a panic in the closure"));
}

#[test]
fn bad_configurations_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let short =
        zrecord::DenseStore::<u8>::create(dir.path().join("short"), &[], zrecord::Codec::Raw)
            .unwrap();
    short.append(&[1, 2, 3]).unwrap();
    let err = Loader::builder(4)
        .stream("label", streams.label.clone())
        .stream("short", short)
        .build()
        .err()
        .unwrap();
    assert!(
        matches!(&err, Error::LengthMismatch { first, first_len: 300, other, other_len: 3 } if first == "label" && other == "short"),
        "{err}"
    );
    assert!(matches!(
        Loader::builder(4).build().err(),
        Some(Error::NoStreams)
    ));
    let dup = Loader::builder(4)
        .stream("a", streams.label.clone())
        .stream("a", streams.image.clone())
        .build();
    assert!(matches!(dup.err(), Some(Error::DuplicateStream { .. })));
    let big = Loader::builder(301)
        .stream("a", streams.label.clone())
        .build();
    assert!(matches!(big.err(), Some(Error::Sampler(_))));
    let shard = Loader::builder(30)
        .stream("a", streams.label.clone())
        .shard(0, 31)
        .build();
    assert!(matches!(shard.err(), Some(Error::Sampler(_))));
    let subset = Loader::builder(2)
        .stream("a", streams.label.clone())
        .subset(vec![1, 2, 300])
        .build();
    assert!(matches!(
        subset.err(),
        Some(Error::SubsetOutOfRange {
            position: 2,
            index: 300,
            len: 300
        })
    ));
}

#[test]
fn wrong_access_to_a_batch_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let mut loader = Loader::builder(8)
        .stream("label", streams.label.clone())
        .stream("tokens", streams.tokens.clone())
        .build()
        .unwrap();
    let mut batch = loader.next_batch().unwrap();
    assert!(matches!(
        batch.dense::<f32>("label"),
        Err(Error::WrongDType { .. })
    ));
    assert!(matches!(
        batch.dense::<u32>("tokens"),
        Err(Error::WrongKind { .. })
    ));
    assert!(matches!(
        batch.ragged::<u32>("label"),
        Err(Error::WrongKind { .. })
    ));
    assert!(matches!(
        batch.dense::<i64>("nope"),
        Err(Error::UnknownStream { .. })
    ));
    let labels = batch.take_dense("label").unwrap();
    assert_eq!(labels.shape(), &[8]);
    assert!(matches!(
        batch.dense::<i64>("label"),
        Err(Error::Taken { .. })
    ));
    let (values, _) = labels.into_parts();
    assert_eq!(
        values.into_vec::<i64>().unwrap().len(),
        8,
        "the Vec moves out without a copy"
    );
}
