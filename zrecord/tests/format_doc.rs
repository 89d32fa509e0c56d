//! FORMAT.md is the specification: builds its example store and checks every
//! file byte for byte against the hex dumps on that page, and opens its
//! version-1 dumps and reads them back.

use std::collections::BTreeMap;

use zrecord::{Codec, DenseStore};

/// The ```hex NAME blocks of FORMAT.md, decoded.
fn dumps() -> BTreeMap<String, Vec<u8>> {
    let doc = include_str!("../FORMAT.md");
    let mut out = BTreeMap::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("```hex ") else {
            continue;
        };
        let mut bytes = Vec::new();
        for l in lines.by_ref().take_while(|l| !l.starts_with("```")) {
            for byte in l.split_whitespace() {
                bytes.push(u8::from_str_radix(byte, 16).expect("hex byte in FORMAT.md"));
            }
        }
        out.insert(name.trim().to_string(), bytes);
    }
    out
}

#[test]
fn example_store_matches_the_dumps_in_format_md() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("example");
    let store = DenseStore::<u16>::create(&path, &[2], Codec::Raw).unwrap();
    store.append(&[1, 2, 3, 4]).unwrap();
    let dumps = dumps();
    let current: Vec<_> = dumps.iter().filter(|(n, _)| !n.contains('/')).collect();
    assert_eq!(
        current.len(),
        4,
        "FORMAT.md has dumps of store.zr, meta.zr, 0.loc and 0.chunk"
    );
    for (name, expected) in current {
        let actual = std::fs::read(path.join(name)).unwrap();
        assert_eq!(&actual, expected, "{name} differs from FORMAT.md");
    }
    assert_eq!(store.format_version(), zrecord::FORMAT_VERSION);
}

#[test]
fn the_version_1_dumps_in_format_md_open_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = dir.path().join("v1");
    std::fs::create_dir(&v1).unwrap();
    let mut files = 0;
    for (name, bytes) in dumps() {
        if let Some(name) = name.strip_prefix("v1/") {
            std::fs::write(v1.join(name), bytes).unwrap();
            files += 1;
        }
    }
    assert_eq!(files, 4);
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u16>>(&v1)
        .unwrap();
    assert_eq!(store.format_version(), 1);
    assert_eq!(
        store.gather(&[1, 0]).unwrap().into_raw_vec_and_offset().0,
        [3, 4, 1, 2]
    );
    store.verify().unwrap();
}

#[test]
fn a_store_without_the_synced_header_opens_and_keeps_its_layout() {
    let dumps = dumps();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("features-3");
    std::fs::create_dir(&path).unwrap();
    for name in ["0.loc", "0.chunk"] {
        std::fs::write(path.join(name), &dumps[name]).unwrap();
    }
    for name in ["store.zr", "meta.zr"] {
        std::fs::write(path.join(name), &dumps[&format!("features-3/{name}")]).unwrap();
    }
    let store = DenseStore::<u16>::open(&path).unwrap();
    assert_eq!(
        store.gather(&[1, 0]).unwrap().into_raw_vec_and_offset().0,
        [3, 4, 1, 2]
    );
    store.append(&[5, 6]).unwrap();
    store.sync().unwrap();
    drop(store);
    let meta = std::fs::read(path.join("meta.zr")).unwrap();
    assert_eq!(
        meta.len(),
        32,
        "a features-3 store keeps its 32-byte meta.zr"
    );
    assert_eq!(meta[14], 3, "its length is 3");
    let store = DenseStore::<u16>::open(&path).unwrap();
    assert_eq!(store.len(), 3);
    store.verify().unwrap();
}

/// The ```text NAME blocks of FORMAT.md.
fn texts() -> BTreeMap<String, String> {
    let doc = include_str!("../FORMAT.md");
    let mut out = BTreeMap::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("```text ") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            out.insert(name.trim().to_string(), format!("{}\n", body.join("\n")));
        }
    }
    out
}

#[test]
fn the_example_dataset_manifest_matches_format_md() {
    let dir = tempfile::tempdir().unwrap();
    for (k, records) in [3u8, 2].into_iter().enumerate() {
        let shard = dir.path().join(zrecord::shard_folder(k as u64, 2));
        std::fs::create_dir(&shard).unwrap();
        let image = DenseStore::<u8>::create(shard.join("image"), &[2, 2], Codec::Raw).unwrap();
        image.append(&vec![k as u8; 4 * records as usize]).unwrap();
        let label = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw).unwrap();
        label.append(&vec![k as i64; records as usize]).unwrap();
    }
    zrecord::Dataset::join(dir.path()).unwrap();
    let written = std::fs::read_to_string(dir.path().join("dataset.zr")).unwrap();
    let texts = texts();
    let documented = texts.get("dataset.zr").expect("FORMAT.md shows dataset.zr");
    assert_eq!(&written, documented, "dataset.zr differs from FORMAT.md");
    let dataset = zrecord::Dataset::open(dir.path()).unwrap();
    assert_eq!(dataset.len(), 5);
}
