//! **Not API.** The decoders of bytes read from disk, exposed for the fuzz
//! targets in the repository's `fuzz/` folder and for the test that replays
//! their corpus on stable Rust (`tests/fuzz_corpus.rs`). Nothing here is
//! covered by semver; it may change or go away in any release.
//!
//! Every function takes arbitrary bytes and must return without panicking,
//! aborting or allocating more than the format's limits allow.

use std::path::Path;

use crate::format::journal::{read_delete, read_move, slice_reader};
use crate::format::meta::encode_file;
use crate::format::{
    LOC_ENTRY_LEN, MetaHeader, RecordLoc, StoreHeader, decode_shape, encode_shape,
};
use crate::{AnyStore, OpenOptions};

/// The fuzz targets, by name: the folder names under `fuzz/corpus/`.
pub const TARGETS: [&str; 7] = [
    "meta",
    "store_header",
    "record_table",
    "shape",
    "compact_journal",
    "delete_journal",
    "store",
];

/// Runs target `name` on `data`; `dir` is an empty scratch folder (the
/// `store` target builds a store there).
///
/// # Panics
/// On an unknown target name (the caller's mistake, not the data's).
pub fn run(name: &str, data: &[u8], dir: &Path) {
    match name {
        "meta" => meta(data),
        "store_header" => store_header(data),
        "record_table" => record_table(data),
        "shape" => shape(data),
        "compact_journal" => compact_journal(data),
        "delete_journal" => delete_journal(data),
        "store" => store(data, dir),
        other => panic!("no fuzz target {other:?}"),
    }
}

/// `meta.zr`, with and without the synced copy: decode, and decoded
/// headers encode back to the same bytes.
pub fn meta(data: &[u8]) {
    for synced in [false, true] {
        if let Ok((h, copy)) = MetaHeader::decode_file(Path::new("meta.zr"), data, synced) {
            assert_eq!(
                encode_file(&h, copy.as_ref()),
                data,
                "meta.zr decodes and encodes back"
            );
        }
    }
}

/// `store.zr`: decode, and a decoded header encodes back to the same bytes
/// (msgpack has several encodings of one map, so compare decoded values).
pub fn store_header(data: &[u8]) {
    let path = Path::new("store.zr");
    if let Ok(h) = StoreHeader::decode(path, data) {
        let again = StoreHeader::decode(path, &h.encode());
        assert_eq!(again.ok().as_ref(), Some(&h), "store.zr round-trips");
    }
}

/// A `.loc` segment: every entry decodes, encodes back, and its end does not overflow.
pub fn record_table(data: &[u8]) {
    for entry in data.chunks_exact(LOC_ENTRY_LEN) {
        let mut b = [0u8; LOC_ENTRY_LEN];
        b.copy_from_slice(entry);
        let loc = RecordLoc::decode(&b);
        assert_eq!(loc.encode(), b);
        assert!(loc.end() < 1 << 33);
    }
}

/// A shape record: decode, and a decoded shape encodes back to the same bytes.
pub fn shape(data: &[u8]) {
    let mut dims = Vec::new();
    if decode_shape(data, &mut dims).is_ok() {
        let mut back = Vec::new();
        encode_shape(&dims, &mut back);
        assert_eq!(back, data);
    }
}

/// `compact.journal`, in both size rules (version 1 and 2).
pub fn compact_journal(data: &[u8]) {
    for exact in [true, false] {
        let _ = read_move(data.len() as u64, &mut slice_reader(data), exact);
    }
}

/// `delete.journal`; the first 8 bytes are the store's physical length,
/// the 9th picks the group (1 or 2), the rest is the file.
pub fn delete_journal(data: &[u8]) {
    let Some((head, file)) = data.split_at_checked(9) else {
        return;
    };
    let mut len = [0u8; 8];
    len.copy_from_slice(&head[..8]);
    let group = 1 + u64::from(head[8] & 1);
    let phys_len = u64::from_le_bytes(len) / group * group;
    if let Ok(Some(d)) = read_delete(file.len() as u64, &mut slice_reader(file), phys_len, group) {
        assert!(d.targets.iter().all(|&t| t < phys_len / group));
    }
}

/// The files a `store` input may name, by tag (the tag byte modulo their count).
pub const STORE_FILES: [&str; 10] = [
    "store.zr",
    "meta.zr",
    "dict.zr",
    "0.loc",
    "1.loc",
    "0.chunk",
    "1.chunk",
    "2.chunk",
    "compact.journal",
    "delete.journal",
];

/// Packs the files of a store folder as a `store` input: for each file, a
/// tag byte, its length (u16, little-endian) and its bytes. Files over
/// 64 KiB and names not in [`STORE_FILES`] are skipped.
pub fn pack_store(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    for (tag, name) in STORE_FILES.iter().enumerate() {
        let Ok(bytes) = std::fs::read(dir.join(name)) else {
            continue;
        };
        let Ok(len) = u16::try_from(bytes.len()) else {
            continue;
        };
        out.push(tag as u8);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

/// A whole store: unpacks `data` (see [`pack_store`]) into `dir`, then
/// opens it read-only and writable, gathers, verifies, deletes, appends
/// and compacts — every step may fail, none may panic.
pub fn store(data: &[u8], dir: &Path) {
    let mut rest = data;
    while let [tag, l0, l1, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*l0, *l1])).min(tail.len());
        let name = STORE_FILES[usize::from(*tag) % STORE_FILES.len()];
        if std::fs::write(dir.join(name), &tail[..len]).is_err() {
            return;
        }
        rest = &tail[len..];
    }
    if let Ok(store) = crate::OpenOptions::new()
        .read_only(true)
        .open::<AnyStore>(dir)
    {
        exercise(&store);
    }
    let options = OpenOptions::new().verify_on_read(true);
    if let Ok(mut store) = options.open::<AnyStore>(dir) {
        exercise(&store);
        match &mut store {
            AnyStore::Dense(s) => {
                let _ = s.delete(&[0]);
                let _ = s.append_bytes(s.dtype(), &vec![0; s.record_bytes()]);
                let _ = s.compact();
            }
            AnyStore::Ragged(s) => {
                let _ = s.delete(&[0]);
                let _ = s.append_batch(&crate::DynRaggedBatch::new(s.dtype()));
                let _ = s.compact();
            }
        }
        exercise(&store);
    }
}

/// Reads `store` every way a user does.
fn exercise(store: &AnyStore) {
    let len = store.len();
    let picks = [0, len / 2, len.saturating_sub(1), len];
    match store {
        AnyStore::Dense(s) => {
            let _ = s.stats();
            let _ = s.gather_dyn(&picks);
            let _ = s.gather_dyn(&picks[..1]);
            let _ = s.verify();
        }
        AnyStore::Ragged(s) => {
            let _ = s.stats();
            let _ = s.gather_dyn(&picks);
            let _ = s.gather_dyn(&picks[..1]);
            let _ = s.verify();
        }
    }
}

/// Seed inputs for every target, built from real stores under `scratch`
/// (an empty folder): `(target, name, bytes)`. The corpus in `fuzz/corpus/`
/// starts from these.
///
/// # Errors
/// When a store cannot be built.
#[cfg(feature = "internals")]
pub fn seeds(scratch: &Path) -> crate::Result<Vec<(&'static str, String, Vec<u8>)>> {
    use crate::format::journal::{encode_delete, encode_move_header};
    use crate::{Codec, DType, DynDenseStore, DynRaggedStore, Geometry};

    let small = Geometry {
        loc_segment_bits: 4,
        chunk_bits: 12,
    };
    let mut out = Vec::new();
    let mut stores = Vec::new();
    for (i, codec) in [Codec::Raw, Codec::Zstd].into_iter().enumerate() {
        let name = format!("dense-{}", codec.name());
        let path = scratch.join(&name);
        let s = crate::OpenOptions::new()
            .geometry(small)
            .create::<DynDenseStore>(
                &path,
                &crate::Schema::dense(DType::U16, &[3]),
                codec.clone(),
            )?;
        s.append_bytes(DType::U16, &(0..60u8).collect::<Vec<_>>())?;
        stores.push((name, path));
        let name = format!("ragged-{}", codec.name());
        let path = scratch.join(&name);
        let s = crate::OpenOptions::new()
            .geometry(small)
            .create::<DynRaggedStore>(&path, &crate::Schema::ragged(DType::U8), codec)?;
        let mut batch = crate::RaggedBatch::<u8>::new();
        for k in 0..12usize {
            let shape: Vec<usize> = match k % 4 {
                0 => vec![],
                1 => vec![k],
                2 => vec![2, k / 2],
                _ => vec![0],
            };
            let n: usize = shape.iter().product();
            let values: Vec<u8> = (0..n).map(|v| (v * 7 + k + i) as u8).collect();
            batch.push(&shape, &values)?;
        }
        s.append_batch(&batch.into())?;
        stores.push((name, path));
    }
    for (name, path) in &stores {
        let file = |f: &str| std::fs::read(path.join(f)).unwrap_or_default();
        out.push(("meta", name.clone(), file("meta.zr")));
        out.push(("store_header", name.clone(), file("store.zr")));
        out.push(("record_table", name.clone(), file("0.loc")));
        out.push(("store", name.clone(), pack_store(path).unwrap_or_default()));
    }
    let mut shape = Vec::new();
    encode_shape(&[2, 0, 3], &mut shape);
    out.push(("shape", "rank3".into(), shape));
    out.push(("shape", "scalar".into(), vec![0; 8]));
    let loc = RecordLoc {
        offset: 8,
        phys_len: 5,
        logic_len: 5,
        chunk: 0,
    };
    let mut moved = encode_move_header(3, loc, b"hello");
    moved.extend_from_slice(b"hello");
    out.push(("compact_journal", "one-move".into(), moved.clone()));
    let mut deleted = 40u64.to_le_bytes().to_vec();
    deleted.push(0);
    deleted.extend_from_slice(&encode_delete(40, &[9, 4, 0]));
    out.push(("delete_journal", "three-targets".into(), deleted));
    // A store with a pending move and one with a pending delete.
    let (_, dense) = &stores[0];
    std::fs::write(dense.join("compact.journal"), &moved)
        .map_err(crate::Error::io("write", dense))?;
    out.push((
        "store",
        "dense-raw-pending-move".into(),
        pack_store(dense).unwrap_or_default(),
    ));
    std::fs::remove_file(dense.join("compact.journal"))
        .map_err(crate::Error::io("remove", dense))?;
    std::fs::write(dense.join("delete.journal"), encode_delete(20, &[5, 1]))
        .map_err(crate::Error::io("write", dense))?;
    out.push((
        "store",
        "dense-raw-pending-delete".into(),
        pack_store(dense).unwrap_or_default(),
    ));
    Ok(out)
}
