//! `fill_batch` never allocates: a counting global allocator sees no
//! allocation on the calling thread while batches of every mode, sharded
//! and over subsets, at small and huge index spaces, are filled.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use zsampler::{Mode, Sampler};

/// The system allocator, counting the allocations of threads that asked.
struct Counting;

thread_local! {
    /// `Some(n)`: this thread counts, `n` allocations so far.
    static COUNT: Cell<Option<u64>> = const { Cell::new(None) };
}

fn count_one() {
    // `try_with`: allocations during thread teardown are not ours to count.
    let _ = COUNT.try_with(|c| c.set(c.get().map(|n| n + 1)));
}

// SAFETY: every method forwards to `System` unchanged; counting touches only
// a thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    COUNT.with(|c| c.set(Some(0)));
    f();
    COUNT.with(|c| c.replace(None)).unwrap_or(0)
}

fn samplers() -> Vec<Sampler> {
    let modes = [
        Mode::Sequential,
        Mode::Iid,
        Mode::Cyclic,
        Mode::Block {
            block_size: 16,
            window_blocks: 4,
        },
        Mode::Block {
            block_size: 1000,
            window_blocks: 300,
        },
    ];
    let subset: Vec<u64> = (0..5000).map(|i| i * 3).collect();
    let mut samplers = Vec::new();
    for mode in modes {
        for len in [100u64, 256, 257, 100_000, (1 << 32) + 1, (1 << 40) + 7] {
            samplers.push(
                Sampler::builder(len, 64)
                    .seed(len)
                    .mode(mode)
                    .build()
                    .unwrap(),
            );
        }
        samplers.push(
            Sampler::builder(1 << 20, 256)
                .mode(mode)
                .shard(3, 4)
                .build()
                .unwrap(),
        );
        samplers.push(
            Sampler::builder_subset(subset.clone(), 100)
                .mode(mode)
                .shard(1, 2)
                .build()
                .unwrap(),
        );
    }
    samplers
}

#[test]
fn fill_batch_never_allocates() {
    // The test's own counter works: a Vec is one allocation.
    assert_eq!(allocations(|| drop(vec![0u8; 16])), 1);
    for sampler in samplers() {
        let mut out = vec![0; sampler.local_batch_size()];
        let n = allocations(|| {
            for step in [0, 1, 2, 1_000, 123_456_789, u64::MAX / 7] {
                sampler.fill_batch(step, &mut out);
            }
        });
        assert_eq!(n, 0, "{sampler:?}: {n} allocations in fill_batch");
        // And what it filled is the batch.
        assert_eq!(out, sampler.batch_at(u64::MAX / 7), "{sampler:?}");
    }
}

#[test]
fn fill_next_never_allocates() {
    for mut sampler in samplers() {
        let mut out = vec![0; sampler.local_batch_size()];
        let n = allocations(|| {
            for _ in 0..10 {
                sampler.fill_next(&mut out);
            }
        });
        assert_eq!(n, 0, "{sampler:?}: {n} allocations in fill_next");
    }
}
