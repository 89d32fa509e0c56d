//! A journal whose checksum holds but whose work lies outside the store —
//! a compaction move past the committed bytes or the length, a delete whose
//! targets are not distinct descending indices below the length — makes
//! `open` fail with a corruption error naming the journal, and changes no
//! file. Journals are written here byte by byte from FORMAT.md ("Journals").

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use zrecord::{Codec, DenseStore, Error};

/// A raw record of 100 bytes is stored as 104: the bytes, then their CRC-32C.
const STORED: u32 = 104;

/// A dense u8 store of 10 records of 100 bytes (chunk 0 holds 1,040 bytes).
fn store(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let store = DenseStore::<u8>::create(&path, &[100], Codec::Raw).expect("create the store");
    store
        .append(&common::valid_bytes(zrecord::DType::U8, 1, 1000))
        .expect("append 10 records");
    path
}

/// `compact.journal` moving physical record `phys` to `(chunk, offset)`.
fn compact_journal(phys: u64, chunk: u32, offset: u32) -> Vec<u8> {
    let mut record = vec![7u8; 100];
    record.extend_from_slice(&crc32c::crc32c(&record).to_le_bytes());
    let mut body = Vec::new();
    body.extend_from_slice(&phys.to_le_bytes());
    for field in [offset, STORED, 100, chunk] {
        body.extend_from_slice(&field.to_le_bytes());
    }
    body.extend_from_slice(&record);
    let mut bytes = b"ZRJOURN1".to_vec();
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

/// `delete.journal` of a delete from physical length `phys_len`.
fn delete_journal(phys_len: u64, targets: &[u64]) -> Vec<u8> {
    let mut body = phys_len.to_le_bytes().to_vec();
    body.extend_from_slice(&(targets.len() as u64).to_le_bytes());
    for t in targets {
        body.extend_from_slice(&t.to_le_bytes());
    }
    let mut bytes = b"ZRDELET1".to_vec();
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

/// Opens a store holding `journal` (a file name and its bytes): the error
/// must be `Corrupt` naming the journal, and no file may change.
fn refused(path: &Path, journal: &str, bytes: &[u8]) -> String {
    fs::write(path.join(journal), bytes).expect("write the journal");
    let before = common::snapshot(path);
    let error = match DenseStore::<u8>::open(path) {
        Ok(_) => panic!("{journal} ({} bytes): the store opened", bytes.len()),
        Err(e) => e,
    };
    let Error::Corrupt {
        path: named,
        reason,
    } = &error
    else {
        panic!("{journal}: expected a corruption error, got {error:?}");
    };
    assert_eq!(named, &path.join(journal), "{error}");
    assert_eq!(common::snapshot(path), before, "{journal}: a file changed");
    reason.clone()
}

#[test]
fn a_journal_that_first_checks_out_is_redone() {
    // The control: the same layout with a move inside the store opens and
    // is redone, so the refusals below are about the values alone.
    let dir = tempfile::tempdir().unwrap();
    let path = store(dir.path(), "ok");
    fs::write(
        path.join("compact.journal"),
        compact_journal(3, 0, 9 * STORED), // record 3 moved onto record 9's bytes
    )
    .unwrap();
    let store = DenseStore::<u8>::open(&path).expect("a valid journal is redone");
    let both: Vec<u8> = store.gather(&[3, 9]).unwrap().iter().copied().collect();
    assert_eq!(both, vec![7u8; 200]);
    assert!(!path.join("compact.journal").exists());
}

#[test]
fn a_compaction_journal_outside_the_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, phys, chunk, offset, what) in [
        ("past-committed", 2, 0, 950, "bytes 950..1054 of chunk 0"),
        ("missing-chunk", 2, 1, 0, "chunk 1"),
        ("past-length", 10, 0, 0, "record 10"),
    ] {
        let path = store(dir.path(), name);
        let reason = refused(
            &path,
            "compact.journal",
            &compact_journal(phys, chunk, offset),
        );
        assert!(
            reason.contains(what) && reason.contains("outside the committed store"),
            "{name}: {reason}"
        );
    }
}

#[test]
fn a_delete_journal_with_bad_targets_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, targets) in [
        ("ascending", &[1u64, 5][..]),
        ("repeated", &[5, 5]),
        ("past-length", &[10, 2]),
    ] {
        let path = store(dir.path(), name);
        let reason = refused(&path, "delete.journal", &delete_journal(10, targets));
        assert!(
            reason.contains("not distinct indices below 10"),
            "{name}: {reason}"
        );
    }
    let path = store(dir.path(), "no-targets");
    let reason = refused(&path, "delete.journal", &delete_journal(10, &[]));
    assert!(
        reason.contains("0 targets in a store of 10 records"),
        "no-targets: {reason}"
    );
    // A journal of a delete that committed (another length) is not redone.
    let path = store(dir.path(), "committed");
    fs::write(path.join("delete.journal"), delete_journal(11, &[1, 5])).unwrap();
    let store = DenseStore::<u8>::open(&path).expect("a committed delete's journal is removed");
    assert_eq!(store.len(), 10);
    assert!(!path.join("delete.journal").exists());
}
