//! [`Metrics`]: what a batcher has done, readable from any thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How many recent request latencies the percentiles cover.
pub(crate) const LATENCY_WINDOW: usize = 8192;

/// Live counters of a [`Batcher`](crate::Batcher); read them with
/// [`snapshot`](Metrics::snapshot).
#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    answered: AtomicU64,
    failed: AtomicU64,
    rejected: AtomicU64,
    batches: AtomicU64,
    batch_requests: AtomicU64,
    batch_records: AtomicU64,
    busy_ns: AtomicU64,
    latencies: Mutex<Ring>,
}

/// The last [`LATENCY_WINDOW`] latencies, in nanoseconds.
#[derive(Debug, Default)]
struct Ring {
    values: Vec<u64>,
    next: usize,
}

/// The metrics at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Requests answered with a prediction.
    pub requests: u64,
    /// Requests answered with an error from the model or the store.
    pub failed: u64,
    /// Requests refused before reaching a batch: unknown ids, too many ids,
    /// a full queue, shutdown — and whatever a front end counted with
    /// [`Metrics::count_rejected`] (malformed requests).
    pub rejected: u64,
    /// Batches run (gather + forward passes, retries included).
    pub batches: u64,
    /// Records gathered over all batches.
    pub records: u64,
    /// Mean records per batch: the batch size the model saw.
    pub mean_batch_size: f64,
    /// Mean requests per batch: how many requests each pass served.
    pub mean_batch_requests: f64,
    /// Median request latency (submit to answer) over the recent window.
    pub latency_p50: Duration,
    /// 99th-percentile request latency over the recent window.
    pub latency_p99: Duration,
    /// Largest request latency over the recent window.
    pub latency_max: Duration,
    /// Requests the percentiles cover (the most recent, at most 8192).
    pub latency_window: usize,
    /// Time spent running batches (gather + forward).
    pub busy: Duration,
    /// Time since the batcher started.
    pub uptime: Duration,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            started: Instant::now(),
            answered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            batch_requests: AtomicU64::new(0),
            batch_records: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            latencies: Mutex::new(Ring::default()),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().try_into().unwrap_or(u64::MAX)
}

impl Metrics {
    /// Counts a request refused before it reached the batcher (a front end's
    /// malformed request, say), so [`MetricsSnapshot::rejected`] covers it.
    pub fn count_rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn batch(&self, requests: usize, records: usize, busy: Duration) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batch_requests
            .fetch_add(requests as u64, Ordering::Relaxed);
        self.batch_records
            .fetch_add(records as u64, Ordering::Relaxed);
        self.busy_ns.fetch_add(nanos(busy), Ordering::Relaxed);
    }

    pub(crate) fn answered(&self, ok: bool, latency: Duration) {
        let counter = if ok { &self.answered } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        let mut ring = self
            .latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ns = nanos(latency);
        if ring.values.len() < LATENCY_WINDOW {
            ring.values.push(ns);
        } else {
            let at = ring.next;
            ring.values[at] = ns;
        }
        ring.next = (ring.next + 1) % LATENCY_WINDOW;
    }

    /// The current values; sorts the latency window (8192 values at most).
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut latencies = self
            .latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values
            .clone();
        latencies.sort_unstable();
        let quantile = |q: f64| {
            if latencies.is_empty() {
                return Duration::ZERO;
            }
            // Nearest rank.
            let rank = (q * latencies.len() as f64).ceil() as usize;
            Duration::from_nanos(latencies[rank.clamp(1, latencies.len()) - 1])
        };
        let batches = get(&self.batches);
        let per_batch = |total: u64| {
            if batches == 0 {
                0.0
            } else {
                total as f64 / batches as f64
            }
        };
        MetricsSnapshot {
            requests: get(&self.answered),
            failed: get(&self.failed),
            rejected: get(&self.rejected),
            batches,
            records: get(&self.batch_records),
            mean_batch_size: per_batch(get(&self.batch_records)),
            mean_batch_requests: per_batch(get(&self.batch_requests)),
            latency_p50: quantile(0.5),
            latency_p99: quantile(0.99),
            latency_max: latencies
                .last()
                .map_or(Duration::ZERO, |&ns| Duration::from_nanos(ns)),
            latency_window: latencies.len(),
            busy: Duration::from_nanos(get(&self.busy_ns)),
            uptime: self.started.elapsed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank_over_the_window() {
        let m = Metrics::default();
        for ms in 1..=100 {
            m.answered(true, Duration::from_millis(ms));
        }
        m.batch(100, 400, Duration::from_millis(5));
        let s = m.snapshot();
        assert_eq!(s.requests, 100);
        assert_eq!(s.latency_p50, Duration::from_millis(50));
        assert_eq!(s.latency_p99, Duration::from_millis(99));
        assert_eq!(s.latency_max, Duration::from_millis(100));
        assert_eq!((s.mean_batch_size, s.mean_batch_requests), (400.0, 100.0));
        for _ in 0..LATENCY_WINDOW {
            m.answered(false, Duration::from_micros(1));
        }
        let s = m.snapshot();
        assert_eq!(
            (s.failed, s.latency_window),
            (LATENCY_WINDOW as u64, LATENCY_WINDOW)
        );
        assert_eq!(s.latency_max, Duration::from_micros(1));
    }
}
