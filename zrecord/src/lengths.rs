//! Record length statistics: count, total, extremes, mean and quantiles of
//! the records' element counts, gathered in one pass with fixed memory.

/// Summary of a ragged store's record lengths, from
/// [`DynRaggedStore::length_stats`](crate::DynRaggedStore::length_stats).
///
/// A record's length is its number of **elements** (the product of its
/// shape): a sequence's length for rank-1 records, `rows * cols` for a
/// matrix, 1 for a scalar. Bytes are `length * dtype.size()`.
///
/// `records`, `total`, `min`, `max` and `mean` are exact. The quantiles come
/// from a log-linear histogram, so memory stays fixed however many records
/// there are: lengths below 32 are exact, and each power of two above is cut
/// into 16 equal buckets. A quantile is reported as the upper bound of its
/// bucket (capped at `max`), so it is never below the exact nearest-rank
/// quantile and exceeds it by less than 1/16 of it (6.25%).
///
/// An empty store has every field 0.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LengthStats {
    /// Number of records.
    pub records: u64,
    /// Elements over all records (saturating at `u64::MAX`).
    pub total: u64,
    /// The shortest record's length.
    pub min: u64,
    /// The longest record's length.
    pub max: u64,
    /// `total / records`.
    pub mean: f64,
    /// The median length (approximate, see the type's docs).
    pub p50: u64,
    /// The 90th percentile length (approximate).
    pub p90: u64,
    /// The 99th percentile length (approximate).
    pub p99: u64,
}

/// Linear buckets per power of two. Lengths below 16 get a bucket each, and
/// 16..32 splits into buckets of one, so every length below 32 is exact.
const SUB_BUCKETS: u64 = 16;
const SUB_BITS: u32 = SUB_BUCKETS.trailing_zeros();
/// Exact buckets 0..16, then 16 per power of two from 2^4 to 2^63.
const BUCKETS: usize = (SUB_BUCKETS as usize) * (64 - SUB_BITS as usize + 1);

/// The histogram bucket of length `v`.
fn bucket(v: u64) -> usize {
    if v < SUB_BUCKETS {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let shift = exp - SUB_BITS;
    // `v >> shift` is in 16..32: the power of two's row, then its sub-bucket.
    (shift as usize) * SUB_BUCKETS as usize + (v >> shift) as usize
}

/// The largest length that falls in bucket `index`.
fn upper_bound(index: usize) -> u64 {
    let index = index as u64;
    if index < 2 * SUB_BUCKETS {
        return index;
    }
    let shift = index / SUB_BUCKETS - 1;
    let mantissa = SUB_BUCKETS + index % SUB_BUCKETS;
    // Written so the last bucket's bound is u64::MAX without overflowing.
    (mantissa << shift) + ((1u64 << shift) - 1)
}

/// Accumulates lengths one at a time into [`LengthStats`].
pub(crate) struct LengthHistogram {
    counts: Box<[u64; BUCKETS]>,
    records: u64,
    total: u64,
    min: u64,
    max: u64,
}

impl LengthHistogram {
    pub(crate) fn new() -> Self {
        LengthHistogram {
            counts: Box::new([0; BUCKETS]),
            records: 0,
            total: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub(crate) fn add(&mut self, length: u64) {
        self.counts[bucket(length)] += 1;
        self.records += 1;
        self.total = self.total.saturating_add(length);
        self.min = self.min.min(length);
        self.max = self.max.max(length);
    }

    /// The nearest-rank `percent` quantile: the smallest bucket holding the
    /// `ceil(records * percent / 100)`-th shortest record, as its upper bound.
    fn quantile(&self, percent: u64) -> u64 {
        let rank = (u128::from(self.records) * u128::from(percent))
            .div_ceil(100)
            .max(1);
        let mut seen = 0u128;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += u128::from(count);
            if seen >= rank {
                return upper_bound(index).min(self.max);
            }
        }
        self.max
    }

    pub(crate) fn finish(&self) -> LengthStats {
        if self.records == 0 {
            return LengthStats::default();
        }
        LengthStats {
            records: self.records,
            total: self.total,
            min: self.min,
            max: self.max,
            mean: self.total as f64 / self.records as f64,
            p50: self.quantile(50),
            p90: self.quantile(90),
            p99: self.quantile(99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Codec, Error, RaggedStore};
    use proptest::prelude::*;

    fn stats_of(lengths: &[u64]) -> LengthStats {
        let mut h = LengthHistogram::new();
        lengths.iter().for_each(|&l| h.add(l));
        h.finish()
    }

    /// The exact nearest-rank quantile of sorted `lengths`.
    fn exact(sorted: &[u64], percent: u64) -> u64 {
        let rank = (sorted.len() as u64 * percent).div_ceil(100).max(1);
        sorted[rank as usize - 1]
    }

    /// The documented bound: never below, and less than 1/16 above.
    fn within_bound(got: u64, want: u64) -> bool {
        got == want || (got > want && u128::from(got - want) * 16 < u128::from(want))
    }

    #[test]
    fn buckets_tile_the_whole_range_in_order() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert_eq!(upper_bound(BUCKETS - 1), u64::MAX);
        for index in 0..BUCKETS - 1 {
            let top = upper_bound(index);
            assert_eq!(bucket(top), index, "top of {index}");
            assert_eq!(bucket(top + 1), index + 1, "past the top of {index}");
        }
    }

    #[test]
    fn small_lengths_are_exact() {
        for v in 0..32 {
            assert_eq!(upper_bound(bucket(v)), v);
        }
        let lengths: Vec<u64> = (1..=31).collect();
        let s = stats_of(&lengths);
        assert_eq!((s.min, s.max, s.records, s.total), (1, 31, 31, 496));
        assert_eq!((s.p50, s.p90, s.p99), (16, 28, 31));
        assert_eq!(s.mean, 16.0);
    }

    #[test]
    fn large_lengths_stay_within_a_sixteenth() {
        for v in (32..100_000).chain([u64::from(u32::MAX), u64::MAX / 3, u64::MAX]) {
            let top = upper_bound(bucket(v));
            assert!(within_bound(top, v), "{v} reported as {top}");
        }
        // One bucket's worth of identical lengths: the cap at max is exact.
        let s = stats_of(&[1000; 7]);
        assert_eq!((s.p50, s.p90, s.p99, s.max), (1000, 1000, 1000, 1000));
        let s = stats_of(&[1000, 1001, 5000]);
        assert_eq!(s.p50, 1023, "the upper bound of 1001's bucket");
        assert!(within_bound(s.p50, 1001));
        assert_eq!(s.p99, 5000);
    }

    #[test]
    fn empty_is_all_zero() {
        let s = stats_of(&[]);
        assert_eq!(
            s,
            LengthStats {
                records: 0,
                total: 0,
                min: 0,
                max: 0,
                mean: 0.0,
                p50: 0,
                p90: 0,
                p99: 0,
            }
        );
    }

    #[test]
    fn the_total_saturates_instead_of_overflowing() {
        let s = stats_of(&[u64::MAX, 5]);
        assert_eq!((s.total, s.min, s.max), (u64::MAX, 5, u64::MAX));
    }

    proptest! {
        #[test]
        fn quantiles_match_exact_ones_within_the_bound(
            lengths in prop::collection::vec(
                prop_oneof![0u64..40, 0u64..5_000, any::<u32>().prop_map(u64::from)],
                1..400,
            ),
        ) {
            let s = stats_of(&lengths);
            let mut sorted = lengths.clone();
            sorted.sort_unstable();
            prop_assert_eq!(s.records, lengths.len() as u64);
            prop_assert_eq!(s.min, sorted[0]);
            prop_assert_eq!(s.max, sorted[sorted.len() - 1]);
            prop_assert_eq!(s.total, lengths.iter().sum::<u64>());
            for (got, percent) in [(s.p50, 50), (s.p90, 90), (s.p99, 99)] {
                let want = exact(&sorted, percent);
                prop_assert!(
                    within_bound(got, want),
                    "p{} {} against exact {}", percent, got, want
                );
                if want < 32 {
                    prop_assert_eq!(got, want);
                }
            }
        }
    }

    #[test]
    fn a_store_reports_element_counts_from_its_table() {
        let dir = tempfile::tempdir().unwrap();
        for codec in [Codec::Raw, Codec::Zstd] {
            let path = dir.path().join(codec.name());
            let store = RaggedStore::<u16>::create(&path, codec).unwrap();
            assert_eq!(store.length_stats().unwrap(), stats_of(&[]));
            store
                .append_slices(&[vec![1u16; 10], vec![], vec![7; 3]])
                .unwrap();
            store
                .append(&[ndarray::Array2::<u16>::zeros((4, 5)).into_dyn()])
                .unwrap();
            let s = store.as_dyn().length_stats().unwrap();
            assert_eq!(s, stats_of(&[10, 0, 3, 20]));
            assert_eq!((s.min, s.max, s.total), (0, 20, 33));
        }
    }

    #[test]
    fn a_length_that_is_not_whole_elements_is_a_corrupt_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = RaggedStore::<u32>::create(&path, Codec::Zstd).unwrap();
        store.append_slices(&[vec![1u32, 2], vec![3]]).unwrap();
        store.sync().unwrap(); // what follows damages a durable store
        drop(store);
        // Record 1's payload entry (physical entry 2): 6 bytes, not whole u32s.
        let loc = path.join("0.loc");
        let mut table = std::fs::read(&loc).unwrap();
        table[2 * 16 + 8..2 * 16 + 12].copy_from_slice(&6u32.to_le_bytes());
        std::fs::write(&loc, table).unwrap();
        let store = crate::OpenOptions::new()
            .read_only(true)
            .open::<RaggedStore<u32>>(&path)
            .unwrap();
        match store.length_stats() {
            Err(Error::CorruptRecord { path: p, index, .. }) => {
                assert_eq!((p, index), (path, 1));
            }
            other => panic!("expected a corrupt record, got {other:?}"),
        }
    }
}
