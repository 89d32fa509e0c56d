//! The dynamic batcher: concurrent requests share batches within the
//! limits, every request gets exactly its rows, a bad request fails alone,
//! and shutdown answers everything queued.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use candle_core::{Device, Tensor};
use zrecord_candle::{BatchConfig, Batcher, Error, Predictor};

/// Row `id` is `[id, 2 * id]`; remembers every batch's ids; fails on id 13,
/// panics on id 66, sleeps `delay` per batch.
struct Echo {
    batches: Arc<Mutex<Vec<Vec<u64>>>>,
    delay: Duration,
}

impl Predictor for Echo {
    fn records(&self) -> u64 {
        100
    }

    fn predict(&self, ids: &[u64]) -> zrecord_candle::Result<Tensor> {
        self.batches.lock().unwrap().push(ids.to_vec());
        std::thread::sleep(self.delay);
        if ids.contains(&13) {
            return Err(Error::Config("id 13 is cursed".into()));
        }
        assert!(!ids.contains(&66), "id 66 panics");
        let rows: Vec<u32> = ids
            .iter()
            .flat_map(|&id| [id as u32, 2 * id as u32])
            .collect();
        Ok(Tensor::from_vec(rows, (ids.len(), 2), &Device::Cpu)?)
    }
}

fn echo(delay: Duration) -> (Echo, Arc<Mutex<Vec<Vec<u64>>>>) {
    let batches = Arc::new(Mutex::new(Vec::new()));
    (
        Echo {
            batches: Arc::clone(&batches),
            delay,
        },
        batches,
    )
}

fn rows(t: &Tensor) -> Vec<Vec<u32>> {
    t.to_vec2::<u32>().unwrap()
}

/// Sends `requests` (each a list of ids) from one thread each, all at once.
fn concurrently(batcher: &Batcher, requests: &[Vec<u64>]) -> Vec<zrecord_candle::Result<Tensor>> {
    let barrier = Barrier::new(requests.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = requests
            .iter()
            .map(|ids| {
                let (batcher, barrier) = (batcher.clone(), &barrier);
                s.spawn(move || {
                    barrier.wait();
                    batcher.predict(ids.clone())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn concurrent_requests_share_batches_and_get_their_own_rows() {
    let (predictor, batches) = echo(Duration::ZERO);
    let config = BatchConfig::default()
        .with_max_batch(64)
        .with_max_wait(Duration::from_millis(200));
    let batcher = Batcher::start(predictor, config).unwrap();
    let requests: Vec<Vec<u64>> = (20..36).map(|k| vec![k, k + 50, k]).collect();
    for (ids, result) in requests.iter().zip(concurrently(&batcher, &requests)) {
        let expected: Vec<Vec<u32>> = ids.iter().map(|&i| vec![i as u32, 2 * i as u32]).collect();
        assert_eq!(rows(&result.unwrap()), expected);
    }
    let batches = batches.lock().unwrap();
    assert!(
        batches.len() < 16,
        "16 concurrent requests ran in {} batches",
        batches.len()
    );
    let m = batcher.metrics().snapshot();
    assert_eq!(
        (m.requests, m.failed, m.batches),
        (16, 0, batches.len() as u64)
    );
    assert_eq!(m.records, 48);
    assert!(m.mean_batch_requests > 1.0, "{m:?}");
    assert!(m.latency_p50 <= m.latency_p99 && m.latency_p99 <= m.latency_max);
}

#[test]
fn batches_never_exceed_max_batch_and_unbatched_runs_one_by_one() {
    let (predictor, batches) = echo(Duration::from_millis(5));
    let config = BatchConfig::default()
        .with_max_batch(5)
        .with_max_wait(Duration::from_millis(100));
    let batcher = Batcher::start(predictor, config).unwrap();
    let requests: Vec<Vec<u64>> = (0..12).map(|k| vec![k, k + 1]).collect();
    assert!(
        concurrently(&batcher, &requests)
            .into_iter()
            .all(|r| r.is_ok())
    );
    assert!(batches.lock().unwrap().iter().all(|b| b.len() <= 5));
    assert!(matches!(
        batcher.predict(vec![1; 6]),
        Err(Error::TooManyIds { got: 6, max: 5 })
    ));

    let (predictor, batches) = echo(Duration::from_millis(2));
    let batcher = Batcher::start(predictor, BatchConfig::default().unbatched()).unwrap();
    assert!(
        concurrently(&batcher, &requests)
            .into_iter()
            .all(|r| r.is_ok())
    );
    let batches = batches.lock().unwrap();
    assert_eq!(batches.len(), 12);
    assert!(batches.iter().all(|b| b.len() == 2));
}

#[test]
fn unknown_ids_are_refused_before_any_batch() {
    let (predictor, batches) = echo(Duration::ZERO);
    let batcher = Batcher::start(predictor, BatchConfig::default()).unwrap();
    let result = batcher.predict(vec![1, 100, 7, u64::MAX]);
    assert!(
        matches!(&result, Err(Error::UnknownIds { ids, count: 2, len: 100 }) if ids == &[100, u64::MAX]),
        "{result:?}"
    );
    assert!(batches.lock().unwrap().is_empty());
    assert_eq!(batcher.metrics().snapshot().rejected, 1);
}

#[test]
fn a_failing_or_panicking_request_fails_alone() {
    let (predictor, _) = echo(Duration::ZERO);
    let config = BatchConfig::default().with_max_wait(Duration::from_millis(200));
    let batcher = Batcher::start(predictor, config).unwrap();
    let requests = vec![vec![1], vec![13], vec![2], vec![66], vec![3]];
    let results = concurrently(&batcher, &requests);
    assert!(
        matches!(results[1], Err(Error::Config(_))),
        "{:?}",
        results[1]
    );
    assert!(matches!(&results[3], Err(Error::Panicked { message }) if message.contains("66")));
    for k in [0, 2, 4] {
        assert_eq!(
            rows(results[k].as_ref().unwrap())[0][0],
            requests[k][0] as u32
        );
    }
    // Still serving.
    assert_eq!(rows(&batcher.predict(vec![9]).unwrap()), vec![vec![9, 18]]);
    let m = batcher.metrics().snapshot();
    assert_eq!((m.requests, m.failed), (4, 2));
}

#[test]
fn a_model_that_returns_the_wrong_rows_is_an_error() {
    struct Short;
    impl Predictor for Short {
        fn records(&self) -> u64 {
            10
        }
        fn predict(&self, ids: &[u64]) -> zrecord_candle::Result<Tensor> {
            Ok(Tensor::zeros(
                ids.len() + 1,
                candle_core::DType::F32,
                &Device::Cpu,
            )?)
        }
    }
    let batcher = Batcher::start(Short, BatchConfig::default()).unwrap();
    assert!(matches!(
        batcher.predict(vec![1, 2]),
        Err(Error::OutputRows {
            expected: 2,
            got: 3
        })
    ));
}

#[test]
fn a_full_queue_overloads_and_shutdown_answers_every_queued_request() {
    let (predictor, _) = echo(Duration::from_millis(20));
    let config = BatchConfig::default().unbatched().with_queue(4);
    let batcher = Batcher::start(predictor, config).unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let (mut accepted, mut overloaded) = (0, 0);
    for id in 0..20 {
        let answered = Arc::clone(&answered);
        match batcher.submit(vec![id], move |result| {
            assert!(result.is_ok());
            answered.fetch_add(1, Ordering::SeqCst);
        }) {
            Ok(()) => accepted += 1,
            Err(Error::Overloaded { queue: 4 }) => overloaded += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        overloaded > 0 && accepted >= 4,
        "{accepted} accepted, {overloaded} overloaded"
    );
    batcher.shutdown();
    assert_eq!(
        answered.load(Ordering::SeqCst),
        accepted,
        "every accepted request is answered once"
    );
    assert!(batcher.is_shut_down());
    assert!(matches!(batcher.predict(vec![1]), Err(Error::ShuttingDown)));
    assert!(matches!(
        Batcher::start(
            echo(Duration::ZERO).0,
            BatchConfig::default().with_max_batch(0)
        ),
        Err(Error::Config(_))
    ));
}
