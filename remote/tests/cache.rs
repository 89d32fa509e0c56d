//! The on-disk cache, on stores read through `file://` URLs (the same code
//! path as any object store): its limit holds while reads go on, pinned
//! stores stay, and the processes of a node download each block once.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use zrecord::{Codec, DenseStore};
use zrecord_remote::{Remote, RemoteOptions};

const RECORDS: u64 = 3_000;
const RECORD: usize = 1_000;
const BLOCK: u64 = 64 << 10;

/// A dense store of `RECORDS` records of `RECORD` bytes (raw, ~3 MB).
fn write_store(dir: &Path) {
    let store = DenseStore::<u8>::create(dir, &[RECORD], Codec::Raw).unwrap();
    let bytes: Vec<u8> = (0..RECORDS as usize * RECORD)
        .map(|i| (i * 13 % 253) as u8)
        .collect();
    store.append(&bytes).unwrap();
}

fn url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

fn open(dir: &Path, options: RemoteOptions) -> (Arc<Remote>, DenseStore<u8>) {
    support::open_dense(&url(dir), options)
}

fn batch(step: u64) -> Vec<u64> {
    (0..256u64)
        .map(|i| (i + step * 256).wrapping_mul(2_654_435_761) % RECORDS)
        .collect()
}

/// Bytes of the cache's block files (and unfinished ones), in every store folder.
fn blocks_on_disk(cache: &Path) -> (u64, usize) {
    let (mut bytes, mut files) = (0, 0);
    for store in std::fs::read_dir(cache).unwrap().flatten() {
        if store.path().is_dir() {
            for file in std::fs::read_dir(store.path()).unwrap().flatten() {
                if file.file_name().to_string_lossy().contains(".zrblock") {
                    bytes += file.metadata().unwrap().len();
                    files += 1;
                }
            }
        }
    }
    (bytes, files)
}

#[test]
fn disk_use_stays_under_the_limit_while_reads_go_on() {
    let data = tempfile::tempdir().unwrap();
    write_store(data.path());
    let local = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(data.path())
        .unwrap();
    // Limits below one batch's blocks (~46 of 64 KiB) and below the store (3 MB).
    for limit in [5 * BLOCK, 20 * BLOCK] {
        let cache = tempfile::tempdir().unwrap();
        let options = RemoteOptions::new()
            .cache(cache.path(), limit)
            .block_bytes(BLOCK);
        let (remote, store) = open(data.path(), options);
        for step in 0..20 {
            assert_eq!(
                store.gather(&batch(step)).unwrap(),
                local.gather(&batch(step)).unwrap()
            );
            let (bytes, _) = blocks_on_disk(cache.path());
            assert!(
                bytes <= limit,
                "step {step}: {bytes} bytes cached, limit {limit}"
            );
        }
        let stats = remote.stats();
        assert!(stats.bytes_evicted > 0 && stats.hits > 0, "{stats:?}");
    }
}

#[test]
fn a_limit_below_one_block_reads_through_and_keeps_nothing() {
    let data = tempfile::tempdir().unwrap();
    write_store(data.path());
    let local = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(data.path())
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let options = RemoteOptions::new()
        .cache(cache.path(), BLOCK - 1)
        .block_bytes(BLOCK);
    let (_, store) = open(data.path(), options);
    assert_eq!(
        store.gather(&batch(0)).unwrap(),
        local.gather(&batch(0)).unwrap()
    );
    assert_eq!(blocks_on_disk(cache.path()), (0, 0));
}

#[test]
fn a_pinned_store_stays_while_others_churn() {
    let (pinned_data, other_data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_store(pinned_data.path());
    write_store(other_data.path());
    let cache = tempfile::tempdir().unwrap();
    let limit = 60 * BLOCK; // the pinned store (~46 blocks) and a little more
    let options = || {
        RemoteOptions::new()
            .cache(cache.path(), limit)
            .block_bytes(BLOCK)
    };

    let (pinned_remote, pinned) = open(pinned_data.path(), options().pin(true));
    let (_, pinned_files) = blocks_on_disk(cache.path());
    let (_, other) = open(other_data.path(), options());
    for step in 0..10 {
        other.gather(&batch(step)).unwrap();
    }
    let (bytes, files) = blocks_on_disk(cache.path());
    assert!(bytes <= limit);
    assert!(
        files >= pinned_files,
        "{files} files, {pinned_files} pinned"
    );
    // Every read of the pinned store is a hit.
    let before = pinned_remote.stats();
    pinned.gather(&batch(3)).unwrap();
    let after = pinned_remote.stats();
    assert_eq!(after.misses, before.misses, "{after:?}");

    // A store larger than the limit cannot be pinned.
    let small = RemoteOptions::new()
        .cache(cache.path(), 10 * BLOCK)
        .block_bytes(BLOCK);
    let error = Remote::open(&url(other_data.path()), small.pin(true)).unwrap_err();
    assert!(error.to_string().contains("cannot pin"), "{error}");
}

/// The child half of the test below: reads the whole store in the order
/// its rank gives, then prints how many blocks it fetched.
#[test]
fn child_reader() {
    let Ok(spec) = std::env::var("ZRECORD_REMOTE_CHILD") else {
        return;
    };
    let mut parts = spec.split('|');
    let (data, cache, rank) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let rank: u64 = rank.parse().unwrap();
    let options = RemoteOptions::new()
        .cache(cache, 1 << 30)
        .block_bytes(BLOCK);
    let (remote, store) = open(Path::new(data), options);
    for step in 0..12 {
        store.gather(&batch(step + rank * 3)).unwrap();
    }
    println!("misses={}", remote.stats().misses);
}

#[test]
fn processes_of_a_node_download_each_block_once() {
    let data = tempfile::tempdir().unwrap();
    write_store(data.path());
    // What one process fetches when it reads what all four read.
    let solo_cache = tempfile::tempdir().unwrap();
    let options = RemoteOptions::new()
        .cache(solo_cache.path(), 1 << 30)
        .block_bytes(BLOCK);
    let (solo, store) = open(data.path(), options);
    for step in 0..21 {
        store.gather(&batch(step)).unwrap();
    }
    let expected = solo.stats().misses;

    let cache = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..4)
        .map(|rank| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "child_reader",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(
                    "ZRECORD_REMOTE_CHILD",
                    format!(
                        "{}|{}|{rank}",
                        data.path().display(),
                        cache.path().display()
                    ),
                )
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut total = 0;
    for child in children {
        let child = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&child.stdout).to_string();
        assert!(child.status.success(), "{out}");
        let misses = out
            .lines()
            .find_map(|l| l.split_once("misses=").map(|(_, n)| n))
            .unwrap_or_else(|| panic!("no count in {out}"));
        total += misses.trim().parse::<u64>().unwrap();
    }
    assert_eq!(
        total, expected,
        "blocks fetched by four processes against one"
    );
}
