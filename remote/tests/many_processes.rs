//! Many processes on one node cache: eight processes read two overlapping
//! stores from the S3-compatible server through one cache folder whose
//! limit is smaller than one of the stores and than what they read
//! together, while another process pins a third store; then eight more,
//! three of them SIGKILLed in the middle of their downloads. Every record
//! read is checked, no block of record data is downloaded by two processes
//! at once (a proxy in front of the server watches the requests in flight),
//! no process waits forever (a watchdog over the test), the cache ends
//! within its limit, the pinned store's blocks stay, and a local store kept
//! in the cache folder is never touched.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::proxy::Proxy;
use zrecord::{Codec, DenseStore};

const CHILD_ENV: &str = "ZRECORD_MANY_PROCESSES_CHILD";
const PROCESSES: u64 = 8;
const RECORD: usize = 1_000;
const BLOCK: u64 = 64 << 10;
/// Below the large store (3 MB, 46 blocks) and what the processes read.
const LIMIT: u64 = 24 * BLOCK;
/// (name, records): two stores the readers share, one the parent pins.
const STORES: [(&str, u64); 3] = [("large", 3_000), ("small", 800), ("pinned", 500)];

fn value(store: u64, record: u64, at: usize) -> u8 {
    (record
        .wrapping_mul(31)
        .wrapping_add(at as u64 * 7)
        .wrapping_add(store * 101)
        % 251) as u8
}

fn write_store(dir: &Path, store: u64, records: u64) {
    let s = DenseStore::<u8>::create(dir, &[RECORD], Codec::Raw).unwrap();
    let bytes: Vec<u8> = (0..records)
        .flat_map(|r| (0..RECORD).map(move |at| value(store, r, at)))
        .collect();
    s.append(&bytes).unwrap();
}

/// The cache's block files (finished or not): path → bytes.
fn blocks(cache: &Path) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    for dir in std::fs::read_dir(cache).unwrap().flatten() {
        if dir.path().is_dir() {
            for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                if file.file_name().to_string_lossy().contains(".zrblock")
                    && let Ok(meta) = file.metadata()
                {
                    out.insert(file.path(), meta.len());
                }
            }
        }
    }
    out
}

/// The child: reads random batches of both shared stores (its rank seeds
/// them), checks every byte, and says how many batches it read.
#[test]
fn child_reader() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (endpoint, rest) = spec.split_once('|').unwrap();
    let (bucket, rest) = rest.split_once('|').unwrap();
    let (cache, rank) = rest.split_once('|').unwrap();
    let rank: u64 = rank.parse().unwrap();
    let options = || {
        support::s3_options(endpoint)
            .cache(cache, LIMIT)
            .block_bytes(BLOCK)
    };
    let stores: Vec<(u64, u64, DenseStore<u8>)> = STORES[..2]
        .iter()
        .enumerate()
        .map(|(i, (name, records))| {
            let (_, store) = support::open_dense(&format!("s3://{bucket}/{name}"), options());
            (i as u64, *records, store)
        })
        .collect();
    let mut state = rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut batches = 0;
    for _ in 0..12 {
        for (id, records, store) in &stores {
            let indices: Vec<u64> = (0..48).map(|_| next(*records)).collect();
            let got = store.gather(&indices).unwrap();
            for (&r, row) in indices.iter().zip(got.outer_iter()) {
                for (at, &b) in row.iter().enumerate() {
                    assert_eq!(b, value(*id, r, at), "store {id} record {r} byte {at}");
                }
            }
            batches += 1;
        }
    }
    println!("batches={batches}");
}

fn spawn(endpoint: &str, bucket: &str, cache: &Path, rank: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_reader", "--nocapture", "--test-threads=1"])
        .env(
            CHILD_ENV,
            format!("{endpoint}|{bucket}|{}|{rank}", cache.display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child`, which must have read all its batches.
fn finished(child: Child, rank: u64) {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("batches=24"),
        "reader {rank}: {}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn eight_processes_share_one_cache_below_their_working_set() {
    let (endpoint, _watchdog) = server_or_skip!();
    let bucket = support::bucket(endpoint, "many-processes");
    let data = tempfile::tempdir().unwrap();
    for (id, (name, records)) in STORES.iter().enumerate() {
        let dir = data.path().join(name);
        write_store(&dir, id as u64, *records);
        support::upload(endpoint, &bucket, name, &dir);
    }
    let proxy = Proxy::start(endpoint);
    let cache = tempfile::tempdir().unwrap();

    // A store of the user's own inside the cache folder, and a pinned one.
    let local = cache.path().join("my-local-store");
    write_store(&local, 9, 100);
    let local_files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&local)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    let (_pin, pinned) = support::open_dense(
        &format!("s3://{bucket}/{}", STORES[2].0),
        support::s3_options(&proxy.endpoint)
            .cache(cache.path(), LIMIT)
            .block_bytes(BLOCK)
            .pin(true),
    );
    pinned
        .gather(&(0..STORES[2].1).collect::<Vec<_>>())
        .unwrap();
    let pinned_blocks = blocks(cache.path());
    assert!(!pinned_blocks.is_empty());

    let within_limit = |when: &str| {
        let bytes: u64 = blocks(cache.path()).values().sum();
        assert!(
            bytes <= LIMIT,
            "{when}: {bytes} bytes cached, limit {LIMIT}"
        );
    };

    // Eight readers at once; the cache is sampled while they run.
    let readers: Vec<Child> = (0..PROCESSES)
        .map(|rank| spawn(&proxy.endpoint, &bucket, cache.path(), rank))
        .collect();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(500) {
        within_limit("while eight processes read");
        std::thread::sleep(Duration::from_millis(20));
    }
    for (rank, child) in readers.into_iter().enumerate() {
        finished(child, rank as u64);
    }
    within_limit("after eight processes read");
    let clashes = proxy.overlapping(".chunk");
    assert!(
        clashes.is_empty(),
        "blocks downloaded twice at once: {clashes:?}"
    );

    // Eight more, three of them killed while they download.
    let mut readers: Vec<Option<Child>> = (0..PROCESSES)
        .map(|rank| Some(spawn(&proxy.endpoint, &bucket, cache.path(), 100 + rank)))
        .collect();
    let mut killed_running = 0;
    for (i, rank) in [1usize, 4, 6].into_iter().enumerate() {
        std::thread::sleep(Duration::from_millis(if i == 0 { 500 } else { 400 }));
        let mut child = readers[rank].take().unwrap();
        killed_running += usize::from(child.try_wait().unwrap().is_none());
        child.kill().unwrap();
        child.wait().unwrap();
    }
    assert!(killed_running > 0, "every reader finished before its kill");
    for (rank, child) in readers.into_iter().enumerate() {
        if let Some(child) = child {
            finished(child, 100 + rank as u64);
        }
    }
    // What the killed ones left behind reads back right.
    finished(spawn(&proxy.endpoint, &bucket, cache.path(), 200), 200);
    within_limit("after the killed readers");

    let now = blocks(cache.path());
    for block in pinned_blocks.keys() {
        assert!(
            now.contains_key(block),
            "pinned block {} evicted",
            block.display()
        );
    }
    for (path, bytes) in &local_files {
        assert_eq!(
            std::fs::read(path).ok().as_ref(),
            Some(bytes),
            "the local store's {} changed",
            path.display()
        );
    }
    eprintln!(
        "{} readers ({killed_running} killed while reading), {} ranged GETs, {} cached bytes \
         at the end (limit {LIMIT})",
        2 * PROCESSES + 1,
        proxy.ranged_gets(),
        now.values().sum::<u64>()
    );
}
