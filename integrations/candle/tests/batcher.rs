//! The dynamic batcher: concurrent requests share batches within the
//! limits, every request gets exactly its rows, a bad request fails alone,
//! and shutdown answers everything queued.
//!
//! No test depends on timing: the model holds its first batch at a gate
//! until the test has queued the requests it wants batched, so what the
//! batcher finds queued when the model is free again is known exactly.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use candle_core::{Device, Tensor};
use zrecord_candle::{BatchConfig, Batcher, Error, Predictor};

/// Row `id` is `[id, 2 * id]`; remembers every batch's ids; fails on id 13,
/// panics on id 66. With a gate, its first batch waits until the test lets
/// it go.
struct Echo {
    batches: Arc<Mutex<Vec<Vec<u64>>>>,
    gate: Option<Mutex<(Sender<()>, Receiver<()>)>>,
}

impl Predictor for Echo {
    fn records(&self) -> u64 {
        100
    }

    fn predict(&self, ids: &[u64]) -> zrecord_candle::Result<Tensor> {
        self.batches.lock().unwrap().push(ids.to_vec());
        if let Some(gate) = &self.gate
            && self.batches.lock().unwrap().len() == 1
        {
            let (entered, release) = &*gate.lock().unwrap();
            entered.send(()).unwrap();
            release.recv().unwrap();
        }
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

fn echo() -> (Echo, Arc<Mutex<Vec<Vec<u64>>>>) {
    let batches = Arc::new(Mutex::new(Vec::new()));
    let echo = Echo {
        batches: Arc::clone(&batches),
        gate: None,
    };
    (echo, batches)
}

/// The test's side of a gated model: the model says when its first batch
/// entered; the test says when it may go on.
struct Gate {
    entered: Receiver<()>,
    release: Sender<()>,
}

fn gated() -> (Echo, Arc<Mutex<Vec<Vec<u64>>>>, Gate) {
    let (echo, batches) = echo();
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    let echo = Echo {
        gate: Some(Mutex::new((entered_tx, release_rx))),
        ..echo
    };
    (echo, batches, Gate { entered, release })
}

fn rows(t: &Tensor) -> Vec<Vec<u32>> {
    t.to_vec2::<u32>().unwrap()
}

/// Starts request `[0]`, waits until the model holds it, queues `requests`
/// (each with its own reply), and lets the model go on: the batcher then
/// finds all of them queued. Returns the replies to `requests`, in order.
fn queued_behind_a_busy_model(
    batcher: &Batcher,
    gate: &Gate,
    requests: &[Vec<u64>],
) -> Vec<zrecord_candle::Result<Tensor>> {
    let (first_tx, first) = channel();
    batcher
        .submit(vec![0], move |r| first_tx.send(r).unwrap())
        .unwrap();
    gate.entered.recv().unwrap();
    let replies: Vec<Receiver<_>> = requests
        .iter()
        .map(|ids| {
            let (tx, rx) = channel();
            batcher
                .submit(ids.clone(), move |r| tx.send(r).unwrap())
                .unwrap();
            rx
        })
        .collect();
    gate.release.send(()).unwrap();
    assert_eq!(rows(&first.recv().unwrap().unwrap()), vec![vec![0, 0]]);
    replies.iter().map(|rx| rx.recv().unwrap()).collect()
}

#[test]
fn queued_requests_share_batches_and_get_their_own_rows() {
    let (predictor, batches, gate) = gated();
    let config = BatchConfig::default().with_max_batch(64);
    let batcher = Batcher::start(predictor, config).unwrap();
    let requests: Vec<Vec<u64>> = (20..36).map(|k| vec![k, k + 50, k]).collect();
    let results = queued_behind_a_busy_model(&batcher, &gate, &requests);
    for (ids, result) in requests.iter().zip(results) {
        let expected: Vec<Vec<u32>> = ids.iter().map(|&i| vec![i as u32, 2 * i as u32]).collect();
        assert_eq!(rows(&result.unwrap()), expected);
    }
    // The first request alone, then all sixteen (48 records) in one batch,
    // in the order they were submitted.
    let batches = batches.lock().unwrap();
    assert_eq!(batches[..], [vec![0], requests.concat()]);
    let m = batcher.metrics().snapshot();
    assert_eq!((m.requests, m.failed, m.batches), (17, 0, 2));
    assert_eq!(m.records, 49);
    assert!((m.mean_batch_requests - 8.5).abs() < 1e-9, "{m:?}");
    assert!(m.latency_p50 <= m.latency_p99 && m.latency_p99 <= m.latency_max);
}

#[test]
fn batches_never_exceed_max_batch_and_unbatched_runs_one_by_one() {
    let (predictor, batches, gate) = gated();
    let batcher = Batcher::start(predictor, BatchConfig::default().with_max_batch(5)).unwrap();
    // (Ids from 20: the model fails on 13.)
    let requests: Vec<Vec<u64>> = (20..32).map(|k| vec![k, k + 1]).collect();
    let results = queued_behind_a_busy_model(&batcher, &gate, &requests);
    assert!(results.iter().all(Result::is_ok));
    // Two requests (4 records) fill a batch: a third would make 6 > 5.
    let expected: Vec<Vec<u64>> = std::iter::once(vec![0])
        .chain(requests.chunks(2).map(<[Vec<u64>]>::concat))
        .collect();
    assert_eq!(*batches.lock().unwrap(), expected);
    assert!(matches!(
        batcher.predict(vec![1; 6]),
        Err(Error::TooManyIds { got: 6, max: 5 })
    ));

    let (predictor, batches, gate) = gated();
    let batcher = Batcher::start(predictor, BatchConfig::default().unbatched()).unwrap();
    let results = queued_behind_a_busy_model(&batcher, &gate, &requests);
    assert!(results.iter().all(Result::is_ok));
    let expected: Vec<Vec<u64>> = std::iter::once(vec![0]).chain(requests.clone()).collect();
    assert_eq!(*batches.lock().unwrap(), expected);
}

#[test]
fn unknown_ids_are_refused_before_any_batch() {
    let (predictor, batches) = echo();
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
    let (predictor, batches, gate) = gated();
    let batcher = Batcher::start(predictor, BatchConfig::default()).unwrap();
    let requests = vec![vec![1], vec![13], vec![2], vec![66], vec![3]];
    let results = queued_behind_a_busy_model(&batcher, &gate, &requests);
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
    // The five ran as one batch, which failed, then one by one.
    let expected: Vec<Vec<u64>> = [vec![0], requests.concat()]
        .into_iter()
        .chain(requests.clone())
        .collect();
    assert_eq!(*batches.lock().unwrap(), expected);
    // Still serving.
    assert_eq!(rows(&batcher.predict(vec![9]).unwrap()), vec![vec![9, 18]]);
    // Five answered with a prediction ([0], [1], [2], [3], [9]), two failed.
    let m = batcher.metrics().snapshot();
    assert_eq!((m.requests, m.failed), (5, 2));
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
    let (predictor, _, gate) = gated();
    let config = BatchConfig::default().unbatched().with_queue(4);
    let batcher = Batcher::start(predictor, config).unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let submit = |id: u64| {
        let answered = Arc::clone(&answered);
        batcher.submit(vec![id], move |result| {
            assert!(result.is_ok());
            answered.fetch_add(1, Ordering::SeqCst);
        })
    };
    // The model is busy with the first request: four more fill the queue,
    // the rest are refused.
    submit(0).unwrap();
    gate.entered.recv().unwrap();
    let (mut accepted, mut overloaded) = (1, 0);
    for id in 1..20 {
        match submit(id) {
            Ok(()) => accepted += 1,
            Err(Error::Overloaded { queue: 4 }) => overloaded += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((accepted, overloaded), (5, 15));
    gate.release.send(()).unwrap();
    batcher.shutdown();
    assert_eq!(
        answered.load(Ordering::SeqCst),
        accepted,
        "every accepted request is answered once"
    );
    assert!(batcher.is_shut_down());
    assert!(matches!(batcher.predict(vec![1]), Err(Error::ShuttingDown)));
    assert!(matches!(
        Batcher::start(echo().0, BatchConfig::default().with_max_batch(0)),
        Err(Error::Config(_))
    ));
}
