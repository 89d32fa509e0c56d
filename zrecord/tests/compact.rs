//! Compaction: live records read back identical, chunk bytes drop to the live
//! bytes, and a compaction stopped part way is consistent and can be finished.

mod common;

use std::ops::ControlFlow;
use std::path::Path;

use zrecord::{Codec, DType, Geometry, RaggedStore};

/// 64 KiB chunks, 64-entry table segments: a few thousand records span many files.
const GEOMETRY: Geometry = Geometry {
    loc_segment_bits: 6,
    chunk_bits: 16,
};

fn record(r: u64) -> Vec<u8> {
    common::valid_bytes(DType::U8, r, 1 + (common::splitmix(7, r) % 900) as usize)
}

/// A store of 2,000 records with every third and some random ones deleted.
fn fragmented(path: &Path, codec: Codec) -> (RaggedStore<u8>, Vec<Vec<u8>>) {
    let mut store = zrecord::OpenOptions::new()
        .geometry(GEOMETRY)
        .create::<RaggedStore<u8>>(
            path,
            &zrecord::Schema::ragged(<u8 as zrecord::Element>::DTYPE),
            codec,
        )
        .unwrap();
    let mut model: Vec<Vec<u8>> = (0..2000).map(record).collect();
    for batch in model.chunks(97) {
        store.append_slices(batch).unwrap();
    }
    let doomed: Vec<u64> = (0..2000u64)
        .filter(|&i| i.is_multiple_of(3) || common::splitmix(9, i).is_multiple_of(5))
        .collect();
    store.delete(&doomed).unwrap();
    for &t in doomed.iter().rev() {
        model.swap_remove(t as usize);
    }
    (store, model)
}

fn check(store: &RaggedStore<u8>, model: &[Vec<u8>]) {
    let all: Vec<u64> = (0..model.len() as u64).collect();
    let got = store.gather(&all).unwrap();
    assert_eq!(got.len(), model.len());
    for (k, expected) in model.iter().enumerate() {
        assert_eq!(
            got.get(k).unwrap().as_slice().unwrap(),
            &expected[..],
            "record {k}"
        );
    }
    store.verify().unwrap();
}

fn files(path: &Path, ext: &str) -> usize {
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
fn compaction_reclaims_everything_deleted() {
    for codec in [Codec::Raw, Codec::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let (mut store, model) = fragmented(&path, codec);
        let before = store.stats().unwrap();
        assert!(
            before.reclaimable_bytes > before.live_bytes / 2,
            "{before:?}"
        );
        let chunks_before = files(&path, "chunk");

        let progress = store.compact().unwrap();
        assert!(progress.is_complete() && progress.moved > 0);
        let after = store.stats().unwrap();
        assert_eq!(after.records, before.records);
        assert_eq!(after.live_bytes, before.live_bytes);
        assert_eq!(
            after.chunk_bytes, after.live_bytes,
            "no slack left in the files"
        );
        assert_eq!(after.reclaimable_bytes, 0);
        let on_disk: u64 = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.path().extension().is_some_and(|x| x == "chunk"))
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert_eq!(on_disk, after.chunk_bytes);
        assert!(files(&path, "chunk") < chunks_before);
        // The table is cut to the live records: 2 entries per ragged record.
        assert_eq!(
            files(&path, "loc") as u64,
            (2 * after.records).div_ceil(64).max(1)
        );
        check(&store, &model);

        // Compacting a compact store moves nothing; appends continue after it.
        assert_eq!(store.compact().unwrap().moved, 0);
        store.append_slices(&[vec![1u8, 2, 3]]).unwrap();
        drop(store);
        let store = RaggedStore::<u8>::open(&path).unwrap();
        let mut model = model;
        model.push(vec![1, 2, 3]);
        check(&store, &model);
    }
}

#[test]
fn an_interrupted_compaction_is_consistent_and_finishes_later() {
    for stop_after in [1u64, 10, 300] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let (mut store, model) = fragmented(&path, Codec::Zstd);
        let progress = store
            .compact_with(|p| {
                if p.moved >= stop_after {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert!(!progress.is_complete());
        assert_eq!(progress.moved, stop_after);
        check(&store, &model);
        // Appending to a half-compacted store is fine too.
        store.append_slices(&[vec![42u8; 10]]).unwrap();
        let mut model = model;
        model.push(vec![42; 10]);
        drop(store);

        let mut store = RaggedStore::<u8>::open(&path).unwrap();
        check(&store, &model);
        assert!(store.compact().unwrap().is_complete());
        let stats = store.stats().unwrap();
        assert_eq!(stats.chunk_bytes, stats.live_bytes);
        check(&store, &model);
    }
}

#[test]
fn compacting_an_emptied_store_leaves_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let (mut store, model) = fragmented(&path, Codec::Raw);
    let all: Vec<u64> = (0..model.len() as u64).collect();
    store.delete(&all).unwrap();
    store.compact().unwrap();
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats.records, stats.chunk_bytes, stats.live_bytes),
        (0, 0, 0)
    );
    assert_eq!((files(&path, "chunk"), files(&path, "loc")), (1, 1));
    store.append_slices(&[vec![5u8]]).unwrap();
    check(&store, &[vec![5]]);
}
