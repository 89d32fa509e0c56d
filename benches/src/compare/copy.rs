//! Record copies with zrecord's thread policy, so every uncompressed peer is
//! gathered "with the same threads": on the calling thread below
//! [`PARALLEL_COPY_BYTES`] per batch, across rayon's pool in
//! [`PIECES_PER_THREAD`] contiguous pieces per thread above (the constants
//! are zrecord's own).

use std::ops::Range;

use rayon::prelude::*;
use zrecord::gather_policy::{PARALLEL_COPY_BYTES, PIECES_PER_THREAD};

/// Whether a copy of `bytes` in `records` records fans out.
pub fn parallel(bytes: usize, records: usize) -> bool {
    records > 1 && bytes >= PARALLEL_COPY_BYTES && rayon::current_num_threads() > 1
}

/// Items per parallel piece: a few pieces per thread, as zrecord splits.
pub fn min_len(items: usize) -> usize {
    items
        .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
        .max(1)
}

/// Copies fixed-width records `indices` of `src` end to end into `out`
/// (`indices.len() * width` bytes).
pub fn gather_fixed(src: &[u8], width: usize, indices: &[u64], out: &mut [u8]) {
    let copy = |(dst, &i): (&mut [u8], &u64)| {
        let at = i as usize * width;
        dst.copy_from_slice(&src[at..at + width]);
    };
    if parallel(out.len(), indices.len()) {
        out.par_chunks_mut(width)
            .zip(indices.par_iter())
            .with_min_len(min_len(indices.len()))
            .for_each(copy);
    } else {
        out.chunks_mut(width).zip(indices).for_each(copy);
    }
}

/// Copies variable-length records `indices` of `src` (record `i` is
/// `src[range(i)]`) end to end into `values`, with `offsets` (`len + 1`
/// entries, from 0) marking where each starts.
pub fn gather_packed<T: Copy + Default + Send + Sync>(
    src: &[T],
    range: impl Fn(u64) -> Range<usize> + Sync,
    indices: &[u64],
    values: &mut Vec<T>,
    offsets: &mut Vec<usize>,
) {
    offsets.clear();
    offsets.push(0);
    let mut total = 0;
    for &i in indices {
        total += range(i).len();
        offsets.push(total);
    }
    values.resize(total, T::default());
    let bytes = total * size_of::<T>();
    if parallel(bytes, indices.len()) {
        let mut jobs: Vec<(&mut [T], u64)> = Vec::with_capacity(indices.len());
        let mut rest = &mut values[..];
        for (k, &i) in indices.iter().enumerate() {
            let (dst, tail) = rest.split_at_mut(offsets[k + 1] - offsets[k]);
            jobs.push((dst, i));
            rest = tail;
        }
        jobs.par_iter_mut()
            .with_min_len(min_len(indices.len()))
            .for_each(|(dst, i)| dst.copy_from_slice(&src[range(*i)]));
    } else {
        for (k, &i) in indices.iter().enumerate() {
            values[offsets[k]..offsets[k + 1]].copy_from_slice(&src[range(i)]);
        }
    }
}

/// Copies `src` into `out` (same length) with the same policy: memcpy
/// bandwidth with the gather's threads.
pub fn memcpy(src: &[u8], out: &mut [u8]) {
    if parallel(out.len(), 2) {
        let piece = min_len(out.len());
        out.par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        out.copy_from_slice(src);
    }
}

/// Fills `out` with `src` read from offset `start` on, wrapping around at
/// its end (`src` may be shorter than `out`), each contiguous piece copied
/// with [`memcpy`].
///
/// # Panics
/// If `src` is empty while `out` is not.
pub fn memcpy_wrapping(src: &[u8], start: usize, out: &mut [u8]) {
    assert!(!src.is_empty() || out.is_empty(), "nothing to copy from");
    let mut at = start % src.len().max(1);
    let mut rest = out;
    while !rest.is_empty() {
        let n = rest.len().min(src.len() - at);
        let (dst, tail) = rest.split_at_mut(n);
        memcpy(&src[at..at + n], dst);
        rest = tail;
        at = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_packed_copies() {
        let src: Vec<u8> = (0..=255u8).cycle().take(8 << 20).collect();
        let width = 64 << 10;
        for indices in [vec![3u64, 0, 3], (0..64).rev().collect()] {
            let mut out = vec![0u8; indices.len() * width];
            gather_fixed(&src, width, &indices, &mut out);
            for (k, &i) in indices.iter().enumerate() {
                let i = i as usize;
                assert_eq!(out[k * width..][..width], src[i * width..][..width]);
            }
        }
        let tokens: Vec<i32> = (0..1_000_000).collect();
        let bounds: Vec<usize> = (0..=1000).map(|k| k * 1000).collect();
        let range = |i: u64| bounds[i as usize]..bounds[i as usize + 1];
        for indices in [vec![5u64, 1, 5], (0..1000).rev().collect::<Vec<u64>>()] {
            let (mut values, mut offsets) = (Vec::new(), Vec::new());
            gather_packed(&tokens, range, &indices, &mut values, &mut offsets);
            assert_eq!(offsets.len(), indices.len() + 1);
            for (k, &i) in indices.iter().enumerate() {
                assert_eq!(values[offsets[k]..offsets[k + 1]], tokens[range(i)]);
            }
        }
        let mut out = vec![0u8; src.len()];
        memcpy(&src, &mut out);
        assert_eq!(out, src);
        let mut out = vec![0u8; 10];
        memcpy_wrapping(&[1, 2, 3, 4], 3, &mut out);
        assert_eq!(out, [4, 1, 2, 3, 4, 1, 2, 3, 4, 1]);
    }
}
