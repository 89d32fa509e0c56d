//! Every record carries a checksum: a flipped byte anywhere in a raw record
//! or a shape record is found by `verify`, and by a gather that asked for
//! read checks (`verify_on_read`); without them a raw gather copies what is
//! there. zstd frames are checked on every gather (tests/corruption.rs).
//! Both ways of reading a store on disk are held to this: memory maps and
//! explicit reads.

use std::fs;
use std::path::Path;

use zrecord::storage::Io;
use zrecord::{Codec, DenseStore, Error, OpenOptions, RaggedStore};

const IOS: [Io; 2] = [Io::Mapped, Io::Direct];

/// Where record `phys`'s stored bytes start in chunk 0, and how many there are.
fn span(store: &Path, phys: usize) -> (usize, usize) {
    let loc = fs::read(store.join("0.loc")).unwrap();
    let word = |at: usize| u32::from_le_bytes(loc[at..at + 4].try_into().unwrap()) as usize;
    (word(phys * 16), word(phys * 16 + 4))
}

fn flip(store: &Path, at: usize) {
    let chunk = store.join("0.chunk");
    let mut bytes = fs::read(&chunk).unwrap();
    bytes[at] ^= 0x20;
    fs::write(&chunk, bytes).unwrap();
}

fn plain(io: Io) -> OpenOptions {
    OpenOptions::new().read_only(true).io(io)
}

fn checked(io: Io) -> OpenOptions {
    plain(io).verify_on_read(true)
}

#[test]
fn every_byte_of_a_raw_dense_record_is_covered() {
    for io in IOS {
        raw_dense_record_covered(io);
    }
}

fn raw_dense_record_covered(io: Io) {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<u8> = (0..5 * 300).map(|i| (i * 7 % 251) as u8).collect();
    let path = dir.path().join("s");
    let store = DenseStore::<u8>::create(&path, &[300], Codec::Raw).unwrap();
    store.append(&values).unwrap();
    store.sync().unwrap(); // what follows damages a durable store
    drop(store);
    let (start, stored) = span(&path, 3);
    assert_eq!(stored, 304, "300 bytes and a 4-byte CRC-32C");
    // Every byte of record 3, its checksum included.
    for at in start..start + stored {
        flip(&path, at);
        let plain = plain(io).open::<DenseStore<u8>>(&path).unwrap();
        assert!(
            matches!(plain.verify(), Err(Error::CorruptRecord { index: 3, .. })),
            "{io:?} byte {at}"
        );
        if at < start + 300 {
            // Without read checks, a raw gather copies the damaged byte.
            assert_ne!(
                plain.get(3).unwrap().as_slice().unwrap(),
                &values[900..1200]
            );
        }
        drop(plain);
        let store = checked(io).open::<DenseStore<u8>>(&path).unwrap();
        assert!(
            matches!(store.gather(&[1, 3]), Err(Error::CorruptRecord { index: 3, ref reason, .. }) if reason.contains("checksum")),
            "{io:?} byte {at}"
        );
        assert_eq!(store.get(4).unwrap().as_slice().unwrap(), &values[1200..]);
        drop(store);
        flip(&path, at);
    }
    let store = checked(io).open::<DenseStore<u8>>(&path).unwrap();
    assert_eq!(store.verify().unwrap().records, 5);
    // A large batch takes the parallel path.
    let all: Vec<u64> = (0..5).cycle().take(20_000).collect();
    assert_eq!(store.gather(&all).unwrap().len(), 20_000 * 300);
}

#[test]
fn payloads_and_shape_records_of_ragged_stores_are_covered() {
    for (io, codec) in IOS
        .into_iter()
        .flat_map(|io| [(io, Codec::Raw), (io, Codec::Zstd)])
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = RaggedStore::<u16>::create(&path, codec.clone()).unwrap();
        store
            .append_slices(&[vec![1u16, 2, 3], vec![4, 5], vec![6]])
            .unwrap();
        store.sync().unwrap(); // what follows damages a durable store
        drop(store);
        // Physical records: payload 2i, shape 2i + 1. Flip the second
        // dimension byte of record 1's shape, then (raw) a payload byte.
        let (shape_at, _) = span(&path, 3);
        let mut targets = vec![("shape", shape_at + 8)];
        if codec == Codec::Raw {
            targets.push(("payload", span(&path, 2).0 + 1));
        }
        for (what, at) in targets {
            flip(&path, at);
            let store = checked(io).open::<RaggedStore<u16>>(&path).unwrap();
            assert!(
                matches!(store.verify(), Err(Error::CorruptRecord { index: 1, .. })),
                "{io:?} {codec} {what}"
            );
            assert!(
                matches!(
                    store.gather(&[1]),
                    Err(Error::CorruptRecord { index: 1, .. })
                ),
                "{io:?} {codec} {what}"
            );
            assert_eq!(store.get(2).unwrap().as_slice().unwrap(), &[6]);
            drop(store);
            flip(&path, at);
        }
        assert_eq!(
            plain(io)
                .open::<RaggedStore<u16>>(&path)
                .unwrap()
                .verify()
                .unwrap()
                .records,
            3
        );
    }
}
