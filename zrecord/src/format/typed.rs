//! `store.zr`: the immutable typed header (32 bytes) and the msgpack type
//! identity after it. Written once, last, when a store is created.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{MAX_RECORD_BYTES, le};
use crate::{DType, Error, Result, StoreKind};

const MAGIC: [u8; 4] = *b"ZRST";
const VERSION: u8 = super::FORMAT_VERSION;
const HEADER_LEN: usize = 32;

const MAGIC_AT: usize = 0;
const VERSION_AT: usize = MAGIC_AT + 4;
const KIND_AT: usize = VERSION_AT + 1;
const WIDTH_AT: usize = 8;
const IDENTITY_LEN_AT: usize = WIDTH_AT + 8;
const RESERVED_AT: usize = IDENTITY_LEN_AT + 4;
const _: () = assert!(RESERVED_AT == 20);

const DENSE: u8 = 0;
const RAGGED: u8 = 1;

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
    pub(crate) identity: TypeIdentity,
}

impl StoreHeader {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (kind, identity) = match &self.identity {
            TypeIdentity::Dense { dtype, item_shape } => (
                DENSE,
                rmp_serde::to_vec_named(&DenseIdentity {
                    dtype: dtype.name().into(),
                    item_shape: item_shape.iter().map(|&d| d as u64).collect(),
                }),
            ),
            TypeIdentity::Ragged { dtype } => (
                RAGGED,
                rmp_serde::to_vec_named(&RaggedIdentity {
                    dtype: dtype.name().into(),
                }),
            ),
        };
        // Serialising two plain structs into a Vec cannot fail.
        let identity = identity.unwrap_or_default();
        let mut b = vec![0u8; HEADER_LEN];
        b[MAGIC_AT..VERSION_AT].copy_from_slice(&MAGIC);
        b[VERSION_AT] = VERSION;
        b[KIND_AT] = kind;
        let width = self.identity.record_width().unwrap_or(0);
        b[WIDTH_AT..IDENTITY_LEN_AT].copy_from_slice(&width.to_le_bytes());
        b[IDENTITY_LEN_AT..RESERVED_AT].copy_from_slice(&(identity.len() as u32).to_le_bytes());
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
        if bytes[VERSION_AT] != VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.into(),
                found: bytes[VERSION_AT],
                supported: VERSION,
            });
        }
        if bytes[KIND_AT + 1..WIDTH_AT]
            .iter()
            .chain(&bytes[RESERVED_AT..HEADER_LEN])
            .any(|&b| b != 0)
        {
            return Err(Error::corrupt(path, "reserved header bytes are not zero"));
        }
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
        let identity = match bytes[KIND_AT] {
            DENSE => {
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
            RAGGED => {
                let r: RaggedIdentity = rmp_serde::from_slice(raw).map_err(bad_identity)?;
                TypeIdentity::Ragged {
                    dtype: dtype_of(&r.dtype)?,
                }
            }
            other => {
                return Err(Error::InvalidTag {
                    path: path.into(),
                    field: "kind",
                    value: other.into(),
                });
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
        Ok(StoreHeader { identity })
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
            let h = StoreHeader { identity };
            let b = h.encode();
            assert_eq!(&b[..4], b"ZRST");
            assert_eq!(StoreHeader::decode(Path::new("s"), &b).unwrap(), h);
        }
    }

    #[test]
    fn dense_header_bytes_match_format_md() {
        let h = StoreHeader {
            identity: TypeIdentity::Dense {
                dtype: DType::U8,
                item_shape: vec![2, 3],
            },
        };
        let b = h.encode();
        assert_eq!(&b[4..8], &[1, 0, 0, 0]);
        assert_eq!(&b[8..16], &6u64.to_le_bytes());
        // msgpack: fixmap(2) "dtype" "u8" "item_shape" [2, 3]
        let identity = b"\x82\xa5dtype\xa2u8\xaaitem_shape\x92\x02\x03";
        assert_eq!(&b[16..20], &(identity.len() as u32).to_le_bytes());
        assert_eq!(&b[32..], identity);
    }

    #[test]
    fn unexpected_fields_and_bad_values_are_refused() {
        let p = Path::new("s");
        let h = StoreHeader {
            identity: TypeIdentity::Ragged { dtype: DType::I32 },
        };
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
        b[KIND_AT] = RAGGED;
        let extra = rmp_serde::to_vec_named(&DenseIdentity {
            dtype: "i32".into(),
            item_shape: vec![],
        })
        .unwrap();
        b[IDENTITY_LEN_AT..RESERVED_AT].copy_from_slice(&(extra.len() as u32).to_le_bytes());
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
