//! Concurrency: four threads gather (small batches and large, parallel ones) while one thread appends, and a fifth runs `stats`, `verify` and `sync`; every gather sees only fully committed records, each equal to its model.
//!
//! Record `r`'s content is a function of `r`, and batch `k` holds
//! `1 + 37k mod 23` records, so a reader knows what every record below the
//! length it observed must hold, and that every length it observes is a batch
//! boundary (appends publish whole batches). The appender pauses twice until
//! the readers and the maintenance thread have made progress, so reads are
//! certain to overlap appends, whatever the scheduler does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use zrecord::{Codec, DenseStore, Error, Geometry, RaggedBatch, RaggedStore};

/// Append batches per store.
const BATCHES: u64 = 300;
const READERS: usize = 4;
/// After these batches the appender waits until every thread has made progress.
const CHECKPOINTS: [u64; 2] = [100, 200];

/// Dense records: `u32` of shape `[DENSE_WIDTH]` (256 bytes), zstd.
const DENSE_WIDTH: usize = 64;
/// Indices per large dense gather: 320 × 256 B = 80 KiB, past the 64 KiB at
/// which a compressed gather goes parallel.
const DENSE_LARGE: usize = 320;
/// Indices per large ragged gather: 600 records of ~2.5 KiB on average, past
/// the 1 MiB at which a raw gather goes parallel.
const RAGGED_LARGE: usize = 600;
/// Ragged store geometry: 128 records per table segment, 1 MiB chunks, so
/// segments and chunks roll over under the readers.
const RAGGED_GEOMETRY: Geometry = Geometry {
    loc_segment_bits: 8,
    chunk_bits: 20,
};

/// SplitMix64's output function.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small seeded PRNG (SplitMix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0) % n
    }
}

fn batch_size(k: u64) -> u64 {
    1 + (k * 37) % 23
}

/// `b[k]` is the first record of batch `k`; `b[BATCHES]` the final length.
fn boundaries() -> Vec<u64> {
    let mut b = vec![0];
    for k in 0..BATCHES {
        b.push(b[k as usize] + batch_size(k));
    }
    b
}

fn dense_record(r: u64) -> [u32; DENSE_WIDTH] {
    let base = (mix(r) >> 32) as u32;
    std::array::from_fn(|j| base ^ (j as u32 / 4) ^ ((r as u32) << 8))
}

/// Ragged record `r`: `u16` of shape `[n]`, or `[2, n]` for every fourth record.
fn ragged_shape(r: u64) -> Vec<usize> {
    let n = 1 + (mix(r) % 2000) as usize;
    if r.is_multiple_of(4) {
        vec![2, n]
    } else {
        vec![n]
    }
}

fn ragged_values(r: u64) -> Vec<u16> {
    let elements: usize = ragged_shape(r).iter().product();
    let salt = mix(r ^ 0xABCD) as u16;
    (0..elements)
        .map(|j| (r as u16).wrapping_mul(31).wrapping_add(j as u16) ^ salt)
        .collect()
}

/// What the harness needs of a store.
trait Subject: Sync {
    fn len(&self) -> u64;
    /// Appends records `first..end`; returns the index of the first.
    fn append_records(&self, first: u64, end: u64) -> u64;
    /// Gathers `indices` (all below the length the caller observed) and
    /// panics unless every record equals its model.
    fn gather_and_check(&self, indices: &[u64], observed: u64);
    /// The error of a gather that names `index`.
    fn gather_error(&self, indices: &[u64]) -> Error;
    /// Logical payload bytes of records `0..records`.
    fn logical_bytes(&self, records: u64) -> u64;
    fn stats(&self) -> (u64, u64);
    fn verify(&self) -> (u64, u64);
    fn sync(&self);
    /// Indices per large gather.
    fn large(&self) -> usize;
}

struct Dense(DenseStore<u32>);

impl Subject for Dense {
    fn len(&self) -> u64 {
        self.0.len()
    }

    fn append_records(&self, first: u64, end: u64) -> u64 {
        let values: Vec<u32> = (first..end).flat_map(dense_record).collect();
        self.0.append(&values).expect("append a dense batch")
    }

    fn gather_and_check(&self, indices: &[u64], observed: u64) {
        if indices.len() < 16 {
            let batch = self.0.gather(indices).expect("gather a small dense batch");
            assert_eq!(batch.shape(), &[indices.len(), DENSE_WIDTH]);
            for (row, &r) in batch.outer_iter().zip(indices) {
                assert!(
                    row.iter().copied().eq(dense_record(r)),
                    "dense record {r} (below the observed length {observed}) differs from its model"
                );
            }
            return;
        }
        let mut out = vec![0u32; indices.len() * DENSE_WIDTH];
        self.0
            .gather_into(indices, &mut out)
            .expect("gather a large dense batch");
        for (got, &r) in out.chunks_exact(DENSE_WIDTH).zip(indices) {
            assert!(
                got == dense_record(r),
                "dense record {r} (below the observed length {observed}) differs from its model"
            );
        }
    }

    fn gather_error(&self, indices: &[u64]) -> Error {
        self.0
            .gather(indices)
            .expect_err("a gather past the end fails")
    }

    fn logical_bytes(&self, records: u64) -> u64 {
        records * DENSE_WIDTH as u64 * 4
    }

    fn stats(&self) -> (u64, u64) {
        let s = self.0.stats().expect("stats during appends");
        (s.records, s.logical_bytes)
    }

    fn verify(&self) -> (u64, u64) {
        let v = self.0.verify().expect("verify during appends");
        (v.records, v.logical_bytes)
    }

    fn sync(&self) {
        self.0.sync().expect("sync during appends");
    }

    fn large(&self) -> usize {
        DENSE_LARGE
    }
}

struct Ragged(RaggedStore<u16>);

impl Subject for Ragged {
    fn len(&self) -> u64 {
        self.0.len()
    }

    fn append_records(&self, first: u64, end: u64) -> u64 {
        let mut batch = RaggedBatch::new();
        for r in first..end {
            batch
                .push(&ragged_shape(r), &ragged_values(r))
                .expect("a model record");
        }
        self.0.append_batch(&batch).expect("append a ragged batch")
    }

    fn gather_and_check(&self, indices: &[u64], observed: u64) {
        let batch = self.0.gather(indices).expect("gather a ragged batch");
        assert_eq!(batch.len(), indices.len());
        let layout = batch.layout();
        for (k, &r) in indices.iter().enumerate() {
            assert_eq!(
                layout.shape(k),
                Some(&ragged_shape(r)[..]),
                "ragged record {r} (below the observed length {observed}): shape"
            );
            let range = layout.range(k).expect("a range per record");
            assert!(
                batch.values()[range] == ragged_values(r),
                "ragged record {r} (below the observed length {observed}) differs from its model"
            );
        }
    }

    fn gather_error(&self, indices: &[u64]) -> Error {
        self.0
            .gather(indices)
            .expect_err("a gather past the end fails")
    }

    fn logical_bytes(&self, records: u64) -> u64 {
        (0..records)
            .map(|r| ragged_shape(r).iter().product::<usize>() as u64 * 2)
            .sum()
    }

    fn stats(&self) -> (u64, u64) {
        let s = self.0.stats().expect("stats during appends");
        (s.records, s.logical_bytes)
    }

    fn verify(&self) -> (u64, u64) {
        let v = self.0.verify().expect("verify during appends");
        (v.records, v.logical_bytes)
    }

    fn sync(&self) {
        self.0.sync().expect("sync during appends");
    }

    fn large(&self) -> usize {
        RAGGED_LARGE
    }
}

/// Sets `flag` if the thread that owns it panics, so the others stop waiting.
struct PanicFlag<'a>(&'a AtomicBool);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

fn assert_boundary(bounds: &[u64], len: u64, who: &str) {
    assert!(
        bounds.binary_search(&len).is_ok(),
        "{who} observed {len} records, not a whole number of batches"
    );
}

/// Appends `BATCHES` batches on one thread while `READERS` threads gather and
/// one runs maintenance; then checks the whole store.
fn hammer<S: Subject>(name: &str, store: &S) {
    let bounds = boundaries();
    let total = bounds[BATCHES as usize];
    let done = AtomicBool::new(false);
    let aborted = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let reads_during_appends = AtomicU64::new(0);
    let records_read = AtomicU64::new(0);
    let maintenance = AtomicU64::new(0);
    let stop = || aborted.load(Ordering::Acquire);

    thread::scope(|scope| {
        for reader in 0..READERS {
            let (bounds, done, reads, during, records_read) =
                (&bounds, &done, &reads, &reads_during_appends, &records_read);
            let flag = PanicFlag(&aborted);
            scope.spawn(move || {
                let _flag = flag;
                let mut rng = Rng(reader as u64 + 1);
                let mut last = 0;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let len = store.len();
                    assert_boundary(bounds, len, "a reader");
                    assert!(len >= last, "the length went back from {last} to {len}");
                    last = len;
                    if len > 0 {
                        for size in [1 + rng.below(8) as usize, store.large()] {
                            let indices: Vec<u64> = (0..size).map(|_| rng.below(len)).collect();
                            store.gather_and_check(&indices, len);
                            records_read.fetch_add(size as u64, Ordering::Relaxed);
                        }
                        // The newest committed record, and the first.
                        store.gather_and_check(&[len - 1, 0], len);
                    }
                    // Past the end of the whole run: always out of range,
                    // whatever precedes it.
                    let past: &[u64] = if len > 0 { &[0, total] } else { &[total] };
                    let err = store.gather_error(past);
                    assert!(
                        matches!(err, Error::IndexOutOfRange { index, .. } if index == total),
                        "gathering {past:?}: {err:?}"
                    );
                    reads.fetch_add(1, Ordering::AcqRel);
                    if !finished && len > 0 {
                        during.fetch_add(1, Ordering::AcqRel);
                    }
                    if finished || stop() {
                        break;
                    }
                }
            });
        }

        {
            let (bounds, done, maintenance) = (&bounds, &done, &maintenance);
            let flag = PanicFlag(&aborted);
            scope.spawn(move || {
                let _flag = flag;
                let mut last = 0;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let (records, logical) = store.stats();
                    assert_boundary(bounds, records, "stats");
                    assert!(records >= last, "stats went back from {last} to {records}");
                    assert_eq!(
                        logical,
                        store.logical_bytes(records),
                        "stats: logical bytes"
                    );
                    let (verified, verified_logical) = store.verify();
                    assert_boundary(bounds, verified, "verify");
                    assert!(
                        verified >= records,
                        "verify saw fewer records than stats before it"
                    );
                    assert_eq!(
                        verified_logical,
                        store.logical_bytes(verified),
                        "verify: logical bytes"
                    );
                    last = verified;
                    let n = maintenance.fetch_add(1, Ordering::AcqRel);
                    if n % 4 == 0 {
                        store.sync();
                    }
                    if finished || stop() {
                        break;
                    }
                }
            });
        }

        let _flag = PanicFlag(&aborted);
        for k in 0..BATCHES {
            let first = bounds[k as usize];
            let at = store.append_records(first, bounds[k as usize + 1]);
            assert_eq!(at, first, "batch {k} landed at the wrong index");
            assert_eq!(store.len(), bounds[k as usize + 1]);
            if CHECKPOINTS.contains(&(k + 1)) {
                // Wait until the others have worked on this non-empty store
                // (each thread has at most one round in flight on arrival),
                // so reads and maintenance overlap appends for sure.
                let (reads_from, maintenance_from) = (
                    reads_during_appends.load(Ordering::Acquire),
                    maintenance.load(Ordering::Acquire),
                );
                while !stop()
                    && (reads_during_appends.load(Ordering::Acquire)
                        < reads_from + 2 * READERS as u64
                        || maintenance.load(Ordering::Acquire) < maintenance_from + 2)
                {
                    thread::yield_now();
                }
            }
            if stop() {
                break;
            }
        }
        done.store(true, Ordering::Release);
    });

    assert!(!stop(), "a thread panicked");
    assert_eq!(store.len(), total);
    let during = reads_during_appends.load(Ordering::Acquire);
    assert!(
        during >= 2 * READERS as u64,
        "only {during} reads of a non-empty store overlapped the appends"
    );
    let all: Vec<u64> = (0..total).collect();
    store.gather_and_check(&all, total);
    assert_eq!(store.verify(), (total, store.logical_bytes(total)));
    assert_eq!(store.stats(), (total, store.logical_bytes(total)));
    eprintln!(
        "{name}: {total} records in {BATCHES} batches; {} reads ({during} of a non-empty store during appends) \
         of {} records, {} stats+verify rounds",
        reads.load(Ordering::Acquire),
        records_read.load(Ordering::Relaxed),
        maintenance.load(Ordering::Acquire)
    );
}

#[test]
fn dense_zstd_gathers_see_only_committed_records_while_appending() {
    let dir = tempfile::tempdir().unwrap();
    let store = DenseStore::<u32>::create(dir.path().join("dense"), &[DENSE_WIDTH], Codec::Zstd)
        .expect("create");
    hammer("dense zstd", &Dense(store));
}

#[test]
fn ragged_raw_gathers_see_only_committed_records_while_appending() {
    let dir = tempfile::tempdir().unwrap();
    let store = zrecord::OpenOptions::new()
        .geometry(RAGGED_GEOMETRY)
        .create::<RaggedStore<u16>>(
            dir.path().join("ragged"),
            &zrecord::Schema::ragged(<u16 as zrecord::Element>::DTYPE),
            Codec::Raw,
        )
        .expect("create");
    let store = Ragged(store);
    hammer("ragged raw", &store);
    // The run crossed chunk and table-segment boundaries.
    let files: Vec<String> = std::fs::read_dir(store.0.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.iter().any(|f| f == "1.chunk"),
        "no chunk rollover: {files:?}"
    );
    assert!(
        files.iter().any(|f| f == "1.loc"),
        "no segment rollover: {files:?}"
    );
}

#[test]
fn the_model_has_the_documented_batches_and_records() {
    // Batch k holds 1 + 37k mod 23 records: 1, 15, 6, 20, 11, … (by hand).
    let b = boundaries();
    assert_eq!(b.len() as u64, BATCHES + 1);
    assert_eq!(b[..6], [0, 1, 16, 22, 42, 53]);
    assert!(b.windows(2).all(|w| (1..=23).contains(&(w[1] - w[0]))));
    // `mix` is SplitMix64's output function (first output of seed 0).
    assert_eq!(mix(0), 0xE220_A839_7B1D_CDAF);
    // Records differ from each other; ragged shapes are [2, n] every fourth
    // record, [n] otherwise, and the values fill them.
    assert_ne!(dense_record(5), dense_record(6));
    assert_ne!(ragged_values(8)[..2], ragged_values(12)[..2]);
    for r in 0..64 {
        let shape = ragged_shape(r);
        assert_eq!(shape.len(), if r % 4 == 0 { 2 } else { 1 }, "record {r}");
        assert_eq!(ragged_values(r).len(), shape.iter().product::<usize>());
    }
}
