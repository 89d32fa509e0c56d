//! [`BadRecords`]: what a batch does with a record its transform cannot use,
//! and the substitutes that replace such records.

/// What a batch does when its transform reports a record it cannot use — an
/// image that does not decode, a label out of range — through an error that
/// implements [`RecordError`] (returned from a
/// [`try_transform`](crate::LoaderBuilder::try_transform)).
///
/// With [`Skip`](Self::Skip) the record is replaced by a **substitute**, a
/// pure function of the seed, the step, the record's position in the global
/// batch and the attempt, drawn from the loader's records (its subset, if it
/// has one) and never the bad record itself while another exists. The
/// loader gathers the batch again with the substitute and reruns the
/// transform, so every rank, any worker count and a resumed run serve the
/// same batch. A substitute that is bad too is replaced in turn, up to
/// [`MAX_ATTEMPTS`](Self::MAX_ATTEMPTS) times per position; then the batch
/// fails with the transform's error. [`Counters`](crate::Counters) count the
/// records skipped in the batches delivered
/// ([`CounterSnapshot::bad_records_skipped`](crate::CounterSnapshot::bad_records_skipped)).
///
/// A batch with a bad record costs one more gather and transform of the
/// whole batch, and its substitute appears twice in that pass: meant for
/// the rare bad file of a large data set, not for filtering.
///
/// ```
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{BadRecords, Error, Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&[0, 1, 2, -1, 4, 5, 6, 7])?; // record 3 holds no valid label
/// let mut loader = Loader::builder(4)
///     .stream("label", labels)
///     .mode(Mode::Sequential)
///     .bad_records(BadRecords::Skip)
///     .try_transform(|batch| {
///         let labels = batch.dense::<i64>("label")?;
///         if let Some(k) = labels.iter().position(|&l| l < 0) {
///             return Err(batch.bad_record(k, "negative label"));
///         }
///         Ok(labels.iter().copied().collect::<Vec<i64>>())
///     })
///     .build()?;
/// let first = loader.next_batch()??;
/// assert_eq!(&first[..3], &[0, 1, 2]);
/// assert!(first[3] >= 0 && first[3] != 3); // a substitute for record 3
/// assert_eq!(loader.counters().snapshot().bad_records_skipped, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BadRecords {
    /// The transform's error reaches the consumer for that step (the
    /// default): nothing is left out without you knowing.
    #[default]
    Stop,
    /// The record is replaced by a deterministic substitute and counted.
    Skip,
}

impl BadRecords {
    /// Substitutes tried for one position of a batch before it fails.
    pub const MAX_ATTEMPTS: u32 = 8;
}

/// An error that may be about one record of the batch its transform was
/// given, rather than about the transform or the data set as a whole: what
/// the loader's [`BadRecords`] policy applies to.
///
/// The loader's [`Error`](crate::Error) reports its
/// [`BadRecord`](crate::Error::BadRecord) variant; `zrecord-burn` and
/// `zrecord-candle` report an image that does not decode.
///
/// ```
/// use zrecord_loader::RecordError;
///
/// #[derive(Debug)]
/// enum MyError {
///     BadLabel { position: usize },
///     Model(String),
/// }
///
/// impl RecordError for MyError {
///     fn bad_record(&self) -> Option<usize> {
///         match self {
///             MyError::BadLabel { position } => Some(*position),
///             MyError::Model(_) => None,
///         }
///     }
/// }
/// assert_eq!(MyError::BadLabel { position: 3 }.bad_record(), Some(3));
/// ```
pub trait RecordError {
    /// The position, in the batch given to the transform, of the record this
    /// error is about; `None` when it is not about one record.
    fn bad_record(&self) -> Option<usize>;
}

impl RecordError for crate::Error {
    fn bad_record(&self) -> Option<usize> {
        match self {
            crate::Error::BadRecord { position, .. } => Some(*position),
            _ => None,
        }
    }
}

/// Keeps the substitutes' draws apart from every other use of the seed.
const TAG: u64 = u64::from_le_bytes(*b"zl:subst");

/// SplitMix64's output function: a bijection on `u64` that mixes every bit.
const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Draw `round` of the substitute for `(seed, step, position, attempt)`.
fn draw(seed: u64, step: u64, position: u64, attempt: u32, round: u64) -> u64 {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = mix64(seed ^ TAG);
    for word in [step, position, u64::from(attempt), round] {
        h = mix64(h.wrapping_add(GAMMA) ^ word);
    }
    h
}

/// `h` scaled onto `0..n` (Lemire's multiply-shift; `n ≥ 1`).
fn below(h: u64, n: u64) -> u64 {
    ((u128::from(h) * u128::from(n)) >> 64) as u64
}

/// Where substitutes come from: every record of `0..len`, or a subset.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Space<'a> {
    /// Records `0..len` (`len ≥ 1`).
    Range(u64),
    /// These records (not empty).
    Subset(&'a [u64]),
}

/// The record that replaces `bad`, at global batch `position` of `step`, on
/// `attempt` (0 for the first substitute at that position): uniform over
/// `space` less `bad`, and `bad` only when the space holds nothing else.
pub(crate) fn substitute(
    seed: u64,
    step: u64,
    position: u64,
    attempt: u32,
    bad: u64,
    space: Space<'_>,
) -> u64 {
    let h = |round| draw(seed, step, position, attempt, round);
    match space {
        Space::Range(len) if len <= 1 || bad >= len => below(h(0), len.max(1)),
        Space::Range(len) => {
            let k = below(h(0), len - 1);
            if k >= bad { k + 1 } else { k }
        }
        Space::Subset(indices) => {
            let n = indices.len() as u64;
            // Duplicates may hold `bad` at several positions: redraw, then,
            // for a subset made almost only of it, walk on from the last draw.
            let mut k = 0;
            for round in 0..64 {
                k = below(h(round), n);
                if indices[k as usize] != bad {
                    return indices[k as usize];
                }
            }
            (0..n)
                .map(|i| indices[((k + i) % n) as usize])
                .find(|&i| i != bad)
                .unwrap_or(bad)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn range_substitutes_are_in_range_deterministic_and_not_the_bad_record(
            seed: u64, step: u64, position in 0u64..1 << 20, attempt in 0u32..8,
            len in 1u64..1 << 40, bad_at in 0.0f64..1.0,
        ) {
            let bad = ((len as f64 * bad_at) as u64).min(len - 1);
            let space = Space::Range(len);
            let s = substitute(seed, step, position, attempt, bad, space);
            prop_assert!(s < len);
            prop_assert_eq!(s, substitute(seed, step, position, attempt, bad, space));
            if len > 1 {
                prop_assert_ne!(s, bad);
            }
        }

        #[test]
        fn subset_substitutes_are_members_deterministic_and_not_the_bad_record(
            seed: u64, step: u64, position in 0u64..1 << 20, attempt in 0u32..8,
            subset in proptest::collection::vec(0u64..50, 1..40), bad_at in 0usize..40,
        ) {
            let bad = subset[bad_at % subset.len()];
            let space = Space::Subset(&subset);
            let s = substitute(seed, step, position, attempt, bad, space);
            prop_assert!(subset.contains(&s));
            prop_assert_eq!(s, substitute(seed, step, position, attempt, bad, space));
            if subset.iter().any(|&i| i != bad) {
                prop_assert_ne!(s, bad);
            }
        }
    }

    #[test]
    fn a_subset_of_one_repeated_record_and_one_other_finds_the_other() {
        let mut subset = vec![7u64; 10_000];
        subset[4321] = 9;
        for attempt in 0..8 {
            assert_eq!(substitute(1, 2, 3, attempt, 7, Space::Subset(&subset)), 9);
        }
        assert_eq!(substitute(1, 2, 3, 0, 7, Space::Subset(&[7, 7])), 7);
        assert_eq!(substitute(1, 2, 3, 0, 0, Space::Range(1)), 0);
    }

    #[test]
    fn substitutes_spread_over_the_records() {
        let mut seen = [0u32; 10];
        for position in 0..10_000 {
            seen[substitute(5, 0, position, 0, 4, Space::Range(10)) as usize] += 1;
        }
        assert_eq!(seen[4], 0);
        assert!(
            seen.iter()
                .enumerate()
                .all(|(i, &n)| i == 4 || (900..1300).contains(&n)),
            "{seen:?}"
        );
    }
}
