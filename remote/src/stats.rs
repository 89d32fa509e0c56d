//! What the cache and the fetcher did, counted for the loader's counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// Running counts of one remote store (see [`CacheStats`]).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) hits: AtomicU64,
    pub(crate) misses: AtomicU64,
    pub(crate) read_through: AtomicU64,
    pub(crate) bytes_fetched: AtomicU64,
    pub(crate) bytes_evicted: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) retries: AtomicU64,
}

impl Stats {
    pub(crate) fn add(&self, counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one read's cache work (its fetched bytes are counted by the fetcher).
    pub(crate) fn record(&self, work: &zrecord::storage::CacheWork) {
        self.add(&self.hits, work.hits);
        self.add(&self.misses, work.misses);
        self.add(&self.bytes_evicted, work.evicted_bytes);
    }

    pub(crate) fn snapshot(&self) -> CacheStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CacheStats {
            hits: get(&self.hits),
            misses: get(&self.misses),
            read_through: get(&self.read_through),
            bytes_fetched: get(&self.bytes_fetched),
            bytes_evicted: get(&self.bytes_evicted),
            requests: get(&self.requests),
            retries: get(&self.retries),
        }
    }
}

/// What one remote store's reads did since it was opened.
///
/// Blocks are the cache's unit (see `RemoteOptions::block_bytes`); without
/// a cache, `hits`, `misses` and `read_through` stay zero and
/// `bytes_fetched` counts the bytes of the merged requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Blocks read from the local cache.
    pub hits: u64,
    /// Blocks fetched from object storage.
    pub misses: u64,
    /// Fetched blocks that were not kept (no room beside pinned stores, a
    /// limit below one block, or a download another process did not finish in time).
    pub read_through: u64,
    /// Bytes fetched from object storage.
    pub bytes_fetched: u64,
    /// Bytes of blocks this process evicted from the cache (any store's).
    pub bytes_evicted: u64,
    /// Ranged GET requests sent, retries included.
    pub requests: u64,
    /// Requests that were retries of a failed one.
    pub retries: u64,
}
