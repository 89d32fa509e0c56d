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
}
