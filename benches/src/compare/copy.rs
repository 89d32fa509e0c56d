//! Filling a batch record by record with zrecord's thread policy, so every
//! uncompressed peer is gathered "with the same threads": on the calling
//! thread below [`PARALLEL_COPY_BYTES`] per batch, across rayon's pool in
//! [`PIECES_PER_THREAD`] contiguous pieces per thread above (the constants
//! are zrecord's own). Decoded frames fan out always.

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

/// Fills `out` with records `indices` of `width` bytes end to end,
/// `fill(dst, i)` writing record `i`; across rayon's pool when `parallel`.
pub fn fill_fixed(
    out: &mut [u8],
    width: usize,
    indices: &[u64],
    parallel: bool,
    fill: impl Fn(&mut [u8], u64) + Sync,
) {
    if parallel {
        out.par_chunks_mut(width)
            .zip(indices.par_iter())
            .with_min_len(min_len(indices.len()))
            .for_each(|(dst, &i)| fill(dst, i));
    } else {
        out.chunks_mut(width)
            .zip(indices)
            .for_each(|(dst, &i)| fill(dst, i));
    }
}

/// Fills `out` with records `indices` end to end, record `i` being `len(i)`
/// bytes that `fill(dst, i)` writes; `offsets` gets where each starts
/// (`len + 1` entries from 0). Across rayon's pool when `parallel(bytes)`.
pub fn fill_packed(
    indices: &[u64],
    len: impl Fn(u64) -> usize,
    out: &mut Vec<u8>,
    offsets: &mut Vec<usize>,
    parallel: impl FnOnce(usize) -> bool,
    fill: impl Fn(&mut [u8], u64) + Sync,
) {
    offsets.clear();
    offsets.push(0);
    let mut total = 0;
    for &i in indices {
        total += len(i);
        offsets.push(total);
    }
    out.resize(total, 0);
    if parallel(total) {
        let mut jobs: Vec<(&mut [u8], u64)> = Vec::with_capacity(indices.len());
        let mut rest = &mut out[..];
        for (k, &i) in indices.iter().enumerate() {
            let (dst, tail) = rest.split_at_mut(offsets[k + 1] - offsets[k]);
            jobs.push((dst, i));
            rest = tail;
        }
        jobs.par_iter_mut()
            .with_min_len(min_len(indices.len()))
            .for_each(|(dst, i)| fill(dst, *i));
    } else {
        for (k, &i) in indices.iter().enumerate() {
            fill(&mut out[offsets[k]..offsets[k + 1]], i);
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
/// its end (`src` may be shorter than `out`), each piece with [`memcpy`].
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
    fn fixed_and_packed_fills() {
        let src: Vec<u8> = (0..=255u8).cycle().take(8 << 20).collect();
        let width = 64 << 10;
        let copy =
            |dst: &mut [u8], i: u64| dst.copy_from_slice(&src[i as usize * width..][..width]);
        for parallel in [false, true] {
            let indices = [3u64, 0, 3];
            let mut out = vec![0u8; indices.len() * width];
            fill_fixed(&mut out, width, &indices, parallel, copy);
            assert_eq!(out[2 * width..], src[3 * width..4 * width]);
            let (mut out, mut offsets) = (Vec::new(), Vec::new());
            let len = |i: u64| (i as usize + 1) * 1000;
            let fill = |dst: &mut [u8], i: u64| dst.copy_from_slice(&src[..len(i)]);
            fill_packed(&[5, 1, 5], len, &mut out, &mut offsets, |_| parallel, fill);
            assert_eq!(offsets, [0, 6000, 8000, 14000]);
            assert_eq!(out[6000..8000], src[..2000]);
        }
        let mut out = vec![0u8; src.len()];
        memcpy(&src, &mut out);
        assert_eq!(out, src);
        let mut out = vec![0u8; 10];
        memcpy_wrapping(&[1, 2, 3, 4], 3, &mut out);
        assert_eq!(out, [4, 1, 2, 3, 4, 1, 2, 3, 4, 1]);
    }
}
