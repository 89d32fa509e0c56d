//! Element types: the [`DType`] tag persisted in a store and the [`Element`]
//! trait that ties each tag to its Rust type.

use std::fmt;
use std::str::FromStr;

use half::{bf16, f16};

use crate::DynVec;

/// The element type of a store, persisted by name in `store.zr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// `bool`, one byte, 0 or 1.
    Bool,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// IEEE 754 half precision ([`half::f16`]).
    F16,
    /// bfloat16 ([`half::bf16`]).
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl DType {
    /// Every dtype, in tag order.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The name persisted on disk and printed in messages (`"f32"`, `"bf16"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U16 => "u16",
            DType::I16 => "i16",
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::U64 => "u64",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// The dtype with this [`name`](DType::name), if any.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::from_name(s)
            .ok_or_else(|| crate::Error::InvalidArgument(format!("unknown dtype {s:?}")))
    }
}

/// The two record contracts a store can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// Every record has the store's item shape.
    Dense,
    /// Every record has its own shape.
    Ragged,
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreKind::Dense => "dense",
            StoreKind::Ragged => "ragged",
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type a store can hold: one per [`DType`].
///
/// Sealed: the set of element types is the set of dtypes.
pub trait Element:
    Copy + Default + PartialEq + fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
    /// The dtype tag of this type.
    const DTYPE: DType;

    /// Whether `bytes` are valid values of this type. Only `bool` restricts
    /// its bytes (to 0 and 1).
    #[doc(hidden)]
    fn bytes_valid(bytes: &[u8]) -> Result<(), (usize, u8)> {
        let _ = bytes;
        Ok(())
    }

    /// Wraps a vector of this type in a [`DynVec`].
    #[doc(hidden)]
    fn into_dyn(values: Vec<Self>) -> DynVec;

    /// The vector inside `values` if it holds this type.
    #[doc(hidden)]
    fn dyn_ref(values: &DynVec) -> Option<&Vec<Self>>;

    /// The vector inside `values` if it holds this type.
    #[doc(hidden)]
    fn dyn_mut(values: &mut DynVec) -> Option<&mut Vec<Self>>;

    /// The vector inside `values`, or `values` back if it holds another type.
    #[doc(hidden)]
    fn dyn_into(values: DynVec) -> Result<Vec<Self>, DynVec>;
}

macro_rules! element {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$variant;

            fn into_dyn(values: Vec<Self>) -> DynVec {
                DynVec::$variant(values)
            }
            fn dyn_ref(values: &DynVec) -> Option<&Vec<Self>> {
                match values {
                    DynVec::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn dyn_mut(values: &mut DynVec) -> Option<&mut Vec<Self>> {
                match values {
                    DynVec::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn dyn_into(values: DynVec) -> Result<Vec<Self>, DynVec> {
                match values {
                    DynVec::$variant(v) => Ok(v),
                    other => Err(other),
                }
            }
        }
    )*};
}

element! {
    u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
    u64 => U64, i64 => I64, f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
}

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;

    fn bytes_valid(bytes: &[u8]) -> Result<(), (usize, u8)> {
        match bytes.iter().position(|&b| b > 1) {
            None => Ok(()),
            Some(offset) => Err((offset, bytes[offset])),
        }
    }
    fn into_dyn(values: Vec<Self>) -> DynVec {
        DynVec::Bool(values)
    }
    fn dyn_ref(values: &DynVec) -> Option<&Vec<Self>> {
        match values {
            DynVec::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn dyn_mut(values: &mut DynVec) -> Option<&mut Vec<Self>> {
        match values {
            DynVec::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn dyn_into(values: DynVec) -> Result<Vec<Self>, DynVec> {
        match values {
            DynVec::Bool(v) => Ok(v),
            other => Err(other),
        }
    }
}

/// Checks that `bytes` are valid values of `dtype`.
pub(crate) fn validate_bytes(dtype: DType, bytes: &[u8]) -> crate::Result<()> {
    if dtype == DType::Bool {
        bool::bytes_valid(bytes)
            .map_err(|(offset, value)| crate::Error::InvalidBool { offset, value })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_match_rust_types() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(d.name().parse::<DType>().ok(), Some(d));
        }
        assert_eq!(DType::F16.size(), size_of::<f16>());
        assert_eq!(DType::BF16.size(), size_of::<bf16>());
        assert_eq!(DType::Bool.size(), size_of::<bool>());
        assert!(DType::from_name("float32").is_none());
    }

    #[test]
    fn bool_bytes_are_checked() {
        assert!(validate_bytes(DType::Bool, &[0, 1, 1, 0]).is_ok());
        assert!(matches!(
            validate_bytes(DType::Bool, &[0, 1, 2]),
            Err(crate::Error::InvalidBool {
                offset: 2,
                value: 2
            })
        ));
        assert!(validate_bytes(DType::U8, &[0, 1, 2]).is_ok());
    }
}
