//! Dtype-tagged values for importers: from little-endian bytes, and into
//! ragged batches.

use anyhow::{Result, bail};
use zrecord::{DType, DynRaggedBatch, DynVec, RaggedBatch, RaggedLayout};

/// Little-endian `bytes` as values of `dtype` (bools must be 0 or 1).
pub(crate) fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Result<DynVec> {
    if !bytes.len().is_multiple_of(dtype.size()) {
        bail!(
            "{} bytes are not a whole number of {dtype} values",
            bytes.len()
        );
    }
    macro_rules! parse {
        ($t:ty) => {
            bytes
                .chunks_exact(size_of::<$t>())
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect::<Vec<$t>>()
                .into()
        };
    }
    Ok(match dtype {
        DType::Bool => bytes
            .iter()
            .map(|&b| match b {
                0 => Ok(false),
                1 => Ok(true),
                _ => bail!("byte {b} is not a bool"),
            })
            .collect::<Result<Vec<bool>>>()?
            .into(),
        DType::U8 => bytes.to_vec().into(),
        DType::I8 => parse!(i8),
        DType::U16 => parse!(u16),
        DType::I16 => parse!(i16),
        DType::U32 => parse!(u32),
        DType::I32 => parse!(i32),
        DType::U64 => parse!(u64),
        DType::I64 => parse!(i64),
        DType::F16 => parse!(half::f16),
        DType::BF16 => parse!(half::bf16),
        DType::F32 => parse!(f32),
        DType::F64 => parse!(f64),
        other => bail!("{other} values cannot be read"),
    })
}

/// `values` cut into records by `layout`.
pub(crate) fn ragged_batch(values: DynVec, layout: RaggedLayout) -> Result<DynRaggedBatch> {
    macro_rules! batch {
        ($v:expr) => {
            RaggedBatch::from_parts($v, layout)?.into()
        };
    }
    Ok(match values {
        DynVec::Bool(v) => batch!(v),
        DynVec::U8(v) => batch!(v),
        DynVec::I8(v) => batch!(v),
        DynVec::U16(v) => batch!(v),
        DynVec::I16(v) => batch!(v),
        DynVec::U32(v) => batch!(v),
        DynVec::I32(v) => batch!(v),
        DynVec::U64(v) => batch!(v),
        DynVec::I64(v) => batch!(v),
        DynVec::F16(v) => batch!(v),
        DynVec::BF16(v) => batch!(v),
        DynVec::F32(v) => batch!(v),
        DynVec::F64(v) => batch!(v),
    })
}
