//! [`IoStats`]: what a thread's gathers read from storage, and how long
//! they waited for it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::Result;

/// The explicit reads a thread's gathers made of store files: how many,
/// how many bytes, and how long the thread was blocked waiting for them.
///
/// Reads through memory maps ([`Io::Mapped`](super::Io::Mapped)) are page
/// faults, not reads, and are not counted; with [`Io::Direct`](super::Io::Direct)
/// (or a storage without maps) every record and table entry a gather reads is.
/// The totals are per thread, so a caller measures its own gathers exactly
/// even while other threads read the same store:
///
/// ```
/// use zrecord::storage::{Io, IoStats};
/// use zrecord::{Codec, DenseStore, OpenOptions};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("x");
/// DenseStore::<u8>::create(&path, &[784], Codec::Raw)?.append(&vec![7; 784 * 100])?;
/// let store: DenseStore<u8> = OpenOptions::new().io(Io::Direct).open(&path)?;
///
/// let before = IoStats::this_thread();
/// store.gather(&[3, 50, 99])?;
/// let read = IoStats::this_thread().since(&before);
/// assert!(read.bytes >= 3 * 784); // the records, and their table entries
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoStats {
    /// Reads asked of the storage (before nearby ones are merged).
    pub reads: u64,
    /// Bytes those reads returned.
    pub bytes: u64,
    /// Time the thread spent blocked in them.
    pub wait: Duration,
    /// Blocks a caching backend (object storage) served from its cache.
    pub cache_hits: u64,
    /// Blocks it fetched from remote storage.
    pub cache_misses: u64,
    /// Bytes it fetched from remote storage.
    pub fetched_bytes: u64,
    /// Bytes it evicted from its cache to make room.
    pub evicted_bytes: u64,
}

/// A caching backend's work for one read, added to the reading thread's
/// [`IoStats`] with [`IoStats::add_cache_work`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheWork {
    /// Blocks served from the cache.
    pub hits: u64,
    /// Blocks fetched from remote storage.
    pub misses: u64,
    /// Bytes fetched from remote storage.
    pub fetched_bytes: u64,
    /// Bytes evicted from the cache.
    pub evicted_bytes: u64,
}

thread_local! {
    static THIS_THREAD: Cell<IoStats> = const {
        Cell::new(IoStats {
            reads: 0,
            bytes: 0,
            wait: Duration::ZERO,
            cache_hits: 0,
            cache_misses: 0,
            fetched_bytes: 0,
            evicted_bytes: 0,
        })
    };
}

impl IoStats {
    /// The calling thread's totals since it started.
    pub fn this_thread() -> IoStats {
        THIS_THREAD.with(Cell::get)
    }

    /// What was counted between `earlier` (taken on the same thread) and `self`.
    pub fn since(&self, earlier: &IoStats) -> IoStats {
        IoStats {
            reads: self.reads.saturating_sub(earlier.reads),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            wait: self.wait.saturating_sub(earlier.wait),
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            cache_misses: self.cache_misses.saturating_sub(earlier.cache_misses),
            fetched_bytes: self.fetched_bytes.saturating_sub(earlier.fetched_bytes),
            evicted_bytes: self.evicted_bytes.saturating_sub(earlier.evicted_bytes),
        }
    }

    /// Adds a caching backend's work to the calling thread's totals. A
    /// [`StorageFile`](super::StorageFile) that fetches from remote storage
    /// calls it from the thread that asked for the read, so the gathers of
    /// that thread — a loader's worker — are charged with it.
    pub fn add_cache_work(work: CacheWork) {
        THIS_THREAD.with(|stats| {
            let mut s = stats.get();
            s.cache_hits += work.hits;
            s.cache_misses += work.misses;
            s.fetched_bytes += work.fetched_bytes;
            s.evicted_bytes += work.evicted_bytes;
            stats.set(s);
        });
    }
}

/// Runs `read`, which reads `reads` pieces of `bytes` bytes in all, and adds
/// it to the calling thread's totals (failed reads count too: they waited).
pub(crate) fn counted(reads: usize, bytes: usize, read: impl FnOnce() -> Result<()>) -> Result<()> {
    let start = Instant::now();
    let result = read();
    let wait = start.elapsed();
    THIS_THREAD.with(|stats| {
        let mut s = stats.get();
        s.reads += reads as u64;
        s.bytes += bytes as u64;
        s.wait += wait;
        stats.set(s);
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_thread_and_since_subtracts() {
        let before = IoStats::this_thread();
        counted(3, 300, || Ok(())).unwrap();
        counted(1, 16, || Err(crate::Error::InvalidArgument("x".into()))).unwrap_err();
        let d = IoStats::this_thread().since(&before);
        assert_eq!((d.reads, d.bytes), (4, 316));
        let other = std::thread::spawn(IoStats::this_thread).join().unwrap();
        assert_eq!((other.reads, other.bytes), (0, 0));

        IoStats::add_cache_work(CacheWork {
            hits: 2,
            misses: 1,
            fetched_bytes: 4096,
            evicted_bytes: 512,
        });
        let d = IoStats::this_thread().since(&before);
        let cache = (
            d.cache_hits,
            d.cache_misses,
            d.fetched_bytes,
            d.evicted_bytes,
        );
        assert_eq!(cache, (2, 1, 4096, 512));
    }
}
