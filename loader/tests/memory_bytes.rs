//! Memory stays bounded, in bytes: a counting global allocator measures the
//! heap the loader holds — ragged values buffers of varying sizes included —
//! over a long run and while a stalled consumer lets the workers fill the
//! queue, and it never exceeds what the prefetch depth allows.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_loader::{Loader, Mode};

/// The system allocator, counting live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(live, Ordering::SeqCst);
}

// SAFETY: every method forwards to `System` unchanged; the counting is on
// atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::SeqCst);
        }
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const RECORDS: u64 = 2_000;
const BATCH: u64 = 32;
const STEPS: u64 = 1_000;
/// Ragged records hold `MAX_TOKENS / 4` to `MAX_TOKENS` u32 values (4 to 16
/// KiB), so a batch's size varies but is never far below the largest.
const MAX_TOKENS: u64 = 4096;
const DENSE_WIDTH: usize = 64;

fn tokens(r: u64) -> Vec<u32> {
    let n = MAX_TOKENS / 4 + (r * 2_654_435_761) % (MAX_TOKENS * 3 / 4 + 1);
    (0..n as u32).map(|i| i ^ r as u32).collect()
}

#[test]
fn the_loader_holds_no_more_heap_than_its_prefetch_depth_allows() {
    let dir = tempfile::tempdir().unwrap();
    let ragged = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Zstd).unwrap();
    let records: Vec<Vec<u32>> = (0..RECORDS).map(tokens).collect();
    ragged.append_slices(&records).unwrap();
    drop(records);
    let dense =
        DenseStore::<f32>::create(dir.path().join("x"), &[DENSE_WIDTH], Codec::Raw).unwrap();
    dense
        .append(&vec![0.5f32; RECORDS as usize * DENSE_WIDTH])
        .unwrap();
    let (workers, prefetch) = (3usize, 4usize);

    let baseline = LIVE.load(Ordering::SeqCst);
    PEAK.store(baseline, Ordering::SeqCst);
    let mut loader = Loader::builder(BATCH)
        .stream("tokens", ragged)
        .stream("x", dense)
        .mode(Mode::Iid)
        .seed(1)
        .workers(workers)
        .prefetch(prefetch)
        .build()
        .unwrap();

    // What one batch can need: every record at its longest, plus the
    // per-record offsets and shapes, the dense column and the indices.
    let batch = BATCH as usize;
    let per_batch = batch * (MAX_TOKENS as usize * 4 + 3 * 8) + batch * DENSE_WIDTH * 4 + batch * 8;
    // Buffer sets that can exist at once: the prefetched ones, the one the
    // consumer holds, and those the pool keeps for reuse (prefetch + workers
    // + 1); each buffer at most twice what it holds (a growing Vec doubles).
    let sets = prefetch + 1 + (prefetch + workers + 1);
    let bound = sets * 2 * per_batch + (1 << 20);

    let mut delivered = 0u64;
    for _ in 0..STEPS {
        let batch = loader.next_batch().unwrap();
        delivered += batch.len() as u64;
    }
    let run_peak = PEAK.load(Ordering::SeqCst) - baseline;

    // A stalled consumer: the workers fill the queue, then must stop there.
    let deadline = Instant::now() + Duration::from_secs(60);
    while loader.counters().snapshot().ready < prefetch as u64 {
        assert!(Instant::now() < deadline, "the queue never filled");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Time for unbounded workers (were they) to run far ahead.
    std::thread::sleep(Duration::from_millis(500));
    let stalled = LIVE.load(Ordering::SeqCst) - baseline;
    let stalled_peak = PEAK.load(Ordering::SeqCst) - baseline;
    let c = loader.counters().snapshot();
    drop(loader);

    println!(
        "{} steps: heap peak {run_peak} B over the run, {stalled} B held with a stalled \
         consumer (peak {stalled_peak} B); bound {bound} B ({sets} buffer sets of at most \
         {per_batch} B, doubled, + 1 MiB); {} stream buffers allocated",
        c.steps_delivered, c.buffers_allocated
    );
    assert_eq!(delivered, STEPS * BATCH);
    assert!(
        run_peak <= bound,
        "the run held {run_peak} B, more than {bound} B"
    );
    assert!(
        stalled_peak <= bound,
        "with the consumer stalled the loader held {stalled_peak} B, more than {bound} B"
    );
    assert!(
        c.ready <= prefetch as u64 && c.in_flight <= prefetch as u64,
        "{c:?}"
    );
}
