//! Damaged records are found — by `gather` for compressed stores (frame
//! checksums), by `verify` for every store — as typed errors, never a crash.

mod common;

use std::fs;
use std::path::Path;

use zrecord::{Codec, DenseStore, Error, RaggedStore};

fn patch(path: &Path, at: u64, bytes: &[u8]) {
    let mut b = fs::read(path).unwrap();
    b[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    fs::write(path, b).unwrap();
}

fn records() -> Vec<u8> {
    (0..8 * 256u32).map(|i| (i * 7 % 13) as u8).collect()
}

#[test]
fn a_flipped_byte_in_a_frame_fails_gather_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = DenseStore::<u8>::create(&path, &[256], Codec::Zstd).expect("create the store");
    store.append(&records()).expect("append the records");
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    let chunk = fs::read(path.join("0.chunk")).unwrap();
    // Record 5's frame: its table entry says where.
    let loc = fs::read(path.join("0.loc")).unwrap();
    let entry = &loc[5 * 16..6 * 16];
    let offset = u32::from_le_bytes(entry[0..4].try_into().unwrap()) as u64;
    let len = u32::from_le_bytes(entry[4..8].try_into().unwrap()) as u64;
    patch(
        &path.join("0.chunk"),
        offset + len / 2,
        &[chunk[(offset + len / 2) as usize] ^ 0x10],
    );

    let store = DenseStore::<u8>::open(&path).unwrap();
    assert!(matches!(
        store.gather(&[5]),
        Err(Error::CorruptRecord { index: 5, .. })
    ));
    assert_eq!(
        store.gather(&[4, 6]).unwrap().len(),
        512,
        "other records still read"
    );
    assert!(matches!(
        store.verify(),
        Err(Error::CorruptRecord { index: 5, .. })
    ));
}

#[test]
fn impossible_locations_are_errors_not_faults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = DenseStore::<u8>::create(&path, &[256], Codec::Raw).expect("create the store");
    store.append(&records()).expect("append the records");
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    // Record 2 now claims bytes far past the end of the chunk (inside the map,
    // past the file): reading them would fault.
    patch(&path.join("0.loc"), 2 * 16, &(1u32 << 30).to_le_bytes());
    // Record 3 claims another length.
    patch(&path.join("0.loc"), 3 * 16 + 8, &255u32.to_le_bytes());
    // Record 4 names a chunk that does not exist.
    patch(&path.join("0.loc"), 4 * 16 + 12, &7u32.to_le_bytes());
    let store = DenseStore::<u8>::open(&path).unwrap();
    for i in 2..5 {
        assert!(
            matches!(store.gather(&[i]), Err(Error::CorruptRecord { index, .. }) if index == i)
        );
    }
    assert!(matches!(
        store.verify(),
        Err(Error::CorruptRecord { index: 2, .. })
    ));
}

#[test]
fn overlapping_records_fail_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = DenseStore::<u8>::create(&path, &[256], Codec::Raw).expect("create the store");
    store.append(&records()).expect("append the records");
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    // Record 6 points at record 1's bytes.
    let loc = fs::read(path.join("0.loc")).unwrap();
    patch(&path.join("0.loc"), 6 * 16, &loc[16..20]);
    let store = DenseStore::<u8>::open(&path).unwrap();
    assert!(
        matches!(store.verify(), Err(Error::CorruptRecord { index: 6, reason, .. }) if reason.contains("overlap"))
    );
}

/// A gather reads a shape record only when its table entry leaves the shape
/// open (rank 2 and more) or when it checks records (`verify_on_read`): a
/// rank-1 shape is the payload's length. `verify` reads every shape record.
#[test]
fn damaged_shape_records_fail_verify_and_the_gathers_that_read_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = RaggedStore::<u16>::create(&path, Codec::Zstd).expect("create the store");
    let records = [
        ndarray::arr1(&[1u16, 2, 3]).into_dyn(),
        ndarray::arr1(&[4u16]).into_dyn(),
        ndarray::arr2(&[[5u16, 6], [7, 8]]).into_dyn(),
    ];
    store.append(&records).expect("append the records");
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    // Record k's shape record is physical record 2k + 1. Say record 1 (rank
    // 1) has 2 elements, and record 2 (rank 2) has shape [2, 1].
    let loc = fs::read(path.join("0.loc")).unwrap();
    let shape_at = |k: usize| {
        let entry = (2 * k + 1) * 16;
        u32::from_le_bytes(loc[entry..entry + 4].try_into().unwrap()) as u64
    };
    patch(&path.join("0.chunk"), shape_at(1) + 8, &2u64.to_le_bytes());
    patch(&path.join("0.chunk"), shape_at(2) + 16, &1u64.to_le_bytes());

    let store = RaggedStore::<u16>::open(&path).unwrap();
    let batch = store.gather(&[0, 1]).unwrap();
    assert_eq!(batch.values(), &[1, 2, 3, 4]);
    assert_eq!(batch.get(1).unwrap().shape(), &[1], "the payload's length");
    let mut batch = zrecord::RaggedBatch::new();
    assert!(matches!(
        store.gather_into(&[0, 2], &mut batch),
        Err(Error::CorruptRecord { index: 2, .. })
    ));
    assert!(batch.is_empty(), "a failed gather leaves the batch empty");
    assert!(matches!(
        store.verify(),
        Err(Error::CorruptRecord { index: 1, .. })
    ));
    drop(store);

    let checked = zrecord::OpenOptions::new().verify_on_read(true);
    let store = checked.open::<RaggedStore<u16>>(&path).unwrap();
    assert_eq!(store.gather(&[0]).unwrap().values(), &[1, 2, 3]);
    assert!(matches!(
        store.gather(&[1]),
        Err(Error::CorruptRecord { index: 1, .. })
    ));
}

#[test]
fn invalid_bools_on_disk_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = DenseStore::<bool>::create(&path, &[4], Codec::Raw).expect("create the store");
    store.append(&[true; 8]).expect("append the records");
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    // Byte 1 of record 1 (4 bools and a 4-byte checksum per record).
    patch(&path.join("0.chunk"), 8 + 1, &[3]);
    let store = DenseStore::<bool>::open(&path).unwrap();
    let mut out = [false; 8];
    assert!(matches!(
        store.gather_into(&[0, 1], &mut out),
        Err(Error::InvalidBool {
            offset: 5,
            value: 3
        })
    ));
    assert_eq!(
        out, [false; 8],
        "no invalid bool is left in the caller's buffer"
    );
    assert!(matches!(
        store.verify(),
        Err(Error::CorruptRecord { index: 1, .. })
    ));
}
