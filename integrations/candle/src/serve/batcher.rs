//! [`Batcher`]: one thread that turns many small requests into few batches.
//!
//! Requests go into a bounded queue. The batcher thread takes the oldest,
//! then keeps taking requests until the batch holds
//! [`BatchConfig::max_batch`] records (a request that would overflow it
//! opens the next batch), holds [`BatchConfig::max_requests`] requests, or
//! [`BatchConfig::max_wait`] has passed since the oldest was submitted —
//! after which it still takes, without waiting, whatever is already queued.
//! One gather and one forward pass then serve them all, and each request gets
//! its own rows of the output. While a batch runs, new requests queue up, so
//! under load batches fill even with `max_wait` zero.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use candle_core::Tensor;

use crate::serve::{Metrics, Predictor};
use crate::{Error, Result};

/// How a [`Batcher`] groups requests.
///
/// ```
/// use std::time::Duration;
/// use zrecord_candle::BatchConfig;
///
/// let config = BatchConfig::default().with_max_batch(256).with_max_wait(Duration::from_millis(5));
/// assert_eq!((config.max_batch, config.max_wait), (256, Duration::from_millis(5)));
/// let one_by_one = BatchConfig::default().unbatched(); // one request per forward pass
/// assert_eq!(one_by_one.max_requests, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchConfig {
    /// Most records in one batch (one gather, one forward pass), and so the
    /// most ids one request may name. Default 256.
    pub max_batch: usize,
    /// Longest a request waits for others to join its batch, counted from its
    /// submission. Default zero: a batch takes whatever queued up while the
    /// model was busy and runs at once, so batching never adds latency and
    /// batches grow with the load. A wait makes batches larger at moderate
    /// load, but every request that finds no company pays it in full.
    pub max_wait: Duration,
    /// Most requests in one batch. Default unlimited (`usize::MAX`); 1 turns
    /// batching off.
    pub max_requests: usize,
    /// Requests that may wait in the queue; past it, submissions fail with
    /// [`Error::Overloaded`]. Default 1024.
    pub queue: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            max_batch: 256,
            max_wait: Duration::ZERO,
            max_requests: usize::MAX,
            queue: 1024,
        }
    }
}

impl BatchConfig {
    /// Sets [`max_batch`](Self::max_batch).
    pub fn with_max_batch(mut self, records: usize) -> Self {
        self.max_batch = records;
        self
    }

    /// Sets [`max_wait`](Self::max_wait).
    pub fn with_max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// Sets [`max_requests`](Self::max_requests).
    pub fn with_max_requests(mut self, requests: usize) -> Self {
        self.max_requests = requests;
        self
    }

    /// Sets [`queue`](Self::queue).
    pub fn with_queue(mut self, requests: usize) -> Self {
        self.queue = requests;
        self
    }

    /// Batching off: every request runs alone, as soon as the model is free.
    pub fn unbatched(self) -> Self {
        self.with_max_requests(1).with_max_wait(Duration::ZERO)
    }

    fn check(&self) -> Result<()> {
        for (name, value) in [
            ("max_batch", self.max_batch),
            ("max_requests", self.max_requests),
            ("queue", self.queue),
        ] {
            if value == 0 {
                return Err(Error::Config(format!("{name} must be at least 1")));
            }
        }
        Ok(())
    }
}

/// A reply callback that is called exactly once: with the result, or — if
/// the request is dropped unanswered (the batcher stopped) — with
/// [`Error::ShuttingDown`].
struct Reply(Option<Box<dyn FnOnce(Result<Tensor>) + Send>>);

impl Reply {
    fn send(mut self, result: Result<Tensor>) {
        if let Some(reply) = self.0.take() {
            // A panicking callback must not take the batcher down.
            let _ = catch_unwind(AssertUnwindSafe(|| reply(result)));
        }
    }

    /// Forgets the callback without calling it (its submission failed).
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(reply) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| reply(Err(Error::ShuttingDown))));
        }
    }
}

struct Job {
    ids: Vec<u64>,
    reply: Reply,
    submitted: Instant,
}

enum Message {
    Job(Job),
    Stop,
}

/// A dynamic batcher: answers "run the model on records `ids`" from any
/// number of threads, grouping concurrent requests so that one gather and
/// one forward pass serve many (see [`BatchConfig`] for the policy).
///
/// Cheap to clone (the clones share one batcher thread); the thread stops
/// when [`shutdown`](Batcher::shutdown) is called or the last clone drops,
/// answering every queued request first.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use zrecord::{Codec, DenseStore};
/// use zrecord_candle::{BatchConfig, Batcher, Error, StorePredictor};
/// # let dir = tempfile::tempdir()?;
///
/// let features = DenseStore::<f32>::create(dir.path().join("f"), &[3], Codec::Raw)?;
/// features.append(&(0..30).map(|v| v as f32).collect::<Vec<_>>())?; // 10 records
/// let predictor = StorePredictor::new(features, &Device::Cpu, |x: Tensor| x.sum(1))?;
/// let batcher = Batcher::start(predictor, BatchConfig::default())?;
///
/// // From many threads at once: concurrent requests share batches.
/// std::thread::scope(|s| {
///     for id in 0..8u64 {
///         let batcher = batcher.clone();
///         s.spawn(move || {
///             let sums = batcher.predict(vec![id]).unwrap().to_vec1::<f32>().unwrap();
///             assert_eq!(sums, vec![(9 * id + 3) as f32]);
///         });
///     }
/// });
/// assert!(matches!(batcher.predict(vec![10]), Err(Error::UnknownIds { count: 1, len: 10, .. })));
/// let metrics = batcher.metrics().snapshot();
/// assert_eq!((metrics.requests, metrics.rejected), (8, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Batcher {
    inner: Arc<Inner>,
}

struct Inner {
    sender: SyncSender<Message>,
    predictor: Arc<dyn Predictor>,
    config: BatchConfig,
    metrics: Arc<Metrics>,
    closed: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Batcher {
    /// Starts the batcher thread over `predictor`.
    ///
    /// # Errors
    /// [`Error::Config`] for a zero `max_batch`, `max_requests` or `queue`;
    /// [`Error::Io`] when the thread cannot be started.
    pub fn start(predictor: impl Predictor, config: BatchConfig) -> Result<Batcher> {
        config.check()?;
        let predictor: Arc<dyn Predictor> = Arc::new(predictor);
        let metrics = Arc::new(Metrics::default());
        let (sender, receiver) = std::sync::mpsc::sync_channel(config.queue);
        let thread = {
            let (predictor, metrics, config) =
                (Arc::clone(&predictor), Arc::clone(&metrics), config.clone());
            std::thread::Builder::new()
                .name("zrecord-batcher".into())
                .spawn(move || run(&receiver, &*predictor, &config, &metrics))
                .map_err(|source| Error::Io {
                    what: "cannot start the batcher thread".into(),
                    source,
                })?
        };
        Ok(Batcher {
            inner: Arc::new(Inner {
                sender,
                predictor,
                config,
                metrics,
                closed: AtomicBool::new(false),
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// Queues a request for records `ids`; `reply` gets the rows of the
    /// output for them (axis 0 has `ids.len()` rows, in order) or the error,
    /// **exactly once**, on the batcher thread — keep it short (send the
    /// result to a channel).
    ///
    /// Ids are checked here, so a bad request never reaches a batch.
    ///
    /// # Errors
    /// Without calling `reply`: [`Error::TooManyIds`] for more ids than
    /// [`BatchConfig::max_batch`]; [`Error::UnknownIds`] for ids the
    /// predictor does not have; [`Error::Overloaded`] when the queue is full;
    /// [`Error::ShuttingDown`] after [`shutdown`](Self::shutdown).
    pub fn submit(
        &self,
        ids: Vec<u64>,
        reply: impl FnOnce(Result<Tensor>) + Send + 'static,
    ) -> Result<()> {
        let inner = &*self.inner;
        let refuse = |error: Error| {
            inner.metrics.count_rejected();
            Err(error)
        };
        if inner.closed.load(Ordering::Acquire) {
            return refuse(Error::ShuttingDown);
        }
        if ids.len() > inner.config.max_batch {
            return refuse(Error::TooManyIds {
                got: ids.len(),
                max: inner.config.max_batch,
            });
        }
        let len = inner.predictor.records();
        let unknown = ids.iter().filter(|&&id| id >= len).count();
        if unknown > 0 {
            return refuse(Error::UnknownIds {
                ids: ids
                    .iter()
                    .copied()
                    .filter(|&id| id >= len)
                    .take(16)
                    .collect(),
                count: unknown,
                len,
            });
        }
        let job = Job {
            ids,
            reply: Reply(Some(Box::new(reply))),
            submitted: Instant::now(),
        };
        match inner.sender.try_send(Message::Job(job)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(message)) => {
                defuse(message);
                refuse(Error::Overloaded {
                    queue: inner.config.queue,
                })
            }
            Err(TrySendError::Disconnected(message)) => {
                defuse(message);
                refuse(Error::ShuttingDown)
            }
        }
    }

    /// Runs the model on records `ids` as part of a batch, waiting for the
    /// answer: the rows of the output for them (axis 0 has `ids.len()` rows).
    ///
    /// # Errors
    /// As [`submit`](Self::submit); then whatever the predictor returned for
    /// this request ([`Error::Store`], [`Error::Candle`],
    /// [`Error::Panicked`], [`Error::OutputRows`]).
    pub fn predict(&self, ids: Vec<u64>) -> Result<Tensor> {
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        self.submit(ids, move |result| {
            let _ = sender.send(result);
        })?;
        receiver.recv().unwrap_or(Err(Error::ShuttingDown))
    }

    /// Records that requests may name: ids `0..records()`.
    pub fn records(&self) -> u64 {
        self.inner.predictor.records()
    }

    /// The batching policy.
    pub fn config(&self) -> &BatchConfig {
        &self.inner.config
    }

    /// The live metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Whether [`shutdown`](Self::shutdown) has been called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Stops taking requests, answers every queued one, and joins the
    /// batcher thread. Idempotent; also done when the last clone drops.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("config", &self.inner.config)
            .field("records", &self.records())
            .field("shut_down", &self.is_shut_down())
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn shutdown(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Waits for room if the queue is full: the thread is draining it.
            let _ = self.sender.send(Message::Stop);
        }
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // A reply callback that shuts the batcher down runs on the
            // batcher thread itself: it must not wait for itself.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn defuse(message: Message) {
    if let Message::Job(job) = message {
        job.reply.defuse();
    }
}

/// The batcher thread: collect a batch, run it, repeat; after `Stop`, drain
/// the queue without waiting and return.
fn run(
    receiver: &Receiver<Message>,
    predictor: &dyn Predictor,
    config: &BatchConfig,
    metrics: &Metrics,
) {
    let mut held: Option<Job> = None;
    let mut stopping = false;
    loop {
        let first = match held.take() {
            Some(job) => job,
            None => {
                let message = if stopping {
                    match receiver.try_recv() {
                        Ok(m) => m,
                        Err(_) => return,
                    }
                } else {
                    match receiver.recv() {
                        Ok(m) => m,
                        Err(_) => return,
                    }
                };
                match message {
                    Message::Job(job) => job,
                    Message::Stop => {
                        stopping = true;
                        continue;
                    }
                }
            }
        };
        let deadline = first.submitted + config.max_wait;
        let mut records = first.ids.len();
        let mut jobs = vec![first];
        while jobs.len() < config.max_requests && records < config.max_batch {
            let now = Instant::now();
            let message = if stopping || now >= deadline {
                match receiver.try_recv() {
                    Ok(m) => m,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            } else {
                match receiver.recv_timeout(deadline - now) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            };
            match message {
                Message::Stop => stopping = true,
                Message::Job(job) if records + job.ids.len() > config.max_batch => {
                    held = Some(job);
                    break;
                }
                Message::Job(job) => {
                    records += job.ids.len();
                    jobs.push(job);
                }
            }
        }
        run_batch(predictor, jobs, metrics);
    }
}

/// Runs one batch and answers its requests; if the batch fails as a whole,
/// retries its requests one by one so that one bad request fails alone.
fn run_batch(predictor: &dyn Predictor, jobs: Vec<Job>, metrics: &Metrics) {
    let ids: Vec<u64> = jobs.iter().flat_map(|j| j.ids.iter().copied()).collect();
    match predict(predictor, &ids, jobs.len(), metrics) {
        Ok(output) => {
            let mut start = 0;
            for job in jobs {
                let rows = job.ids.len();
                let part = output.narrow(0, start, rows).map_err(Error::from);
                start += rows;
                finish(job, part, metrics);
            }
        }
        Err(error) if jobs.len() == 1 => {
            if let Some(job) = jobs.into_iter().next() {
                finish(job, Err(error), metrics);
            }
        }
        Err(_) => {
            for job in jobs {
                let result = predict(predictor, &job.ids, 1, metrics);
                finish(job, result, metrics);
            }
        }
    }
}

/// One forward pass, panics caught, the output's rows checked.
fn predict(
    predictor: &dyn Predictor,
    ids: &[u64],
    requests: usize,
    metrics: &Metrics,
) -> Result<Tensor> {
    let start = Instant::now();
    let output = catch_unwind(AssertUnwindSafe(|| predictor.predict(ids))).unwrap_or_else(|p| {
        Err(Error::Panicked {
            message: panic_message(&*p),
        })
    });
    metrics.batch(requests, ids.len(), start.elapsed());
    let output = output?;
    let rows = output.dims().first().copied().unwrap_or(0);
    if output.rank() == 0 || rows != ids.len() {
        return Err(Error::OutputRows {
            expected: ids.len(),
            got: rows,
        });
    }
    Ok(output)
}

fn finish(job: Job, result: Result<Tensor>, metrics: &Metrics) {
    metrics.answered(result.is_ok(), job.submitted.elapsed());
    job.reply.send(result);
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
