//! Software prefetch: the one CPU hint the gather uses, kept apart because
//! it needs `unsafe`. Measured on 784-byte records: prefetching every table
//! entry of a batch, then the first lines of every record, before copying
//! lifts a raw gather from 0.70x to 0.84x of a plain memory-mapped copy.

/// Asks the CPU to start loading the first cache lines of `bytes`, so the
/// misses of a whole batch overlap instead of queueing in the copy loop.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    for line in bytes.chunks(64).take(4) {
        prefetch_line(line);
    }
}

/// Asks the CPU to start loading the cache line holding `bytes[0]`.
#[inline(always)]
pub(crate) fn prefetch_line(bytes: &[u8]) {
    // SAFETY: a prefetch is only a hint: it reads nothing architecturally,
    // never faults (even on an invalid address) and writes nothing; its
    // target feature, SSE, is part of every x86_64 CPU.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            bytes.as_ptr().cast(),
        );
    }
}
