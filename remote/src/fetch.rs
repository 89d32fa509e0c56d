//! Ranged GETs: many in flight, each retried with backoff and bounded by a
//! deadline, each answer checked to be exactly the bytes asked for.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::stats::Stats;
use crate::{Error, Result, runtime};

/// How requests are made (see `RemoteOptions`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    /// Requests in flight at once, per call.
    pub(crate) concurrency: usize,
    /// The longest one attempt may take before it is abandoned and retried.
    pub(crate) attempt_timeout: Duration,
    /// The longest one read may take, retries included.
    pub(crate) deadline: Duration,
    /// Retries after the first attempt.
    pub(crate) retries: u32,
    /// The wait before the first retry; it doubles each time, up to 2 s.
    pub(crate) backoff: Duration,
}

/// Fetches byte ranges of objects in one object store.
#[derive(Clone, Debug)]
pub(crate) struct Fetcher {
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) policy: Policy,
    pub(crate) stats: Arc<Stats>,
}

impl Fetcher {
    /// Fetches `ranges` of the object at `path` (named `url` in errors),
    /// `policy.concurrency` requests in flight; answers in order.
    pub(crate) fn fetch(
        &self,
        path: &ObjectPath,
        url: &str,
        ranges: Vec<Range<u64>>,
    ) -> Result<Vec<Bytes>> {
        let this = self.clone();
        let (path, url) = (path.clone(), Arc::<str>::from(url));
        runtime::run(async move {
            let concurrency = this.policy.concurrency.max(1);
            futures::stream::iter(ranges)
                .map(|range| this.fetch_one(&path, &url, range))
                .buffered(concurrency)
                .try_collect()
                .await
        })
    }

    async fn fetch_one(&self, path: &ObjectPath, url: &str, range: Range<u64>) -> Result<Bytes> {
        let policy = self.policy;
        let started = Instant::now();
        let want = range.end - range.start;
        let mut attempts = 0u32;
        loop {
            let left = policy.deadline.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(deadline(url, &range, policy.deadline));
            }
            attempts += 1;
            self.stats.add(&self.stats.requests, 1);
            if attempts > 1 {
                self.stats.add(&self.stats.retries, 1);
            }
            let attempt = self.store.get_range(path, range.clone());
            let failure: Box<dyn std::error::Error + Send + Sync> =
                match tokio::time::timeout(policy.attempt_timeout.min(left), attempt).await {
                    Ok(Ok(bytes)) if bytes.len() as u64 == want => {
                        self.stats.add(&self.stats.bytes_fetched, want);
                        return Ok(bytes);
                    }
                    Ok(Ok(bytes)) => {
                        format!("{} bytes arrived, {want} were asked for", bytes.len()).into()
                    }
                    Ok(Err(e)) if is_permanent(&e) => {
                        return Err(Error::Fetch {
                            object: url.into(),
                            range,
                            attempts,
                            source: Box::new(e),
                        });
                    }
                    Ok(Err(e)) => Box::new(e),
                    Err(_) => {
                        format!("no answer within {:?}", policy.attempt_timeout.min(left)).into()
                    }
                };
            if attempts > policy.retries {
                return Err(Error::Fetch {
                    object: url.into(),
                    range,
                    attempts,
                    source: failure,
                });
            }
            let wait = backoff(policy.backoff, attempts);
            if started.elapsed() + wait >= policy.deadline {
                return Err(deadline(url, &range, policy.deadline));
            }
            tokio::time::sleep(wait).await;
        }
    }
}

fn deadline(url: &str, range: &Range<u64>, deadline: Duration) -> Error {
    Error::Deadline {
        object: url.into(),
        range: range.clone(),
        deadline,
    }
}

/// Failures no retry can mend.
fn is_permanent(error: &object_store::Error) -> bool {
    use object_store::Error as E;
    matches!(
        error,
        E::NotFound { .. }
            | E::InvalidPath { .. }
            | E::NotSupported { .. }
            | E::PermissionDenied { .. }
            | E::Unauthenticated { .. }
            | E::UnknownConfigurationKey { .. }
            | E::NotImplemented { .. }
    )
}

/// The wait before retry `attempt` (1 = the first retry): `base` doubled
/// per retry, at most 2 s, with up to half again added so that many
/// clients failing at once do not retry in step.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let doubled = base.saturating_mul(1 << attempt.saturating_sub(1).min(16));
    let capped = doubled.min(Duration::from_secs(2));
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let nanos = clock.unwrap_or_default().subsec_nanos() ^ std::process::id();
    let jitter = capped.mul_f64(f64::from(nanos % 1000) / 2000.0);
    capped + jitter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_two_seconds_and_a_half() {
        let base = Duration::from_millis(100);
        let first = backoff(base, 1);
        assert!(first >= base && first <= base.mul_f64(1.5));
        let third = backoff(base, 3);
        assert!(third >= base * 4 && third <= (base * 4).mul_f64(1.5));
        let late = backoff(base, 30);
        assert!(late >= Duration::from_secs(2) && late <= Duration::from_secs(3));
    }
}
