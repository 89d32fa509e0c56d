//! One-byte tags on disk, decoded with `TryFrom` so an unknown value is an
//! error carrying what was seen, never a silent default.

use std::path::Path;

use crate::{Codec, Error, StoreKind};

/// A tag byte this build does not know: which field, and the value seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnknownTag {
    pub(crate) field: &'static str,
    pub(crate) value: u8,
}

impl UnknownTag {
    /// The crate error for this tag in the header at `path`.
    pub(crate) fn at(self, path: &Path) -> Error {
        Error::InvalidTag {
            path: path.into(),
            field: self.field,
            value: self.value.into(),
        }
    }
}

/// The codec tag of `meta.zr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CodecTag {
    Raw = 0,
    Zstd = 1,
    ZstdDict = 2,
}

impl TryFrom<u8> for CodecTag {
    type Error = UnknownTag;

    fn try_from(value: u8) -> Result<Self, UnknownTag> {
        match value {
            0 => Ok(CodecTag::Raw),
            1 => Ok(CodecTag::Zstd),
            2 => Ok(CodecTag::ZstdDict),
            _ => Err(UnknownTag {
                field: "codec",
                value,
            }),
        }
    }
}

impl From<&Codec> for CodecTag {
    fn from(codec: &Codec) -> Self {
        match codec {
            Codec::Raw => CodecTag::Raw,
            Codec::Zstd => CodecTag::Zstd,
            Codec::ZstdDict(_) => CodecTag::ZstdDict,
        }
    }
}

/// The kind tag of `store.zr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum KindTag {
    Dense = 0,
    Ragged = 1,
}

impl TryFrom<u8> for KindTag {
    type Error = UnknownTag;

    fn try_from(value: u8) -> Result<Self, UnknownTag> {
        match value {
            0 => Ok(KindTag::Dense),
            1 => Ok(KindTag::Ragged),
            _ => Err(UnknownTag {
                field: "kind",
                value,
            }),
        }
    }
}

impl From<StoreKind> for KindTag {
    fn from(kind: StoreKind) -> Self {
        match kind {
            StoreKind::Dense => KindTag::Dense,
            StoreKind::Ragged => KindTag::Ragged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_unknown_values_carry_what_was_seen() {
        for tag in [CodecTag::Raw, CodecTag::Zstd, CodecTag::ZstdDict] {
            assert_eq!(CodecTag::try_from(tag as u8), Ok(tag));
        }
        assert_eq!(
            CodecTag::try_from(3),
            Err(UnknownTag {
                field: "codec",
                value: 3
            })
        );
        for kind in [StoreKind::Dense, StoreKind::Ragged] {
            let tag = KindTag::from(kind);
            assert_eq!(KindTag::try_from(tag as u8), Ok(tag));
        }
        assert_eq!(
            KindTag::try_from(200),
            Err(UnknownTag {
                field: "kind",
                value: 200
            })
        );
    }
}
