//! Copying raw records into a batch: the one place that decides how, kept
//! apart because its fast path needs `unsafe`.
//!
//! glibc copies blocks of a few KiB and up with `rep movsb`, whose speed on
//! some CPUs (AMD Zen among them) swings with the relative alignment of
//! source and destination, up to threefold. Store records sit on page
//! boundaries and a `Vec`'s buffer 16 bytes past one, which is a slow case.
//! A loop of 16-byte vector moves copies at one speed for every alignment,
//! and with non-temporal stores, which do not first read the destination
//! lines they overwrite, faster still. Those stores bypass the cache, so
//! they are only used for batches far larger than it.

/// Records at least this long are copied with the vector loop.
pub(crate) const LARGE_RECORD: usize = 4096;

/// Batches at least this long are written with non-temporal stores: they
/// do not fit in a cache anyway, and skipping the read of each destination
/// line saves a third of the memory traffic.
pub(crate) const STREAMING_BATCH: usize = 16 << 20;

/// Copies `src` into `dst` (equal lengths); `streaming` asks for stores that
/// bypass the cache (see [`STREAMING_BATCH`]).
#[inline(always)]
pub(crate) fn copy_record(dst: &mut [u8], src: &[u8], streaming: bool) {
    #[cfg(target_arch = "x86_64")]
    if src.len() >= LARGE_RECORD && dst.len() == src.len() {
        vector_copy(dst, src, streaming);
        return;
    }
    let _ = streaming;
    dst.copy_from_slice(src);
}

/// The vector loop: a head up to the next 16-byte boundary of `dst`, then
/// 64-byte blocks with aligned stores, then the tail.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn vector_copy(dst: &mut [u8], src: &[u8], streaming: bool) {
    use core::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_sfence, _mm_store_si128, _mm_stream_si128,
    };

    let head = dst.as_ptr().align_offset(16).min(dst.len());
    let (dst_head, dst_body) = dst.split_at_mut(head);
    let (src_head, src_body) = src.split_at(head);
    dst_head.copy_from_slice(src_head);
    let body = dst_body.len() / 64 * 64;
    let (dst_blocks, dst_tail) = dst_body.split_at_mut(body);
    let (src_blocks, src_tail) = src_body.split_at(body);
    for (d, s) in dst_blocks
        .chunks_exact_mut(64)
        .zip(src_blocks.chunks_exact(64))
    {
        let (d, s) = (
            d.as_mut_ptr().cast::<__m128i>(),
            s.as_ptr().cast::<__m128i>(),
        );
        // SAFETY: `s` and `d` point at 64 valid bytes each (one chunk of
        // `chunks_exact(64)`), read as four unaligned loads and written as
        // four stores at offsets 0, 16, 32 and 48. The stores need 16-byte
        // alignment: `d` is the head-aligned start of `dst_body` plus a
        // multiple of 64. SSE2 is part of every x86_64 CPU.
        unsafe {
            let v = [
                _mm_loadu_si128(s),
                _mm_loadu_si128(s.add(1)),
                _mm_loadu_si128(s.add(2)),
                _mm_loadu_si128(s.add(3)),
            ];
            if streaming {
                _mm_stream_si128(d, v[0]);
                _mm_stream_si128(d.add(1), v[1]);
                _mm_stream_si128(d.add(2), v[2]);
                _mm_stream_si128(d.add(3), v[3]);
            } else {
                _mm_store_si128(d, v[0]);
                _mm_store_si128(d.add(1), v[1]);
                _mm_store_si128(d.add(2), v[2]);
                _mm_store_si128(d.add(3), v[3]);
            }
        }
    }
    if streaming {
        // SAFETY: a store fence has no operands; it orders the non-temporal
        // stores above before any later store of this thread (such as the
        // release that hands the batch to another thread).
        unsafe { _mm_sfence() };
    }
    dst_tail.copy_from_slice(src_tail);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length around the thresholds, every destination and source
    /// misalignment within a vector, both store kinds.
    #[test]
    fn copies_exactly_at_every_alignment() {
        let src: Vec<u8> = (0..LARGE_RECORD * 3).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0u8; LARGE_RECORD * 3 + 64];
        for len in [
            0,
            1,
            63,
            64,
            LARGE_RECORD - 1,
            LARGE_RECORD,
            LARGE_RECORD + 77,
        ] {
            for src_at in [0, 1, 8, 15] {
                for dst_at in [0, 1, 8, 15, 16, 33] {
                    for streaming in [false, true] {
                        dst.fill(0xAA);
                        let s = &src[src_at..src_at + len];
                        copy_record(&mut dst[dst_at..dst_at + len], s, streaming);
                        assert_eq!(
                            &dst[dst_at..dst_at + len],
                            s,
                            "len {len} src+{src_at} dst+{dst_at}"
                        );
                        assert!(dst[..dst_at].iter().all(|&b| b == 0xAA));
                        assert!(dst[dst_at + len..].iter().all(|&b| b == 0xAA));
                    }
                }
            }
        }
    }
}
