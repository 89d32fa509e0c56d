//! The hot loops, written once as plain Rust and compiled per instruction set.
//!
//! Each kernel is an `#[inline(always)]` generic body. On x86-64 the
//! `multiversion!` macro also compiles it inside `#[target_feature]` wrappers
//! (AVX-512 and AVX2) and picks one at run time with `is_x86_feature_detected!`
//! (a cached load). The bodies are pure integer code, so every variant computes
//! bit-identical results — the instruction set changes the speed, never the
//! stream (the unit tests compare the dispatched kernels with the generic ones).
//!
//! This module holds the crate's only `unsafe`: calling a `#[target_feature]`
//! function, sound because the features were detected on the running CPU first.

use crate::feistel::Feistel;
use crate::rng::{GAMMA, mix64, tag, word, word_state};

/// Defines `pub(crate) fn $name` dispatching to `$generic` compiled per ISA
/// (the per-ISA variants `$avx512` and `$avx2` are module items so that tests
/// can call each one).
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
            = $generic:ident, $avx512:ident, $avx2:ident;
    ) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,bmi2")]
        fn $avx512($($arg: $ty),*) $(-> $ret)? {
            $generic($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,bmi2")]
        fn $avx2($($arg: $ty),*) $(-> $ret)? {
            $generic($($arg),*)
        }

        $(#[$meta])*
        #[inline]
        pub(crate) fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                if has_avx512() {
                    // SAFETY: `has_avx512` checked that the running CPU has every
                    // target feature `$avx512` is compiled with.
                    return unsafe { $avx512($($arg),*) };
                }
                if has_avx2() {
                    // SAFETY: `has_avx2` checked that the running CPU has every
                    // target feature `$avx2` is compiled with.
                    return unsafe { $avx2($($arg),*) };
                }
            }
            $generic($($arg),*)
        }
    };
}

/// Whether the CPU has the features of the AVX-512 variants.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && has_avx2()
}

/// Whether the CPU has the features of the AVX2 variants.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi2")
}

multiversion! {
    /// iid: `out[i]` = Lemire's unbiased map of word `k0 + i` of the stream `key`
    /// into `0..n`; `threshold` must be `2^64 mod n`.
    fn iid_fill(key: u64, k0: u64, n: u64, threshold: u64, out: &mut [u64])
        = iid_fill_generic, iid_fill_avx512, iid_fill_avx2;
}

multiversion! {
    /// cyclic: `out[i]` = the cycle-walked permutation of position `p0 + i` in `0..n`.
    fn permute_fill(feistel: &Feistel, n: u64, p0: u64, out: &mut [u64])
        = permute_fill_generic, permute_fill_avx512, permute_fill_avx2;
}

multiversion! {
    /// Subsets: replaces every position in `out` by `subset[position]`.
    fn gather(subset: &[u64], out: &mut [u64]) = gather_generic, gather_avx512, gather_avx2;
}

multiversion! {
    /// An order-sensitive 64-bit fingerprint of a subset's contents.
    fn fingerprint(indices: &[u64]) -> u64
        = fingerprint_generic, fingerprint_avx512, fingerprint_avx2;
}

/// Lemire's multiply-shift: the high word of `x·n` is the sample, the low word
/// decides rejection (`low < 2^64 mod n`).
#[inline(always)]
const fn lemire(x: u64, n: u64) -> (u64, u64) {
    let m = x as u128 * n as u128;
    ((m >> 64) as u64, m as u64)
}

/// Draws a replacement after a rejection: words of a stream private to
/// `(key, position)`, until one is accepted (each is accepted with probability
/// `1 − (2^64 mod n)/2^64 > 1/2`).
#[cold]
fn resample(key: u64, position: u64, n: u64, threshold: u64) -> u64 {
    let stream = word(mix64(key ^ tag::RETRY), position);
    let mut attempt = 0;
    loop {
        let (sample, low) = lemire(word(stream, attempt), n);
        if low >= threshold {
            return sample;
        }
        attempt += 1;
    }
}

/// Block length of the iid fast loop; a flagged block is redone in scalar code.
const IID_BLOCK: usize = 64;

#[inline(always)]
fn iid_fill_generic(key: u64, k0: u64, n: u64, threshold: u64, out: &mut [u64]) {
    let mut position = k0;
    for block in out.chunks_mut(IID_BLOCK) {
        let mut rejected = 0u64;
        // Word `k` mixes `word_state(key, k)`, a running sum: the vectorised loops
        // add `γ` per lane instead of multiplying (64-bit vector multiplies
        // are emulated below AVX-512).
        let mut state = word_state(key, position);
        if n <= 1 << 32 {
            // The 128-bit product of a 64-bit word and a 33-bit `n`, from two
            // 32×32→64 products (which vectorise); equal to `lemire` bit for bit.
            for slot in block.iter_mut() {
                let x = mix64(state);
                state = state.wrapping_add(GAMMA);
                let lo = (x & 0xffff_ffff) * n;
                let mid = (x >> 32) * n + (lo >> 32);
                *slot = mid >> 32;
                let low = (mid << 32) | (lo & 0xffff_ffff);
                rejected |= u64::from(low < threshold);
            }
        } else {
            for slot in block.iter_mut() {
                let (sample, low) = lemire(mix64(state), n);
                state = state.wrapping_add(GAMMA);
                *slot = sample;
                rejected |= u64::from(low < threshold);
            }
        }
        if rejected != 0 {
            for (i, slot) in block.iter_mut().enumerate() {
                let k = position.wrapping_add(i as u64);
                let (_, low) = lemire(word(key, k), n);
                if low < threshold {
                    *slot = resample(key, k, n, threshold);
                }
            }
        }
        position = position.wrapping_add(block.len() as u64);
    }
}

/// Positions of the cyclic kernel handled per round of cycle-walking.
const WALK_BLOCK: usize = 256;

/// Below this many positions the cyclic kernel walks each one directly.
const SMALL_BATCH: usize = 16;

#[inline(always)]
fn permute_fill_generic(feistel: &Feistel, n: u64, p0: u64, out: &mut [u64]) {
    // One vectorised pass of the bijection over every position, then the few
    // values that fell outside `0..n` are walked on together, compacted into a
    // short list (a per-lane `while` would serialise the whole block).
    if out.len() < SMALL_BATCH {
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = feistel.walk(p0 + i as u64, n);
        }
        return;
    }
    let mut pending = [0u16; WALK_BLOCK];
    let mut base = p0;
    if feistel.is_narrow() {
        // Positions and values are below 2^32: permute 32-bit lanes (twice as
        // many per vector), then widen.
        let mut narrow = [0u32; WALK_BLOCK];
        for block in out.chunks_mut(WALK_BLOCK) {
            let values = &mut narrow[..block.len()];
            let first = base as u32;
            for (i, value) in values.iter_mut().enumerate() {
                *value = feistel.permute_narrow(first.wrapping_add(i as u32));
            }
            for (slot, &value) in block.iter_mut().zip(values.iter()) {
                *slot = u64::from(value);
            }
            let count = out_of_range(block, n, &mut pending);
            walk_pending(block, n, &mut pending, count, |x| {
                u64::from(feistel.permute_narrow(x as u32))
            });
            base += block.len() as u64;
        }
    } else {
        for block in out.chunks_mut(WALK_BLOCK) {
            for (i, slot) in block.iter_mut().enumerate() {
                *slot = feistel.permute_wide(base + i as u64);
            }
            let count = out_of_range(block, n, &mut pending);
            walk_pending(block, n, &mut pending, count, |x| feistel.permute_wide(x));
            base += block.len() as u64;
        }
    }
}

/// Lists in `pending` the indices of `block` whose value is `≥ n`; returns how many.
#[inline(always)]
fn out_of_range(block: &[u64], n: u64, pending: &mut [u16; WALK_BLOCK]) -> usize {
    // A bit mask per 64 values (a vector compare), then one step per set bit:
    // cheap when, as usual, few values are out of range.
    let mut count = 0;
    for (g, group) in block.chunks(64).enumerate() {
        let mut mask = 0u64;
        for (i, &value) in group.iter().enumerate() {
            mask |= u64::from(value >= n) << i;
        }
        while mask != 0 {
            pending[count] = (g * 64) as u16 + mask.trailing_zeros() as u16;
            count += 1;
            mask &= mask - 1;
        }
    }
    count
}

/// Walks the `count` listed values of `block` on until all are below `n`.
#[inline(always)]
fn walk_pending(
    block: &mut [u64],
    n: u64,
    pending: &mut [u16; WALK_BLOCK],
    mut count: usize,
    permute: impl Fn(u64) -> u64,
) {
    while count > 0 {
        let mut kept = 0;
        for j in 0..count {
            let i = pending[j];
            let value = permute(block[usize::from(i)]);
            block[usize::from(i)] = value;
            pending[kept] = i;
            kept += usize::from(value >= n);
        }
        count = kept;
    }
}

#[inline(always)]
fn gather_generic(subset: &[u64], out: &mut [u64]) {
    for slot in out {
        // Positions are below `subset.len()` by construction.
        *slot = subset[*slot as usize];
    }
}

#[inline(always)]
fn fingerprint_generic(indices: &[u64]) -> u64 {
    // A sum of per-(position, value) hashes: vectorises, and any change of a
    // value or of the order changes terms.
    let key = mix64(tag::FINGERPRINT);
    let mut sum = 0u64;
    for (i, &x) in indices.iter().enumerate() {
        sum = sum.wrapping_add(word(mix64(x ^ key), i as u64));
    }
    mix64(sum ^ word(key, indices.len() as u64))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A compiled form of the kernels.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Variant {
        /// The plain body, compiled for the baseline.
        Generic,
        /// What the crate calls: the best variant this CPU runs.
        Dispatched,
        #[cfg(target_arch = "x86_64")]
        Avx2,
        #[cfg(target_arch = "x86_64")]
        Avx512,
    }

    /// Every variant this CPU runs, and the names of those it cannot.
    fn available() -> (Vec<Variant>, Vec<&'static str>) {
        let mut ran = vec![Variant::Generic, Variant::Dispatched];
        let mut lacking = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2() {
                ran.push(Variant::Avx2);
            } else {
                lacking.push("avx2");
            }
            if has_avx512() {
                ran.push(Variant::Avx512);
            } else {
                lacking.push("avx512");
            }
        }
        (ran, lacking)
    }

    /// [`available`], saying on stdout which variants `kernel`'s test
    /// compares and which this CPU lacks (`-- --nocapture` shows it).
    fn variants(kernel: &str) -> Vec<Variant> {
        let (ran, lacking) = available();
        println!("{kernel}: compared {ran:?}; not run, this CPU lacks them: {lacking:?}");
        ran
    }

    fn iid_with(v: Variant, key: u64, k0: u64, n: u64, threshold: u64, out: &mut [u64]) {
        match v {
            Variant::Generic => iid_fill_generic(key, k0, n, threshold, out),
            Variant::Dispatched => iid_fill(key, k0, n, threshold, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx2 only where the CPU has its features.
            Variant::Avx2 => unsafe { iid_fill_avx2(key, k0, n, threshold, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx512 only where the CPU has its features.
            Variant::Avx512 => unsafe { iid_fill_avx512(key, k0, n, threshold, out) },
        }
    }

    fn permute_with(v: Variant, feistel: &Feistel, n: u64, p0: u64, out: &mut [u64]) {
        match v {
            Variant::Generic => permute_fill_generic(feistel, n, p0, out),
            Variant::Dispatched => permute_fill(feistel, n, p0, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx2 only where the CPU has its features.
            Variant::Avx2 => unsafe { permute_fill_avx2(feistel, n, p0, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx512 only where the CPU has its features.
            Variant::Avx512 => unsafe { permute_fill_avx512(feistel, n, p0, out) },
        }
    }

    fn gather_with(v: Variant, subset: &[u64], out: &mut [u64]) {
        match v {
            Variant::Generic => gather_generic(subset, out),
            Variant::Dispatched => gather(subset, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx2 only where the CPU has its features.
            Variant::Avx2 => unsafe { gather_avx2(subset, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx512 only where the CPU has its features.
            Variant::Avx512 => unsafe { gather_avx512(subset, out) },
        }
    }

    fn fingerprint_with(v: Variant, indices: &[u64]) -> u64 {
        match v {
            Variant::Generic => fingerprint_generic(indices),
            Variant::Dispatched => fingerprint(indices),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx2 only where the CPU has its features.
            Variant::Avx2 => unsafe { fingerprint_avx2(indices) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` lists Avx512 only where the CPU has its features.
            Variant::Avx512 => unsafe { fingerprint_avx512(indices) },
        }
    }

    /// iid, one position at a time: Lemire's draw, resampled on rejection.
    fn iid_reference(key: u64, k0: u64, n: u64, out: &mut [u64]) {
        let threshold = n.wrapping_neg() % n;
        for (i, slot) in out.iter_mut().enumerate() {
            let k = k0 + i as u64;
            let (sample, low) = lemire(word(key, k), n);
            *slot = if low < threshold {
                resample(key, k, n, threshold)
            } else {
                sample
            };
        }
    }

    fn check_iid(variants: &[Variant], key: u64, k0: u64, n: u64, len: usize) {
        let threshold = n.wrapping_neg() % n;
        let mut expected = vec![0; len];
        iid_reference(key, k0, n, &mut expected);
        assert!(expected.iter().all(|&x| x < n));
        for &v in variants {
            let mut got = vec![u64::MAX; len];
            iid_with(v, key, k0, n, threshold, &mut got);
            assert_eq!(got, expected, "{v:?}, n {n}");
        }
    }

    #[test]
    fn iid_kernels_agree_with_the_reference() {
        let variants = variants("iid_fill");
        for n in [
            1,
            2,
            3,
            1000,
            (1 << 31) + 1,
            u64::from(u32::MAX),
            1 << 32,
            (1 << 32) + 1,
            (1 << 40) + 7,
            (1 << 63) + 1, // rejects almost half of the words
            u64::MAX,
        ] {
            check_iid(&variants, 0xfeed, 5, n, 300);
        }
    }

    #[test]
    fn rejection_is_resampled_in_range() {
        // n = 2^63 + 1: about half of all words are rejected.
        let n = (1u64 << 63) + 1;
        let threshold = n.wrapping_neg() % n;
        assert_eq!(threshold, (1 << 63) - 1);
        let mut out = vec![0; 1000];
        iid_fill(7, 0, n, threshold, &mut out);
        let high = out.iter().filter(|&&x| x >= 1 << 62).count();
        // Uniform on 0..n ≈ 0..2^63: about half of the samples are ≥ 2^62
        // (a shifted rejection region would skew this).
        assert!((430..570).contains(&high), "{high}");
    }

    #[test]
    fn permute_kernels_match_walk() {
        let variants = variants("permute_fill");
        for n in [1u64, 2, 3, 5, 64, 257, 1000, 4097, (1 << 32) + 5] {
            let feistel = Feistel::new(n, n ^ 0xabc);
            let (p0, count) = if n > 5000 { (n - 3000, 3000) } else { (0, n) };
            let expected: Vec<u64> = (p0..p0 + count).map(|x| feistel.walk(x, n)).collect();
            for &v in &variants {
                let mut got = vec![u64::MAX; count as usize];
                permute_with(v, &feistel, n, p0, &mut got);
                assert_eq!(got, expected, "{v:?}, n {n}");
            }
        }
    }

    #[test]
    fn gather_kernels_index_the_subset() {
        let variants = variants("gather");
        let subset: Vec<u64> = (0..1000).map(|i| i * 7 + 3).collect();
        let positions: Vec<u64> = (0..500).map(|i| (i * 13) % 1000).collect();
        let expected: Vec<u64> = positions.iter().map(|&p| p * 7 + 3).collect();
        for &v in &variants {
            let mut got = positions.clone();
            gather_with(v, &subset, &mut got);
            assert_eq!(got, expected, "{v:?}");
        }
    }

    /// The fingerprint as zsampler/README.md states it, one term at a time.
    fn fingerprint_reference(indices: &[u64]) -> u64 {
        let key = mix64(u64::from_le_bytes(*b"zs:fprnt"));
        let sum = indices.iter().enumerate().fold(0u64, |sum, (i, &x)| {
            sum.wrapping_add(word(mix64(x ^ key), i as u64))
        });
        mix64(sum ^ word(key, indices.len() as u64))
    }

    #[test]
    fn fingerprint_kernels_agree_with_the_formula() {
        let variants = variants("fingerprint");
        for len in [0usize, 1, 7, 64, 1000] {
            let indices: Vec<u64> = (0..len as u64).map(|i| i * 7 + 3).collect();
            let expected = fingerprint_reference(&indices);
            for &v in &variants {
                assert_eq!(
                    fingerprint_with(v, &indices),
                    expected,
                    "{v:?}, {len} indices"
                );
            }
        }
    }

    #[test]
    fn fingerprint_sees_values_order_and_length() {
        let a: Vec<u64> = (0..100).collect();
        let mut swapped = a.clone();
        swapped.swap(3, 70);
        let mut changed = a.clone();
        changed[50] = 1000;
        assert_ne!(fingerprint(&a), fingerprint(&swapped));
        assert_ne!(fingerprint(&a), fingerprint(&changed));
        assert_ne!(fingerprint(&a), fingerprint(&a[..99]));
        assert_ne!(fingerprint(&[]), fingerprint(&[0]));
    }

    proptest! {
        #[test]
        fn iid_kernels_agree_for_any_n(key: u64, k0 in 0u64..1 << 40, n in 1u64.., len in 0usize..200) {
            check_iid(&available().0, key, k0, n, len);
        }

        #[test]
        fn iid_kernels_agree_for_small_n(key: u64, n in 1u64..=1 << 33, len in 0usize..200) {
            check_iid(&available().0, key, 0, n, len);
        }
    }
}
