//! The loader over a store in object storage: its counters show the cache's
//! work, and a read that cannot succeed is an error at its step.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use support::proxy::{Fault, Proxy};
use zrecord::{Codec, DenseStore, DynDenseStore, OpenOptions};
use zrecord_loader::Loader;
use zrecord_remote::{Remote, RemoteOptions};

fn remote_store(url: &str, options: RemoteOptions) -> DenseStore<u8> {
    let remote = Arc::new(Remote::open(url, options).unwrap());
    OpenOptions::new()
        .read_only(true)
        .open::<DynDenseStore>(remote)
        .unwrap()
        .typed::<u8>()
        .unwrap()
}

/// Uploads a store of 2,000 records of 784 bytes; returns its URL.
fn uploaded(endpoint: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let store = DenseStore::<u8>::create(dir.path(), &[784], Codec::Raw).unwrap();
    let bytes: Vec<u8> = (0..2_000 * 784).map(|i| (i % 241) as u8).collect();
    store.append(&bytes).unwrap();
    drop(store);
    let bucket = support::bucket(endpoint, "loader");
    support::upload(endpoint, &bucket, "mnist", dir.path());
    format!("s3://{bucket}/mnist")
}

#[test]
fn counters_show_fetches_then_cache_hits() {
    let (endpoint, _watchdog) = server_or_skip!();
    let url = uploaded(endpoint);
    let cache = tempfile::tempdir().unwrap();
    let options = || {
        support::s3_options(endpoint)
            .cache(cache.path(), 1 << 30)
            .block_bytes(64 << 10)
    };
    let run = || {
        let mut loader = Loader::builder(64)
            .stream("image", remote_store(&url, options()))
            .workers(2)
            .seed(7)
            .build()
            .unwrap();
        for batch in loader.steps(20) {
            batch.unwrap();
        }
        let counters = loader.counters();
        drop(loader);
        counters.snapshot()
    };
    let cold = run();
    assert!(cold.cache_misses > 0 && cold.fetched_bytes > 0, "{cold:?}");
    let warm = run();
    assert_eq!((warm.cache_misses, warm.fetched_bytes), (0, 0), "{warm:?}");
    assert!(warm.cache_hits > 0, "{warm:?}");
}

#[test]
fn a_failed_read_is_an_error_at_its_step_not_a_hang() {
    let (endpoint, _watchdog) = server_or_skip!();
    let url = uploaded(endpoint);
    let proxy = Proxy::start(endpoint);
    let options = support::s3_options(&proxy.endpoint)
        .retries(2, Duration::from_millis(10))
        .attempt_timeout(Duration::from_millis(300))
        .deadline(Duration::from_secs(2));
    let store = remote_store(&url, options);
    proxy.always(Some(Fault::Unavailable));
    let mut loader = Loader::builder(64)
        .stream("image", store)
        .workers(2)
        .build()
        .unwrap();
    let started = Instant::now();
    let first = loader.steps(1).next().unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    match first {
        Err(zrecord_loader::Error::Gather {
            step,
            stream,
            source,
        }) => {
            assert_eq!((step, stream.as_str()), (0, "image"));
            let message = format!("{source}: {}", std::error::Error::source(&source).unwrap());
            assert!(
                message.contains(&url) && message.contains("bytes"),
                "{message}"
            );
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a batch arrived through a server that answers 503"),
    }
}
