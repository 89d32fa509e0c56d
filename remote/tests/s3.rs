//! Stores read from an S3-compatible server on loopback, through a proxy
//! that spoils requests: the bytes are the local store's, retries mend what
//! they can, and what they cannot fails fast with the object and range named.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::proxy::{Fault, Proxy};
use zrecord::{Codec, DenseStore, DynDenseStore, DynRaggedStore, OpenOptions, RaggedStore};
use zrecord_remote::Remote;

const RECORDS: u64 = 3_000;

/// A dense store of `RECORDS` 100-byte records (zstd) and a ragged one of
/// `i32` sequences, written under `dir`.
fn write_stores(dir: &Path) {
    let dense = DenseStore::<u8>::create(dir.join("dense"), &[100], Codec::Zstd).unwrap();
    let bytes: Vec<u8> = (0..RECORDS * 100).map(|i| (i * 7 % 251) as u8).collect();
    dense.append(&bytes).unwrap();
    let ragged = RaggedStore::<i32>::create(dir.join("ragged"), Codec::Raw).unwrap();
    let seqs: Vec<Vec<i32>> = (0..RECORDS as i32)
        .map(|i| (0..i % 37).map(|k| i * 100 + k).collect())
        .collect();
    ragged.append_slices(&seqs).unwrap();
}

/// Both stores, written to a temporary folder and uploaded to a new bucket.
fn uploaded(endpoint: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    write_stores(dir.path());
    let bucket = support::bucket(endpoint, "zr");
    support::upload(endpoint, &bucket, "sets/dense", &dir.path().join("dense"));
    support::upload(endpoint, &bucket, "sets/ragged", &dir.path().join("ragged"));
    (dir, bucket)
}

fn indices() -> Vec<u64> {
    (0..256u64).map(|i| i * 2_654_435_761 % RECORDS).collect()
}

/// The `zrecord_remote::Error` inside a store error, if any.
fn remote_error(e: &zrecord::Error) -> Option<&zrecord_remote::Error> {
    match e {
        zrecord::Error::Io { source, .. } => source.get_ref()?.downcast_ref(),
        _ => None,
    }
}

#[test]
fn remote_gathers_equal_local_ones_with_and_without_a_cache() {
    let (endpoint, _watchdog) = server_or_skip!();
    let (dir, bucket) = uploaded(endpoint);
    let local = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(dir.path().join("dense"))
        .unwrap();
    let local_ragged = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<RaggedStore<i32>>(dir.path().join("ragged"))
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let with_cache = || {
        support::s3_options(endpoint)
            .cache(cache.path(), 64 << 20)
            .block_bytes(64 << 10)
    };
    for options in [support::s3_options(endpoint), with_cache(), with_cache()] {
        let (remote, dense) =
            support::open_dense(&format!("s3://{bucket}/sets/dense"), options.clone());
        assert_eq!(dense.len(), RECORDS);
        assert_eq!(
            dense.gather(&indices()).unwrap(),
            local.gather(&indices()).unwrap()
        );

        let ragged_remote =
            Arc::new(Remote::open(&format!("s3://{bucket}/sets/ragged"), options).unwrap());
        let ragged = OpenOptions::new()
            .read_only(true)
            .open::<DynRaggedStore>(ragged_remote)
            .unwrap()
            .typed::<i32>()
            .unwrap();
        assert_eq!(
            ragged.gather(&indices()).unwrap(),
            local_ragged.gather(&indices()).unwrap()
        );
        eprintln!("{:?}", remote.stats());
    }
    // The third open found every block the second fetched.
    let (remote, dense) = support::open_dense(&format!("s3://{bucket}/sets/dense"), with_cache());
    dense.gather(&indices()).unwrap();
    let stats = remote.stats();
    assert_eq!((stats.misses, stats.requests), (0, 0), "{stats:?}");
    assert!(stats.hits > 0);
}

#[test]
fn writes_are_refused_and_a_missing_folder_is_not_a_store() {
    let (endpoint, _watchdog) = server_or_skip!();
    let (_dir, bucket) = uploaded(endpoint);
    let remote = Arc::new(
        Remote::open(
            &format!("s3://{bucket}/sets/dense"),
            support::s3_options(endpoint),
        )
        .unwrap(),
    );
    let writable = OpenOptions::new().open::<DynDenseStore>(remote).err();
    assert!(
        matches!(writable, Some(zrecord::Error::ReadOnly { .. })),
        "{writable:?}"
    );

    let missing = Arc::new(
        Remote::open(
            &format!("s3://{bucket}/sets/nothing"),
            support::s3_options(endpoint),
        )
        .unwrap(),
    );
    let open = OpenOptions::new()
        .read_only(true)
        .open::<DynDenseStore>(missing)
        .err();
    assert!(
        matches!(open, Some(zrecord::Error::NotAStore { .. })),
        "{open:?}"
    );
}

#[test]
fn retries_mend_unavailable_dropped_and_truncated_answers() {
    let (endpoint, _watchdog) = server_or_skip!();
    let (dir, bucket) = uploaded(endpoint);
    let local = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(dir.path().join("dense"))
        .unwrap();
    let proxy = Proxy::start(endpoint);
    let options = support::s3_options(&proxy.endpoint)
        .retries(5, Duration::from_millis(10))
        .attempt_timeout(Duration::from_secs(5));
    let (remote, dense) = support::open_dense(&format!("s3://{bucket}/sets/dense"), options);
    proxy.then(&[
        Fault::Unavailable,
        Fault::Unavailable,
        Fault::Drop,
        Fault::Truncate,
    ]);
    assert_eq!(
        dense.gather(&indices()).unwrap(),
        local.gather(&indices()).unwrap()
    );
    assert_eq!(proxy.applied(), 4);
    assert!(remote.stats().retries >= 4, "{:?}", remote.stats());
}

#[test]
fn a_read_that_cannot_succeed_fails_fast_naming_object_and_range() {
    let (endpoint, _watchdog) = server_or_skip!();
    let (_dir, bucket) = uploaded(endpoint);
    let proxy = Proxy::start(endpoint);
    let url = format!("s3://{bucket}/sets/dense");

    // Every answer a 503: the retries run out.
    let options = support::s3_options(&proxy.endpoint).retries(2, Duration::from_millis(10));
    let (_, dense) = support::open_dense(&url, options);
    proxy.always(Some(Fault::Unavailable));
    let started = Instant::now();
    let error = dense.gather(&[5, 6]).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    let inner = remote_error(&error).unwrap_or_else(|| panic!("{error:?}"));
    match inner {
        zrecord_remote::Error::Fetch {
            object,
            range,
            attempts,
            ..
        } => {
            assert!(object.starts_with(&url), "{object}");
            assert!(range.end > range.start);
            assert_eq!(*attempts, 3);
        }
        other => panic!("{other:?}"),
    }
    assert!(inner.to_string().contains("bytes"), "{inner}");

    // Every answer stalls: each attempt is abandoned, the deadline ends it.
    proxy.always(None);
    let options = support::s3_options(&proxy.endpoint)
        .retries(100, Duration::from_millis(10))
        .attempt_timeout(Duration::from_millis(200))
        .deadline(Duration::from_secs(1));
    let (_, dense) = support::open_dense(&url, options);
    proxy.always(Some(Fault::Stall(Duration::from_secs(30))));
    let started = Instant::now();
    let error = dense.gather(&[7]).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(
            remote_error(&error),
            Some(zrecord_remote::Error::Deadline { .. })
        ),
        "{error:?}"
    );
    proxy.always(None);
}

/// The child half of the test below: opens the store through a proxy with
/// the cache folder given, then starts a gather whose every request stalls.
#[test]
fn child_stalled_download() {
    let Ok(spec) = std::env::var("ZRECORD_REMOTE_STALL") else {
        return;
    };
    let (url, cache) = spec.split_once('|').unwrap();
    let proxy = Proxy::start(support::endpoint().unwrap());
    let options = support::s3_options(&proxy.endpoint)
        .cache(cache, 1 << 30)
        .block_bytes(16 << 10);
    let (_, dense) = support::open_dense(url, options);
    proxy.always(Some(Fault::Stall(Duration::from_secs(600))));
    println!("ready");
    let _ = dense.gather(&indices());
}

#[test]
fn a_killed_download_leaves_no_lock_behind() {
    use std::io::BufRead;
    let (endpoint, _watchdog) = server_or_skip!();
    let (dir, bucket) = uploaded(endpoint);
    let url = format!("s3://{bucket}/sets/dense");
    let cache = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_stalled_download", "--nocapture"])
        .env(
            "ZRECORD_REMOTE_STALL",
            format!("{url}|{}", cache.path().display()),
        )
        .env("ZRECORD_S3_ENDPOINT", endpoint)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("ready"))),
        "the child did not start"
    );
    std::thread::sleep(Duration::from_millis(500));
    let options = |deadline| {
        support::s3_options(endpoint)
            .cache(cache.path(), 1 << 30)
            .block_bytes(16 << 10)
            .deadline(deadline)
    };
    let local = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(dir.path().join("dense"))
        .unwrap();

    // While the child holds its download locks, a reader waits its
    // deadline for them, then reads through.
    let (remote, dense) = support::open_dense(&url, options(Duration::from_millis(500)));
    assert_eq!(
        dense.gather(&indices()).unwrap(),
        local.gather(&indices()).unwrap()
    );
    assert!(remote.stats().read_through > 0, "{:?}", remote.stats());

    // Killed, the child's locks are gone: the next reader fetches and keeps
    // every block without waiting.
    child.kill().unwrap();
    child.wait().unwrap();
    let (remote, dense) = support::open_dense(&url, options(Duration::from_secs(60)));
    let started = Instant::now();
    assert_eq!(
        dense.gather(&indices()).unwrap(),
        local.gather(&indices()).unwrap()
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(remote.stats().read_through, 0, "{:?}", remote.stats());
}
