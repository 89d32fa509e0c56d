//! `store.zr`: the immutable typed header (32 bytes) and the msgpack type
//! identity after it. Written once, last, when a store is created.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::tags::KindTag;
use super::{MAX_RECORD_BYTES, check_features, check_version, le};
use crate::{DType, Error, Result, StoreKind};

const MAGIC: [u8; 4] = *b"ZRST";
const HEADER_LEN: usize = 32;

const MAGIC_AT: usize = 0;
const VERSION_AT: usize = MAGIC_AT + 4;
const KIND_AT: usize = VERSION_AT + 1;
const WIDTH_AT: usize = 8;
const IDENTITY_LEN_AT: usize = WIDTH_AT + 8;
const FEATURES_AT: usize = IDENTITY_LEN_AT + 4;
const RESERVED_AT: usize = FEATURES_AT + 4;
const _: () = assert!(FEATURES_AT == 20 && RESERVED_AT == 24);

/// What the records of a store hold beyond version 1, fixed at creation
/// (`store.zr` bytes 20..24, version 2). A reader refuses bits it does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StoreFeatures {
    /// Every record stored raw ends with a CRC-32C of its bytes.
    pub(crate) checksums: bool,
    /// Ragged records may have zero elements.
    pub(crate) empty_records: bool,
    /// `meta.zr` keeps the header of the last completed sync after the
    /// current one, so an open can tell which commits a power cut may have
    /// reordered.
    pub(crate) synced_header: bool,
}

impl StoreFeatures {
    const CHECKSUMS: u32 = 1;
    const EMPTY_RECORDS: u32 = 2;
    const SYNCED_HEADER: u32 = 4;
    const KNOWN: u32 = Self::CHECKSUMS | Self::EMPTY_RECORDS | Self::SYNCED_HEADER;

    /// The features of stores this build creates.
    pub(crate) const CURRENT: StoreFeatures = StoreFeatures {
        checksums: true,
        empty_records: true,
        synced_header: true,
    };

    fn bits(self) -> u32 {
        (u32::from(self.checksums) * Self::CHECKSUMS)
            | (u32::from(self.empty_records) * Self::EMPTY_RECORDS)
            | (u32::from(self.synced_header) * Self::SYNCED_HEADER)
    }

    fn from_bits(bits: u32) -> StoreFeatures {
        StoreFeatures {
            checksums: bits & Self::CHECKSUMS != 0,
            empty_records: bits & Self::EMPTY_RECORDS != 0,
            synced_header: bits & Self::SYNCED_HEADER != 0,
        }
    }
}

/// What a store holds: its kind, dtype and (dense) item shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TypeIdentity {
    Dense {
        dtype: DType,
        item_shape: Vec<usize>,
    },
    Ragged {
        dtype: DType,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DenseIdentity {
    dtype: String,
    item_shape: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RaggedIdentity {
    dtype: String,
}

impl TypeIdentity {
    pub(crate) fn kind(&self) -> StoreKind {
        match self {
            TypeIdentity::Dense { .. } => StoreKind::Dense,
            TypeIdentity::Ragged { .. } => StoreKind::Ragged,
        }
    }

    pub(crate) fn dtype(&self) -> DType {
        match self {
            TypeIdentity::Dense { dtype, .. } | TypeIdentity::Ragged { dtype } => *dtype,
        }
    }

    /// Bytes per dense record (`None` for ragged stores, and for a shape
    /// whose size overflows).
    pub(crate) fn record_width(&self) -> Option<u64> {
        match self {
            TypeIdentity::Dense { dtype, item_shape } => item_shape
                .iter()
                .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d as u64)),
            TypeIdentity::Ragged { .. } => None,
        }
    }

    /// Checks a dense identity describes records the format can hold.
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        if let TypeIdentity::Dense { item_shape, .. } = self {
            match self.record_width() {
                Some(0) => return Err(format!("item shape {item_shape:?} has zero elements")),
                Some(w) if w <= MAX_RECORD_BYTES => {}
                _ => {
                    return Err(format!(
                        "item shape {item_shape:?} makes records larger than 2 GiB"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The decoded `store.zr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoreHeader {
    /// The format version (1 or 2).
    pub(crate) version: u8,
    /// Always empty in version 1.
    pub(crate) features: StoreFeatures,
    pub(crate) identity: TypeIdentity,
}

impl StoreHeader {
    /// The header of a new store of this build's format version.
    pub(crate) fn new(identity: TypeIdentity) -> StoreHeader {
        StoreHeader {
            version: super::FORMAT_VERSION,
            features: StoreFeatures::CURRENT,
            identity,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let identity = match &self.identity {
            TypeIdentity::Dense { dtype, item_shape } => rmp_serde::to_vec_named(&DenseIdentity {
                dtype: dtype.name().into(),
                item_shape: item_shape.iter().map(|&d| d as u64).collect(),
            }),
            TypeIdentity::Ragged { dtype } => rmp_serde::to_vec_named(&RaggedIdentity {
                dtype: dtype.name().into(),
            }),
        };
        // Serialising two plain structs into a Vec cannot fail.
        let identity = identity.unwrap_or_default();
        let mut b = vec![0u8; HEADER_LEN];
        b[MAGIC_AT..VERSION_AT].copy_from_slice(&MAGIC);
        b[VERSION_AT] = self.version;
        b[KIND_AT] = KindTag::from(self.identity.kind()) as u8;
        let width = self.identity.record_width().unwrap_or(0);
        b[WIDTH_AT..IDENTITY_LEN_AT].copy_from_slice(&width.to_le_bytes());
        b[IDENTITY_LEN_AT..FEATURES_AT].copy_from_slice(&(identity.len() as u32).to_le_bytes());
        b[FEATURES_AT..RESERVED_AT].copy_from_slice(&self.features.bits().to_le_bytes());
        b.extend_from_slice(&identity);
        b
    }

    /// Decodes and checks `bytes`, the whole of `store.zr` at `path`.
    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<StoreHeader> {
        if bytes.len() < HEADER_LEN {
            return Err(Error::corrupt(
                path,
                format!(
                    "store.zr is {} bytes, shorter than its {HEADER_LEN}-byte header",
                    bytes.len()
                ),
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
        // Version 1 has no feature field: its bytes are reserved, zero.
        let features = match version {
            1 => 0,
            _ => check_features(
                path,
                "features",
                le!(u32, bytes, FEATURES_AT),
                StoreFeatures::KNOWN,
            )?,
        };
        let reserved_from = if version == 1 {
            FEATURES_AT
        } else {
            RESERVED_AT
        };
        if bytes[KIND_AT + 1..WIDTH_AT]
            .iter()
            .chain(&bytes[reserved_from..HEADER_LEN])
            .any(|&b| b != 0)
        {
            return Err(Error::corrupt(path, "reserved header bytes are not zero"));
        }
        let kind = KindTag::try_from(bytes[KIND_AT]).map_err(|t| t.at(path))?;
        let width = le!(u64, bytes, WIDTH_AT);
        let identity_len = le!(u32, bytes, IDENTITY_LEN_AT) as usize;
        if bytes.len() != HEADER_LEN + identity_len {
            return Err(Error::corrupt(
                path,
                format!(
                    "store.zr is {} bytes, its header says {}",
                    bytes.len(),
                    HEADER_LEN + identity_len
                ),
            ));
        }
        let raw = &bytes[HEADER_LEN..];
        let bad_identity =
            |e: rmp_serde::decode::Error| Error::corrupt(path, format!("type identity: {e}"));
        let dtype_of = |name: &str| {
            DType::from_name(name).ok_or_else(|| {
                Error::corrupt(path, format!("type identity: unknown dtype {name:?}"))
            })
        };
        let identity = match kind {
            KindTag::Dense => {
                let d: DenseIdentity = rmp_serde::from_slice(raw).map_err(bad_identity)?;
                let item_shape = d
                    .item_shape
                    .iter()
                    .map(|&x| usize::try_from(x))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|_| {
                        Error::corrupt(path, "type identity: a dimension does not fit this machine")
                    })?;
                TypeIdentity::Dense {
                    dtype: dtype_of(&d.dtype)?,
                    item_shape,
                }
            }
            KindTag::Ragged => {
                let r: RaggedIdentity = rmp_serde::from_slice(raw).map_err(bad_identity)?;
                TypeIdentity::Ragged {
                    dtype: dtype_of(&r.dtype)?,
                }
            }
        };
        identity
            .check()
            .map_err(|reason| Error::corrupt(path, reason))?;
        if identity.record_width().unwrap_or(0) != width {
            return Err(Error::corrupt(
                path,
                format!("record width {width} contradicts the type identity {identity:?}"),
            ));
        }
        Ok(StoreHeader {
            version,
            features: StoreFeatures::from_bits(features),
            identity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_ragged_headers_round_trip() {
        for identity in [
            TypeIdentity::Dense {
                dtype: DType::F32,
                item_shape: vec![28, 28],
            },
            TypeIdentity::Dense {
                dtype: DType::Bool,
                item_shape: vec![],
            },
            TypeIdentity::Ragged { dtype: DType::I32 },
        ] {
            let h = StoreHeader::new(identity);
            let b = h.encode();
            assert_eq!(&b[..5], b"ZRST\x02");
            assert_eq!(&b[20..24], &[7, 0, 0, 0]);
            assert_eq!(StoreHeader::decode(Path::new("s"), &b).unwrap(), h);
            let v1 = StoreHeader {
                version: 1,
                features: StoreFeatures::default(),
                ..h
            };
            assert_eq!(
                StoreHeader::decode(Path::new("s"), &v1.encode()).unwrap(),
                v1
            );
            // A version-1 header has no feature field.
            let mut b = v1.encode();
            b[FEATURES_AT] = 1;
            assert!(matches!(
                StoreHeader::decode(Path::new("s"), &b),
                Err(Error::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn dense_header_bytes_match_format_md() {
        let h = StoreHeader::new(TypeIdentity::Dense {
            dtype: DType::U8,
            item_shape: vec![2, 3],
        });
        let b = h.encode();
        assert_eq!(&b[4..8], &[2, 0, 0, 0]);
        assert_eq!(&b[8..16], &6u64.to_le_bytes());
        // msgpack: fixmap(2) "dtype" "u8" "item_shape" [2, 3]
        let identity = b"\x82\xa5dtype\xa2u8\xaaitem_shape\x92\x02\x03";
        assert_eq!(&b[16..20], &(identity.len() as u32).to_le_bytes());
        assert_eq!(&b[32..], identity);
    }

    #[test]
    fn unexpected_fields_and_bad_values_are_refused() {
        let p = Path::new("s");
        let h = StoreHeader::new(TypeIdentity::Ragged { dtype: DType::I32 });
        let mut b = h.encode();
        b[FEATURES_AT + 3] = 0x40;
        assert!(matches!(
            StoreHeader::decode(p, &b),
            Err(Error::UnsupportedFeature {
                field: "features",
                bits: 0x4000_0000,
                ..
            })
        ));
        let mut b = h.encode();
        b[KIND_AT] = 7;
        assert!(matches!(
            StoreHeader::decode(p, &b),
            Err(Error::InvalidTag {
                field: "kind",
                value: 7,
                ..
            })
        ));
        // A ragged identity with an extra field.
        let mut b = vec![0u8; HEADER_LEN];
        b[..5].copy_from_slice(b"ZRST\x01");
        b[KIND_AT] = KindTag::Ragged as u8;
        let extra = rmp_serde::to_vec_named(&DenseIdentity {
            dtype: "i32".into(),
            item_shape: vec![],
        })
        .unwrap();
        b[IDENTITY_LEN_AT..FEATURES_AT].copy_from_slice(&(extra.len() as u32).to_le_bytes());
        b.extend_from_slice(&extra);
        assert!(matches!(
            StoreHeader::decode(p, &b),
            Err(Error::Corrupt { .. })
        ));
        // Truncated identity.
        let good = h.encode();
        assert!(matches!(
            StoreHeader::decode(p, &good[..good.len() - 1]),
            Err(Error::Corrupt { .. })
        ));
    }
}
