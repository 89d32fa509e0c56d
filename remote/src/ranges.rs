//! Merging the byte ranges of one batch into fewer, larger requests.
//!
//! Two reads whose gap is at most `gap` bytes become one request that also
//! fetches the gap: on object storage a request costs a round trip, so
//! fetching a few unwanted bytes is cheaper than asking twice. A merged
//! request never grows past `max_len` (unless one read alone is larger), so
//! a batch still spreads over several requests in flight together.

use std::ops::Range;

/// One request and the reads it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Merged {
    /// The bytes to fetch.
    pub(crate) range: Range<u64>,
    /// Indices into the reads passed to [`merge`], each served by this request.
    pub(crate) reads: Vec<usize>,
}

/// Groups `reads` (start, length) into requests: sorted by start, a read
/// joins the request before it when it starts at most `gap` bytes after
/// that request's end and the request stays within `max_len` bytes.
/// Empty reads are served by no request.
pub(crate) fn merge(reads: &[(u64, u64)], gap: u64, max_len: u64) -> Vec<Merged> {
    let mut order: Vec<usize> = (0..reads.len()).filter(|&i| reads[i].1 > 0).collect();
    order.sort_unstable_by_key(|&i| reads[i].0);
    let mut out: Vec<Merged> = Vec::new();
    for i in order {
        let (start, len) = reads[i];
        let end = start.saturating_add(len);
        if let Some(last) = out.last_mut() {
            let joined_end = last.range.end.max(end);
            if start <= last.range.end.saturating_add(gap)
                && joined_end - last.range.start <= max_len.max(len)
            {
                last.range.end = joined_end;
                last.reads.push(i);
                continue;
            }
        }
        out.push(Merged {
            range: start..end,
            reads: vec![i],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn near_reads_merge_and_far_ones_do_not() {
        let reads = [(100, 10), (0, 10), (20, 5), (1000, 1)];
        let merged = merge(&reads, 10, 1 << 20);
        assert_eq!(
            merged,
            vec![
                Merged {
                    range: 0..25,
                    reads: vec![1, 2]
                },
                Merged {
                    range: 100..110,
                    reads: vec![0]
                },
                Merged {
                    range: 1000..1001,
                    reads: vec![3]
                },
            ]
        );
    }

    #[test]
    fn a_request_stops_growing_at_max_len() {
        let reads: Vec<(u64, u64)> = (0..10).map(|i| (i * 10, 10)).collect();
        let merged = merge(&reads, 0, 30);
        let ranges: Vec<_> = merged.iter().map(|m| m.range.clone()).collect();
        assert_eq!(ranges, vec![0..30, 30..60, 60..90, 90..100]);
        // One read larger than the cap is still one request.
        assert_eq!(merge(&[(5, 100)], 0, 30)[0].range, 5..105);
    }

    proptest! {
        /// Every non-empty read lies inside exactly one request, requests
        /// are sorted by start, and none exceeds the cap unless one of its
        /// reads alone does.
        #[test]
        fn requests_cover_every_read_once(
            reads in proptest::collection::vec((0u64..10_000, 0u64..300), 0..64),
            gap in 0u64..500,
            max_len in 1u64..2_000,
        ) {
            let merged = merge(&reads, gap, max_len);
            let mut served = vec![0; reads.len()];
            for m in &merged {
                for &i in &m.reads {
                    served[i] += 1;
                    let (start, len) = reads[i];
                    prop_assert!(m.range.start <= start && start + len <= m.range.end);
                }
                let longest = m.reads.iter().map(|&i| reads[i].1).max().unwrap_or(0);
                prop_assert!(m.range.end - m.range.start <= max_len.max(longest));
            }
            for pair in merged.windows(2) {
                prop_assert!(pair[0].range.start <= pair[1].range.start);
            }
            for (i, &(_, len)) in reads.iter().enumerate() {
                prop_assert_eq!(served[i], usize::from(len > 0));
            }
        }
    }
}
