//! FORMAT.md is the specification: builds its example store and checks every
//! file byte for byte against the hex dumps on that page.

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
    assert_eq!(
        dumps.len(),
        4,
        "FORMAT.md has dumps of store.zr, meta.zr, 0.loc and 0.chunk"
    );
    for (name, expected) in &dumps {
        let actual = std::fs::read(path.join(name)).unwrap();
        assert_eq!(&actual, expected, "{name} differs from FORMAT.md");
    }
}
