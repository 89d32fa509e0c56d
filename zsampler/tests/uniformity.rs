//! Statistical checks with fixed seeds: iid is uniform (chi-square over small
//! and awkward lengths, p ≥ 0.001), and a cyclic permutation sends every
//! position to every index equally often across cycles.
//!
//! Critical values use the Wilson–Hilferty approximation: for `k` degrees of
//! freedom, `χ²_{k, 1-p} ≈ k·(1 − 2/(9k) + z_{1-p}·√(2/(9k)))³`, with
//! `z_{0.999} = 3.090232` (upper 0.1 % point of the standard normal). It is
//! accurate to within 1 % for `k ≥ 10`, and slightly conservative (too
//! large by ~2 %) at `k = 2`, where the exact value is `−2·ln p = 13.8155`; the
//! `k = 2` case below uses the exact value. The seeds are fixed, so the tests
//! are deterministic; a failure means the stream changed and is no longer
//! uniform, not bad luck.

use zsampler::{Mode, Sampler};

/// Upper 0.1 % point of the standard normal distribution.
const Z_999: f64 = 3.090_232;

/// The chi-square value exceeded with probability 0.001, for `dof` degrees of freedom.
fn critical_999(dof: u64) -> f64 {
    if dof == 2 {
        return -2.0 * 0.001f64.ln();
    }
    let k = dof as f64;
    let c = 2.0 / (9.0 * k);
    k * (1.0 - c + Z_999 * c.sqrt()).powi(3)
}

fn chi_square(observed: &[u64], expected: &[f64]) -> f64 {
    observed
        .iter()
        .zip(expected)
        .map(|(&o, &e)| (o as f64 - e).powi(2) / e)
        .sum()
}

/// Draws `steps × batch` iid indices and counts them in `buckets` equal-width
/// ranges of `0..len` (bucket `b` holds `⌈b·len/B⌉ .. ⌈(b+1)·len/B⌉`).
fn iid_statistic(len: u64, buckets: u64, batch: u64, steps: u64, seed: u64) -> (f64, u64) {
    let sampler = Sampler::builder(len, batch)
        .seed(seed)
        .mode(Mode::Iid)
        .build()
        .unwrap();
    let mut counts = vec![0u64; buckets as usize];
    let mut buffer = vec![0; batch as usize];
    for step in 0..steps {
        sampler.fill_batch(step, &mut buffer);
        for &i in &buffer {
            assert!(i < len);
            let bucket = u128::from(i) * u128::from(buckets) / u128::from(len);
            counts[bucket as usize] += 1;
        }
    }
    let total = (batch * steps) as f64;
    let start = |b: u64| (u128::from(b) * u128::from(len)).div_ceil(u128::from(buckets));
    let expected: Vec<f64> = (0..buckets)
        .map(|b| total * (start(b + 1) - start(b)) as f64 / len as f64)
        .collect();
    (chi_square(&counts, &expected), buckets - 1)
}

#[test]
fn critical_values_are_sane() {
    // Tabulated χ²_{0.999}: k = 10 → 29.588, k = 100 → 149.449, k = 1000 → 1143.917.
    for (k, table) in [(10, 29.588), (100, 149.449), (1000, 1143.917)] {
        let approx = critical_999(k);
        assert!(
            (approx - table).abs() / table < 0.01,
            "k {k}: {approx} vs {table}"
        );
    }
}

#[test]
fn iid_len_3() {
    let (stat, dof) = iid_statistic(3, 3, 1000, 300, 2024);
    assert!(stat < critical_999(dof), "χ² = {stat} for {dof} dof");
}

#[test]
fn iid_len_1000() {
    let (stat, dof) = iid_statistic(1000, 1000, 1000, 1000, 2024);
    assert!(stat < critical_999(dof), "χ² = {stat} for {dof} dof");
}

#[test]
fn iid_len_2_pow_31_plus_1_bucketed() {
    // 2^31 + 1 does not divide 2^32: a biased reduction (modulo, or a plain
    // multiply-shift on 32-bit words) would show here.
    let (stat, dof) = iid_statistic((1 << 31) + 1, 1024, 1000, 1000, 2024);
    assert!(stat < critical_999(dof), "χ² = {stat} for {dof} dof");
}

#[test]
fn iid_len_2_pow_63_plus_1_bucketed() {
    // About half of all 64-bit words are rejected for this length: the
    // resampling path must be uniform too.
    let (stat, dof) = iid_statistic((1 << 63) + 1, 256, 1000, 200, 2024);
    assert!(stat < critical_999(dof), "χ² = {stat} for {dof} dof");
}

#[test]
fn iid_catches_a_biased_reference() {
    // Sanity check of the harness: a visibly biased source fails the test.
    let len = 1000u64;
    let mut counts = vec![0u64; 1000];
    for i in 0..1_000_000u64 {
        // "x mod len" on 12-bit words: 4096 = 4·1000 + 96, so the first 96
        // values come up 5/4 times as often as the others.
        counts[((i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) % len) as usize] += 1;
    }
    let expected = vec![1000.0; 1000];
    assert!(chi_square(&counts, &expected) > critical_999(999));
}

#[test]
fn cyclic_positions_are_uniform() {
    // Over many cycles, each position of the permutation of 0..len takes each
    // value equally often: a (len−1)²-dof test of the position × value table.
    for len in [10u64, 37] {
        let cycles = 400 * len;
        let sampler = Sampler::builder(len, len)
            .seed(77)
            .mode(Mode::Cyclic)
            .build()
            .unwrap();
        let mut table = vec![0u64; (len * len) as usize];
        let mut buffer = vec![0; len as usize];
        for cycle in 0..cycles {
            sampler.fill_batch(cycle, &mut buffer);
            for (position, &value) in buffer.iter().enumerate() {
                table[position * len as usize + value as usize] += 1;
            }
        }
        let expected = vec![cycles as f64 / len as f64; table.len()];
        let stat = chi_square(&table, &expected);
        let dof = (len - 1) * (len - 1);
        assert!(
            stat < critical_999(dof),
            "len {len}: χ² = {stat} for {dof} dof"
        );
    }
}

#[test]
fn cyclic_pairs_are_uniform() {
    // The values at positions 0 and 1 form an ordered pair of distinct values,
    // each of the len·(len−1) pairs equally likely for a random permutation.
    let len = 12u64;
    let pairs = len * (len - 1);
    let cycles = 300 * pairs;
    let sampler = Sampler::builder(len, 2)
        .seed(78)
        .mode(Mode::Cyclic)
        .build()
        .unwrap();
    let per_cycle = sampler.steps_per_cycle().unwrap();
    let mut counts = vec![0u64; (len * len) as usize];
    for cycle in 0..cycles {
        let batch = sampler.batch_at(cycle * per_cycle);
        counts[(batch[0] * len + batch[1]) as usize] += 1;
    }
    let observed: Vec<u64> = (0..len * len)
        .filter(|p| p / len != p % len)
        .map(|p| counts[p as usize])
        .collect();
    let expected = vec![cycles as f64 / pairs as f64; observed.len()];
    let stat = chi_square(&observed, &expected);
    assert!(
        stat < critical_999(pairs - 1),
        "χ² = {stat} for {} dof",
        pairs - 1
    );
}

#[test]
fn cyclic_differential_test() {
    // For a random permutation of 0..2^10, the XOR of the images of two fixed
    // positions is uniform over the 1023 non-zero values. Feistel networks with
    // too few rounds fail this for positions that differ in the high half
    // (4 rounds: z ≈ 30 here; 6 rounds: z ≈ 2); 8 rounds pass.
    let len = 1u64 << 10;
    let sampler = Sampler::builder(len, 1)
        .seed(98)
        .mode(Mode::Cyclic)
        .build()
        .unwrap();
    let cycles = 50_000u64;
    for (a, b) in [(0u64, 32u64), (3, 3 ^ 512), (0, 1)] {
        let mut counts = vec![0u64; len as usize];
        for cycle in 0..cycles {
            let x = sampler.batch_at(cycle * len + a)[0];
            let y = sampler.batch_at(cycle * len + b)[0];
            counts[(x ^ y) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        let expected = vec![cycles as f64 / (len - 1) as f64; len as usize - 1];
        let stat = chi_square(&counts[1..], &expected);
        assert!(stat < critical_999(len - 2), "({a}, {b}): χ² = {stat}");
    }
}

#[test]
#[ignore = "heavy: 2M permutation evaluations; run in release with --ignored"]
fn cyclic_differential_test_on_a_large_domain() {
    // For a random permutation of 0..2^20, the XOR of the images of two fixed
    // positions is uniform over the non-zero values. Feistel networks with too
    // few rounds fail this for positions differing in the high half (4 rounds:
    // z ≈ 12 at this sample size); 8 rounds pass.
    let len = 1u64 << 20;
    let sampler = Sampler::builder(len, 1)
        .seed(99)
        .mode(Mode::Cyclic)
        .build()
        .unwrap();
    let cycles = 1_000_000u64;
    for (a, b) in [(0u64, 1u64 << 10), (5, 5 ^ (1 << 19)), (0, 1)] {
        let mut counts = vec![0u64; 4096];
        for cycle in 0..cycles {
            let x = sampler.batch_at(cycle * len + a)[0];
            let y = sampler.batch_at(cycle * len + b)[0];
            counts[((x ^ y) >> 8) as usize] += 1;
        }
        // Top 12 bits of a uniform non-zero 20-bit value: bucket 0 lacks one value.
        let mut expected = vec![cycles as f64 * 256.0 / (len - 1) as f64; 4096];
        expected[0] = cycles as f64 * 255.0 / (len - 1) as f64;
        let stat = chi_square(&counts, &expected);
        assert!(stat < critical_999(4095), "({a}, {b}): χ² = {stat}");
    }
}
