//! Records appended by several threads at once, and the check of a store
//! that holds them. Every record names its thread and its place in that
//! thread's sequence (its first two words), and the rest of it is a function
//! of those two, so any record read back tells where it came from.

use std::path::Path;

use zrecord::{Codec, DenseStore, Geometry, RaggedStore};

/// Appending threads.
pub const THREADS: usize = 4;

/// Words in a dense record: thread, sequence number, four of content.
pub const DENSE_WIDTH: usize = 6;

/// 64-entry table segments and 16 KiB chunks: rollovers under the threads.
pub const GEOMETRY: Geometry = Geometry {
    loc_segment_bits: 6,
    chunk_bits: 14,
};

/// Records in batch `k` of thread `t`: 1 to 17, a different rhythm per thread.
pub fn batch_size(t: usize, k: u64) -> u64 {
    1 + (7 * t as u64 + 13 * k) % 17
}

/// The batch of thread `t` that starts at its record `seq`, if one does.
pub fn batch_at(t: usize, seq: u64) -> Option<u64> {
    let (mut k, mut start) = (0, 0);
    while start < seq {
        start += batch_size(t, k);
        k += 1;
    }
    (start == seq).then_some(k)
}

fn key(t: usize, seq: u64) -> u64 {
    ((t as u64) << 40) ^ seq
}

/// Record `seq` of thread `t`: `[t, seq]` and 1 to 200 words of content
/// (dense stores keep the first four).
pub fn record(t: usize, seq: u64) -> Vec<u32> {
    let n = 1 + super::splitmix(key(t, seq), 0) % 200;
    let content = (1..=n).map(|i| super::splitmix(key(t, seq), i) as u32);
    [t as u32, seq as u32].into_iter().chain(content).collect()
}

fn dense_record(t: usize, seq: u64) -> Vec<u32> {
    let mut r = record(t, seq);
    r.resize(DENSE_WIDTH, 0);
    r
}

/// A store the threads append to: dense `u32 [DENSE_WIDTH]` or ragged `u32`.
pub enum Target {
    Dense(DenseStore<u32>),
    Ragged(RaggedStore<u32>),
}

impl Target {
    pub fn create(path: &Path, dense: bool, codec: Codec) -> Target {
        if dense {
            Target::Dense(
                zrecord::OpenOptions::new()
                    .geometry(GEOMETRY)
                    .create(
                        path,
                        &zrecord::Schema::dense(zrecord::DType::U32, &[DENSE_WIDTH]),
                        codec,
                    )
                    .expect("create the dense store"),
            )
        } else {
            Target::Ragged(
                zrecord::OpenOptions::new()
                    .geometry(GEOMETRY)
                    .create(path, &zrecord::Schema::ragged(zrecord::DType::U32), codec)
                    .expect("create the ragged store"),
            )
        }
    }

    pub fn open(path: &Path, dense: bool) -> Target {
        if dense {
            Target::Dense(DenseStore::open(path).expect("open the dense store"))
        } else {
            Target::Ragged(RaggedStore::open(path).expect("open the ragged store"))
        }
    }

    pub fn len(&self) -> u64 {
        match self {
            Target::Dense(s) => s.len(),
            Target::Ragged(s) => s.len(),
        }
    }

    /// Appends batch `k` of thread `t` (its records from `seq`); returns the
    /// index of its first record.
    pub fn append_batch(&self, t: usize, k: u64, seq: u64) -> u64 {
        let records = seq..seq + batch_size(t, k);
        match self {
            Target::Dense(s) => {
                let values: Vec<u32> = records.flat_map(|r| dense_record(t, r)).collect();
                s.append(&values).expect("append a dense batch")
            }
            Target::Ragged(s) => {
                let values: Vec<Vec<u32>> = records.map(|r| record(t, r)).collect();
                s.append_slices(&values).expect("append a ragged batch")
            }
        }
    }

    /// The records at `indices`, each checked against the model; returns
    /// each one's `(thread, seq)`.
    pub fn read(&self, indices: &[u64]) -> Vec<(usize, u64)> {
        let check = |i: u64, got: &[u32], dense: bool| {
            let (t, seq) = (got[0] as usize, u64::from(got[1]));
            assert!(t < THREADS, "record {i} names thread {t}");
            let want = if dense {
                dense_record(t, seq)
            } else {
                record(t, seq)
            };
            assert!(got == want, "record {i} is not record {seq} of thread {t}");
            (t, seq)
        };
        match self {
            Target::Dense(s) => {
                let batch = s.gather(indices).expect("gather dense records");
                let values = batch.as_slice().expect("a contiguous batch");
                indices
                    .iter()
                    .zip(values.chunks(DENSE_WIDTH))
                    .map(|(&i, got)| check(i, got, true))
                    .collect()
            }
            Target::Ragged(s) => {
                let batch = s.gather(indices).expect("gather ragged records");
                let layout = batch.layout();
                indices
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| {
                        let range = layout.range(k).expect("a range per record");
                        check(i, &batch.values()[range], false)
                    })
                    .collect()
            }
        }
    }

    pub fn verify(&self) -> u64 {
        match self {
            Target::Dense(s) => s.verify().expect("verify").records,
            Target::Ragged(s) => s.verify().expect("verify").records,
        }
    }
}

/// What a store holds, thread by thread: records and batches, and where
/// each batch starts.
#[derive(Debug, Default)]
pub struct Holdings {
    pub records: [u64; THREADS],
    pub batches: [u64; THREADS],
    /// `(thread, batch, index of its first record)`, in index order.
    pub starts: Vec<(usize, u64, u64)>,
}

/// Reads every record of `target` and checks that each thread's records
/// are a prefix of its sequence, in its order, in whole batches each laid
/// out contiguously (order between threads is free).
pub fn holdings(target: &Target) -> Holdings {
    let len = target.len();
    let all: Vec<u64> = (0..len).collect();
    let mut held = Holdings::default();
    // The thread whose batch is being laid out and the records it still owes.
    let (mut owner, mut owed) = (0, 0);
    for (i, (t, seq)) in target.read(&all).into_iter().enumerate() {
        assert_eq!(
            seq, held.records[t],
            "record {i}: thread {t}'s records are out of order or have a gap"
        );
        if owed == 0 {
            let k = batch_at(t, seq)
                .unwrap_or_else(|| panic!("record {i} starts no batch of thread {t}"));
            held.starts.push((t, k, i as u64));
            held.batches[t] += 1;
            (owner, owed) = (t, batch_size(t, k));
        }
        assert_eq!(
            t, owner,
            "record {i}: thread {owner}'s batch is interleaved"
        );
        owed -= 1;
        held.records[t] += 1;
    }
    assert_eq!(owed, 0, "the store ends inside a batch of thread {owner}");
    held
}
