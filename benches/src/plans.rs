//! Index plans: the random batches every system gathers, in the same order
//! (`benches/DATA.md`, "Index plans").

use crate::splitmix::SplitMix64;

/// Batch size of every plan.
pub const BATCH: usize = 256;

/// `plan(seed, nb, B, N)[b][k] = S(seed).o_{b*B + k} mod N`: `nb` batches of
/// `batch` indices into `0..n`.
///
/// ```
/// let p = zrecord_benches::plans::plan(5, 3, 4, 10);
/// assert_eq!((p.len(), p[2].len()), (3, 4));
/// assert!(p.iter().flatten().all(|&i| i < 10));
/// ```
///
/// # Panics
/// If `n` is zero.
pub fn plan(seed: u64, nb: usize, batch: usize, n: u64) -> Vec<Vec<u64>> {
    assert!(n > 0, "a plan needs at least one record");
    let mut stream = SplitMix64::new(seed);
    (0..nb)
        .map(|_| (0..batch).map(|_| stream.next_u64() % n).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splitmix::output;

    #[test]
    fn plan_follows_the_formula() {
        let p = plan(6, 5, 7, 1000);
        for (b, batch) in p.iter().enumerate() {
            for (k, &i) in batch.iter().enumerate() {
                assert_eq!(i, output(6, (b * 7 + k) as u64) % 1000);
            }
        }
    }

    #[test]
    fn golden_plans() {
        // The output of `reference/bench_data.py` (see `tests/reference.rs`).
        assert_eq!(plan(5, 1, 8, 2_500)[0], GOLDEN_A);
        assert_eq!(plan(6, 1, 8, 200_000)[0], GOLDEN_B);
        assert_eq!(plan(7, 1, 8, 100_000)[0], GOLDEN_C);
    }

    const GOLDEN_A: [u64; 8] = [1118, 1344, 563, 709, 961, 1936, 609, 1515];
    const GOLDEN_B: [u64; 8] = [110592, 183833, 71686, 17808, 64807, 8560, 120020, 66512];
    const GOLDEN_C: [u64; 8] = [74487, 55804, 9346, 72203, 23674, 48305, 71798, 89182];
}
