//! The on-disk format, as constants and codecs for each file — the code
//! twin of `FORMAT.md`. Every integer is little-endian by definition.
//!
//! Version history:
//! * 1 — the first format: `store.zr`, `meta.zr`, `dict.zr`, `{n}.loc`, `{n}.chunk`.

mod loc;
pub(crate) mod meta;
mod shape;
mod typed;

pub(crate) use loc::{LOC_ENTRY_LEN, RecordLoc};
pub(crate) use meta::Geometry;
pub(crate) use meta::{META_LEN, MetaHeader};
pub(crate) use shape::{decode_shape, encode_shape};
pub(crate) use typed::{StoreHeader, TypeIdentity};

/// The format version this build reads and writes (both headers carry it).
pub const FORMAT_VERSION: u8 = 1;

/// The store's immutable typed header and type identity.
pub(crate) const STORE_FILE: &str = "store.zr";
/// The physical header: codec, geometry, frontier and length.
pub(crate) const META_FILE: &str = "meta.zr";
/// The zstd dictionary of a `zstd_dict` store.
pub(crate) const DICT_FILE: &str = "dict.zr";

/// The name of record-table segment `n`.
pub(crate) fn loc_file(n: u64) -> String {
    format!("{n}.loc")
}

/// The name of data chunk `n`.
pub(crate) fn chunk_file(n: u64) -> String {
    format!("{n}.chunk")
}

/// The largest record, in logical bytes (2 GiB).
pub(crate) const MAX_RECORD_BYTES: u64 = 1 << 31;

/// Reads a little-endian integer at `at`; `buf` must be long enough (the
/// callers read fixed-size headers whose length they checked).
macro_rules! le {
    ($t:ty, $buf:expr, $at:expr) => {{
        const N: usize = size_of::<$t>();
        let mut bytes = [0u8; N];
        bytes.copy_from_slice(&$buf[$at..$at + N]);
        <$t>::from_le_bytes(bytes)
    }};
}
pub(crate) use le;
