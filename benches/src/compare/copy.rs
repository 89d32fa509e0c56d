//! Copies with zrecord's thread policy, so every uncompressed peer is
//! gathered "with the same threads": on the calling thread below
//! [`PARALLEL_COPY_BYTES`] per batch, across rayon's pool in
//! [`PIECES_PER_THREAD`] contiguous pieces per thread above (the constants
//! are zrecord's own).

use rayon::prelude::*;
use zrecord::gather_policy::{PARALLEL_COPY_BYTES, PIECES_PER_THREAD};

/// Whether a copy of `bytes` in `records` records fans out.
pub(crate) fn parallel(bytes: usize, records: usize) -> bool {
    records > 1 && bytes >= PARALLEL_COPY_BYTES && rayon::current_num_threads() > 1
}

/// Items per parallel piece: a few pieces per thread, as zrecord splits.
pub(crate) fn min_len(items: usize) -> usize {
    items
        .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
        .max(1)
}

/// Copies `src` into `out` (same length) with the same policy: memcpy
/// bandwidth with the gather's threads.
pub(crate) fn memcpy(src: &[u8], out: &mut [u8]) {
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
pub(crate) fn memcpy_wrapping(src: &[u8], start: usize, out: &mut [u8]) {
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
    fn copies_wrap_around() {
        let src: Vec<u8> = (0..=255u8).cycle().take(8 << 20).collect();
        let mut out = vec![0u8; src.len()];
        memcpy(&src, &mut out);
        assert_eq!(out, src);
        let mut out = vec![0u8; 10];
        memcpy_wrapping(&[1, 2, 3, 4], 3, &mut out);
        assert_eq!(out, [4, 1, 2, 3, 4, 1, 2, 3, 4, 1]);
    }
}
