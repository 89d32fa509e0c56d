//! Crash safety of compaction: a child process compacting a fragmented store
//! is SIGKILLed at random moments; after every kill the store opens (redoing
//! a journaled move), holds every live record bit-exactly, passes `verify`,
//! and a full compaction then finishes the job.
//!
//! The test binary re-executes itself: the `#[test]` below, run with
//! `ZRECORD_COMPACT_CHILD` in its environment, opens the store, says it is
//! ready and compacts it. Most records here move onto their own old bytes
//! (deleting one record shifts every later one down by less than its
//! length), the case a kill could damage without the journal.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zrecord::{Codec, DType, Geometry, RaggedStore};

mod common;

const CHILD_ENV: &str = "ZRECORD_COMPACT_CHILD";
const READY: &str = "ZRECORD-COMPACT-CHILD-READY";
const ROUNDS: u64 = 30;

/// 16 MiB chunks (the whole store in one), 64-entry table segments.
const GEOMETRY: Geometry = Geometry {
    loc_segment_bits: 6,
    chunk_bits: 24,
};

fn record(r: u64) -> Vec<u8> {
    // Records of several pages: the kernel can stop a write of them part
    // way when the process is killed.
    common::valid_bytes(
        DType::U8,
        r,
        4096 + (common::splitmix(3, r) % 28_000) as usize,
    )
}

/// 800 records, then one small one deleted near the front.
fn fragmented(path: &Path, codec: Codec, seed: u64) -> Vec<Vec<u8>> {
    let store = RaggedStore::<u8>::create_with_geometry(path, codec, GEOMETRY).unwrap();
    let mut model: Vec<Vec<u8>> = (0..800).map(|r| record(r ^ (seed << 20))).collect();
    for batch in model.chunks(100) {
        store.append_slices(batch).unwrap();
    }
    let mut store = store;
    // The smallest of the first ten: every longer record after it then
    // moves down by less than its own length.
    let smallest = (0..10).min_by_key(|&i| model[i].len()).unwrap_or(0);
    let doomed = [smallest as u64];
    store.delete(&doomed).unwrap();
    for &t in doomed.iter().rev() {
        model.swap_remove(t as usize);
    }
    model
}

fn check(path: &Path, model: &[Vec<u8>], round: u64) {
    let store = RaggedStore::<u8>::open(path)
        .unwrap_or_else(|e| panic!("round {round}: open after the kill: {e}"));
    assert!(
        !path.join("compact.journal").exists(),
        "round {round}: open left the journal"
    );
    let all: Vec<u64> = (0..model.len() as u64).collect();
    let got = store
        .gather(&all)
        .unwrap_or_else(|e| panic!("round {round}: gather after the kill: {e}"));
    assert_eq!(got.len(), model.len());
    for (i, (got, want)) in got.iter().zip(model).enumerate() {
        assert!(
            got.as_slice() == Some(&want[..]),
            "round {round}: record {i} differs after the kill"
        );
    }
    store
        .verify()
        .unwrap_or_else(|e| panic!("round {round}: verify after the kill: {e}"));
}

#[test]
fn killed_compactions_lose_nothing() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        let mut store = RaggedStore::<u8>::open(&path).expect("child: open");
        println!("{READY}");
        store.compact().expect("child: compact");
        std::process::exit(0);
    }
    let exe = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // How long one compaction takes here, to spread the kills over it.
    let probe = dir.path().join("probe");
    fragmented(&probe, Codec::Raw, 0);
    let mut store = RaggedStore::<u8>::open(&probe).unwrap();
    let t = Instant::now();
    let progress = store.compact().unwrap();
    let span = t.elapsed().as_micros().max(1000) as u64;
    assert!(
        progress.moved > 1000,
        "the workload must move records: {progress:?}"
    );
    drop(store);

    let (mut finished, mut killed) = (0, 0);
    for round in 0..ROUNDS {
        let path = dir.path().join(format!("s{round}"));
        let codec = if round % 2 == 0 {
            Codec::Raw
        } else {
            Codec::Zstd
        };
        let model = fragmented(&path, codec, round);
        let mut child = Command::new(&exe)
            .args(["killed_compactions_lose_nothing", "--exact", "--nocapture"])
            .env(CHILD_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains(READY) {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                panic!("round {round}: the child died before compacting");
            }
        }
        std::thread::sleep(Duration::from_micros(common::splitmix(11, round) % span));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            killed += 1;
        } else {
            assert!(
                status.success(),
                "round {round}: the child failed: {status}"
            );
            finished += 1;
        }
        check(&path, &model, round);
        // A full compaction afterwards completes and keeps everything.
        let mut store = RaggedStore::<u8>::open(&path).unwrap();
        assert!(store.compact().unwrap().is_complete());
        drop(store);
        check(&path, &model, round);
    }
    println!("{killed} compactions killed part way, {finished} finished first");
    assert!(
        killed >= ROUNDS / 2,
        "only {killed} of {ROUNDS} kills landed"
    );
}
