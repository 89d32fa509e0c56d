//! `zrecord import loaderx` on stores written by loaderx 1.7.2 and 2.8.19:
//! every fixture imports to exactly its expected content (its `.npz`), and a
//! damaged store or one of an unknown version is an error that writes nothing.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::listing;
use common::run::{fails, fixture, ok};
use zrecord::AnyStore;

/// One array of an `.npz` (uncompressed, as `np.savez` writes it): its
/// dtype string, shape and raw little-endian bytes.
struct Npy {
    descr: String,
    shape: Vec<usize>,
    data: Vec<u8>,
}

fn npz(path: &Path) -> BTreeMap<String, Npy> {
    let bytes = std::fs::read(path).unwrap();
    let (mut at, mut out) = (0, BTreeMap::new());
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    while bytes[at..at + 4] == [0x50, 0x4b, 0x03, 0x04] {
        assert_eq!(u16_at(at + 8), 0, "stored, not deflated");
        let (mut size, name_len, extra_len) = (u32_at(at + 18), u16_at(at + 26), u16_at(at + 28));
        let name = String::from_utf8(bytes[at + 30..at + 30 + name_len].to_vec()).unwrap();
        let start = at + 30 + name_len + extra_len;
        if size == 0xFFFF_FFFF {
            // zip64: the size sits in the extra field.
            size = u32_at(at + 30 + name_len + 4 + 8);
        }
        out.insert(
            name.trim_end_matches(".npy").to_string(),
            npy(&bytes[start..start + size]),
        );
        at = start + size;
    }
    out
}

fn npy(file: &[u8]) -> Npy {
    assert_eq!(&file[..6], b"\x93NUMPY");
    let (len, at) = match file[6] {
        1 => (u16::from_le_bytes([file[8], file[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&file[at..at + len]).unwrap();
    let field = |key: &str| {
        let i = header.find(key).unwrap() + key.len();
        header[i..].trim_start_matches([':', ' ', '\'']).to_string()
    };
    let descr = field("'descr'").split('\'').next().unwrap().to_string();
    let shape = field("'shape'");
    let shape: Vec<usize> = shape[1..shape.find(')').unwrap()]
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect();
    Npy {
        descr,
        shape,
        data: file[at + len..].to_vec(),
    }
}

fn i64s(a: &Npy) -> Vec<i64> {
    a.data
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Imports `store` and checks the result against `store.expected.npz`.
fn check(store: &Path, out: &Path) {
    ok(&[
        "import",
        "loaderx",
        &store.display().to_string(),
        &out.display().to_string(),
        "--quiet",
        "--codec",
        "zstd",
    ]);
    let expected = npz(&PathBuf::from(format!("{}.expected.npz", store.display())));
    let name = store.display().to_string();
    match AnyStore::open(out).unwrap() {
        AnyStore::Dense(s) => {
            let records = &expected["records"];
            assert_eq!(s.len() as usize, records.shape[0], "{name}");
            assert_eq!(s.item_shape(), &records.shape[1..], "{name}");
            let mut got = vec![0u8; records.data.len()];
            s.gather_bytes(&(0..s.len()).collect::<Vec<u64>>(), &mut got)
                .unwrap();
            assert!(got == records.data, "{name}: records differ");
            assert!(
                records.descr.ends_with(&format!("{}", s.dtype().size())),
                "{name}: {}",
                records.descr
            );
        }
        AnyStore::Ragged(s) => {
            let batch = s.gather_dyn(&(0..s.len()).collect::<Vec<u64>>()).unwrap();
            assert!(
                batch.values().as_bytes() == expected["values"].data,
                "{name}: values differ"
            );
            let offsets: Vec<usize> = i64s(&expected["offsets"])
                .iter()
                .map(|&o| o as usize)
                .collect();
            assert_eq!(batch.layout().offsets(), offsets, "{name}");
            let ndims = i64s(&expected["ndims"]);
            let shapes = i64s(&expected["shapes"]);
            let width = expected["shapes"].shape.get(1).copied().unwrap_or(0);
            for (k, &rank) in ndims.iter().enumerate() {
                let want: Vec<usize> = shapes[k * width..k * width + rank as usize]
                    .iter()
                    .map(|&d| d as usize)
                    .collect();
                assert_eq!(batch.layout().shape(k).unwrap(), want, "{name} record {k}");
            }
        }
    }
}

fn stores(version: &str) -> Vec<PathBuf> {
    let dir = fixture(&format!("loaderx/{version}"));
    let mut stores: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    stores.sort();
    assert!(!stores.is_empty());
    stores
}

#[test]
fn every_loaderx_1_7_store_imports_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    for (k, store) in stores("v1.7.2").iter().enumerate() {
        check(store, &tmp.path().join(k.to_string()));
    }
}

#[test]
fn every_loaderx_2_8_store_imports_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    for (k, store) in stores("v2.8.19").iter().enumerate() {
        check(store, &tmp.path().join(k.to_string()));
    }
}

/// A writable copy of a fixture store.
fn copy(store: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(store).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    to.to_path_buf()
}

#[test]
fn damaged_or_unknown_stores_are_errors_that_write_nothing() {
    let v17 = fixture("loaderx/v1.7.2");
    let v28 = fixture("loaderx/v2.8.19");
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let out = tmp.path().join("out").display().to_string();
    let run = |store: &Path, mentions: &[&str]| {
        fails(
            mentions,
            &["import", "loaderx", &store.display().to_string(), &out],
        );
        assert!(!Path::new(&out).exists(), "nothing written");
    };

    // 1.7: a newer header version; a truncated chunk; a corrupt frame.
    let s = copy(&v17.join("ragged_i32_tokens_zstd"), &work.join("a"));
    let mut meta = std::fs::read(s.join("meta.zr")).unwrap();
    meta[4] = 5;
    std::fs::write(s.join("meta.zr"), &meta).unwrap();
    run(&s, &["meta.zr", "header version 5"]);
    let s = copy(&v17.join("ragged_i32_tokens_zstd"), &work.join("b"));
    let chunk = std::fs::read(s.join("0.chunk")).unwrap();
    std::fs::write(s.join("0.chunk"), &chunk[..chunk.len() - 100]).unwrap();
    run(&s, &["0.chunk", "past its end"]);
    let s = copy(&v17.join("dense_f32_2x3_zstd"), &work.join("c"));
    let mut chunk = std::fs::read(s.join("0.chunk")).unwrap();
    chunk[..4].copy_from_slice(b"junk");
    std::fs::write(s.join("0.chunk"), &chunk).unwrap();
    run(&s, &["physical record", "zstd"]);

    // 2.8: a shard shorter than the header says; a schema that is not JSON.
    let s = copy(&v28.join("dense_f32_2x3_raw"), &work.join("d"));
    let shard = std::fs::read(s.join("data_1.zr")).unwrap();
    std::fs::write(s.join("data_1.zr"), &shard[..shard.len() - 1]).unwrap();
    run(&s, &["data_1.zr", "damaged"]);
    let s = copy(&v28.join("ragged_f32_2d_raw"), &work.join("e"));
    let mut meta = std::fs::read(s.join("meta.zr")).unwrap();
    meta[0x808] = b'[';
    std::fs::write(s.join("meta.zr"), &meta).unwrap();
    run(&s, &["meta.zr", "schema"]);

    // Not a loaderx store at all.
    run(tmp.path(), &["not a loaderx store"]);
    assert_eq!(listing(tmp.path()), ["work"]);
}
