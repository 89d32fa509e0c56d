//! Crash safety of compact and delete: a child process running one of them is
//! held at an exact step (the crate's test hooks) and SIGKILLed there; the
//! test records what the store folder held at the kill — a journal or not, the
//! committed length, the record-table entry the journal names — and then
//! checks that `open` redid the journaled work, that the store holds exactly
//! what it should, and that it passes `verify`.
//!
//! The test binary re-executes itself: a test run with `ZRECORD_CHILD_OP`
//! in its environment opens the store, runs the operation and exits; the
//! hold point comes in `ZRECORD_TEST_HOLD` (`point:n`, the `n`-th arrival).
//! Round `r` picks its point and `n` from `r` alone, so every run kills at the
//! same steps and every kill lands inside the operation.

use std::fs;
use std::io::BufReader;
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use zrecord::test_hooks::{HELD, HOLD_ENV, NO_RELOCATE_ENV};
use zrecord::{Codec, DType, Geometry, RaggedStore};

mod common;

const OP_ENV: &str = "ZRECORD_CHILD_OP";
const PATH_ENV: &str = "ZRECORD_CHILD_STORE";
const ROUNDS: u64 = 30;

/// 16 MiB chunks (a whole test store in one), 64-entry table segments.
const GEOMETRY: Geometry = Geometry {
    loc_segment_bits: 6,
    chunk_bits: 24,
};

/// Records of several pages: most of them move onto their own old bytes.
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
    let store = zrecord::OpenOptions::new()
        .geometry(GEOMETRY)
        .create::<RaggedStore<u8>>(
            path,
            &zrecord::Schema::ragged(<u8 as zrecord::Element>::DTYPE),
            codec,
        )
        .unwrap();
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
/// Opens the store for writing. The tests of this file run in parallel and
/// spawn children: a child spawned by another test between its fork and its
/// exec shares every open file of this process, the lock of a store handle
/// dropped a moment ago included (FORMAT.md, "Reading"), so a `StoreBusy`
/// here is retried for up to two seconds.
fn open(path: &Path) -> zrecord::Result<RaggedStore<u8>> {
    for _ in 0..200 {
        match RaggedStore::<u8>::open(path) {
            Err(zrecord::Error::StoreBusy { .. }) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            other => return other,
        }
    }
    RaggedStore::<u8>::open(path)
}

fn holds(path: &Path, model: &[Vec<u8>], round: u64) -> bool {
    let store = open(path).unwrap_or_else(|e| panic!("round {round}: open after the kill: {e}"));
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
    match op.to_str() {
        Some("compact" | "compact-relocating") => drop(store.compact().expect("child: compact")),
        Some("delete") => drop(store.delete(targets).expect("child: delete")),
        _ => panic!("child: unknown op {op:?}"),
    }
    std::process::exit(0);
}

/// Starts `test` of this binary as a child running `op` on `path`, waits
/// until it holds at the `n`-th arrival at `point`, runs `at_hold` on the
/// store folder the child is stopped in, then kills the child.
fn kill_at<R>(
    test: &str,
    (op, path): (&str, &Path),
    (point, n): (&str, u64),
    round: u64,
    at_hold: impl FnOnce() -> R,
) -> R {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(OP_ENV, op)
        .env(PATH_ENV, path)
        .env(HOLD_ENV, format!("{point}:{n}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // "compact" moves every record onto its own old bytes, journaled;
    // "compact-relocating" first copies records past the frontier.
    if op == "compact" {
        command.env(NO_RELOCATE_ENV, "1");
    }
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    if !common::wait_for(&mut stderr, HELD, &mut seen) {
        let status = child.wait().unwrap();
        panic!(
            "round {round}: the {op} child ended ({status}) before arrival {n} at {point}; \
             stderr:\n{seen}"
        );
    }
    let seen_at_hold = at_hold();
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "round {round}: the {op} child did not die by SIGKILL ({status})"
    );
    seen_at_hold
}

/// `meta.zr`'s committed physical length.
fn meta_length(store: &Path) -> u64 {
    let meta = fs::read(store.join("meta.zr")).unwrap();
    u64::from_le_bytes(meta[14..22].try_into().unwrap())
}

/// Table entry `phys` (16 bytes) under `GEOMETRY`.
fn table_entry(store: &Path, phys: u64) -> [u8; 16] {
    let segment = fs::read(store.join(format!("{}.loc", phys >> 6))).unwrap();
    let at = (phys % 64) as usize * 16;
    segment[at..at + 16].try_into().unwrap()
}

/// A compaction journal entry that checks out (FORMAT.md, "Journals"): the
/// physical index, the new table entry and the record's stored bytes.
fn journaled_move(store: &Path) -> Option<(u64, [u8; 16], Vec<u8>)> {
    let bytes = fs::read(store.join("compact.journal")).ok()?;
    if bytes.len() < 36 || &bytes[..8] != b"ZRJOURN1" {
        return None;
    }
    let phys_len = u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let body = bytes.get(12..36 + phys_len)?;
    (crc32fast::hash(body) == crc).then(|| {
        (
            u64::from_le_bytes(bytes[12..20].try_into().unwrap()),
            bytes[20..36].try_into().unwrap(),
            bytes[36..].to_vec(),
        )
    })
}

/// `(offset, phys_length, chunk)` of a table entry.
fn place(entry: &[u8; 16]) -> (u64, usize, u32) {
    let field = |at: usize| u32::from_le_bytes(entry[at..at + 4].try_into().unwrap());
    (u64::from(field(0)), field(4) as usize, field(12))
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

/// Where round `r` of the compaction test stops: a point and an arrival
/// below the moves every workload makes (checked: over 600 of 799 records
/// overlap their old bytes).
fn compaction_hold(round: u64) -> (&'static str, u64) {
    let point = ["compact:journaled", "compact:moved", "compact:entry"][(round % 3) as usize];
    (point, 1 + common::splitmix(11, round) % 500)
}

#[test]
fn killed_compactions_lose_nothing() {
    run_child_if_asked(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (mut journals, mut redone, mut torn) = (0, 0, 0);
    for round in 0..ROUNDS {
        let path = dir.path().join(format!("s{round}"));
        let model = fragmented(&path, codec(round), round);
        let hold = compaction_hold(round);
        // At the hold: the journaled move, and the table entry it replaces.
        let journaled = kill_at(
            "killed_compactions_lose_nothing",
            ("compact", &path),
            hold,
            round,
            || {
                journaled_move(&path)
                    .map(|(phys, new, bytes)| (phys, new, bytes, table_entry(&path, phys)))
            },
        );
        if hold.0 != "compact:moved" {
            assert!(
                journaled.is_some(),
                "round {round}: held at {hold:?} without a journal entry"
            );
        }
        if let Some((phys, new, bytes, old)) = journaled {
            journals += 1;
            if hold.0 == "compact:journaled" && round % 2 == 1 {
                // As if the kill had stopped the move's write part way: the
                // first bytes of the record's new place are written, over
                // the start of its old copy.
                let ((to, len, chunk), (from, _, _)) = (place(&new), place(&old));
                let written = (from - to) as usize + (len - (from - to) as usize) / 2;
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(path.join(format!("{chunk}.chunk")))
                    .unwrap();
                file.write_all_at(&bytes[..written], to).unwrap();
                torn += 1;
            }
            assert!(holds(&path, &model, round), "round {round}: records differ");
            let after = table_entry(&path, phys);
            assert_eq!(
                after, new,
                "round {round}: open did not redo the journaled move of record {phys}"
            );
            redone += u64::from(old != new);
        } else {
            assert!(holds(&path, &model, round), "round {round}: records differ");
        }
        // A full compaction afterwards completes and keeps everything.
        let mut store = open(&path).unwrap();
        assert!(store.compact().unwrap().is_complete());
        drop(store);
        assert!(holds(&path, &model, round), "round {round}: records differ");
    }
    println!(
        "{ROUNDS} compactions killed: {journals} with a journaled move, {redone} of them \
         redone by open, {torn} with the move's bytes torn"
    );
    // Every kill at `compact:journaled` (10 rounds) found the table entry not
    // yet rewritten, so `open` must have redone it; 5 of them had torn bytes.
    assert!(
        journals >= 20 && redone >= 10 && torn == 5,
        "{journals} journals, {redone} redone, {torn} torn"
    );
}

/// A compaction whose gap is smaller than its records first copies some of
/// them past the frontier (so its moves need not wait for a barrier each).
/// Killed right after that copy or in a move after it, the store holds
/// every record, and a later compaction completes.
#[test]
fn killed_relocating_compactions_lose_nothing() {
    run_child_if_asked(&[]);
    let dir = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let path = dir.path().join(format!("s{round}"));
        let model = fragmented(&path, codec(round), round);
        let hold = if round % 2 == 0 {
            ("compact:relocated", 1)
        } else {
            ("compact:moved", 1 + common::splitmix(17, round) % 500)
        };
        kill_at(
            "killed_relocating_compactions_lose_nothing",
            ("compact-relocating", &path),
            hold,
            round,
            || (),
        );
        assert!(holds(&path, &model, round), "round {round}: records differ");
        let mut store = open(&path).unwrap();
        assert!(store.compact().unwrap().is_complete());
        drop(store);
        assert!(holds(&path, &model, round), "round {round}: records differ");
    }
}

/// Every third record of 30,000.
fn delete_targets() -> Vec<u64> {
    (0..30_000).step_by(3).collect()
}

/// Where round `r` of the delete test stops.
fn delete_hold(round: u64) -> (&'static str, u64) {
    match round % 3 {
        0 => ("delete:journaled", 1),
        1 => ("delete:entry", 1 + common::splitmix(13, round) % 10_000),
        _ => ("delete:committed", 1),
    }
}

#[test]
fn killed_deletes_are_all_or_nothing() {
    let targets = delete_targets();
    run_child_if_asked(&targets);
    let dir = tempfile::tempdir().unwrap();
    let before: Vec<Vec<u8>> = (0..30_000).map(small_record).collect();
    let mut after = before.clone();
    delete_in_model(&mut after, &targets);

    let (mut journals, mut redone) = (0, 0);
    for round in 0..ROUNDS {
        let path = dir.path().join(format!("s{round}"));
        drop(create(&path, codec(round), &before));
        let hold = delete_hold(round);
        let (journal, committed) = kill_at(
            "killed_deletes_are_all_or_nothing",
            ("delete", &path),
            hold,
            round,
            || {
                (
                    path.join("delete.journal").exists(),
                    meta_length(&path) != 2 * before.len() as u64,
                )
            },
        );
        assert!(journal, "round {round}: held at {hold:?} without a journal");
        journals += 1;
        assert_eq!(
            committed,
            hold.0 == "delete:committed",
            "round {round}: held at {hold:?}"
        );
        // The journal was there: the delete completes, whatever the point.
        assert!(
            holds(&path, &after, round),
            "round {round}: the store is not the one after the delete"
        );
        redone += u64::from(!committed);
    }
    println!(
        "{ROUNDS} deletes killed, {journals} with a journal, {redone} uncommitted and \
         finished by open"
    );
    assert_eq!((journals, redone), (30, 20));
}
