//! I/O errors, injected: every operation that writes (create, append,
//! delete, compact, sync) and dictionary training is run with its k-th
//! storage call failing — for every k in turn, as EIO, as ENOSPC and as a
//! short write. Each run must end in a typed error; the handle must then
//! either still show what the storage holds or refuse further calls; and a
//! reopen must show the state before the operation or after it, verified,
//! with nothing acknowledged before the failure lost or changed.

mod common;

use std::sync::Arc;

use zrecord::storage::{Crash, Fault, Faulty, Memory, Storage};
use zrecord::{Codec, DType, DictTier, DynDenseStore, Error, Geometry, OpenOptions};

const TINY: Geometry = Geometry {
    loc_segment_bits: 4,
    chunk_bits: 12,
};
const WIDTH: usize = 150;
const FAULTS: [Fault; 3] = [Fault::Io, Fault::NoSpace, Fault::ShortWrite];

fn record(seed: u64) -> Vec<u8> {
    (0..WIDTH as u64)
        .map(|i| (seed * 7 + i * (seed % 5 + 1)) as u8)
        .collect()
}

fn contents(store: &DynDenseStore) -> zrecord::Result<Vec<Vec<u8>>> {
    let n = store.len();
    let mut out = vec![0; n as usize * WIDTH];
    store.gather_bytes(&(0..n).collect::<Vec<_>>(), &mut out)?;
    Ok(out.chunks(WIDTH).map(<[u8]>::to_vec).collect())
}

/// An exact copy of `memory`'s current files.
fn copy(memory: &Memory) -> Memory {
    memory.crash(Crash {
        kept: memory.pending(),
        torn_sectors: None,
    })
}

/// A synced store of `n` records in memory.
fn base(n: u64, codec: Codec) -> (Memory, Vec<Vec<u8>>) {
    let memory = Memory::new("faults");
    let store = zrecord::OpenOptions::new()
        .geometry(TINY)
        .create::<DynDenseStore>(
            Arc::new(memory.clone()),
            &zrecord::Schema::dense(DType::U8, &[WIDTH]),
            codec,
        )
        .unwrap();
    let model: Vec<Vec<u8>> = (0..n).map(record).collect();
    store.append_bytes(DType::U8, &model.concat()).unwrap();
    store.sync().unwrap();
    (memory, model)
}

/// Runs `op` on a store opened from a copy of `memory`, its storage call
/// `fail_at` failing with `fault`, then checks the rules above against the
/// states `before` and `after`. Returns how many calls a run without
/// failure makes, when `fail_at` is `None`.
fn run(
    memory: &Memory,
    fail_at: Option<u64>,
    fault: Fault,
    op: &dyn Fn(&mut DynDenseStore) -> zrecord::Result<()>,
    before: &[Vec<u8>],
    after: &[Vec<u8>],
) -> u64 {
    let disk = copy(memory);
    let faulty = Arc::new(Faulty::new(Arc::new(disk.clone()), fail_at, fault));
    let what = format!("call {fail_at:?} failing with {fault:?}");
    let opened = OpenOptions::new().open::<DynDenseStore>(Arc::clone(&faulty) as Arc<dyn Storage>);
    let outcome = opened.map(|mut store| {
        let done = op(&mut store);
        (store, done)
    });
    match (fail_at, outcome) {
        (None, Ok((store, Ok(())))) => {
            assert!(
                contents(&store).unwrap() == after,
                "{what}: not the state after"
            );
            return faulty.calls();
        }
        (None, Ok((_, Err(e)))) | (None, Err(e)) => panic!("without faults: {e}"),
        (Some(_), Err(e)) => assert_typed(&e, &what),
        (Some(k), Ok((store, done))) => {
            if k < faulty.calls() {
                let e = done
                    .err()
                    .unwrap_or_else(|| panic!("{what}: the operation succeeded"));
                assert_typed(&e, &what);
            }
            // The handle shows what the storage holds, or refuses.
            let shown = contents(&store);
            drop(store);
            let reopened = OpenOptions::new()
                .open::<DynDenseStore>(Arc::new(disk.clone()))
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let held = contents(&reopened).unwrap();
            if let Ok(shown) = shown {
                assert!(
                    shown == held,
                    "{what}: the handle shows {} records, the storage holds {}{}",
                    shown.len(),
                    held.len(),
                    if shown.len() == held.len() {
                        " (different ones)"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    let reopened = OpenOptions::new()
        .open::<DynDenseStore>(Arc::new(disk))
        .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    reopened
        .verify()
        .unwrap_or_else(|e| panic!("{what}: verify: {e}"));
    let held = contents(&reopened).unwrap();
    assert!(
        held == before || held == after,
        "{what}: {} records, neither the state before nor after",
        held.len()
    );
    0
}

fn assert_typed(e: &Error, what: &str) {
    assert!(
        matches!(e, Error::Io { .. } | Error::NeedsRecovery { .. }),
        "{what}: {e:?}"
    );
}

/// Fails every call of `op` in turn, with every fault.
fn exhaustively(
    memory: &Memory,
    op: &dyn Fn(&mut DynDenseStore) -> zrecord::Result<()>,
    before: &[Vec<u8>],
    after: &[Vec<u8>],
) -> u64 {
    let calls = run(memory, None, Fault::Io, op, before, after);
    for k in 0..calls {
        for fault in FAULTS {
            run(memory, Some(k), fault, op, before, after);
        }
    }
    calls
}

#[test]
fn a_failed_append_loses_nothing_committed() {
    for codec in [Codec::Raw, Codec::Zstd] {
        let (memory, before) = base(30, codec);
        let new: Vec<Vec<u8>> = (100..140).map(record).collect();
        let mut after = before.clone();
        after.extend(new.clone());
        let append = |s: &mut DynDenseStore| s.append_bytes(DType::U8, &new.concat()).map(|_| ());
        let calls = exhaustively(&memory, &append, &before, &after);
        assert!(calls > 20, "{calls} calls");
        let append_sync = |s: &mut DynDenseStore| {
            s.append_bytes(DType::U8, &new.concat())?;
            s.sync()
        };
        exhaustively(&memory, &append_sync, &before, &after);
    }
}

#[test]
fn a_failed_delete_or_compaction_loses_nothing_committed() {
    let (memory, before) = base(60, Codec::Raw);
    let targets = [3u64, 59, 20, 21, 0];
    let mut after = before.clone();
    let mut sorted = targets.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    for t in sorted {
        after.swap_remove(t as usize);
    }
    let delete = |s: &mut DynDenseStore| s.delete(&targets).map(|_| ());
    exhaustively(&memory, &delete, &before, &after);

    // Compaction of the store after the delete: the same records, moved.
    let deleted = copy(&memory);
    {
        let mut store = OpenOptions::new()
            .open::<DynDenseStore>(Arc::new(deleted.clone()))
            .unwrap();
        store.delete(&targets).unwrap();
        store.sync().unwrap();
    }
    let compact = |s: &mut DynDenseStore| s.compact().map(|_| ());
    exhaustively(&deleted, &compact, &after, &after);
}

#[test]
fn a_failed_create_leaves_the_storage_empty() {
    // Count the calls of a create that succeeds.
    let counting = Arc::new(Faulty::new(Arc::new(Memory::new("count")), None, Fault::Io));
    zrecord::OpenOptions::new()
        .create::<DynDenseStore>(
            Arc::clone(&counting) as Arc<dyn Storage>,
            &zrecord::Schema::dense(DType::U8, &[4]),
            Codec::Raw,
        )
        .unwrap();
    let calls = counting.calls();
    for k in 0..calls {
        for fault in FAULTS {
            let memory = Memory::new("create");
            let faulty = Faulty::new(Arc::new(memory.clone()), Some(k), fault);
            match zrecord::OpenOptions::new().create::<DynDenseStore>(
                Arc::new(faulty),
                &zrecord::Schema::dense(DType::U8, &[4]),
                Codec::Raw,
            ) {
                Err(e) => {
                    assert_typed(&e, &format!("create, call {k} {fault:?}"));
                    // Nothing half-made: the storage is empty, or (the
                    // failure hit the cleanup or the open) holds a whole store.
                    if !memory.list().unwrap().is_empty() {
                        let store = OpenOptions::new()
                            .open::<DynDenseStore>(Arc::new(memory))
                            .unwrap_or_else(|e| panic!("create, call {k} {fault:?}: {e}"));
                        assert_eq!(store.len(), 0);
                    }
                }
                Ok(_) => panic!("create, call {k} {fault:?}: succeeded"),
            }
        }
    }
}

#[test]
fn a_failed_dictionary_training_changes_nothing() {
    let (memory, before) = base(200, Codec::Zstd);
    let train = |s: &mut DynDenseStore| s.train_dict(DictTier::Fast).map(|_| ());
    exhaustively(&memory, &train, &before, &before);
}
