//! Appends from many threads: four threads append batches of different
//! sizes to one store while two others gather; afterwards every record is one
//! a thread appended, each thread's records are all there, in its order, in
//! whole contiguous batches at the indices its appends returned — on raw,
//! zstd and zstd_dict stores, dense and ragged.

mod common;

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::appenders::{DENSE_WIDTH, GEOMETRY, THREADS, Target, batch_size, holdings};
use zrecord::Codec;

/// Batches each thread appends.
const BATCHES: u64 = 60;
/// The appenders wait for each other after every this many batches, so
/// every window of the store holds batches of all of them.
const WINDOW: u64 = 10;

fn hammer(name: &str, target: &Target) {
    let done = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let window = Barrier::new(THREADS);
    let returned: Vec<Vec<(u64, u64)>> = std::thread::scope(|s| {
        for r in 0..2u64 {
            let (done, reads) = (&done, &reads);
            s.spawn(move || {
                let mut rng = r + 1;
                while !done.load(Ordering::Acquire) {
                    let len = target.len();
                    if len == 0 {
                        std::thread::yield_now();
                        continue;
                    }
                    let indices: Vec<u64> = (0..1 + rng % 40)
                        .map(|j| common::splitmix(rng, j) % len)
                        .collect();
                    target.read(&indices);
                    reads.fetch_add(1, Ordering::Relaxed);
                    rng += 2;
                }
            });
        }
        let appenders: Vec<_> = (0..THREADS)
            .map(|t| {
                let window = &window;
                s.spawn(move || {
                    let mut seq = 0;
                    (0..BATCHES)
                        .map(|k| {
                            if k % WINDOW == 0 {
                                window.wait();
                            }
                            let first = target.append_batch(t, k, seq);
                            seq += batch_size(t, k);
                            (k, first)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let returned = appenders
            .into_iter()
            .map(|h| h.join().expect("an appender panicked"))
            .collect();
        done.store(true, Ordering::Release);
        returned
    });

    let held = holdings(target);
    let per_thread: Vec<u64> = (0..THREADS)
        .map(|t| (0..BATCHES).map(|k| batch_size(t, k)).sum())
        .collect();
    assert_eq!(
        held.records[..],
        per_thread[..],
        "{name}: records per thread"
    );
    assert_eq!(
        held.batches, [BATCHES; THREADS],
        "{name}: batches per thread"
    );
    // Each batch sits at the index its append returned.
    for &(t, k, at) in &held.starts {
        assert_eq!(
            returned[t][k as usize],
            (k, at),
            "{name}: batch {k} of thread {t}"
        );
    }
    assert_eq!(target.verify(), per_thread.iter().sum::<u64>());
    // Every window holds batches of every thread: at least three switches
    // from one thread's batch to another's per window.
    let switches = held.starts.windows(2).filter(|w| w[0].0 != w[1].0).count();
    println!(
        "{name}: {} records in {} batches from {THREADS} threads ({switches} switches \
         between threads), {} gathers alongside",
        target.len(),
        held.starts.len(),
        reads.load(Ordering::Relaxed)
    );
    let windows = (BATCHES / WINDOW) as usize;
    assert!(
        switches >= (THREADS - 1) * windows,
        "{name}: {switches} switches"
    );
}

#[test]
fn threads_append_to_dense_stores_of_every_codec() {
    let dir = tempfile::tempdir().unwrap();
    for (name, codec) in [("raw", 0), ("zstd", 1), ("zstd_dict", 2)] {
        let target = Target::create(&dir.path().join(name), true, common::codec(codec));
        hammer(&format!("dense {name}"), &target);
    }
}

#[test]
fn threads_append_to_ragged_stores_of_every_codec() {
    let dir = tempfile::tempdir().unwrap();
    for (name, codec) in [
        ("raw", Codec::Raw),
        ("zstd", Codec::Zstd),
        ("zstd_dict", common::codec(2)),
    ] {
        let target = Target::create(&dir.path().join(name), false, codec);
        hammer(&format!("ragged {name}"), &target);
    }
}

#[test]
fn flushes_and_syncs_while_appending_lose_nothing() {
    // `flush_written` does not hold the writer: an appender keeps going,
    // adding chunks and table segments, while another thread flushes and syncs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = zrecord::OpenOptions::new()
        .geometry(GEOMETRY)
        .create::<zrecord::DenseStore<u32>>(
            &path,
            &zrecord::Schema::dense(<u32 as zrecord::Element>::DTYPE, &[DENSE_WIDTH]),
            Codec::Raw,
        )
        .unwrap();
    let batches = 200u32;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                store.flush_written().unwrap();
                store.sync().unwrap();
            }
        });
        for b in 0..batches {
            let values: Vec<u32> = (0..DENSE_WIDTH as u32 * 7)
                .map(|v| b * 10_000 + v)
                .collect();
            store.append(&values).unwrap();
        }
        store.sync().unwrap();
        done.store(true, Ordering::Release);
    });
    drop(store);
    let store = zrecord::DenseStore::<u32>::open(&path).unwrap();
    assert_eq!(store.len(), u64::from(batches) * 7);
    let all: Vec<u64> = (0..store.len()).collect();
    let got = store.gather(&all).unwrap();
    let want: Vec<u32> = (0..batches)
        .flat_map(|b| (0..DENSE_WIDTH as u32 * 7).map(move |v| b * 10_000 + v))
        .collect();
    assert_eq!(got.iter().copied().collect::<Vec<u32>>(), want);
}
