//! A compaction stopped part way — by its progress callback or by an I/O
//! error — leaves every record readable on the same handle, including one
//! moved into an earlier chunk past the bytes that chunk held.
//!
//! The I/O error comes from the file-size limit (`RLIMIT_FSIZE`), set in a
//! child process (this test binary run again with `ZRECORD_FSIZE_CHILD`).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;

use zrecord::{Codec, Error, Geometry, RaggedStore};

/// These tests run one at a time: a store's lock belongs to its open file
/// description, which a child forked by another test thread shares until
/// it execs, so a reopen there could briefly see the store busy.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const CHILD_ENV: &str = "ZRECORD_FSIZE_CHILD";

/// 4,095-byte chunks: records of 100, 2,900 and 1,100 bytes put the third
/// in chunk 1; after deleting record 0 (record 2 takes its place),
/// compaction moves record 1 down, then record 2 into chunk 0, past the
/// 3,048 bytes chunk 0 held.
fn store(path: &Path) -> RaggedStore<u8> {
    let geometry = Geometry {
        loc_segment_bits: 4,
        chunk_bits: 12,
    };
    let mut store = zrecord::OpenOptions::new()
        .geometry(geometry)
        .create::<RaggedStore<u8>>(
            path,
            &zrecord::Schema::ragged(<u8 as zrecord::Element>::DTYPE),
            Codec::Raw,
        )
        .unwrap();
    store
        .append_slices(&[vec![1u8; 100], vec![2u8; 2900], vec![3u8; 1100]])
        .unwrap();
    store.delete(&[0]).unwrap();
    store
}

fn check(store: &RaggedStore<u8>) {
    assert_eq!(store.get(0).unwrap().len(), 1100);
    assert!(store.get(0).unwrap().iter().all(|&b| b == 3));
    assert!(store.get(1).unwrap().iter().all(|&b| b == 2));
    assert_eq!(store.verify().unwrap().records, 2);
}

#[test]
fn a_compaction_stopped_by_its_callback_leaves_records_readable() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let mut store = store(&path);
    let progress = store
        .compact_with(|p| {
            if p.moved == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert!(!progress.is_complete());
    assert_eq!(progress.moved, 3);
    check(&store);
    // Finishing the job, and reopening, change nothing a reader sees.
    store.compact().unwrap();
    check(&store);
    drop(store);
    check(&RaggedStore::<u8>::open(&path).unwrap());
}

/// The child: compacts with the file-size limit at the end of record 2's
/// new place, so the move after it fails; then reads on the same handle.
fn child_entry() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let mut store = RaggedStore::<u8>::open(&path).unwrap();
    // Chunk 0 after the moves: record 1 (2,904 + 20 bytes with its shape),
    // then record 2's payload (1,104): 4,028 bytes. Its shape record follows.
    let limit = libc::rlimit {
        rlim_cur: 4028,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain libc calls with valid arguments: ignore SIGXFSZ (so a
    // write past the limit fails with EFBIG instead of killing the
    // process), then lower this process's file-size limit.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let err = store.compact().unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    check(&store);
    println!("CHILD-OK");
    std::process::exit(0);
}

#[test]
fn a_compaction_stopped_by_an_io_error_leaves_records_readable() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    drop(store(&path));
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_compaction_stopped_by_an_io_error_leaves_records_readable",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD_ENV, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("CHILD-OK"),
        "child: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The next open finishes what the journal holds; a compaction completes.
    let mut store = RaggedStore::<u8>::open(&path).unwrap();
    check(&store);
    store.compact().unwrap();
    check(&store);
}
