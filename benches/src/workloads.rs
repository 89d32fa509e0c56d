//! The workloads of `benches/DATA.md`, generated bit-exactly and in parallel.
//!
//! Every generator takes a record count: the full count gives the workload
//! DATA.md checksums; fewer give a **prefix** (the first records of the full
//! workload) for quick runs, which has no checksum to check. The
//! `#[ignore]`d test `full_checksums` checks every full-size array.

use rayon::prelude::*;

use crate::checksum::{Verified, compare, sha256_hex, sha256_hex_u32};
use crate::splitmix::output;

/// A dense workload: `records` records of `u8[shape[0]][shape[1]]`.
#[derive(Clone, Copy, Debug)]
pub struct DenseWorkload {
    /// DATA.md's letter.
    pub name: &'static str,
    /// Records in the full workload.
    pub records: usize,
    /// Item shape (rows, columns).
    pub shape: [usize; 2],
    /// Seed of the index plan (DATA.md, "Index plans").
    pub plan_seed: u64,
    /// SHA-256 of the full array.
    pub sha256: &'static str,
    /// Fills `out` (whole records) starting at record `first`.
    fill: fn(first: usize, out: &mut [u8]),
}

/// (a) dense large: 2,500 records of `u8[512][512]` (256 KiB each), 655 MB.
pub const DENSE_A: DenseWorkload = DenseWorkload {
    name: "a",
    records: 2_500,
    shape: [512, 512],
    plan_seed: 5,
    sha256: "cf5586a5bec2c5512f16c7618855fb544a1ae4acbfdff03c0b15da6100f4a312",
    fill: fill_a,
};

/// (b) dense small: 200,000 records of `u8[28][28]` (784 B each), 157 MB.
pub const DENSE_B: DenseWorkload = DenseWorkload {
    name: "b",
    records: 200_000,
    shape: [28, 28],
    plan_seed: 6,
    sha256: "37786006361af24bbdb54624a3dcdbfc044779471d63cb4c1af24d0993e3c7de",
    fill: fill_b,
};

impl DenseWorkload {
    /// Bytes per record.
    pub const fn record_bytes(&self) -> usize {
        self.shape[0] * self.shape[1]
    }

    /// The first `records` records (all of them for `self.records`), laid end
    /// to end: `records * record_bytes()` bytes. Panics above the full count.
    pub fn generate(&self, records: usize) -> Vec<u8> {
        assert!(
            records <= self.records,
            "workload {} has {} records, asked for {records}",
            self.name,
            self.records
        );
        let width = self.record_bytes();
        let mut data = vec![0u8; records * width];
        // Pieces of whole records, enough of them to keep every core busy.
        let per_piece = (64usize << 10).div_ceil(width).max(1);
        data.par_chunks_mut(per_piece * width)
            .enumerate()
            .for_each(|(piece, out)| (self.fill)(piece * per_piece, out));
        data
    }

    /// Checks generated `data` against DATA.md's SHA-256 (full size only); the
    /// error names the array.
    pub fn verify(&self, data: &[u8]) -> Result<Verified, String> {
        if data.len() != self.records * self.record_bytes() {
            return Ok(Verified::PrefixUnchecked);
        }
        compare(self.name, self.sha256, sha256_hex(data))
    }
}

/// (a): `v = ((x >> 1) + (y >> 1) + 3r + (B1[i] & 3)) mod 256`,
/// `i = (r*512 + y)*512 + x`. A row is 64 whole words of `bytes(1)`.
fn fill_a(first: usize, out: &mut [u8]) {
    const SIDE: usize = 512;
    for (k, row) in out.chunks_exact_mut(SIDE).enumerate() {
        let r = first + k / SIDE;
        let y = k % SIDE;
        let base = ((y >> 1) + 3 * r) as u8; // mod 256
        let first_word = ((r * SIDE + y) * SIDE / 8) as u64;
        for (w, px) in row.chunks_exact_mut(8).enumerate() {
            let noise = output(1, first_word + w as u64).to_le_bytes();
            for (j, (v, n)) in px.iter_mut().zip(noise).enumerate() {
                let x = w * 8 + j;
                *v = base.wrapping_add((x >> 1) as u8).wrapping_add(n & 3);
            }
        }
    }
}

/// (b): `v = 128 + (B2[i] & 127)` inside the disc `(x-cx)² + (y-cy)² < R²`,
/// else 0; `i = (r*28 + y)*28 + x`. A record is 98 whole words of `bytes(2)`.
fn fill_b(first: usize, out: &mut [u8]) {
    const SIDE: usize = 28;
    const WIDTH: usize = SIDE * SIDE;
    for (k, record) in out.chunks_exact_mut(WIDTH).enumerate() {
        let r = first + k;
        let radius = (6 + r % 7) as i64;
        let (cx, cy) = ((12 + r % 5) as i64, (13 + r % 3) as i64);
        let first_word = (r * WIDTH / 8) as u64;
        for (w, px) in record.chunks_exact_mut(8).enumerate() {
            let noise = output(2, first_word + w as u64).to_le_bytes();
            for (j, (v, n)) in px.iter_mut().zip(noise).enumerate() {
                let at = w * 8 + j;
                let (x, y) = ((at % SIDE) as i64, (at / SIDE) as i64);
                let inside = (x - cx) * (x - cx) + (y - cy) * (y - cy) < radius * radius;
                *v = if inside { 128 + (n & 127) } else { 0 };
            }
        }
    }
}

/// Records in (c).
pub const RAGGED_RECORDS: usize = 100_000;
/// Tokens in the full (c).
pub const RAGGED_TOKENS: usize = 29_539_248;
/// Seed of (c)'s index plan.
pub const RAGGED_PLAN_SEED: u64 = 7;
/// SHA-256 of (c)'s lengths as `u32` LE.
pub const RAGGED_LENGTHS_SHA256: &str =
    "74913d40453bdcf6883a300aa238702225bf9bf82e06ffa795cc55ff697fde14";
/// SHA-256 of (c)'s tokens as `i32` LE.
pub const RAGGED_TOKENS_SHA256: &str =
    "0824ae5d3fa248bef141a7951e2f2bce63f77159668f3c92a7b2908919559987";

/// (c) ragged tokens: record `r` is `tokens[offsets[r]..offsets[r + 1]]`.
#[derive(Clone, Debug)]
pub struct RaggedTokens {
    /// Length of every record (16..=2048).
    pub lengths: Vec<u32>,
    /// Where every record starts in `tokens`, plus the total at the end.
    pub offsets: Vec<usize>,
    /// All records' tokens, concatenated in order.
    pub tokens: Vec<i32>,
}

impl RaggedTokens {
    /// The first `records` records of (c) (all of them for [`RAGGED_RECORDS`]);
    /// panics above it.
    pub fn generate(records: usize) -> RaggedTokens {
        assert!(
            records <= RAGGED_RECORDS,
            "workload c has {RAGGED_RECORDS} records, asked for {records}"
        );
        let lengths: Vec<u32> = (0..records as u64)
            .into_par_iter()
            .map(ragged_length)
            .collect();
        let mut offsets = Vec::with_capacity(records + 1);
        let mut total = 0usize;
        offsets.push(0);
        for &len in &lengths {
            total += len as usize;
            offsets.push(total);
        }
        let tokens = (0..total as u64).into_par_iter().map(token).collect();
        RaggedTokens {
            lengths,
            offsets,
            tokens,
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Record `r`'s tokens.
    pub fn record(&self, r: usize) -> &[i32] {
        &self.tokens[self.offsets[r]..self.offsets[r + 1]]
    }

    /// Checks lengths and tokens against DATA.md's SHA-256 (full size only);
    /// the error names the first array that differs.
    pub fn verify(&self) -> Result<Verified, String> {
        if self.len() != RAGGED_RECORDS {
            return Ok(Verified::PrefixUnchecked);
        }
        let lengths = sha256_hex_u32(&self.lengths);
        compare("c lengths", RAGGED_LENGTHS_SHA256, lengths)?;
        let tokens = sha256_hex_u32(bytemuck::cast_slice(&self.tokens));
        compare("c tokens", RAGGED_TOKENS_SHA256, tokens)
    }
}

/// Length of record `r` of (c): a lognormal (μ 5.3, σ 0.9) draw by
/// Box–Muller from outputs `2r` and `2r + 1` of `S(3)`, clamped to 16..=2048.
///
/// Plain `f64` operations only — separate multiplies and adds, never a fused
/// multiply-add — so every platform with a correctly behaving libm gives the
/// same lengths.
fn ragged_length(r: u64) -> u32 {
    const TWO_POW_M53: f64 = 1.0 / 9_007_199_254_740_992.0; // 2^-53, exact
    let a = output(3, 2 * r);
    let b = output(3, 2 * r + 1);
    let u1 = ((a >> 11) + 1) as f64 * TWO_POW_M53;
    let u2 = (b >> 11) as f64 * TWO_POW_M53;
    let radius = (-2.0 * u1.ln()).sqrt();
    // DATA.md writes 6.283185307179586: exactly the f64 `TAU`.
    let angle = std::f64::consts::TAU * u2;
    let z = radius * angle.cos();
    let scaled = 0.9 * z;
    let length = (5.3 + scaled).exp().floor();
    length.clamp(16.0, 2048.0) as u32
}

/// Global token `j` of (c): `u = S(4).o_j >> 32`,
/// `t = ((((u*u) >> 32) * u >> 32) * 50257) >> 32`.
fn token(j: u64) -> i32 {
    let u = output(4, j) >> 32;
    let t = (((((u * u) >> 32) * u) >> 32) * 50_257) >> 32;
    t as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_prefixes() {
        for w in [DENSE_A, DENSE_B] {
            let long = w.generate(7);
            let short = w.generate(3);
            assert_eq!(long[..short.len()], short[..]);
            assert_eq!(w.verify(&short), Ok(Verified::PrefixUnchecked));
        }
        let long = RaggedTokens::generate(50);
        let short = RaggedTokens::generate(20);
        assert_eq!(long.lengths[..20], short.lengths[..]);
        assert_eq!(long.tokens[..short.tokens.len()], short.tokens[..]);
        assert_eq!(short.verify(), Ok(Verified::PrefixUnchecked));
        assert_eq!(short.offsets[20], short.tokens.len());
        assert_eq!(short.record(1).len(), short.lengths[1] as usize);
    }

    #[test]
    #[ignore = "generates ~1 GB; run with --release -- --ignored"]
    fn full_checksums() {
        for w in [DENSE_A, DENSE_B] {
            let data = w.generate(w.records);
            assert_eq!(w.verify(&data), Ok(Verified::Checksum));
        }
        let c = RaggedTokens::generate(RAGGED_RECORDS);
        assert_eq!(c.tokens.len(), RAGGED_TOKENS);
        assert_eq!(c.verify(), Ok(Verified::Checksum));
    }
}
