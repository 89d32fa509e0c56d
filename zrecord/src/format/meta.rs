//! `meta.zr`: the 32-byte physical header. Rewritten in place by every
//! commit; the `length` field is the commit point. In stores with the
//! `synced_header` feature a second copy follows it: the header as of the
//! last completed sync.

use std::path::Path;

use super::{CodecTag, check_features, check_version, le};
use crate::{Codec, Error, Result};

/// Size of one header, and of `meta.zr` without the `synced_header` feature.
pub(crate) const META_LEN: usize = 32;
const MAGIC: [u8; 4] = *b"ZREC";

const MAGIC_AT: usize = 0;
const VERSION_AT: usize = MAGIC_AT + 4;
const CODEC_AT: usize = VERSION_AT + 1;
const TAIL_CHUNK_AT: usize = CODEC_AT + 1;
const TAIL_OFFSET_AT: usize = TAIL_CHUNK_AT + 4;
const LENGTH_AT: usize = TAIL_OFFSET_AT + 4;
const LOC_BITS_AT: usize = LENGTH_AT + 8;
const CHUNK_BITS_AT: usize = LOC_BITS_AT + 1;
const FLAGS_AT: usize = CHUNK_BITS_AT + 1;
const RESERVED_AT: usize = FLAGS_AT + 4;
const _: () = assert!(FLAGS_AT == 24 && META_LEN - RESERVED_AT == 4);

/// The state flags of `meta.zr` (bytes 24..28): conditions a reader must
/// know how to handle, or refuse the store. Version-1 readers see them as
/// reserved bytes that must be zero, and refuse the store too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MetaFlags(u32);

impl MetaFlags {
    /// A journal (`compact.journal` or `delete.journal`) may hold work that
    /// `open` must finish before any record is read.
    pub(crate) const JOURNAL: MetaFlags = MetaFlags(1);
    const KNOWN: u32 = Self::JOURNAL.0;

    pub(crate) fn bits(self) -> u32 {
        self.0
    }

    pub(crate) fn contains(self, flag: MetaFlags) -> bool {
        self.0 & flag.0 == flag.0
    }

    pub(crate) fn with(self, flag: MetaFlags, on: bool) -> MetaFlags {
        MetaFlags(if on {
            self.0 | flag.0
        } else {
            self.0 & !flag.0
        })
    }
}

/// How the record table and the data are cut into files. Persisted in
/// `meta.zr`; the defaults are the format's (2^28-entry segments, 4 GiB
/// chunks). Tests use tiny ones to exercise rollover (feature `internals`).
#[doc(hidden)]
#[cfg_attr(
    not(feature = "internals"),
    expect(unreachable_pub, reason = "public with the internals feature only")
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// log2 of the entries per `.loc` segment (4..=28).
    pub loc_segment_bits: u8,
    /// log2 of a chunk's address space (12..=32); a chunk holds at most
    /// `2^chunk_bits - 1` bytes.
    pub chunk_bits: u8,
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry {
            loc_segment_bits: 28,
            chunk_bits: 32,
        }
    }
}

impl Geometry {
    pub(crate) const LOC_BITS: std::ops::RangeInclusive<u8> = 4..=28;
    pub(crate) const CHUNK_BITS: std::ops::RangeInclusive<u8> = 12..=32;

    pub(crate) fn check(self) -> std::result::Result<(), String> {
        if !Self::LOC_BITS.contains(&self.loc_segment_bits) {
            return Err(format!(
                "loc_segment_bits {} outside {:?}",
                self.loc_segment_bits,
                Self::LOC_BITS
            ));
        }
        if !Self::CHUNK_BITS.contains(&self.chunk_bits) {
            return Err(format!(
                "chunk_bits {} outside {:?}",
                self.chunk_bits,
                Self::CHUNK_BITS
            ));
        }
        Ok(())
    }

    /// Entries per `.loc` segment.
    pub(crate) fn segment_entries(self) -> u64 {
        1 << self.loc_segment_bits
    }

    /// Bytes a chunk can hold.
    pub(crate) fn chunk_capacity(self) -> u64 {
        (1 << self.chunk_bits) - 1
    }

    /// Segments needed to hold `entries` table entries (at least one).
    pub(crate) fn segments_for(self, entries: u64) -> u64 {
        entries.div_ceil(self.segment_entries()).max(1)
    }
}

/// The decoded `meta.zr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MetaHeader {
    /// The format version (the same as `store.zr`'s).
    pub(crate) version: u8,
    pub(crate) codec: CodecTag,
    pub(crate) geometry: Geometry,
    /// Chunk holding the write frontier; chunks `0..=tail_chunk` exist.
    pub(crate) tail_chunk: u32,
    /// Committed bytes of the tail chunk.
    pub(crate) tail_offset: u32,
    /// Committed physical records.
    pub(crate) length: u64,
    pub(crate) flags: MetaFlags,
}

impl MetaHeader {
    /// The header of a new, empty store of this build's format version.
    pub(crate) fn new(codec: &Codec, geometry: Geometry) -> MetaHeader {
        MetaHeader {
            version: super::FORMAT_VERSION,
            codec: codec.into(),
            geometry,
            tail_chunk: 0,
            tail_offset: 0,
            length: 0,
            flags: MetaFlags::default(),
        }
    }

    pub(crate) fn encode(&self) -> [u8; META_LEN] {
        let mut b = [0u8; META_LEN];
        b[MAGIC_AT..VERSION_AT].copy_from_slice(&MAGIC);
        b[VERSION_AT] = self.version;
        b[CODEC_AT] = self.codec as u8;
        b[TAIL_CHUNK_AT..TAIL_OFFSET_AT].copy_from_slice(&self.tail_chunk.to_le_bytes());
        b[TAIL_OFFSET_AT..LENGTH_AT].copy_from_slice(&self.tail_offset.to_le_bytes());
        b[LENGTH_AT..LOC_BITS_AT].copy_from_slice(&self.length.to_le_bytes());
        b[LOC_BITS_AT] = self.geometry.loc_segment_bits;
        b[CHUNK_BITS_AT] = self.geometry.chunk_bits;
        b[FLAGS_AT..RESERVED_AT].copy_from_slice(&self.flags.bits().to_le_bytes());
        b
    }

    /// Decodes and checks `bytes`, the whole of `meta.zr` at `path`.
    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<MetaHeader> {
        if bytes.len() != META_LEN {
            return Err(Error::corrupt(
                path,
                format!("meta.zr is {} bytes, expected {META_LEN}", bytes.len()),
            ));
        }
        let magic: [u8; 4] = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(Error::BadMagic {
                path: path.into(),
                found: magic,
                expected: MAGIC,
            });
        }
        let version = check_version(path, bytes[VERSION_AT])?;
        let flags = MetaFlags(check_features(
            path,
            "flags",
            le!(u32, bytes, FLAGS_AT),
            MetaFlags::KNOWN,
        )?);
        let codec = CodecTag::try_from(bytes[CODEC_AT]).map_err(|t| t.at(path))?;
        let geometry = Geometry {
            loc_segment_bits: bytes[LOC_BITS_AT],
            chunk_bits: bytes[CHUNK_BITS_AT],
        };
        geometry
            .check()
            .map_err(|reason| Error::corrupt(path, reason))?;
        if bytes[RESERVED_AT..].iter().any(|&b| b != 0) {
            return Err(Error::corrupt(path, "reserved bytes 28..32 are not zero"));
        }
        let header = MetaHeader {
            version,
            codec,
            geometry,
            tail_chunk: le!(u32, bytes, TAIL_CHUNK_AT),
            tail_offset: le!(u32, bytes, TAIL_OFFSET_AT),
            length: le!(u64, bytes, LENGTH_AT),
            flags,
        };
        if u64::from(header.tail_offset) > geometry.chunk_capacity() {
            return Err(Error::corrupt(
                path,
                format!(
                    "tail offset {} exceeds the chunk capacity {}",
                    header.tail_offset,
                    geometry.chunk_capacity()
                ),
            ));
        }
        Ok(header)
    }

    /// Decodes the whole of `meta.zr`: the current header and, when the
    /// store keeps one (`synced`), the header of the last completed sync,
    /// which must agree with it on everything but the commit state.
    pub(crate) fn decode_file(
        path: &Path,
        bytes: &[u8],
        synced: bool,
    ) -> Result<(MetaHeader, Option<MetaHeader>)> {
        if !synced {
            return Ok((MetaHeader::decode(path, bytes)?, None));
        }
        if bytes.len() != 2 * META_LEN {
            return Err(Error::corrupt(
                path,
                format!(
                    "meta.zr is {} bytes, expected {} (the header and its synced copy)",
                    bytes.len(),
                    2 * META_LEN
                ),
            ));
        }
        let (current, copy) = bytes.split_at(META_LEN);
        let current = MetaHeader::decode(path, current)?;
        let copy = MetaHeader::decode(path, copy)?;
        if (copy.version, copy.codec, copy.geometry)
            != (current.version, current.codec, current.geometry)
        {
            return Err(Error::corrupt(
                path,
                "its two headers disagree on the version, codec or geometry",
            ));
        }
        Ok((current, Some(copy)))
    }

    /// Whether `self` and `other` commit the same records at the same frontier.
    pub(crate) fn same_commit(&self, other: &MetaHeader) -> bool {
        (self.length, self.tail_chunk, self.tail_offset)
            == (other.length, other.tail_chunk, other.tail_offset)
    }
}

/// The bytes of `meta.zr`: `current`, then `synced` when the store keeps it.
pub(crate) fn encode_file(current: &MetaHeader, synced: Option<&MetaHeader>) -> Vec<u8> {
    let mut bytes = current.encode().to_vec();
    if let Some(synced) = synced {
        bytes.extend_from_slice(&synced.encode());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_format_md() {
        let h = MetaHeader {
            version: 2,
            codec: CodecTag::Zstd,
            geometry: Geometry::default(),
            tail_chunk: 2,
            tail_offset: 0x0102_0304,
            length: 5,
            flags: MetaFlags::JOURNAL,
        };
        let b = h.encode();
        assert_eq!(&b[..6], b"ZREC\x02\x01");
        assert_eq!(&b[6..10], &[2, 0, 0, 0]);
        assert_eq!(&b[10..14], &[4, 3, 2, 1]);
        assert_eq!(&b[14..22], &[5, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[22..24], &[28, 32]);
        assert_eq!(&b[24..32], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(MetaHeader::decode(Path::new("m"), &b).unwrap(), h);
        let v1 = MetaHeader { version: 1, ..h };
        assert_eq!(
            MetaHeader::decode(Path::new("m"), &v1.encode()).unwrap(),
            v1
        );
    }

    #[test]
    fn the_synced_copy_follows_the_current_header_and_must_agree_with_it() {
        let synced = MetaHeader::new(&Codec::Zstd, Geometry::default());
        let current = MetaHeader {
            tail_offset: 40,
            length: 3,
            ..synced
        };
        let p = Path::new("m");
        let bytes = encode_file(&current, Some(&synced));
        assert_eq!(bytes.len(), 64);
        assert_eq!(&bytes[..32], &current.encode());
        assert_eq!(&bytes[32..], &synced.encode());
        assert_eq!(
            MetaHeader::decode_file(p, &bytes, true).unwrap(),
            (current, Some(synced))
        );
        assert!(!current.same_commit(&synced));
        // Without the feature the file is the current header alone.
        assert_eq!(encode_file(&current, None), current.encode());
        assert_eq!(
            MetaHeader::decode_file(p, &current.encode(), false).unwrap(),
            (current, None)
        );
        for wrong in [&bytes[..32], &bytes[..63]] {
            assert!(matches!(
                MetaHeader::decode_file(p, wrong, true),
                Err(Error::Corrupt { .. })
            ));
        }
        assert!(matches!(
            MetaHeader::decode_file(p, &bytes, false),
            Err(Error::Corrupt { .. })
        ));
        let other = MetaHeader {
            codec: CodecTag::Raw,
            ..synced
        };
        assert!(matches!(
            MetaHeader::decode_file(p, &encode_file(&current, Some(&other)), true),
            Err(Error::Corrupt { reason, .. }) if reason.contains("disagree")
        ));
        let mut damaged = bytes.clone();
        damaged[32] = b'X';
        assert!(matches!(
            MetaHeader::decode_file(p, &damaged, true),
            Err(Error::BadMagic { .. })
        ));
    }

    #[test]
    fn bad_headers_are_typed_errors() {
        let good = MetaHeader::new(&Codec::Raw, Geometry::default()).encode();
        let p = Path::new("m");
        let with = |at: usize, v: u8| {
            let mut b = good;
            b[at] = v;
            MetaHeader::decode(p, &b)
        };
        assert!(matches!(with(0, b'X'), Err(Error::BadMagic { .. })));
        assert!(matches!(
            with(VERSION_AT, 9),
            Err(Error::UnsupportedVersion { found: 9, .. })
        ));
        assert!(matches!(
            with(VERSION_AT, 0),
            Err(Error::UnsupportedVersion { found: 0, .. })
        ));
        assert!(matches!(
            with(FLAGS_AT + 1, 0x80),
            Err(Error::UnsupportedFeature {
                field: "flags",
                bits: 0x8000,
                ..
            })
        ));
        assert!(matches!(
            with(CODEC_AT, 3),
            Err(Error::InvalidTag {
                field: "codec",
                value: 3,
                ..
            })
        ));
        assert!(matches!(with(LOC_BITS_AT, 40), Err(Error::Corrupt { .. })));
        assert!(matches!(with(31, 1), Err(Error::Corrupt { .. })));
        assert!(matches!(
            MetaHeader::decode(p, &good[..31]),
            Err(Error::Corrupt { .. })
        ));
    }
}
