//! Crash safety of compact and delete: a child process running one of them is
//! SIGKILLed at a random moment; after every kill the store opens (redoing
//! the journaled work), holds exactly what it should, and passes `verify`.
//!
//! The test binary re-executes itself: a test run with `ZRECORD_CHILD_OP`
//! in its environment opens the store, says it is ready, runs the operation
//! and exits. Kill delays are spread over the time the operation took once
//! in the parent.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zrecord::{Codec, DType, Geometry, RaggedStore};

mod common;

const OP_ENV: &str = "ZRECORD_CHILD_OP";
const PATH_ENV: &str = "ZRECORD_CHILD_STORE";
const READY: &str = "ZRECORD-CHILD-READY";
const ROUNDS: u64 = 30;
/// Kills that must land mid-operation (the rest may come after the end).
const MIN_KILLS: u64 = 10;

/// 16 MiB chunks (a whole test store in one), 64-entry table segments.
const GEOMETRY: Geometry = Geometry {
    loc_segment_bits: 6,
    chunk_bits: 24,
};

/// Records of several pages: the kernel can stop a write of them part way
/// when the process is killed.
fn big_record(r: u64) -> Vec<u8> {
    common::valid_bytes(
        DType::U8,
        r,
        4096 + (common::splitmix(3, r) % 28_000) as usize,
    )
}

fn small_record(r: u64) -> Vec<u8> {
    common::valid_bytes(DType::U8, r, 1 + (common::splitmix(5, r) % 40) as usize)
}

fn create(path: &Path, codec: Codec, model: &[Vec<u8>]) -> RaggedStore<u8> {
    let store = RaggedStore::<u8>::create_with_geometry(path, codec, GEOMETRY).unwrap();
    for batch in model.chunks(100) {
        store.append_slices(batch).unwrap();
    }
    store
}

fn codec(round: u64) -> Codec {
    if round.is_multiple_of(2) {
        Codec::Raw
    } else {
        Codec::Zstd
    }
}

/// Applies a delete to the model the way the store does (swap-last, in
/// descending index order).
fn delete_in_model(model: &mut Vec<Vec<u8>>, targets: &[u64]) {
    let mut targets = targets.to_vec();
    targets.sort_unstable_by(|a, b| b.cmp(a));
    for t in targets {
        model.swap_remove(t as usize);
    }
}

/// Whether the store at `path` holds exactly `model`; checks `verify` and
/// that `open` removed every journal.
fn holds(path: &Path, model: &[Vec<u8>], round: u64) -> bool {
    let store = RaggedStore::<u8>::open(path)
        .unwrap_or_else(|e| panic!("round {round}: open after the kill: {e}"));
    for journal in ["compact.journal", "delete.journal"] {
        assert!(
            !path.join(journal).exists(),
            "round {round}: open left {journal}"
        );
    }
    store
        .verify()
        .unwrap_or_else(|e| panic!("round {round}: verify after the kill: {e}"));
    if store.len() != model.len() as u64 {
        return false;
    }
    let all: Vec<u64> = (0..model.len() as u64).collect();
    let got = store
        .gather(&all)
        .unwrap_or_else(|e| panic!("round {round}: gather after the kill: {e}"));
    got.iter()
        .zip(model)
        .all(|(got, want)| got.as_slice() == Some(&want[..]))
}

/// The child's side: runs `op` on the store and exits. Returns in the parent.
fn run_child_if_asked(targets: &[u64]) {
    let (Some(op), Some(path)) = (std::env::var_os(OP_ENV), std::env::var_os(PATH_ENV)) else {
        return;
    };
    let mut store = RaggedStore::<u8>::open(&path).expect("child: open");
    println!("{READY}");
    match op.to_str() {
        Some("compact") => drop(store.compact().expect("child: compact")),
        Some("delete") => drop(store.delete(targets).expect("child: delete")),
        _ => panic!("child: unknown op {op:?}"),
    }
    std::process::exit(0);
}

/// Starts `test` of this binary as a child running `op` on `path`, waits
/// until it is ready, kills it after `delay`. Returns whether the kill landed
/// (rather than the child finishing first).
fn kill_during(test: &str, op: &str, path: &Path, delay: Duration, round: u64) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture"])
        .env(OP_ENV, op)
        .env(PATH_ENV, path)
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
            panic!("round {round}: the {op} child died before it was ready");
        }
    }
    std::thread::sleep(delay);
    let _ = child.kill();
    let status = child.wait().unwrap();
    if status.signal() == Some(9) {
        return true;
    }
    assert!(
        status.success(),
        "round {round}: the {op} child failed: {status}"
    );
    false
}

/// Counts a kill that landed; after one that came too late (the operation
/// ran faster than in the probe, e.g. on a quieter machine), aims earlier.
fn aim(landed: bool, killed: u64, span: u64) -> (u64, u64) {
    if landed {
        (killed + 1, span)
    } else {
        (killed, (span * 2 / 3).max(100))
    }
}

/// 800 records of several pages, then one small one deleted near the front:
/// nearly every later record moves onto its own old bytes when compacted.
fn fragmented(path: &Path, codec: Codec, seed: u64) -> Vec<Vec<u8>> {
    let mut model: Vec<Vec<u8>> = (0..800).map(|r| big_record(r ^ (seed << 20))).collect();
    let mut store = create(path, codec, &model);
    let smallest = (0..10).min_by_key(|&i| model[i].len()).unwrap_or(0) as u64;
    store.delete(&[smallest]).unwrap();
    delete_in_model(&mut model, &[smallest]);
    model
}

#[test]
fn killed_compactions_lose_nothing() {
    run_child_if_asked(&[]);
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    fragmented(&probe, Codec::Raw, 0);
    let mut store = RaggedStore::<u8>::open(&probe).unwrap();
    let t = Instant::now();
    let progress = store.compact().unwrap();
    let mut span = t.elapsed().as_micros().max(1000) as u64;
    assert!(
        progress.moved > 1000,
        "the workload must move records: {progress:?}"
    );
    drop(store);

    let mut killed = 0;
    for round in 0..ROUNDS {
        let path = dir.path().join(format!("s{round}"));
        let model = fragmented(&path, codec(round), round);
        let delay = Duration::from_micros(common::splitmix(11, round) % span);
        let landed = kill_during(
            "killed_compactions_lose_nothing",
            "compact",
            &path,
            delay,
            round,
        );
        (killed, span) = aim(landed, killed, span);
        assert!(holds(&path, &model, round), "round {round}: records differ");
        // A full compaction afterwards completes and keeps everything.
        let mut store = RaggedStore::<u8>::open(&path).unwrap();
        assert!(store.compact().unwrap().is_complete());
        drop(store);
        assert!(holds(&path, &model, round), "round {round}: records differ");
    }
    println!("{killed} of {ROUNDS} compactions killed part way");
    assert!(
        killed >= MIN_KILLS,
        "only {killed} of {ROUNDS} kills landed"
    );
}

/// Every third record of 30,000: enough table moves to take a while.
fn delete_targets() -> Vec<u64> {
    (0..30_000).step_by(3).collect()
}

#[test]
fn killed_deletes_are_all_or_nothing() {
    let targets = delete_targets();
    run_child_if_asked(&targets);
    let dir = tempfile::tempdir().unwrap();
    let before: Vec<Vec<u8>> = (0..30_000).map(small_record).collect();
    let mut after = before.clone();
    delete_in_model(&mut after, &targets);
    let probe = dir.path().join("probe");
    let mut store = create(&probe, Codec::Raw, &before);
    let t = Instant::now();
    store.delete(&targets).unwrap();
    let mut span = t.elapsed().as_micros().max(1000) as u64;
    drop(store);

    let (mut killed, mut undone) = (0, 0);
    for round in 0..ROUNDS {
        let path = dir.path().join(format!("s{round}"));
        drop(create(&path, codec(round), &before));
        let delay = Duration::from_micros(common::splitmix(13, round) % span);
        let landed = kill_during(
            "killed_deletes_are_all_or_nothing",
            "delete",
            &path,
            delay,
            round,
        );
        (killed, span) = aim(landed, killed, span);
        // A journal written means the delete completes; none, it never began.
        if holds(&path, &before, round) {
            undone += 1;
        } else {
            assert!(
                holds(&path, &after, round),
                "round {round}: neither the store before the delete nor after it"
            );
        }
    }
    println!("{killed} of {ROUNDS} deletes killed part way, {undone} found undone");
    assert!(
        killed >= MIN_KILLS,
        "only {killed} of {ROUNDS} kills landed"
    );
}
