//! Index plans: the random batches every system gathers, in the same order
//! (`benches/DATA.md`, "Index plans").

use crate::splitmix::output;

/// Batch size of every plan.
pub const BATCH: usize = 256;

/// `plan(seed, nb, B, N)[b][k] = S(seed).o_{b*B + k} mod N`: `nb` batches of
/// `batch` indices into `0..n` (panics if `n` is zero).
///
/// ```
/// let p = zrecord_benches::plans::plan(5, 3, 4, 10);
/// assert_eq!((p.len(), p[2].len()), (3, 4));
/// assert!(p.iter().flatten().all(|&i| i < 10));
/// ```
pub fn plan(seed: u64, nb: usize, batch: usize, n: u64) -> Vec<Vec<u64>> {
    assert!(n > 0, "a plan needs at least one record");
    let draw = |b: usize, k: usize| output(seed, (b * batch + k) as u64) % n;
    (0..nb)
        .map(|b| (0..batch).map(|k| draw(b, k)).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splitmix::{GAMMA, mix};

    #[test]
    fn plan_follows_the_formula() {
        // S(6) read in order, one output per index.
        let mut state = 6u64;
        for i in plan(6, 5, 7, 1000).into_iter().flatten() {
            state = state.wrapping_add(GAMMA);
            assert_eq!(i, mix(state) % 1000);
        }
    }
}
