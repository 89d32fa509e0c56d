//! Pipeline counters, readable from any thread while the loader runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Live counters of a loader; get them with
/// [`Loader::counters`](crate::Loader::counters) and read a
/// [`snapshot`](Counters::snapshot) whenever you like (from another thread too).
///
/// Times are summed over all worker threads, so gather and transform time can
/// exceed wall time.
#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) steps: AtomicU64,
    pub(crate) ready: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) gather_ns: AtomicU64,
    pub(crate) disk_bytes: AtomicU64,
    pub(crate) io_wait_ns: AtomicU64,
    pub(crate) transform_ns: AtomicU64,
    pub(crate) wait_ns: AtomicU64,
    pub(crate) buffers_allocated: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) cache_misses: AtomicU64,
    pub(crate) fetched_bytes: AtomicU64,
    pub(crate) evicted_bytes: AtomicU64,
    pub(crate) bad_records_skipped: AtomicU64,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterSnapshot {
    /// Batches handed to the consumer.
    pub steps_delivered: u64,
    /// Batches finished and waiting for the consumer.
    pub ready: u64,
    /// Batches claimed by workers and not yet delivered (ready ones included).
    pub in_flight: u64,
    /// Bytes gathered from the stores (before any transform).
    pub bytes_gathered: u64,
    /// Time spent gathering, summed over workers.
    pub gather_time: Duration,
    /// Bytes the gathers read from storage with explicit reads: with
    /// [`Io::Direct`](zrecord::storage::Io::Direct), the records and table
    /// entries read from disk; with memory maps, nothing is counted (see
    /// [`IoStats`](zrecord::storage::IoStats)).
    pub disk_bytes_read: u64,
    /// Part of `gather_time` spent blocked on those reads: close to
    /// `gather_time` means the gathers wait on the disk, not on the CPU.
    pub io_wait: Duration,
    /// Time spent in the transform, summed over workers.
    pub transform_time: Duration,
    /// Time `next()` spent blocked waiting for a batch: if this is a large
    /// share of the training loop's wall time, the loader is the bottleneck.
    pub consumer_wait: Duration,
    /// Stream buffers allocated rather than recycled.
    pub buffers_allocated: u64,
    /// Stores in object storage read through a node cache: cache **blocks**
    /// (of [`RemoteOptions::block_bytes`], 1 MiB by default — not records)
    /// the gathers found in the local cache. A record spanning two blocks
    /// counts two; many records in one block count one.
    ///
    /// [`RemoteOptions::block_bytes`]: https://docs.rs/zrecord-remote/latest/zrecord_remote/struct.RemoteOptions.html#method.block_bytes
    pub cache_hits: u64,
    /// Cache blocks the gathers fetched from object storage (as `cache_hits`
    /// counts them); without a cache, zero (see `fetched_bytes`).
    pub cache_misses: u64,
    /// Bytes fetched from object storage (whole blocks with a cache, merged
    /// ranges without): compare with `bytes_gathered` for the overhead.
    pub fetched_bytes: u64,
    /// Bytes evicted from the local cache to make room for the fetched ones.
    pub evicted_bytes: u64,
    /// Records replaced by substitutes in the batches delivered, under
    /// [`BadRecords::Skip`](crate::BadRecords::Skip): each time a record is
    /// met, so a bad record in every pass counts once a pass.
    pub bad_records_skipped: u64,
}

/// Sums two loaders' counters (the Burn data loader adds its epochs' loaders).
impl std::ops::AddAssign for CounterSnapshot {
    fn add_assign(&mut self, other: CounterSnapshot) {
        self.steps_delivered += other.steps_delivered;
        self.ready += other.ready;
        self.in_flight += other.in_flight;
        self.bytes_gathered += other.bytes_gathered;
        self.gather_time += other.gather_time;
        self.disk_bytes_read += other.disk_bytes_read;
        self.io_wait += other.io_wait;
        self.transform_time += other.transform_time;
        self.consumer_wait += other.consumer_wait;
        self.buffers_allocated += other.buffers_allocated;
        self.cache_hits += other.cache_hits;
        self.cache_misses += other.cache_misses;
        self.fetched_bytes += other.fetched_bytes;
        self.evicted_bytes += other.evicted_bytes;
        self.bad_records_skipped += other.bad_records_skipped;
    }
}

impl Counters {
    /// The current values.
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterSnapshot {
            steps_delivered: get(&self.steps),
            ready: get(&self.ready),
            in_flight: get(&self.in_flight),
            bytes_gathered: get(&self.bytes),
            gather_time: Duration::from_nanos(get(&self.gather_ns)),
            disk_bytes_read: get(&self.disk_bytes),
            io_wait: Duration::from_nanos(get(&self.io_wait_ns)),
            transform_time: Duration::from_nanos(get(&self.transform_ns)),
            consumer_wait: Duration::from_nanos(get(&self.wait_ns)),
            buffers_allocated: get(&self.buffers_allocated),
            cache_hits: get(&self.cache_hits),
            cache_misses: get(&self.cache_misses),
            fetched_bytes: get(&self.fetched_bytes),
            evicted_bytes: get(&self.evicted_bytes),
            bad_records_skipped: get(&self.bad_records_skipped),
        }
    }

    pub(crate) fn add_time(counter: &AtomicU64, d: Duration) {
        counter.fetch_add(
            d.as_nanos().try_into().unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }
}
