//! Record-table segments and data chunks roll over correctly; tiny test
//! geometries exercise it without gigabytes.

mod common;

use zrecord::{Codec, DType, DynDenseStore, Error, Geometry, RaggedStore};

fn count(path: &std::path::Path, ext: &str) -> usize {
    std::fs::read_dir(path)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == ext)
        })
        .count()
}

#[test]
fn dense_records_fill_chunks_and_segments() {
    // 16-entry segments, 4,095-byte chunks: 39 raw records of 100 bytes
    // (104 stored, with the checksum) per chunk.
    let geometry = Geometry {
        loc_segment_bits: 4,
        chunk_bits: 12,
    };
    for codec in [Codec::Raw, Codec::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = zrecord::OpenOptions::new()
            .geometry(geometry)
            .create::<DynDenseStore>(
                &path,
                &zrecord::Schema::dense(DType::U8, &[10, 10]),
                codec.clone(),
            )
            .unwrap();
        let mut model = Vec::new();
        for (b, n) in [1usize, 7, 50, 200, 3, 739].into_iter().enumerate() {
            let bytes = common::valid_bytes(DType::U8, b as u64, n * 100);
            store.append_bytes(DType::U8, &bytes).unwrap();
            model.extend_from_slice(&bytes);
        }
        assert_eq!(store.len(), 1000);
        assert_eq!(count(&path, "loc"), 1000usize.div_ceil(16));
        if codec == Codec::Raw {
            assert_eq!(count(&path, "chunk"), 1000usize.div_ceil(39));
        } else {
            assert!(count(&path, "chunk") > 1);
        }
        let all: Vec<u64> = (0..1000).rev().collect();
        let mut out = vec![0u8; 1000 * 100];
        store.gather_bytes(&all, &mut out).unwrap();
        let expected: Vec<u8> = all
            .iter()
            .flat_map(|&i| model[i as usize * 100..][..100].to_vec())
            .collect();
        assert_eq!(out, expected);
        drop(store);
        let store = zrecord::OpenOptions::new()
            .open::<DynDenseStore>(&path)
            .unwrap();
        store.gather_bytes(&all, &mut out).unwrap();
        assert_eq!(out, expected);
        assert_eq!(store.verify().unwrap().records, 1000);
    }
}

#[test]
fn a_record_fills_a_chunk_exactly_or_is_refused() {
    let geometry = Geometry {
        loc_segment_bits: 4,
        chunk_bits: 12,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = zrecord::OpenOptions::new()
        .geometry(geometry)
        .create::<RaggedStore<u8>>(
            &path,
            &zrecord::Schema::ragged(<u8 as zrecord::Element>::DTYPE),
            Codec::Raw,
        )
        .unwrap();
    // A payload and its 16-byte shape record, each with a 4-byte checksum:
    // 4,071 + 4 + 16 + 4 = 4,095 bytes, one whole chunk.
    store.append_slices(&[vec![1u8; 4071]]).unwrap();
    store
        .append_slices(&[vec![2u8; 4071], vec![3u8; 5]])
        .unwrap();
    let before = common::snapshot(&path);
    assert!(matches!(
        store.append_slices(&[vec![4u8; 10], vec![5u8; 4092]]),
        Err(Error::RecordTooLarge {
            position: 1,
            bytes: 4096,
            limit: 4095
        })
    ));
    assert_eq!(common::snapshot(&path), before);
    let got = store.gather_arrays(&[2, 1, 0]).unwrap();
    assert_eq!(got[0].len(), 5);
    assert_eq!(got[1].len(), 4071);
    assert!(got[2].iter().all(|&b| b == 1));
    assert_eq!(
        store.stats().unwrap().chunk_bytes,
        2 * 4095 + (5 + 4) + (16 + 4)
    );
    store.verify().unwrap();
}
