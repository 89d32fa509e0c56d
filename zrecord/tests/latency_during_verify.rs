//! Measures (prints, asserts nothing about time) the worst one-record gather
//! latency while a `verify` runs over a 1M-record zstd store and appends
//! open new chunks: no reader queues behind a writer that queues behind the
//! verify.
//!
//! `cargo test --release -p zrecord --test latency_during_verify -- --ignored --nocapture`

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use zrecord::{Codec, DenseStore, Geometry};

const RECORDS: u64 = 1_000_000;
const WIDTH: usize = 64;

fn gather_latencies(store: &DenseStore<u8>, stop: &AtomicBool) -> Vec<Duration> {
    let mut times = Vec::new();
    let mut k = 0u64;
    while !stop.load(Ordering::Acquire) {
        let index = (k * 7919) % RECORDS;
        let t = Instant::now();
        store.gather(&[index]).unwrap();
        times.push(t.elapsed());
        k += 1;
    }
    times.sort();
    times
}

fn report(label: &str, times: &[Duration]) {
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{label}: {} gathers, median {:?}, p99 {:?}, p99.9 {:?}, worst {:?}",
        times.len(),
        at(0.5),
        at(0.99),
        at(0.999),
        times.last().unwrap()
    );
}

#[test]
#[ignore = "a measurement: run in release with --ignored --nocapture"]
fn worst_gather_latency_during_verify_and_append() {
    let dir = tempfile::tempdir().unwrap();
    // 1 MiB chunks, so appends keep opening new chunk files.
    let geometry = Geometry {
        loc_segment_bits: 28,
        chunk_bits: 20,
    };
    let store = zrecord::OpenOptions::new()
        .geometry(geometry)
        .create::<DenseStore<u8>>(
            dir.path().join("s"),
            &zrecord::Schema::dense(<u8 as zrecord::Element>::DTYPE, &[WIDTH]),
            Codec::Zstd,
        )
        .unwrap();
    let values: Vec<u8> = (0..100_000 * WIDTH).map(|i| (i * 31 % 251) as u8).collect();
    for _ in 0..RECORDS / 100_000 {
        store.append(&values).unwrap();
    }
    for (label, appending) in [("verify only", false), ("verify + appends", true)] {
        let stop = AtomicBool::new(false);
        let (times, appends, verify_time) = std::thread::scope(|s| {
            let reader = s.spawn(|| gather_latencies(&store, &stop));
            let appender = s.spawn(|| {
                let mut appends = 0;
                while appending && !stop.load(Ordering::Acquire) {
                    store.append(&values[..20_000 * WIDTH]).unwrap();
                    appends += 1;
                }
                appends
            });
            let t = Instant::now();
            store.verify().unwrap();
            let verify_time = t.elapsed();
            stop.store(true, Ordering::Release);
            (
                reader.join().unwrap(),
                appender.join().unwrap(),
                verify_time,
            )
        });
        println!(
            "{label}: verify took {verify_time:?}, {appends} appends of 20,000 records ran beside it"
        );
        report(label, &times);
    }
}
