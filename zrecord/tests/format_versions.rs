//! Format versions: version-1 stores (written by the last version-1
//! release, `tests/fixtures/format-v1/`) open, read, verify and take writes
//! in their own layout; version-2 stores hold ragged records with zero
//! elements and restore their shapes exactly.

use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use zrecord::{AnyStore, Codec, DenseStore, Error, RaggedBatch, RaggedStore};

fn fixture(name: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/format-v1")
        .join(name);
    let dst = dir.join(name);
    std::fs::create_dir(&dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    dst
}

fn header_versions(path: &Path) -> (u8, u8) {
    let v = |f: &str| std::fs::read(path.join(f)).unwrap()[4];
    (v("store.zr"), v("meta.zr"))
}

#[test]
fn version_1_stores_read_back_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let d = fixture("dense-u16-raw", dir.path());
    let s = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u16>>(&d)
        .unwrap();
    assert_eq!(s.format_version(), 1);
    assert_eq!(
        s.gather(&[0, 1]).unwrap().into_raw_vec_and_offset().0,
        [1, 2, 3, 4]
    );
    s.verify().unwrap();

    let d = fixture("dense-f32-zstd", dir.path());
    let s = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<f32>>(&d)
        .unwrap();
    let mut expected: Vec<u32> = (0..20).collect();
    for hole in [7usize, 3] {
        let last = expected.pop().unwrap();
        expected[hole] = last;
    }
    assert_eq!(s.len(), 18);
    for (i, &r) in expected.iter().enumerate() {
        let want: Vec<f32> = (0..3).map(|j| (r * 3 + j) as f32).collect();
        assert_eq!(
            s.get(i as u64).unwrap().into_raw_vec_and_offset().0,
            want,
            "record {i}"
        );
    }
    assert_eq!(s.verify().unwrap().records, 18);

    let d = fixture("ragged-u8-raw", dir.path());
    let s = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<RaggedStore<u8>>(&d)
        .unwrap();
    let got = s.gather_arrays(&[0, 1, 2, 3]).unwrap();
    assert_eq!(got[0].as_slice().unwrap(), b"hello");
    assert_eq!(got[1].as_slice().unwrap(), b"zrecord");
    assert_eq!(got[2].shape(), &[] as &[usize]);
    assert_eq!(got[2].as_slice().unwrap(), &[7]);
    assert_eq!(got[3].shape(), &[2, 3]);
    assert_eq!(got[3].as_slice().unwrap(), &[0, 1, 2, 3, 4, 5]);
    s.verify().unwrap();

    let d = fixture("ragged-i32-zstd", dir.path());
    let s = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<RaggedStore<i32>>(&d)
        .unwrap();
    for k in 0..10 {
        assert_eq!(
            s.get(k).unwrap().into_raw_vec_and_offset().0,
            (0..=k as i32).collect::<Vec<_>>()
        );
    }
    s.verify().unwrap();
}

#[test]
fn version_1_stores_take_writes_in_their_own_layout() {
    let dir = tempfile::tempdir().unwrap();
    let d = fixture("ragged-u8-raw", dir.path());
    let before = std::fs::read(d.join("0.chunk")).unwrap();
    let mut s = RaggedStore::<u8>::open(&d).unwrap();
    s.append_slices(&[b"more".to_vec()]).unwrap();
    // No checksum after a version-1 raw record; no empty records.
    let after = std::fs::read(d.join("0.chunk")).unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(
        after.len(),
        before.len() + 4 + 16,
        "payload and shape record, bare"
    );
    assert!(matches!(
        s.append_slices(&[b"x".to_vec(), vec![]]),
        Err(Error::EmptyRecord { position: 1, .. })
    ));
    s.delete(&[0]).unwrap();
    s.compact().unwrap();
    assert_eq!(s.len(), 4);
    assert_eq!(s.get(0).unwrap().as_slice().unwrap(), b"more");
    s.verify().unwrap();
    drop(s);
    assert_eq!(header_versions(&d), (1, 1));
    assert_eq!(std::fs::read(d.join("meta.zr")).unwrap()[24..], [0; 8]);
    assert_eq!(
        zrecord::OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(&d)
            .unwrap()
            .format_version(),
        1
    );
}

#[test]
fn empty_ragged_records_round_trip_with_their_shapes() {
    for codec in [Codec::Raw, Codec::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = RaggedStore::<f32>::create(&path, codec.clone()).unwrap();
        assert_eq!(store.format_version(), 2);
        let shapes: [&[usize]; 6] = [&[0], &[3, 0], &[], &[2], &[0, 5, 2], &[1, 1, 0]];
        let arrays: Vec<ArrayD<f32>> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| {
                ArrayD::from_shape_vec(
                    IxDyn(s),
                    (0..s.iter().product::<usize>())
                        .map(|v| (k * 10 + v) as f32)
                        .collect(),
                )
                .unwrap()
            })
            .collect();
        store.append(&arrays).unwrap();
        store
            .append_slices(&[Vec::<f32>::new(), vec![1.5]])
            .unwrap();
        let mut batch = RaggedBatch::<f32>::new();
        batch.push(&[4, 0], &[]).unwrap();
        store.append_batch(&batch).unwrap();
        drop(store);
        let store = zrecord::OpenOptions::new()
            .read_only(true)
            .open::<RaggedStore<f32>>(&path)
            .unwrap();
        assert_eq!(store.len(), 9);
        let got = store.gather_arrays(&(0..9).collect::<Vec<_>>()).unwrap();
        for (k, a) in arrays.iter().enumerate() {
            assert_eq!(&got[k], a, "{codec} record {k}");
        }
        assert_eq!(got[6].shape(), &[0]);
        assert_eq!(got[7].as_slice().unwrap(), &[1.5]);
        assert_eq!(got[8].shape(), &[4, 0]);
        let packed = store.gather(&[0, 3, 1, 1]).unwrap();
        assert_eq!(packed.layout().offsets(), &[0, 0, 2, 2, 2]);
        assert_eq!(packed.layout().shape(2), Some(&[3, 0][..]));
        assert_eq!(store.verify().unwrap().records, 9);
    }
    // Dense stores still refuse a zero-element item shape.
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        DenseStore::<u8>::create(dir.path().join("d"), &[4, 0], Codec::Raw),
        Err(Error::InvalidArgument(_))
    ));
}
