//! [`DynVec`]: a vector whose element type is known at run time.

use half::{bf16, f16};

use crate::bytes::{as_bytes, fill_bytes, try_resize};
use crate::{DType, Element, Result};

/// A `Vec` of one of the store dtypes, tagged at run time.
///
/// This is the buffer of the untyped (dtype-tagged) API: code that handles
/// many streams of different dtypes gathers into `DynVec`s and hands each
/// typed `Vec` on without a copy (for example into a tensor) with
/// [`DynVec::into_vec`].
///
/// ```
/// use zrecord::{DType, DynVec};
///
/// let v = DynVec::from(vec![1.5f32, 2.5]);
/// assert_eq!(v.dtype(), DType::F32);
/// assert_eq!(v.as_slice::<f32>(), Some(&[1.5f32, 2.5][..]));
/// assert_eq!(v.as_slice::<u8>(), None);
/// let floats: Vec<f32> = v.into_vec().unwrap();
/// # assert_eq!(floats.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs, reason = "one variant per DType, named alike")]
pub enum DynVec {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the typed vector inside `$self`, and `$t`
/// to its element type.
macro_rules! with_vec {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            DynVec::Bool($v) => $body,
            DynVec::U8($v) => $body,
            DynVec::I8($v) => $body,
            DynVec::U16($v) => $body,
            DynVec::I16($v) => $body,
            DynVec::U32($v) => $body,
            DynVec::I32($v) => $body,
            DynVec::U64($v) => $body,
            DynVec::I64($v) => $body,
            DynVec::F16($v) => $body,
            DynVec::BF16($v) => $body,
            DynVec::F32($v) => $body,
            DynVec::F64($v) => $body,
        }
    };
}

impl DynVec {
    /// An empty vector of `dtype`.
    pub fn new(dtype: DType) -> DynVec {
        DynVec::zeros(dtype, 0)
    }

    /// `len` zeros (`false` for bool) of `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> DynVec {
        fn z<T: Element>(len: usize) -> DynVec {
            T::into_dyn(vec![T::default(); len])
        }
        match dtype {
            DType::Bool => z::<bool>(len),
            DType::U8 => z::<u8>(len),
            DType::I8 => z::<i8>(len),
            DType::U16 => z::<u16>(len),
            DType::I16 => z::<i16>(len),
            DType::U32 => z::<u32>(len),
            DType::I32 => z::<i32>(len),
            DType::U64 => z::<u64>(len),
            DType::I64 => z::<i64>(len),
            DType::F16 => z::<f16>(len),
            DType::BF16 => z::<bf16>(len),
            DType::F32 => z::<f32>(len),
            DType::F64 => z::<f64>(len),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        fn d<T: Element>(_: &[T]) -> DType {
            T::DTYPE
        }
        with_vec!(self, v => d(v))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_vec!(self, v => v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements' bytes, little-endian.
    pub fn as_bytes(&self) -> &[u8] {
        with_vec!(self, v => as_bytes(v))
    }

    /// The elements if they are of type `T`.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        T::dyn_ref(self).map(Vec::as_slice)
    }

    /// The elements, mutably, if they are of type `T`.
    pub fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        T::dyn_mut(self).map(Vec::as_mut_slice)
    }

    /// A pointer to the first element's bytes, for handing the buffer to
    /// another language without a copy (numpy's `__array_interface__`,
    /// DLPack). Writing through it is the caller's `unsafe`: in bounds,
    /// and only `0` or `1` into a `Bool` vector.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        with_vec!(self, v => v.as_mut_ptr().cast::<u8>())
    }

    /// The typed vector, without a copy; `self` back if it holds another type.
    pub fn into_vec<T: Element>(self) -> std::result::Result<Vec<T>, DynVec> {
        T::dyn_into(self)
    }

    /// Sets the length to `len` elements, keeping the allocation; new elements are zero.
    pub(crate) fn resize(&mut self, len: usize) {
        with_vec!(self, v => v.resize(len, Default::default()))
    }

    /// Resizes to `len` elements for a batch of `records` records, then
    /// lets `fill` write their bytes (validated for bool).
    ///
    /// # Errors
    /// [`Error::BatchTooLarge`](crate::Error::BatchTooLarge) when the memory
    /// cannot be had; whatever `fill` returns.
    pub(crate) fn fill_bytes<R>(
        &mut self,
        len: usize,
        records: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<R>,
    ) -> Result<R> {
        with_vec!(self, v => try_resize(v, len, records))?;
        with_vec!(self, v => fill_bytes(v.as_mut_slice(), fill))
    }
}

impl<T: Element> From<Vec<T>> for DynVec {
    fn from(values: Vec<T>) -> DynVec {
        T::into_dyn(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips() {
        for d in DType::ALL {
            let v = DynVec::zeros(d, 3);
            assert_eq!(v.dtype(), d);
            assert_eq!(v.len(), 3);
            assert_eq!(v.as_bytes().len(), 3 * d.size());
        }
        let v = DynVec::from(vec![1i64, -1]);
        assert!(v.clone().into_vec::<u64>().is_err());
        assert_eq!(v.into_vec::<i64>().unwrap(), vec![1, -1]);
    }

    #[test]
    fn fill_bytes_resizes_and_validates() {
        let mut v = DynVec::new(DType::U16);
        v.fill_bytes(2, 1, |b| {
            b.copy_from_slice(&[1, 0, 2, 0]);
            Ok(())
        })
        .unwrap();
        assert_eq!(v.as_slice::<u16>(), Some(&[1u16, 2][..]));
        let mut flags = DynVec::new(DType::Bool);
        let r = flags.fill_bytes(1, 1, |b| {
            b[0] = 9;
            Ok(())
        });
        assert!(r.is_err());
        assert_eq!(flags.as_slice::<bool>(), Some(&[false][..]));
    }
}
