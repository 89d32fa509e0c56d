//! Appends not yet synced, as a power cut that wrote `meta.zr` back before
//! the appended bytes leaves them: an open checks what the current header
//! commits past its synced copy and keeps it only when whole, else opens
//! at the synced copy. A read-only open never writes; a writable one writes
//! a rollback at once and leaves kept appends for its next sync or close.
//! Closing a writer syncs, so each state is what a killed writer leaves.
//! (`fs_crash.rs` replays such states from traces of the real code; these
//! cases build them by hand, so they run without `strace`.)

mod common;

use std::fs;
use std::path::Path;

use common::snapshot;
use zrecord::{Codec, DenseStore, OpenOptions, RaggedStore};

/// The files of the store at `from`, as they are now, copied to `to`: what
/// a writer killed at this point leaves (closing the handle would sync).
fn as_if_killed(from: &Path, to: &Path) {
    fs::create_dir(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// 16 records of 4 bytes synced, then 8 more appended in two batches and not.
fn dense_with_unsynced_tail(dir: &Path, codec: Codec) -> std::path::PathBuf {
    let path = dir.join("s");
    let store = DenseStore::<u8>::create(dir.join("writer"), &[4], codec).unwrap();
    store.append(&(0..64).collect::<Vec<u8>>()).unwrap();
    store.sync().unwrap();
    store.append(&(64..80).collect::<Vec<u8>>()).unwrap();
    store.append(&(80..96).collect::<Vec<u8>>()).unwrap();
    as_if_killed(&dir.join("writer"), &path);
    path
}

fn meta(path: &Path) -> Vec<u8> {
    fs::read(path.join("meta.zr")).unwrap()
}

fn length_of(header: &[u8]) -> u64 {
    u64::from_le_bytes(header[14..22].try_into().unwrap())
}

fn read_only(path: &Path) -> DenseStore<u8> {
    OpenOptions::new().read_only(true).open(path).unwrap()
}

#[test]
fn whole_unsynced_appends_are_kept_and_the_next_sync_records_them() {
    for codec in [Codec::Raw, Codec::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dense_with_unsynced_tail(dir.path(), codec.clone());
        let m = meta(&path);
        assert_eq!((length_of(&m[..32]), length_of(&m[32..])), (24, 16));
        let before = snapshot(&path);
        let store = read_only(&path);
        assert_eq!(store.len(), 24);
        assert_eq!(
            store.get(23).unwrap().as_slice().unwrap(),
            &[92, 93, 94, 95]
        );
        drop(store);
        assert_eq!(snapshot(&path), before, "a read-only open never writes");
        // A writable open that keeps them writes nothing until its next
        // sync (or its close), which names them in the synced copy.
        let store = DenseStore::<u8>::open(&path).unwrap();
        assert_eq!(store.len(), 24);
        assert_eq!(snapshot(&path), before, "{codec}");
        drop(store);
        let m = meta(&path);
        assert_eq!(m[..32], m[32..], "{codec}");
        assert_eq!(read_only(&path).len(), 24);
    }
}

#[test]
fn a_tail_that_never_reached_the_disk_opens_at_the_synced_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dense_with_unsynced_tail(dir.path(), Codec::Raw);
    // The header reached the disk, the appended bytes did not.
    let chunk = path.join("0.chunk");
    let synced_bytes = 16 * 8; // 4 bytes and a 4-byte checksum each
    let f = fs::OpenOptions::new().write(true).open(&chunk).unwrap();
    f.set_len(synced_bytes).unwrap();
    drop(f);
    let before = snapshot(&path);
    let store = read_only(&path);
    assert_eq!(store.len(), 16);
    assert_eq!(
        store.get(15).unwrap().as_slice().unwrap(),
        &[60, 61, 62, 63]
    );
    drop(store);
    assert_eq!(snapshot(&path), before, "a read-only open never writes");

    // A writable open rolls back at once, durably, and appends after it.
    let store = DenseStore::<u8>::open(&path).unwrap();
    assert_eq!(store.len(), 16);
    let m = meta(&path);
    assert_eq!((length_of(&m[..32]), length_of(&m[32..])), (16, 16));
    assert_eq!(fs::read(path.join("0.loc")).unwrap().len(), 16 * 16);
    store.append(&[1, 2, 3, 4]).unwrap();
    drop(store);
    let store = read_only(&path);
    assert_eq!(store.len(), 17);
    assert_eq!(store.get(16).unwrap().as_slice().unwrap(), &[1, 2, 3, 4]);
    store.verify().unwrap();
}

#[test]
fn a_damaged_or_misplaced_unsynced_record_rolls_back_every_unsynced_append() {
    for damage in ["payload byte", "entry", "table"] {
        for codec in [Codec::Raw, Codec::Zstd] {
            let dir = tempfile::tempdir().unwrap();
            let path = dense_with_unsynced_tail(dir.path(), codec.clone());
            let loc = path.join("0.loc");
            let mut table = fs::read(&loc).unwrap();
            match damage {
                // The last record's bytes, as a torn write leaves them.
                "payload byte" => {
                    let at = u32::from_le_bytes(table[23 * 16..23 * 16 + 4].try_into().unwrap());
                    let chunk = path.join("0.chunk");
                    let mut bytes = fs::read(&chunk).unwrap();
                    bytes[at as usize] ^= 0x40;
                    fs::write(&chunk, bytes).unwrap();
                }
                // Record 20's entry as it was before the append wrote it:
                // zeros, pointing at record 0's bytes.
                "entry" => {
                    table[20 * 16..21 * 16].fill(0);
                    fs::write(&loc, &table).unwrap();
                }
                // The table's new entries never reached the disk.
                _ => {
                    table.truncate(16 * 16);
                    fs::write(&loc, &table).unwrap();
                }
            }
            let store = read_only(&path);
            assert_eq!(store.len(), 16, "{damage}, {codec}");
            store.verify().unwrap();
            drop(store);
            // `repair` (a writable open) says what it rolled back.
            let report = zrecord::repair(&path).unwrap();
            assert_eq!(report.rolled_back, 8, "{damage}, {codec}");
            assert_eq!(zrecord::repair(&path).unwrap().rolled_back, 0);
            let store = DenseStore::<u8>::open(&path).unwrap();
            assert_eq!(store.len(), 16, "{damage}, {codec}");
            store.verify().unwrap();
        }
    }
}

#[test]
fn ragged_unsynced_appends_are_checked_shape_and_payload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let store = RaggedStore::<u16>::create(dir.path().join("writer"), Codec::Raw).unwrap();
    store.append_slices(&[vec![1u16, 2, 3], vec![4]]).unwrap();
    store.sync().unwrap();
    store
        .append_slices(&[vec![5u16, 6], vec![7, 8, 9]])
        .unwrap();
    as_if_killed(&dir.path().join("writer"), &path);
    let ro = || {
        OpenOptions::new()
            .read_only(true)
            .open::<RaggedStore<u16>>(&path)
            .unwrap()
    };
    assert_eq!(ro().len(), 4);
    // Record 3's shape record (physical 7) says 2 elements, not 3.
    let loc = fs::read(path.join("0.loc")).unwrap();
    let at = u32::from_le_bytes(loc[7 * 16..7 * 16 + 4].try_into().unwrap()) as usize;
    let chunk = path.join("0.chunk");
    let mut bytes = fs::read(&chunk).unwrap();
    bytes[at + 8] = 2;
    fs::write(&chunk, bytes).unwrap();
    let store = ro();
    assert_eq!(store.len(), 2);
    assert_eq!(store.get(1).unwrap().as_slice().unwrap(), &[4]);
}

#[test]
fn closing_a_writer_syncs_what_it_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = DenseStore::<u8>::create(&path, &[4], Codec::Raw).unwrap();
    store.append(&[1, 2, 3, 4]).unwrap();
    let m = meta(&path);
    assert_eq!((length_of(&m[..32]), length_of(&m[32..])), (1, 0));
    drop(store);
    let m = meta(&path);
    assert_eq!((length_of(&m[..32]), length_of(&m[32..])), (1, 1));
}
