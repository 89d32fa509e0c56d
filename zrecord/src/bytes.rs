//! Byte views of element slices: the crate's only pointer casts, kept here so
//! their safety argument is in one place (and exercised under valgrind, see
//! the crate's tests).

use crate::{Element, Error, Result};

/// The bytes of `values`, in memory order (little-endian on every supported target).
pub(crate) fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: every `Element` is a plain value type without padding (the
    // integers, floats, `half`'s `repr(transparent)` u16 wrappers and `bool`),
    // so each of its bytes is initialised and readable as a `u8`; the length
    // is exactly the slice's memory and `u8` has alignment 1.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}

/// Lets `fill` write the bytes of `values`, then checks they are valid values
/// of `T` (only `bool` restricts its bytes). Invalid bytes are zeroed before
/// the error returns, so `values` never holds an invalid `bool`.
pub(crate) fn fill_bytes<T: Element, R>(
    values: &mut [T],
    fill: impl FnOnce(&mut [u8]) -> Result<R>,
) -> Result<R> {
    let len = size_of_val(values);
    // SAFETY: the bytes alias `values`, which this function borrows mutably
    // for its whole body, so nothing else reads or writes them meanwhile; they
    // are initialised (they hold `T` values) and `u8` has alignment 1. For
    // every `T` but `bool` any byte is a valid value; for `bool` the bytes are
    // checked (and invalid ones zeroed) below before `values` can be read as
    // `bool` again.
    let bytes = unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), len) };
    let result = fill(bytes);
    if let Err((offset, value)) = T::bytes_valid(bytes) {
        bytes.fill(0);
        return result.and(Err(Error::InvalidBool { offset, value }));
    }
    result
}

/// Resizes `values` to `len` elements (new ones default) for a batch of
/// `records` records, failing with [`Error::BatchTooLarge`] instead of
/// aborting the process when the memory cannot be had.
pub(crate) fn try_resize<T: Clone + Default>(
    values: &mut Vec<T>,
    len: usize,
    records: usize,
) -> Result<()> {
    if len > values.len() {
        values
            .try_reserve_exact(len - values.len())
            .map_err(|_| Error::BatchTooLarge {
                records,
                bytes: (len as u64).saturating_mul(size_of::<T>() as u64),
            })?;
    }
    values.resize(len, T::default());
    Ok(())
}

/// Elements in a batch of `records` records of `record_len` elements each
/// ([`Error::BatchTooLarge`] on overflow).
pub(crate) fn batch_len(records: usize, record_len: usize, element_bytes: usize) -> Result<usize> {
    records
        .checked_mul(record_len)
        .filter(|&n| {
            n.checked_mul(element_bytes)
                .is_some_and(|b| b <= isize::MAX as usize)
        })
        .ok_or(Error::BatchTooLarge {
            records,
            bytes: u64::MAX,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn views_cover_the_whole_slice_in_little_endian_order() {
        assert_eq!(as_bytes(&[0x0102_0304u32, 5]), &[4, 3, 2, 1, 5, 0, 0, 0]);
        assert_eq!(as_bytes(&[true, false]), &[1, 0]);
        assert_eq!(as_bytes(&[bf16::from_bits(0xABCD)]), &[0xCD, 0xAB]);
    }

    #[test]
    fn impossible_batches_are_errors_not_aborts() {
        let mut v: Vec<u8> = Vec::new();
        assert!(matches!(
            try_resize(&mut v, usize::MAX / 2, 7),
            Err(Error::BatchTooLarge { records: 7, .. })
        ));
        try_resize(&mut v, 3, 1).unwrap();
        assert_eq!(v, [0, 0, 0]);
        assert!(batch_len(1 << 40, 1 << 31, 1).is_err());
        assert_eq!(batch_len(3, 4, 8).unwrap(), 12);
    }

    #[test]
    fn fill_writes_through_and_checks_bools() {
        let mut v = [0u16; 2];
        fill_bytes(&mut v, |b| {
            b.copy_from_slice(&[1, 0, 0, 1]);
            Ok(())
        })
        .unwrap();
        assert_eq!(v, [1, 256]);

        let mut flags = [false; 3];
        let err = fill_bytes(&mut flags, |b| {
            b.copy_from_slice(&[1, 7, 0]);
            Ok(())
        });
        assert!(matches!(
            err,
            Err(Error::InvalidBool {
                offset: 1,
                value: 7
            })
        ));
        assert_eq!(
            flags, [false; 3],
            "invalid bools are zeroed, not left behind"
        );
    }
}
