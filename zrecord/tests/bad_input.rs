//! Bad input is a typed error and leaves every file of the store byte-identical.

mod common;

use std::fs;
use std::path::Path;

use common::snapshot;
use zrecord::{AnyStore, Codec, DType, DenseStore, DynDenseStore, Error, RaggedStore};

/// A dense u8 store of three [2, 2] records and a ragged i32 store of two.
fn stores(dir: &Path) -> (DenseStore<u8>, RaggedStore<i32>) {
    let dense = DenseStore::<u8>::create(dir.join("dense"), &[2, 2], Codec::Zstd).unwrap();
    dense.append(&(0..12).collect::<Vec<u8>>()).unwrap();
    let ragged = RaggedStore::<i32>::create(dir.join("ragged"), Codec::Raw).unwrap();
    ragged.append_slices(&[vec![1, 2, 3], vec![4]]).unwrap();
    dense.sync().unwrap();
    ragged.sync().unwrap();
    (dense, ragged)
}

#[test]
fn rejected_appends_and_gathers_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (dense, ragged) = stores(dir.path());
    let (d0, r0) = (
        snapshot(&dir.path().join("dense")),
        snapshot(&dir.path().join("ragged")),
    );

    // Wrong dtype, through the dtype-tagged API.
    assert!(matches!(
        dense.as_dyn().append_bytes(DType::F32, &[0; 16]),
        Err(Error::DTypeMismatch {
            store: DType::U8,
            got: DType::F32
        })
    ));
    // A buffer that is not a whole number of records.
    assert!(matches!(
        dense.append(&[1, 2, 3, 4, 5]),
        Err(Error::PartialRecord {
            record_len: 4,
            got: 5
        })
    ));
    // Wrong item shape.
    assert!(matches!(
        dense.append_array(&ndarray::Array3::<u8>::zeros((2, 2, 3))),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        dense.append_array(&ndarray::Array1::<u8>::zeros(4)),
        Err(Error::ShapeMismatch { .. })
    ));
    // An invalid bool byte in a bool store.
    let flags = zrecord::OpenOptions::new()
        .create::<DynDenseStore>(
            dir.path().join("flags"),
            &zrecord::Schema::dense(DType::Bool, &[]),
            Codec::Raw,
        )
        .unwrap();
    let f0 = snapshot(&dir.path().join("flags"));
    assert!(matches!(
        flags.append_bytes(DType::Bool, &[1, 0, 2]),
        Err(Error::InvalidBool {
            offset: 2,
            value: 2
        })
    ));
    assert_eq!(snapshot(&dir.path().join("flags")), f0);
    // A record whose shape does not match its values.
    let mut batch = zrecord::RaggedBatch::<i32>::new();
    batch.push(&[2], &[7, 8]).unwrap();
    assert!(matches!(
        batch.push(&[3, 0], &[1]),
        Err(Error::BufferLength {
            expected: 0,
            got: 1
        })
    ));
    // Index out of range, for gathers and deletes.
    assert!(matches!(
        dense.gather(&[0, 3]),
        Err(Error::IndexOutOfRange { index: 3, len: 3 })
    ));
    assert!(matches!(
        ragged.gather(&[9]),
        Err(Error::IndexOutOfRange { index: 9, len: 2 })
    ));
    let mut dense = dense;
    assert!(matches!(
        dense.delete(&[0, 1, 7]),
        Err(Error::IndexOutOfRange { index: 7, len: 3 })
    ));
    // A caller buffer of the wrong size.
    assert!(matches!(
        dense.gather_into(&[0], &mut [0u8; 5]),
        Err(Error::BufferLength {
            expected: 4,
            got: 5
        })
    ));

    assert_eq!(dense.len(), 3);
    assert_eq!(ragged.len(), 2);
    drop((dense, ragged));
    assert_eq!(snapshot(&dir.path().join("dense")), d0);
    assert_eq!(snapshot(&dir.path().join("ragged")), r0);
}

#[test]
fn typed_opens_refuse_other_dtypes_and_kinds() {
    let dir = tempfile::tempdir().unwrap();
    drop(stores(dir.path()));
    let d0 = snapshot(&dir.path().join("dense"));
    assert!(matches!(
        DenseStore::<f32>::open(dir.path().join("dense")),
        Err(Error::DTypeMismatch {
            store: DType::U8,
            got: DType::F32
        })
    ));
    assert!(matches!(
        RaggedStore::<i32>::open(dir.path().join("dense")),
        Err(Error::KindMismatch { .. })
    ));
    assert!(matches!(
        DenseStore::<i32>::open(dir.path().join("ragged")),
        Err(Error::KindMismatch { .. })
    ));
    assert!(matches!(
        RaggedStore::<i64>::open(dir.path().join("ragged")),
        Err(Error::DTypeMismatch { .. })
    ));
    assert_eq!(snapshot(&dir.path().join("dense")), d0);
    // A refused typed open released the lock.
    assert!(DenseStore::<u8>::open(dir.path().join("dense")).is_ok());
}

#[test]
fn creating_over_something_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(stores(dir.path()));
    let d0 = snapshot(&dir.path().join("dense"));
    assert!(matches!(
        DenseStore::<u8>::create(dir.path().join("dense"), &[2, 2], Codec::Raw),
        Err(Error::AlreadyExists { .. })
    ));
    assert_eq!(snapshot(&dir.path().join("dense")), d0);
    fs::write(dir.path().join("file"), b"x").unwrap();
    assert!(matches!(
        DenseStore::<u8>::create(dir.path().join("file"), &[1], Codec::Raw),
        Err(Error::AlreadyExists { .. })
    ));
    assert!(matches!(
        DenseStore::<u8>::create(dir.path().join("empty-shape"), &[3, 0], Codec::Raw),
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        !dir.path().join("empty-shape").exists(),
        "a refused create leaves nothing"
    );
    // An empty folder is a fine place for a new store.
    fs::create_dir(dir.path().join("empty")).unwrap();
    assert!(DenseStore::<u8>::create(dir.path().join("empty"), &[1], Codec::Raw).is_ok());
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no staging folders are left: {leftovers:?}"
    );
}

/// Opens `path` expecting an error, and checks its files did not change.
fn open_fails(path: &Path) -> Error {
    let before = if path.is_dir() {
        snapshot(path)
    } else {
        Default::default()
    };
    let err = match AnyStore::open(path) {
        Err(e) => e,
        Ok(_) => panic!("{} opened", path.display()),
    };
    if path.is_dir() {
        assert_eq!(
            snapshot(path),
            before,
            "a failed open changed {}",
            path.display()
        );
    }
    err
}

/// A copy of a closed dense store, with `edit` applied to it.
fn damaged(dir: &Path, name: &str, edit: impl FnOnce(&Path)) -> std::path::PathBuf {
    let src = dir.join("dense");
    if !src.exists() {
        drop(stores(dir));
    }
    let dst = dir.join(name);
    fs::create_dir(&dst).unwrap();
    for e in fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    edit(&dst);
    dst
}

fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let mut b = fs::read(path).unwrap();
    b[at..at + bytes.len()].copy_from_slice(bytes);
    fs::write(path, b).unwrap();
}

/// Patches `meta.zr`'s current header and its synced copy alike.
fn patch_meta(store: &Path, at: usize, bytes: &[u8]) {
    patch(&store.join("meta.zr"), at, bytes);
    patch(&store.join("meta.zr"), 32 + at, bytes);
}

#[test]
fn damaged_stores_do_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    assert!(matches!(
        open_fails(&d.join("missing")),
        Error::NotAStore { .. }
    ));
    fs::create_dir(d.join("empty")).unwrap();
    assert!(matches!(
        open_fails(&d.join("empty")),
        Error::NotAStore { .. }
    ));
    fs::create_dir(d.join("random")).unwrap();
    for (i, name) in ["a.bin", "notes.txt", "0.chunk"].iter().enumerate() {
        fs::write(
            d.join("random").join(name),
            common::valid_bytes(DType::U8, i as u64, 100),
        )
        .unwrap();
    }
    assert!(matches!(
        open_fails(&d.join("random")),
        Error::NotAStore { .. }
    ));
    let garbage = damaged(d, "garbage", |p| {
        fs::write(p.join("meta.zr"), common::valid_bytes(DType::U8, 1, 32)).unwrap();
        fs::write(p.join("store.zr"), common::valid_bytes(DType::U8, 2, 70)).unwrap();
    });
    assert!(matches!(open_fails(&garbage), Error::BadMagic { .. }));

    let truncated = damaged(d, "truncated-meta", |p| {
        let b = fs::read(p.join("meta.zr")).unwrap();
        fs::write(p.join("meta.zr"), &b[..20]).unwrap();
    });
    assert!(matches!(open_fails(&truncated), Error::Corrupt { .. }));
    let magic = damaged(d, "meta-magic", |p| patch(&p.join("meta.zr"), 0, b"ZRAC"));
    assert!(matches!(open_fails(&magic), Error::BadMagic { found, .. } if &found == b"ZRAC"));
    let version = damaged(d, "meta-version", |p| patch(&p.join("meta.zr"), 4, &[3]));
    assert!(matches!(
        open_fails(&version),
        Error::UnsupportedVersion {
            found: 3,
            supported: 2,
            ..
        }
    ));
    let mixed = damaged(d, "meta-version-1", |p| patch(&p.join("meta.zr"), 4, &[1]));
    assert!(matches!(open_fails(&mixed), Error::Corrupt { .. }));
    let codec = damaged(d, "meta-codec", |p| patch(&p.join("meta.zr"), 5, &[9]));
    assert!(matches!(
        open_fails(&codec),
        Error::InvalidTag {
            field: "codec",
            value: 9,
            ..
        }
    ));
    let store_version = damaged(d, "store-version", |p| patch(&p.join("store.zr"), 4, &[7]));
    assert!(matches!(
        open_fails(&store_version),
        Error::UnsupportedVersion { found: 7, .. }
    ));
    let kind = damaged(d, "store-kind", |p| patch(&p.join("store.zr"), 5, &[5]));
    assert!(matches!(
        open_fails(&kind),
        Error::InvalidTag {
            field: "kind",
            value: 5,
            ..
        }
    ));
    let width = damaged(d, "store-width", |p| patch(&p.join("store.zr"), 8, &[5]));
    assert!(matches!(open_fails(&width), Error::Corrupt { .. }));
    let short_loc = damaged(d, "short-loc", |p| {
        let b = fs::read(p.join("0.loc")).unwrap();
        fs::write(p.join("0.loc"), &b[..b.len() - 16]).unwrap();
    });
    assert!(
        matches!(open_fails(&short_loc), Error::Corrupt { reason, .. } if reason.contains("record-table entries"))
    );
    let longer = damaged(d, "length-too-long", |p| patch_meta(p, 14, &[9]));
    assert!(matches!(open_fails(&longer), Error::Corrupt { .. }));
    // The current header alone damaged: the store opens at its synced copy.
    let current = damaged(d, "current-length-too-long", |p| {
        patch(&p.join("meta.zr"), 14, &[9])
    });
    let store = DenseStore::<u8>::open(&current).unwrap();
    assert_eq!(store.len(), 3);
    assert_eq!(store.verify().unwrap().records, 3);
    drop(store);
    assert_eq!(
        fs::read(current.join("meta.zr")).unwrap()[14],
        3,
        "rolled back"
    );
    let copies = damaged(d, "headers-disagree", |p| {
        patch(&p.join("meta.zr"), 32 + 5, &[0])
    });
    assert!(
        matches!(open_fails(&copies), Error::Corrupt { reason, .. } if reason.contains("two headers"))
    );
    let short_chunk = damaged(d, "short-chunk", |p| {
        let b = fs::read(p.join("0.chunk")).unwrap();
        fs::write(p.join("0.chunk"), &b[..b.len() - 1]).unwrap();
    });
    assert!(matches!(open_fails(&short_chunk), Error::Corrupt { .. }));
    let no_chunk = damaged(d, "no-chunk", |p| {
        fs::remove_file(p.join("0.chunk")).unwrap()
    });
    assert!(matches!(open_fails(&no_chunk), Error::Corrupt { .. }));
    let dict_codec = damaged(d, "dict-codec-without-dict", |p| patch_meta(p, 5, &[2]));
    assert!(matches!(
        open_fails(&dict_codec),
        Error::MissingDictionary { .. }
    ));
    let stray_dict = damaged(d, "stray-dict", |p| {
        fs::write(p.join("dict.zr"), b"0123456789").unwrap()
    });
    assert!(matches!(open_fails(&stray_dict), Error::Corrupt { .. }));
}

#[test]
fn non_zero_reserved_header_bytes_are_refused() {
    // FORMAT.md (version 2): store.zr bytes 6..8 and 24..32, meta.zr bytes
    // 28..32 are reserved, zero; a reader refuses anything else (a newer
    // writer's field this reader would not understand). The feature bits
    // and flags between them are tested in crafted_stores.rs.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reserved = [
        ("store.zr", 6..8),
        ("store.zr", 24..32),
        ("meta.zr", 28..32),
        ("meta.zr", 60..64),
    ];
    for (file, range) in reserved {
        for at in range {
            let path = damaged(d, &format!("{file}-{at}"), |p| {
                patch(&p.join(file), at, &[0x01])
            });
            match open_fails(&path) {
                Error::Corrupt {
                    path: named,
                    reason,
                } => {
                    assert_eq!(named, path.join(file), "byte {at} of {file}");
                    assert!(reason.contains("reserved"), "byte {at} of {file}: {reason}");
                }
                other => panic!("byte {at} of {file}: {other:?}"),
            }
        }
    }
    // The untouched copy opens: the refusals are the reserved bytes' doing.
    let control = damaged(d, "control", |_| {});
    AnyStore::open(&control).expect("an unchanged copy opens");
}
