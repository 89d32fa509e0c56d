//! Compaction of a crafted record table: a location past its chunk's bytes
//! is refused before anything moves, so no chunk's committed length ever
//! passes the end of its file (a read there would fault through the map:
//! the SIGBUS of fuzz input `fuzz/corpus/store/crash-1a1cf20a…`).

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use zrecord::{Codec, DenseStore, Error};

/// Writes table entry `phys` of `0.loc`: offset, stored and logical size, chunk.
fn set_loc(dir: &Path, phys: u64, entry: [u32; 4]) {
    let bytes: Vec<u8> = entry.iter().flat_map(|v| v.to_le_bytes()).collect();
    OpenOptions::new()
        .write(true)
        .open(dir.join("0.loc"))
        .unwrap()
        .write_all_at(&bytes, phys * 16)
        .unwrap();
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn compaction_refuses_a_location_past_its_chunk_and_commits_nothing_past_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let store = DenseStore::<u8>::create(&dir, &[4], Codec::Raw).unwrap();
    store.append(&(0..40).collect::<Vec<u8>>()).unwrap();
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    let chunk_len = fs::metadata(dir.join("0.chunk")).unwrap().len();
    assert_eq!(
        chunk_len, 80,
        "ten 4-byte records, each with its 4-byte checksum"
    );

    // Record 0 claims 100 000 bytes from offset 0 (the file has 80): a
    // compaction leaves it in place, so its frontier steps to 100 000.
    set_loc(&dir, 0, [0, 100_000, 99_996, 0]);
    // Record 1 is empty, at offset 1: moved to that frontier, it wrote no
    // bytes but published 100 000 committed bytes in a 80-byte file.
    set_loc(&dir, 1, [1, 0, 0, 0]);
    // Record 2 lies past the chunk too: the move that reads it failed, and
    // the store was left with the raised committed length.
    set_loc(&dir, 2, [2, 200_000, 199_996, 0]);
    let before = files(&dir);

    let mut store = DenseStore::<u8>::open(&dir).unwrap();
    let compacted = store.compact();
    // The chunk's committed bytes are still the file's bytes.
    assert_eq!(store.stats().unwrap().chunk_bytes, chunk_len);
    assert_eq!(fs::metadata(dir.join("0.chunk")).unwrap().len(), chunk_len);
    match compacted {
        Err(Error::CorruptRecord {
            index: 0, reason, ..
        }) => {
            assert!(reason.contains("committed bytes"), "{reason}");
        }
        other => panic!("expected record 0's location refused, got {other:?}"),
    }
    // Nothing moved, nothing journaled; the sound records still read.
    assert_eq!(store.get(5).unwrap().as_slice().unwrap(), &[20, 21, 22, 23]);
    assert!(store.verify().is_err());
    drop(store);
    assert_eq!(files(&dir), before);
}
