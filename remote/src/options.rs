//! What a remote store is opened with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fetch::Policy;

/// How a remote store is read: requests, retries and the local cache.
///
/// ```
/// use std::time::Duration;
/// use zrecord_remote::RemoteOptions;
///
/// let options = RemoteOptions::new()
///     .cache("/mnt/nvme/zrecord-cache", 200 << 30) // 200 GiB, shared by the node
///     .concurrency(64)
///     .deadline(Duration::from_secs(60));
/// assert_eq!(options.cache_limit(), 200 << 30);
/// ```
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    pub(crate) cache: Option<PathBuf>,
    pub(crate) cache_limit: u64,
    pub(crate) block_bytes: u64,
    pub(crate) pin: bool,
    pub(crate) store_options: Vec<(String, String)>,
    pub(crate) instance_metadata: bool,
    pub(crate) merge_gap: u64,
    pub(crate) max_request: u64,
    pub(crate) policy: Policy,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            cache: None,
            cache_limit: 0,
            block_bytes: 1 << 20,
            pin: false,
            store_options: Vec::new(),
            instance_metadata: false,
            merge_gap: 256 << 10,
            max_request: 8 << 20,
            policy: Policy {
                concurrency: 32,
                attempt_timeout: Duration::from_secs(30),
                deadline: Duration::from_secs(120),
                retries: 5,
                backoff: Duration::from_millis(100),
            },
        }
    }
}

impl RemoteOptions {
    /// No cache, 32 requests in flight, gaps up to 256 KiB merged, requests
    /// of at most 8 MiB, 5 retries within a 120 s deadline, 30 s per attempt.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps fetched blocks in the folder `dir` (created if missing), using
    /// at most `limit` bytes of it; the processes of a node share one folder
    /// and download each block once. A limit smaller than one block reads
    /// through without keeping anything.
    ///
    /// The folder holds `zrecord-cache.lock` and `zrecord-cache.usage` (the
    /// bytes held), and one subfolder per store, named by 16 hex digits of
    /// its URL, with its blocks (`*.zrblock`) and two lock files. Eviction
    /// deletes the least recently used blocks of stores no process pins,
    /// and nothing else: point it at an empty folder or one it made before.
    /// Locks are the operating system's and die with their process; a
    /// download a killed process left is fetched again by the next reader.
    /// Processes sharing a folder should pass the same limit.
    pub fn cache(mut self, dir: impl AsRef<Path>, limit: u64) -> Self {
        self.cache = Some(dir.as_ref().into());
        self.cache_limit = limit;
        self
    }

    /// The cache's unit: blocks of this many bytes are fetched and kept
    /// (default 1 MiB). Larger blocks mean fewer requests and files, but
    /// more unwanted bytes on sparse random reads.
    pub fn block_bytes(mut self, bytes: u64) -> Self {
        self.block_bytes = bytes;
        self
    }

    /// Downloads the whole store into the cache when it is opened and keeps
    /// it there (no eviction) while the store is open. Opening fails when
    /// the store is larger than the cache limit.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// A setting of the object store [`Remote::open`](crate::Remote::open)
    /// builds from a URL, by `object_store`'s key name — `aws_endpoint`,
    /// `aws_allow_http`, `aws_access_key_id`, `google_service_account`,
    /// `azure_storage_account_name`, … — applied over what the environment
    /// sets. An unknown key fails the open.
    pub fn store_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.store_options.push((key.into(), value.into()));
        self
    }

    /// Lets credentials come from the cloud's instance metadata service —
    /// an EC2 instance's role, a GCE instance's service account, an Azure
    /// managed identity — when no other source is set (default off, unless
    /// the variable `ZRECORD_INSTANCE_METADATA` is `true`).
    ///
    /// Off, an `s3://`, `gs://` or `az://` URL with no credentials set fails
    /// to open with [`Error::NoCredentials`](crate::Error::NoCredentials),
    /// naming the variables that supply them, before any request: off a
    /// cloud machine, asking the metadata service only fails, and says
    /// nothing of what is missing.
    pub fn instance_metadata(mut self, allow: bool) -> Self {
        self.instance_metadata = allow;
        self
    }

    /// Requests in flight at once for one batch (default 32).
    pub fn concurrency(mut self, requests: usize) -> Self {
        self.policy.concurrency = requests.max(1);
        self
    }

    /// Without a cache, reads of one batch whose gap is at most `bytes` are
    /// fetched by one request that also fetches the gap (default 256 KiB).
    ///
    /// A request costs a round trip, a gap costs bandwidth: raise it where
    /// requests are dear and bandwidth is not; lower it to save bandwidth
    /// on sparse reads. (BENCHMARKS.md shows the trade on a loopback S3
    /// server.)
    pub fn merge_gap(mut self, bytes: u64) -> Self {
        self.merge_gap = bytes;
        self
    }

    /// Merged requests grow to at most this many bytes (default 8 MiB).
    pub fn max_request(mut self, bytes: u64) -> Self {
        self.max_request = bytes.max(1);
        self
    }

    /// The longest one read may take, retries included (default 120 s);
    /// past it the read fails with [`Error::Deadline`](crate::Error::Deadline).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.policy.deadline = deadline;
        self
    }

    /// The longest one request may take before it is abandoned and retried (default 30 s).
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.policy.attempt_timeout = timeout;
        self
    }

    /// Retries of a failed request — 5xx answers, throttling, dropped
    /// connections, short bodies, timeouts — before the read fails (default 5).
    /// The wait before each doubles from `backoff` (default 100 ms), up to 2 s.
    pub fn retries(mut self, retries: u32, backoff: Duration) -> Self {
        self.policy.retries = retries;
        self.policy.backoff = backoff;
        self
    }

    /// The cache limit in bytes (0 without a cache).
    pub fn cache_limit(&self) -> u64 {
        self.cache_limit
    }
}
