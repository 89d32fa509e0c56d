//! Software prefetch: the one CPU hint the gather uses, kept apart because
//! it needs `unsafe`. A gather of small records waits on memory, not on
//! copying: asking for the next records' lines while this one is copied
//! keeps many misses in flight instead of one at a time.

/// Bytes of each record a batch-at-once pass prefetches: a few lines, as
/// a whole batch's prefetches must not outrun the cache.
pub(crate) const BATCH_PREFETCH_BYTES: usize = 256;

/// Asks the CPU to start loading the cache lines holding the first `limit`
/// bytes of `bytes`, so the misses of many records overlap instead of
/// queueing in the copy loop.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], limit: usize) {
    let start = bytes.as_ptr() as usize;
    let end = start + limit.min(bytes.len());
    // From the line holding the first byte to the one holding the last.
    let mut line = start & !63;
    while line < end {
        prefetch_address(line as *const u8);
        line += 64;
    }
}

/// Asks the CPU to start loading the cache line holding `bytes[0]`.
#[inline(always)]
pub(crate) fn prefetch_line(bytes: &[u8]) {
    prefetch_address(bytes.as_ptr());
}

#[inline(always)]
fn prefetch_address(address: *const u8) {
    // SAFETY: a prefetch is only a hint: it reads nothing architecturally,
    // never faults (even on an invalid address) and writes nothing; its
    // target feature, SSE, is part of every x86_64 CPU.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
