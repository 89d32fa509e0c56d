//! The on-disk format, as constants and codecs for each file — the code
//! twin of `FORMAT.md`. Every integer is little-endian by definition.
//!
//! Version history (FORMAT.md, "Version history"):
//! * 1 — `store.zr`, `meta.zr`, `dict.zr`, `{n}.loc`, `{n}.chunk`; the two
//!   journals were added later without a version change.
//! * 2 — feature fields in both headers: record checksums, empty ragged
//!   records, and a flag that keeps readers out while a journal is pending.

pub(crate) mod checksum;
pub(crate) mod journal;
mod loc;
pub(crate) mod meta;
mod shape;
mod tags;
mod typed;

pub(crate) use loc::{LOC_ENTRY_LEN, RecordLoc};
pub(crate) use meta::Geometry;
pub(crate) use meta::{META_LEN, MetaFlags, MetaHeader};
pub(crate) use shape::{decode_shape, encode_shape};
pub(crate) use tags::CodecTag;
pub(crate) use typed::{StoreFeatures, StoreHeader, TypeIdentity};

use std::path::Path;

use crate::{Error, Result};

/// The format version this build writes; it reads every version from
/// [`OLDEST_FORMAT_VERSION`] to this one. Both headers carry it.
pub const FORMAT_VERSION: u8 = 2;

/// The oldest format version this build reads (and appends to, in that
/// version's own layout).
pub const OLDEST_FORMAT_VERSION: u8 = 1;

/// Checks a header's version byte.
pub(crate) fn check_version(path: &Path, found: u8) -> Result<u8> {
    if (OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&found) {
        Ok(found)
    } else {
        Err(Error::UnsupportedVersion {
            path: path.into(),
            found,
            supported: FORMAT_VERSION,
        })
    }
}

/// Checks that a feature field holds only bits this build knows.
pub(crate) fn check_features(
    path: &Path,
    field: &'static str,
    bits: u32,
    known: u32,
) -> Result<u32> {
    match bits & !known {
        0 => Ok(bits),
        unknown => Err(Error::UnsupportedFeature {
            path: path.into(),
            field,
            bits: unknown,
        }),
    }
}

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

/// The largest `dict.zr` (16 MiB; the largest trained tier is 1 MiB).
pub(crate) const MAX_DICT_BYTES: u64 = 16 << 20;

/// The largest `store.zr` (its msgpack identity is a few dozen bytes).
pub(crate) const MAX_STORE_FILE_BYTES: u64 = 1 << 20;

/// Whether `name` is `{n}.{ext}` written the one way the format writes it:
/// decimal digits, no sign, no leading zero. Returns `n`.
pub(crate) fn numbered_file(name: &str, ext: &str) -> Option<u64> {
    let digits = name.strip_suffix(ext)?.strip_suffix('.')?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_numbered_names_count() {
        assert_eq!(numbered_file("0.chunk", "chunk"), Some(0));
        assert_eq!(numbered_file("17.loc", "loc"), Some(17));
        for foreign in [
            "+1.chunk",
            "007.loc",
            "00.chunk",
            ".chunk",
            "1.chunk.bak",
            "1.Chunk",
            "-1.loc",
            "1 .loc",
            "1.loc ",
            "99999999999999999999999.chunk",
            "١.chunk",
        ] {
            assert_eq!(numbered_file(foreign, "chunk"), None, "{foreign}");
            assert_eq!(numbered_file(foreign, "loc"), None, "{foreign}");
        }
    }
}
