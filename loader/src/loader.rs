//! [`Loader`]: worker threads build batches ahead of the consumer, who gets
//! them strictly in step order.
//!
//! Workers claim steps in order from a shared counter, but only while fewer
//! than `prefetch` batches are in flight; each finished batch lands in a
//! reorder buffer keyed by step, from which `next()` takes exactly the step it
//! expects. Every step is a pure function of the sampler and the stores, so
//! the stream of batches is the same for any worker count and timing.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use zrecord::storage::IoStats;
use zsampler::Sampler;

use crate::bad_records::{Space, substitute};
use crate::column::Column;
use crate::plan::Plan;
use crate::pool::Pool;
use crate::{BadRecords, Batch, Counters, Error, LoaderConfig, LoaderState, Result, Stream};

/// The transform run on worker threads: a batch in, anything out — or word
/// that one of its records is bad.
pub(crate) type Transform<T> = Arc<dyn Fn(Batch) -> Outcome<T> + Send + Sync>;

/// What a transform made of a batch.
pub(crate) enum Outcome<T> {
    /// Its output.
    Done(T),
    /// The record at `position` of the batch cannot be used;
    /// `delivered` makes what the consumer gets if it is not replaced (the
    /// error, through the transforms after the one that reported it, run
    /// only then).
    Bad {
        position: usize,
        delivered: Box<dyn FnOnce() -> T + Send>,
    },
}

impl<T: 'static> Outcome<T> {
    /// Runs `f` on the output; on a bad record, `f` will run on what is delivered.
    pub(crate) fn map<U, F>(self, f: &Arc<F>) -> Outcome<U>
    where
        F: Fn(T) -> U + Send + Sync + 'static,
    {
        match self {
            Outcome::Done(t) => Outcome::Done(f(t)),
            Outcome::Bad {
                position,
                delivered,
            } => {
                let f = Arc::clone(f);
                Outcome::Bad {
                    position,
                    delivered: Box::new(move || f(delivered())),
                }
            }
        }
    }
}

/// An endless, step-based iterator of batches over named streams.
///
/// Every stream is gathered at the same indices, chosen by a
/// [`zsampler::Sampler`]; worker threads gather (and transform) ahead of the
/// consumer, at most `prefetch` batches at a time, and batches arrive
/// strictly in step order. Dropping the loader stops and joins its threads.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::Loader;
/// # let dir = tempfile::tempdir()?;
///
/// let images = DenseStore::<u8>::create(dir.path().join("images"), &[4, 4], Codec::Raw)?;
/// images.append(&vec![1u8; 100 * 16])?;
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&(0..100).collect::<Vec<i64>>())?;
///
/// let mut loader = Loader::builder(32).stream("image", images).stream("label", labels).seed(7).build()?;
/// for batch in loader.steps(10) {
///     let batch = batch?;
///     let (x, y) = (batch.dense::<u8>("image")?, batch.dense::<i64>("label")?);
///     assert_eq!((x.shape(), y.len()), (&[32, 4, 4][..], 32));
///     // record k of every stream is record batch.indices()[k]
///     assert!(y.iter().zip(batch.indices()).all(|(&y, &i)| y == i as i64));
/// }
/// let state = loader.state(); // resume later from step 10, exactly
/// assert_eq!(state.sampler.step, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loader<T> {
    shared: Arc<Shared<T>>,
    threads: Vec<JoinHandle<()>>,
    plan: Plan,
    counters: Arc<Counters>,
}

/// What the consumer and the workers share.
struct Shared<T> {
    queue: Mutex<Queue<T>>,
    /// Workers wait here for room under the prefetch bound.
    room: Condvar,
    /// The consumer waits here for its step.
    done: Condvar,
}

struct Queue<T> {
    next_claim: u64,
    next_deliver: u64,
    prefetch: u64,
    /// Built steps: the result, and the bad records replaced in it.
    finished: BTreeMap<u64, (Result<T>, u64)>,
    stop: bool,
}

/// What a worker needs to build any step.
struct Job<T> {
    /// The configuration's sampler, passes and mixture.
    plan: Plan,
    streams: Vec<Stream>,
    /// Stream names, in the order of `streams`.
    names: Arc<[Arc<str>]>,
    pool: Arc<Pool>,
    transform: Transform<T>,
    bad_records: BadRecords,
    counters: Arc<Counters>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Queue<T>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Send + 'static> Loader<T> {
    /// Starts the workers of `config` over `streams`, checked into `plan`,
    /// at the plan's step.
    pub(crate) fn start(
        streams: Vec<(String, Stream)>,
        config: &LoaderConfig,
        transform: Transform<T>,
        plan: Plan,
    ) -> Result<Loader<T>> {
        let (workers, prefetch) = (config.workers.max(1), config.prefetch.max(1));
        let counters = Arc::new(Counters::default());
        let names: Arc<[Arc<str>]> = streams.iter().map(|(n, _)| Arc::from(n.as_str())).collect();
        let step = plan.step();
        let job = Arc::new(Job {
            plan: plan.clone(),
            streams: streams.into_iter().map(|(_, s)| s).collect(),
            names,
            pool: Arc::new(Pool::new(prefetch + workers + 1, Arc::clone(&counters))),
            transform,
            bad_records: config.bad_records,
            counters: Arc::clone(&counters),
        });
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                next_claim: step,
                next_deliver: step,
                prefetch: prefetch as u64,
                finished: BTreeMap::new(),
                stop: false,
            }),
            room: Condvar::new(),
            done: Condvar::new(),
        });
        let mut loader = Loader {
            shared,
            threads: Vec::new(),
            plan,
            counters,
        };
        for w in 0..workers {
            let (shared, job) = (Arc::clone(&loader.shared), Arc::clone(&job));
            let thread = std::thread::Builder::new()
                .name(format!("zrecord-loader-{w}"))
                .spawn(move || work(&shared, &job))
                .map_err(Error::Spawn)?; // dropping `loader` stops the ones started
            loader.threads.push(thread);
        }
        Ok(loader)
    }

    /// The next batch, in step order, waiting if it is not ready yet.
    ///
    /// # Errors
    /// [`Error::Gather`] when a store fails at this step (naming step and
    /// stream), [`Error::TransformPanicked`] when the transform panics. The
    /// loader carries on with the next step after an error.
    pub fn next_batch(&mut self) -> Result<T> {
        let mut queue = self.shared.lock();
        let step = queue.next_deliver;
        let mut waited = None;
        let (result, skipped) = loop {
            if let Some(built) = queue.finished.remove(&step) {
                break built;
            }
            waited.get_or_insert_with(Instant::now);
            queue = self
                .shared
                .done
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        };
        queue.next_deliver += 1;
        self.counters
            .ready
            .store(queue.finished.len() as u64, Ordering::Relaxed);
        self.counters
            .in_flight
            .store(queue.next_claim - queue.next_deliver, Ordering::Relaxed);
        drop(queue);
        self.shared.room.notify_all();
        if let Some(start) = waited {
            Counters::add_time(&self.counters.wait_ns, start.elapsed());
        }
        self.counters.steps.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bad_records_skipped
            .fetch_add(skipped, Ordering::Relaxed);
        result
    }

    /// The step the next batch belongs to.
    pub fn step(&self) -> u64 {
        self.shared.lock().next_deliver
    }

    /// A checkpoint: resuming from it continues with exactly the next batch.
    pub fn state(&self) -> LoaderState {
        let mut sampler = self.plan.sampler.clone();
        sampler.seek(self.step());
        LoaderState {
            sampler: sampler.state(),
            mixture: self.plan.mix.as_ref().map(|m| m.fingerprint),
        }
    }

    /// For a loader over a [`Mixture`](crate::Mixture): each source's
    /// records served and epochs completed in the global batches before
    /// the next one delivered (all ranks together, counted from step 0, so
    /// the same on every rank and after a resume); `None` otherwise.
    pub fn sources(&self) -> Option<Vec<crate::SourceProgress>> {
        self.plan.sources(self.step())
    }

    /// The live counters; keep the `Arc` to read them from another thread.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// The sampler choosing each step's indices.
    pub fn sampler(&self) -> &Sampler {
        self.plan.sampler()
    }

    /// Records in each of this rank's batches (in every batch but the last
    /// of a pass with [`LastBatch::Short`](crate::LastBatch::Short)).
    pub fn batch_size(&self) -> usize {
        self.plan.batch_size()
    }

    /// Records in this rank's batch of `step`: the batch size, or what is
    /// left of the pass in a short last batch (0 for a rank whose slice
    /// lies past the end of the data).
    pub fn batch_len(&self, step: u64) -> usize {
        self.plan.batch_len(step)
    }

    /// Steps that make one pass over the data (`⌊len / global batch⌋`, at
    /// least 1; `⌈len / global batch⌉` with
    /// [`LastBatch::Short`](crate::LastBatch::Short)): the natural length of
    /// an "epoch" for [`steps`](Self::steps).
    pub fn steps_per_epoch(&self) -> u64 {
        self.plan.steps_per_epoch()
    }

    /// A finite view of the next `n` steps, for code that thinks in epochs.
    pub fn steps(&mut self, n: u64) -> Steps<'_, T> {
        Steps {
            loader: self,
            remaining: n,
        }
    }
}

impl<T: Send + 'static> Iterator for Loader<T> {
    type Item = Result<T>;

    /// Always `Some`: the loader is endless.
    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_batch())
    }
}

impl<T> Drop for Loader<T> {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.room.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The next `n` batches of a loader: see [`Loader::steps`].
pub struct Steps<'a, T> {
    loader: &'a mut Loader<T>,
    remaining: u64,
}

impl<T: Send + 'static> Iterator for Steps<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(self.loader.next_batch())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl<T: Send + 'static> ExactSizeIterator for Steps<'_, T> {}

/// A worker: claim a step under the prefetch bound, build it, file it.
fn work<T>(shared: &Shared<T>, job: &Job<T>) {
    loop {
        let step = {
            let mut queue = shared.lock();
            while !queue.stop && queue.next_claim >= queue.next_deliver + queue.prefetch {
                queue = shared
                    .room
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if queue.stop {
                return;
            }
            queue.next_claim += 1;
            job.counters
                .in_flight
                .store(queue.next_claim - queue.next_deliver, Ordering::Relaxed);
            queue.next_claim - 1
        };
        // Nothing a step does may take the worker down: a panic becomes the
        // step's error, so the consumer never waits for a step that will not come.
        let built = catch_unwind(AssertUnwindSafe(|| job.build(step))).unwrap_or_else(|panic| {
            let message = panic_message(&*panic);
            (Err(Error::TransformPanicked { step, message }), 0)
        });
        let mut queue = shared.lock();
        queue.finished.insert(step, built);
        job.counters
            .ready
            .store(queue.finished.len() as u64, Ordering::Relaxed);
        drop(queue);
        shared.done.notify_all();
    }
}

impl<T> Job<T> {
    /// Gathers every stream at `step`'s indices and runs the transform,
    /// replacing bad records under [`BadRecords::Skip`]. Returns what the
    /// consumer gets and the records replaced.
    fn build(&self, step: u64) -> (Result<T>, u64) {
        // Records replaced so far: (position, substitute), in order.
        let mut substitutes: Vec<(usize, u64)> = Vec::new();
        loop {
            let (mut indices, columns) = self.pool.take(&self.streams);
            self.indices(step, &substitutes, &mut indices);
            let (position, delivered) = match self.run(step, indices, columns) {
                Err(e) => return (Err(e), 0),
                Ok(Outcome::Done(out)) => return (Ok(out), substitutes.len() as u64),
                Ok(Outcome::Bad {
                    position,
                    delivered,
                }) => (position, delivered),
            };
            let attempt = substitutes.iter().filter(|(p, _)| *p == position).count();
            let len = self.plan.passes.batch_len(step);
            if self.bad_records != BadRecords::Skip
                || position >= len
                || attempt >= BadRecords::MAX_ATTEMPTS as usize
            {
                return (Ok(delivered()), 0);
            }
            // The record that failed: rare enough to compute the batch again.
            let mut current = Vec::with_capacity(len);
            self.indices(step, &substitutes, &mut current);
            let space = match (self.plan.sampler.subset(), &self.plan.mix) {
                (Some(subset), _) => Space::Subset(subset),
                // A mixture's sampler may count more records than there are.
                (None, Some(mix)) => Space::Range(mix.total()),
                (None, None) => Space::Range(self.plan.sampler.len()),
            };
            let record = substitute(
                self.plan.sampler.seed(),
                step,
                self.plan.sampler.local_offset() + position as u64,
                attempt as u32,
                current[position],
                space,
            );
            substitutes.push((position, record));
        }
    }

    /// `step`'s indices into `out`, with `substitutes` in place.
    fn indices(&self, step: u64, substitutes: &[(usize, u64)], out: &mut Vec<u64>) {
        self.plan.fill_indices(step, out);
        for &(position, record) in substitutes {
            out[position] = record;
        }
    }

    /// Gathers every stream at `indices` for `step`, then runs the transform.
    fn run(&self, step: u64, indices: Vec<u64>, mut columns: Vec<Column>) -> Result<Outcome<T>> {
        let (start, io) = (Instant::now(), IoStats::this_thread());
        let mut bytes = 0;
        for ((name, stream), column) in self.names.iter().zip(&self.streams).zip(&mut columns) {
            match column.gather(stream, &indices) {
                Ok(n) => bytes += n,
                Err(source) => {
                    self.pool
                        .give(indices, columns.into_iter().map(Some).collect());
                    return Err(Error::Gather {
                        step,
                        stream: name.to_string(),
                        source,
                    });
                }
            }
        }
        self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        Counters::add_time(&self.counters.gather_ns, start.elapsed());
        let io = IoStats::this_thread().since(&io);
        self.counters
            .disk_bytes
            .fetch_add(io.bytes, Ordering::Relaxed);
        Counters::add_time(&self.counters.io_wait_ns, io.wait);
        let c = &self.counters;
        for (counter, n) in [
            (&c.cache_hits, io.cache_hits),
            (&c.cache_misses, io.cache_misses),
            (&c.fetched_bytes, io.fetched_bytes),
            (&c.evicted_bytes, io.evicted_bytes),
        ] {
            counter.fetch_add(n, Ordering::Relaxed);
        }
        let batch = Batch {
            step,
            first_position: self.plan.sampler.local_offset(),
            indices,
            names: Arc::clone(&self.names),
            columns: columns.into_iter().map(Some).collect(),
            pool: Some(Arc::clone(&self.pool)),
            mix: self.plan.mix.clone(),
        };
        let start = Instant::now();
        let out = catch_unwind(AssertUnwindSafe(|| (self.transform)(batch))).map_err(|panic| {
            Error::TransformPanicked {
                step,
                message: panic_message(&*panic),
            }
        });
        Counters::add_time(&self.counters.transform_ns, start.elapsed());
        out
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
