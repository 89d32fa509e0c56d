//! Splits each global batch among a mixture's sources: largest remainder,
//! with what each source is owed carried from step to step.
//!
//! Each step, source `i` is owed `qᵢ = carryᵢ + B·wᵢ` records and gets
//! `⌊qᵢ⌋` or `⌈qᵢ⌉` of them (never fewer than 0), the counts summing to `B`;
//! the records left over go first to the sources whose debt would reach one
//! record soonest — `(1 − frac qᵢ) / (B·wᵢ)` steps away — so no source is
//! ever a whole record behind or ahead of `n·B·wᵢ` (earliest deadline first,
//! as in Tijdeman's solution of the chairman assignment problem). Weights
//! are fixed-point parts of [`ONE`], so every step is exact integer
//! arithmetic, the same on every machine.

/// The fixed-point unit of a weight: a step's weights are integer parts
/// summing to exactly `ONE`.
pub(crate) const ONE: i128 = 1 << 32;

/// Weights (finite, non-negative, not all zero) as integer parts summing to
/// [`ONE`], by largest remainder (ties to the lower source).
pub(crate) fn quantize(weights: &[f64]) -> Vec<i128> {
    let total: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| w / total * ONE as f64).collect();
    let mut parts: Vec<i128> = exact.iter().map(|x| x.floor() as i128).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    let short = ONE - parts.iter().sum::<i128>();
    // Rounding can leave the floors a part or two off `ONE` either way.
    for k in 0..short.unsigned_abs() as usize {
        let i = order[k % order.len()];
        parts[i] += short.signum();
    }
    parts
}

/// Where the apportionment stands before a step: records served from each
/// source so far, and what each is owed, in parts of [`ONE`] of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) step: u64,
    pub(crate) served: Vec<u64>,
    carry: Vec<i128>,
}

impl Cursor {
    /// Step 0: nothing served, nothing owed.
    pub(crate) fn start(sources: usize) -> Cursor {
        Cursor {
            step: 0,
            served: vec![0; sources],
            carry: vec![0; sources],
        }
    }

    /// Serves one step of `batch` records at weights `parts`, writing each
    /// source's count into `counts`.
    pub(crate) fn advance(&mut self, batch: u64, parts: &[i128], counts: &mut [u64]) {
        let owed: Vec<i128> = (self.carry.iter().zip(parts))
            .map(|(&carry, &part)| carry + i128::from(batch) * part)
            .collect();
        for (count, &q) in counts.iter_mut().zip(&owed) {
            *count = if q > 0 { (q / ONE) as u64 } else { 0 };
        }
        let given: u64 = counts.iter().sum();
        // Who may take one more: a source owed a fraction beyond its count.
        let mut candidates: Vec<usize> = (0..owed.len())
            .filter(|&i| owed[i] - i128::from(counts[i]) * ONE > 0)
            .collect();
        let deadline = |i: usize| {
            (
                ONE - (owed[i] - i128::from(counts[i]) * ONE),
                i128::from(batch) * parts[i],
            )
        };
        candidates.sort_by(|&a, &b| {
            let ((da, sa), (db, sb)) = (deadline(a), deadline(b));
            // da/sa < db/sb, with a zero share as never due.
            let key =
                |d: i128, s: i128, other_s: i128| if s == 0 { i128::MAX } else { d * other_s };
            key(da, sa, sb).cmp(&key(db, sb, sa)).then(a.cmp(&b))
        });
        let extra = batch.saturating_sub(given);
        // The carried debts keep the floors within one batch and the
        // candidates enough for the extras; should arithmetic ever say
        // otherwise, the batch still holds exactly `batch` records.
        for k in 0..extra {
            let i = candidates
                .get(k as usize)
                .copied()
                .unwrap_or((k as usize) % counts.len());
            counts[i] += 1;
        }
        let mut surplus = given.saturating_sub(batch);
        while surplus > 0 {
            let i = (0..counts.len()).max_by_key(|&i| counts[i]).unwrap_or(0);
            counts[i] -= 1;
            surplus -= 1;
        }
        for (i, &count) in counts.iter().enumerate() {
            self.carry[i] = owed[i] - i128::from(count) * ONE;
            self.served[i] += count;
        }
        self.step += 1;
    }
}

impl Cursor {
    /// One step of a pass that serves every record once: as
    /// [`advance`](Self::advance) over the sources with records left (their
    /// parts scaled up to [`ONE`]; by what each has left should those parts
    /// be zero), the batch cut to the records left, and no source given more
    /// than it has left — what it cannot take goes to the sources most owed.
    pub(crate) fn advance_once(
        &mut self,
        batch: u64,
        parts: &[i128],
        lens: &[u64],
        counts: &mut [u64],
    ) {
        let left: Vec<u64> = (lens.iter().zip(&self.served))
            .map(|(&len, &served)| len.saturating_sub(served))
            .collect();
        let batch = batch.min(left.iter().sum());
        let mut active: Vec<f64> = (parts.iter().zip(&left))
            .map(|(&part, &left)| if left > 0 { part as f64 } else { 0.0 })
            .collect();
        if active.iter().all(|&w| w == 0.0) {
            active = left.iter().map(|&l| l as f64).collect();
        }
        if batch == 0 {
            counts.fill(0);
            self.step += 1;
            return;
        }
        self.advance(batch, &quantize(&active), counts);
        let mut over = 0;
        for i in 0..counts.len() {
            let extra = self.served[i].saturating_sub(lens[i]);
            counts[i] -= extra;
            self.served[i] -= extra;
            over += extra;
            if self.served[i] == lens[i] {
                // Done for this pass: nothing more is owed to it.
                self.carry[i] = 0;
            }
        }
        while over > 0 {
            let most_owed = (0..counts.len())
                .filter(|&i| self.served[i] < lens[i])
                .max_by_key(|&i| (self.carry[i], std::cmp::Reverse(i)));
            let Some(i) = most_owed else { break };
            counts[i] += 1;
            self.served[i] += 1;
            self.carry[i] -= ONE;
            over -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `steps` steps at constant weights; checks every bound on the way.
    fn run(weights: &[f64], batch: u64, steps: u64) {
        let parts = quantize(weights);
        assert_eq!(parts.iter().sum::<i128>(), ONE);
        let mut cursor = Cursor::start(weights.len());
        let mut counts = vec![0; weights.len()];
        for n in 1..=steps {
            cursor.advance(batch, &parts, &mut counts);
            assert_eq!(counts.iter().sum::<u64>(), batch);
            for (i, &served) in cursor.served.iter().enumerate() {
                let target = i128::from(n) * i128::from(batch) * parts[i];
                let error = i128::from(served) * ONE - target;
                assert!(
                    error.abs() < ONE,
                    "{weights:?} B={batch} step {n} source {i}: {error}"
                );
            }
        }
    }

    #[test]
    fn the_alabama_paradox_does_not_take_records_back() {
        // Hamilton's method on cumulative totals gives source 2 two records
        // after 10 steps of one and one after 11: a negative count.
        run(&[3.0, 3.0, 1.0], 1, 1_000);
    }

    #[test]
    fn tiny_and_many_sources_stay_within_one_record() {
        run(&[0.7, 0.3], 32, 10_000);
        run(&[1.0, 1000.0, 3.0, 5.0, 2.0, 997.0, 1.0, 1.0], 7, 5_000);
        let many: Vec<f64> = (1..40).map(|i| f64::from(i * i % 17 + 1)).collect();
        run(&many, 5, 3_000);
    }

    #[test]
    fn quantized_parts_sum_to_one() {
        for weights in [
            vec![1.0, 1.0, 1.0],
            vec![1e-9, 1.0],
            vec![0.1; 10],
            vec![3.0, 0.0, 2.0],
        ] {
            assert_eq!(quantize(&weights).iter().sum::<i128>(), ONE);
        }
    }
}
