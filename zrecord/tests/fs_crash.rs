//! Crash states of the real file system: what the `Disk` backend really
//! asks of the kernel, replayed into the states a power cut can leave.
//!
//! A child process (this test binary, re-executed) runs a random workload on
//! a store (dense or ragged) in a folder — create (for a `zstd_dict` store
//! after `train_dict` on another store), appends, deletes, compactions and
//! syncs, on a tiny geometry so files roll over — under `strace`, which records every call
//! that changes a file there: opens that create or truncate, writes,
//! truncates, renames, removals, `fsync`/`fdatasync` of files and of
//! folders. After each operation the child notes (an `open` of a path that
//! does not exist, which the trace shows) the operation's index, the hash of
//! the store's records and whether it was a completed sync.
//!
//! The parent reads the trace (`fs_crash/trace.rs`) and first replays every
//! event: the result must be the files the child left, byte for byte — so
//! the trace holds every write the code made. Then, at every point of the
//! trace, it builds the files a power cut there may leave (`fs_crash/replay.rs`:
//! what a completed sync of a file or of its folder made durable, plus a
//! prefix of the rest, the last write torn at a sector), writes each
//! distinct one into a folder, opens it as a user would (a writable open,
//! which recovers) and verifies it: the store must open, verify and hold the
//! records of a state between its last completed sync and the operation
//! under way. Before the store's creation returned, no store at all is also
//! allowed.
//!
//! Only the crash points just after a sync need every prefix tried; between
//! syncs a prefix that leaves out more than the newest event was a crash
//! state one event earlier. A run checks over 10,000 distinct states.
//!
//! The check can fail: the same trace with its folder syncs removed (as if
//! `Disk` skipped `fsync` on its folder) must give crash states that do not
//! open or hold the wrong records. The reordering model (writes of different
//! files reaching the disk in any order, as ext4's default mode allows) is
//! run on three workloads and counted, not required; RELIABILITY.md says
//! what it finds and why.

#[path = "fs_crash/replay.rs"]
mod replay;
#[path = "fs_crash/trace.rs"]
mod trace;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::process::Command;

use replay::{Crash, Durability, Image, Kept, Model, Rng, crashes_at, files_after};
use trace::Event;
use zrecord::{
    AnyStore, Codec, DType, DictTier, DynDenseStore, DynRaggedBatch, Geometry, OpenOptions,
    RaggedBatch, Schema,
};

const CHILD_ENV: &str = "ZRECORD_FS_CRASH_CHILD";
const SEED_ENV: &str = "ZRECORD_FS_CRASH_SEED";
/// The folder whose opens are the child's notes; it never exists.
const MARKER: &str = "/nonexistent-zrecord-fs-crash-marker/";
/// The store's folder inside the traced folder.
const STORE: &str = "store";

/// 16-entry table segments, 4 KiB chunks: operations cross file boundaries.
const TINY: Geometry = Geometry {
    loc_segment_bits: 4,
    chunk_bits: 12,
};
const WIDTH: usize = 200;

/// The workloads one run traces: seeds 1.., each codec in turn (raw, zstd, zstd_dict).
const WORKLOADS: u64 = 18;
/// Operations per workload.
const OPS: usize = 40;

fn record(seed: u64) -> Vec<u8> {
    (0..WIDTH as u64)
        .map(|i| (seed.wrapping_mul(0x9E37).wrapping_add(i * 13) >> 3) as u8)
        .collect()
}

/// Every record of a store, in index order.
fn records_of(store: &AnyStore) -> zrecord::Result<Vec<Vec<u8>>> {
    let all: Vec<u64> = (0..store.len()).collect();
    Ok(match store {
        AnyStore::Dense(dense) => {
            let mut out = vec![0; all.len() * WIDTH];
            dense.gather_bytes(&all, &mut out)?;
            out.chunks(WIDTH).map(<[u8]>::to_vec).collect()
        }
        AnyStore::Ragged(ragged) => {
            let batch = ragged.gather_dyn(&all)?;
            let (values, layout) = (batch.values().as_bytes(), batch.layout());
            (0..batch.len())
                .map(|k| layout.range(k).map(|r| values[r].to_vec()))
                .collect::<Option<_>>()
                .ok_or_else(|| zrecord::Error::InvalidArgument("a record without a range".into()))?
        }
    })
}

fn hash_of(records: &[Vec<u8>]) -> u64 {
    let mut h = DefaultHasher::new();
    records.hash(&mut h);
    h.finish()
}

/// The child's note: operation `op` finished, the store holds records with
/// hash `hash`, and `synced` says whether everything before is durable.
fn note(op: usize, hash: u64, synced: bool) {
    let s = if synced { "synced" } else { "done" };
    let _ = std::fs::File::open(format!("{MARKER}{op}/{hash:016x}/{s}"));
}

// ---------------------------------------------------------------------------
// The child.

#[test]
fn child_workload() {
    let Some(root) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let (seed, codec): (u64, u8) = std::env::var(SEED_ENV)
        .ok()
        .and_then(|s| {
            let (a, b) = s.split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .expect("a child needs SEED:CODEC");
    run_workload(Path::new(&root), seed, codec);
    std::process::exit(0);
}

/// The workload's store: dense records of `WIDTH` bytes, or (every other
/// three seeds) ragged `u8` records of 1 to 600 bytes.
fn run_workload(root: &Path, seed: u64, codec: u8) {
    let mut rng = Rng(seed);
    let ragged = (seed / 3) % 2 == 1;
    let schema = if ragged {
        Schema::ragged(DType::U8)
    } else {
        Schema::dense(DType::U8, &[WIDTH])
    };
    let codec = match codec {
        0 => Codec::Raw,
        1 => Codec::Zstd,
        _ => {
            // A dictionary trained on another store, as `zrecord recompress` does.
            let source = OpenOptions::new()
                .create::<DynDenseStore>(
                    root.join("source"),
                    &Schema::dense(DType::U8, &[WIDTH]),
                    Codec::Raw,
                )
                .expect("create the source store");
            let records: Vec<u8> = (0..1500).flat_map(|i| record(i * 7 + seed)).collect();
            source.append_bytes(DType::U8, &records).expect("append");
            let dict = source.train_dict(DictTier::Fast).expect("train_dict");
            Codec::ZstdDict(dict)
        }
    };
    let mut store = OpenOptions::new()
        .geometry(TINY)
        .create::<AnyStore>(root.join(STORE), &schema, codec)
        .expect("create the store");
    let mut model: Vec<Vec<u8>> = Vec::new();
    note(0, hash_of(&[]), true);
    for op in 1..=OPS {
        let synced = match rng.below(8) {
            0..=3 => {
                let n = 1 + rng.below(12);
                let batch: Vec<Vec<u8>> = (0..n)
                    .map(|_| {
                        let mut r = record(rng.next());
                        if ragged {
                            r.resize(1 + rng.below(600) as usize, 7);
                        }
                        r
                    })
                    .collect();
                match &store {
                    AnyStore::Dense(dense) => dense
                        .append_bytes(DType::U8, &batch.concat())
                        .expect("append"),
                    AnyStore::Ragged(ragged) => {
                        let mut packed = RaggedBatch::<u8>::new();
                        for r in &batch {
                            packed.push(&[r.len()], r).expect("pack a record");
                        }
                        ragged
                            .append_batch(&DynRaggedBatch::from(packed))
                            .expect("append")
                    }
                };
                model.extend(batch);
                false
            }
            4 if !model.is_empty() => {
                let targets: Vec<u64> = (0..1 + rng.below(4))
                    .map(|_| rng.below(model.len() as u64))
                    .collect();
                store.delete(&targets).expect("delete");
                let mut sorted = targets;
                sorted.sort_unstable_by(|a, b| b.cmp(a));
                sorted.dedup();
                for t in sorted {
                    model.swap_remove(t as usize);
                }
                false
            }
            5 => {
                // A compaction ends with a sync.
                store.compact().expect("compact");
                true
            }
            _ => {
                store.sync().expect("sync");
                true
            }
        };
        let held = records_of(&store).expect("read every record");
        assert_eq!(held, model, "op {op}");
        note(op, hash_of(&held), synced);
    }
}

// ---------------------------------------------------------------------------
// The parent.

/// One traced workload: its events and the states its notes allow.
struct Traced {
    events: Vec<Event>,
    store: Vec<u8>,
    /// For each event index `p`, the hashes a crash after the first `p`
    /// events may show (`None` standing for "no store").
    allowed: Vec<Vec<Option<u64>>>,
}

/// Runs one workload under strace in `dir`; `None` (after a skip) when
/// strace cannot run here.
fn trace_workload(dir: &Path, seed: u64, codec: u8) -> Option<Traced> {
    let root = dir.join("root");
    std::fs::create_dir(&root).expect("the traced folder");
    let root = root.canonicalize().expect("the traced folder's path");
    let log = dir.join("trace.log");
    let exe = std::env::current_exe().expect("the test binary");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-y", "-xx", "-s", "16777216", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,\
             rmdir,write,pwrite64,pwritev,pwritev2,writev,truncate,ftruncate,fallocate,fsync,\
             fdatasync,lseek,close,dup,dup2,dup3,fcntl,copy_file_range,sendfile,splice",
        ])
        .arg(&exe)
        .args([
            "child_workload",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &root)
        .env(SEED_ENV, format!("{seed}:{codec}"))
        .status();
    match status {
        Err(e) => {
            zrecord_testkit::skip(format!(
                "strace does not run here ({e}): the real file system's crash states are not checked"
            ));
            return None;
        }
        Ok(s) => assert!(s.success(), "the traced workload (seed {seed}) failed: {s}"),
    }
    let text = std::fs::read(&log).expect("the trace");
    let text = String::from_utf8(text).expect("strace -xx writes ASCII");
    let root_bytes = root.as_os_str().as_encoded_bytes().to_vec();
    let events = trace::read(&text, &root_bytes, MARKER.as_bytes())
        .unwrap_or_else(|e| panic!("seed {seed}: reading the trace: {e}"));
    let mut store = root_bytes.clone();
    store.extend_from_slice(format!("/{STORE}").as_bytes());

    // Every event replayed gives the files the child left: nothing was written unseen.
    let durability = Durability::of(&events);
    let everything = Crash {
        p: events.len(),
        kept: durability
            .pending(&events, events.len())
            .into_iter()
            .map(|i| (i, Kept::All))
            .collect(),
    };
    let replayed = files_after(&events, &durability, &everything, &store).expect("the store");
    assert_eq!(
        replayed,
        files_in(&root.join(STORE)),
        "seed {seed}: replaying the whole trace does not give the files the child left"
    );

    // The states each crash point allows, from the child's notes.
    let mut allowed = Vec::with_capacity(events.len() + 1);
    let mut since_sync: Vec<Option<u64>> = vec![None];
    let mut last_note: Option<usize> = None;
    let notes: Vec<(usize, usize, u64, bool)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Marker(m) => {
                let mut parts = m.split('/');
                let op = parts.next()?.parse().ok()?;
                let hash = u64::from_str_radix(parts.next()?, 16).ok()?;
                Some((i, op, hash, parts.next()? == "synced"))
            }
            _ => None,
        })
        .collect();
    let mut next = 0;
    for p in 0..=events.len() {
        while next < notes.len() && notes[next].0 < p {
            let (_, op, hash, synced) = notes[next];
            assert_eq!(last_note.map_or(0, |o| o + 1), op, "notes in order");
            last_note = Some(op);
            if synced {
                since_sync.clear();
            }
            since_sync.push(Some(hash));
            next += 1;
        }
        let mut now = since_sync.clone();
        // The operation under way may have committed its state.
        if let Some(&(_, _, hash, _)) = notes.get(next) {
            now.push(Some(hash));
        }
        allowed.push(now);
    }
    Some(Traced {
        events,
        store,
        allowed,
    })
}

/// A folder's regular files (no subfolders in a store), relative names → bytes.
fn files_in(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list the store")
        .map(|e| {
            let e = e.expect("an entry");
            let mut name = b"/".to_vec();
            name.extend_from_slice(e.file_name().as_encoded_bytes());
            (name, std::fs::read(e.path()).expect("read a file"))
        })
        .collect()
}

/// A store folder's files: name (with its leading `/`) → bytes.
type Files = BTreeMap<Vec<u8>, Vec<u8>>;

/// What a user finds after the crash: the records' hash, `None` for no
/// store, or why the store is not usable.
fn open_state(
    files: &Option<BTreeMap<Vec<u8>, Vec<u8>>>,
    at: &Path,
) -> Result<Option<u64>, String> {
    let Some(files) = files else {
        return Ok(None);
    };
    let _ = std::fs::remove_dir_all(at);
    std::fs::create_dir_all(at).expect("a folder for the crash state");
    for (name, bytes) in files {
        let name = std::str::from_utf8(&name[1..]).expect("a store's names are ASCII");
        std::fs::write(at.join(name), bytes).expect("write a crash state's file");
    }
    // A reader sees what a writer's recovery keeps, or is told to wait for
    // one (a journal pending).
    let seen = match OpenOptions::new().read_only(true).open::<AnyStore>(at) {
        Ok(store) => {
            let records = records_of(&store).map_err(|e| format!("read-only gather: {e}"))?;
            Some(hash_of(&records))
        }
        Err(zrecord::Error::NeedsRecovery { .. }) => None,
        Err(e) => return Err(format!("does not open read-only: {e}")),
    };
    let store = AnyStore::open(at).map_err(|e| format!("does not open: {e}"))?;
    store.verify().map_err(|e| format!("verify: {e}"))?;
    let records = records_of(&store).map_err(|e| format!("gather: {e}"))?;
    let kept = hash_of(&records);
    if seen.is_some_and(|seen| seen != kept) {
        return Err("a read-only open sees other records than a writable open keeps".into());
    }
    Ok(Some(kept))
}

/// Tally of a model's crash states.
#[derive(Default, Debug)]
struct Tally {
    distinct: usize,
    failures: Vec<String>,
}

/// Checks the crash states of `traced` under `model`; `events` may be the
/// trace with events removed (the mutation check).
fn check(traced: &Traced, events: &[Event], model: Model, scratch: &Path, seed: u64) -> Tally {
    let durability = Durability::of(events);
    let mut rng = Rng(seed ^ 0xC0FFEE);
    let mut verdicts: HashMap<u64, Result<Option<u64>, String>> = HashMap::new();
    let mut tally = Tally::default();
    let at = scratch.join("state");
    // Everything issued so far, kept whole: the in-order model's crash
    // states between syncs are this image with its newest event whole,
    // dropped or torn.
    let mut whole = Image::default();
    for p in 0..=events.len() {
        let before = whole.clone();
        if p > 0 {
            whole.apply(&events[p - 1], &Kept::All);
        }
        let mut states: Vec<(Option<Files>, String)> = Vec::new();
        if model == Model::InOrder && !replay::after_sync(events, p) {
            states.push((whole.files(&traced.store), "everything issued".into()));
            let newest = &events[p - 1];
            if newest.data_ino().is_some() || newest.entry_parent().is_some() {
                states.push((before.files(&traced.store), "all but the newest".into()));
                for _ in 0..3 {
                    if let Some(t) = replay::torn(newest, &mut rng) {
                        let mut image = before.clone();
                        image.apply(newest, &t);
                        states.push((
                            image.files(&traced.store),
                            format!("the newest torn: {t:?}"),
                        ));
                    }
                }
            }
        } else {
            for crash in crashes_at(events, &durability, p, model, &mut rng) {
                let kept: Vec<_> = crash.kept.iter().map(|(i, _)| i).collect();
                states.push((
                    files_after(events, &durability, &crash, &traced.store),
                    format!("the durable and {kept:?}"),
                ));
            }
        }
        for (files, what) in states {
            let key = {
                let mut h = DefaultHasher::new();
                files.hash(&mut h);
                h.finish()
            };
            let verdict = verdicts
                .entry(key)
                .or_insert_with(|| open_state(&files, &at));
            let wrong = match verdict {
                Ok(h) if traced.allowed[p].contains(h) => None,
                Ok(_) => Some("holds records of no state since the last sync".to_string()),
                Err(e) => Some(e.clone()),
            };
            if let Some(why) = wrong {
                tally.failures.push(format!(
                    "seed {seed}, crash after event {p} of {} keeping {what}: {why}",
                    events.len()
                ));
            }
        }
    }
    tally.distinct = verdicts.len();
    tally
}

/// Where crash states are written to be opened: memory where the machine
/// has `/dev/shm` (the states are files like any others; their disk plays
/// no part), else the temporary folder.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("a folder for crash states")
}

fn strace_ok() -> bool {
    match Command::new("strace").arg("-V").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            zrecord_testkit::skip(
                "strace is not installed: the real file system's crash states are not checked",
            );
            false
        }
    }
}

#[test]
fn every_crash_state_of_the_real_file_system_opens_at_a_state_since_the_last_sync() {
    if !strace_ok() {
        return;
    }
    let _watchdog = zrecord_testkit::watchdog(
        "the real file system's crash states",
        std::time::Duration::from_secs(900),
    );
    let scratch = scratch_dir();
    let scratch = scratch.path().to_path_buf();
    let mut distinct = [0; 2];
    let mut events = 0;
    for seed in 1..=WORKLOADS {
        let codec = (seed % 3) as u8;
        let dir = tempfile::tempdir().expect("a temporary folder");
        let Some(traced) = trace_workload(dir.path(), seed, codec) else {
            return;
        };
        events += traced.events.len();
        for (model, count) in [Model::InOrder, Model::Reordered]
            .into_iter()
            .zip(&mut distinct)
        {
            let tally = check(&traced, &traced.events, model, &scratch, seed);
            assert!(
                tally.failures.is_empty(),
                "{model:?}: {} crash states of {} are wrong; the first: {}",
                tally.failures.len(),
                tally.distinct,
                tally.failures[0]
            );
            *count += tally.distinct;
        }
    }
    let [in_order, reordered] = distinct;
    eprintln!(
        "{} distinct crash states of the real file system over {events} traced events, each \
         opened at a state since the last sync: {in_order} with write-back in order, \
         {reordered} with writes reordered",
        in_order + reordered
    );
    assert!(
        in_order >= 10_000 && reordered >= 10_000,
        "only {in_order} in-order and {reordered} reordered crash states"
    );
}

#[test]
fn without_the_folder_syncs_some_crash_state_is_wrong() {
    if !strace_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let Some(traced) = trace_workload(dir.path(), 1, 0) else {
        return;
    };
    // The inodes that are folders: those created as folders, and the root.
    let folders: HashSet<usize> = std::iter::once(0)
        .chain(traced.events.iter().filter_map(|e| match e {
            Event::Create { ino, dir: true, .. } => Some(*ino),
            _ => None,
        }))
        .collect();
    let without: Vec<Event> = traced
        .events
        .iter()
        .filter(|e| !matches!(e, Event::Sync { ino } if folders.contains(ino)))
        .cloned()
        .collect();
    assert!(
        without.len() < traced.events.len(),
        "the trace syncs folders"
    );
    // The notes stay where they were, so the allowed states do too.
    let allowed_for_without = {
        let mut allowed = Vec::new();
        for (p_old, e) in traced.events.iter().enumerate() {
            if !matches!(e, Event::Sync { ino } if folders.contains(ino)) {
                allowed.push(traced.allowed[p_old].clone());
            }
        }
        allowed.push(traced.allowed[traced.events.len()].clone());
        allowed
    };
    let mutated = Traced {
        events: without,
        store: traced.store.clone(),
        allowed: allowed_for_without,
    };
    assert_some_state_wrong(&mutated, Model::InOrder, "without folder syncs");
}

/// Checks the crash states of a mutated trace (its own events) under
/// `model`, and fails unless some are wrong: the check can fail.
fn assert_some_state_wrong(mutated: &Traced, model: Model, mutation: &str) {
    let scratch = scratch_dir();
    let tally = check(mutated, &mutated.events, model, scratch.path(), 1);
    assert!(
        !tally.failures.is_empty(),
        "{mutation}, all {} {model:?} crash states still checked out: the check cannot fail",
        tally.distinct
    );
    eprintln!(
        "{mutation}: {} of the {model:?} crash states are wrong; the first: {}",
        tally.failures.len(),
        tally.failures[0]
    );
}

#[test]
fn without_the_synced_header_some_reordered_crash_state_is_wrong() {
    if !strace_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let Some(traced) = trace_workload(dir.path(), 1, 0) else {
        return;
    };
    // Every write of meta.zr names its current header as synced too, as if
    // the store kept no synced copy: a reordered append then looks whole.
    let metas: HashSet<usize> = traced
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Create { ino, path, .. } if path.ends_with(b"/meta.zr") => Some(*ino),
            _ => None,
        })
        .collect();
    let mut rewritten = 0;
    let events: Vec<Event> = traced
        .events
        .iter()
        .map(|e| match e {
            Event::Write {
                ino,
                offset: 0,
                bytes,
            } if metas.contains(ino) && bytes.len() == 64 => {
                let mut bytes = bytes.clone();
                bytes.copy_within(..32, 32);
                rewritten += 1;
                Event::Write {
                    ino: *ino,
                    offset: 0,
                    bytes,
                }
            }
            e => e.clone(),
        })
        .collect();
    assert!(
        rewritten > 0,
        "the trace writes meta.zr with its synced copy"
    );
    let mutated = Traced {
        events,
        store: traced.store.clone(),
        allowed: traced.allowed.clone(),
    };
    assert_some_state_wrong(&mutated, Model::Reordered, "without the synced header");
}
