//! Golden values: the streams are part of the contract. The same configuration
//! yields these exact indices on every platform and in every release with the
//! same `SamplerState::VERSION`; a change here is a change of algorithm. A
//! second, independent model written from the documented formulas checks the
//! iid and cyclic streams over many configurations.

use rand_core::Rng;
use zsampler::{CounterRng, Mode, Sampler};

fn batches(sampler: &Sampler, steps: &[u64]) -> Vec<Vec<u64>> {
    steps.iter().map(|&s| sampler.batch_at(s)).collect()
}

fn build(len: u64, batch: u64, seed: u64, mode: Mode) -> Sampler {
    Sampler::builder(len, batch)
        .seed(seed)
        .mode(mode)
        .build()
        .unwrap()
}

const BLOCK: Mode = Mode::Block {
    block_size: 16,
    window_blocks: 4,
};

#[test]
fn sequential() {
    let sampler = build(10, 4, 42, Mode::Sequential);
    assert_eq!(
        batches(&sampler, &[0, 1, 2, 3]),
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5]]
    );
}

#[test]
fn iid() {
    let sampler = build(1000, 8, 42, Mode::Iid);
    assert_eq!(
        batches(&sampler, &[0, 1, 1_000_000]),
        [
            [55, 65, 131, 271, 620, 877, 803, 11],
            [772, 830, 959, 54, 255, 467, 197, 45],
            [850, 902, 835, 500, 112, 693, 976, 713],
        ]
    );
    // Above 2^32 (the 128-bit product path).
    let sampler = build((1 << 40) + 7, 4, 7, Mode::Iid);
    assert_eq!(
        batches(&sampler, &[0, 3]),
        [
            [
                98_647_362_673,
                779_477_236_258,
                151_825_879_015,
                596_593_586_637
            ],
            [
                9_671_134_324,
                839_205_069_610,
                1_060_049_576_053,
                124_376_020_532
            ],
        ]
    );
    // About half of all words are rejected and resampled here.
    let sampler = build((1 << 63) + 1, 4, 7, Mode::Iid);
    assert_eq!(
        sampler.batch_at(0),
        [
            827_514_055_692_525_385,
            6_538_728_979_852_244_803,
            8_218_695_317_829_218_211,
            4_509_598_937_418_598_461,
        ]
    );
}

#[test]
fn cyclic() {
    // A small domain (Fisher–Yates table); the remainder (3 here) is dropped.
    let sampler = build(10, 3, 42, Mode::Cyclic);
    assert_eq!(
        batches(&sampler, &[0, 1, 2, 3]),
        [[6, 7, 9], [0, 2, 5], [1, 4, 8], [3, 2, 7]]
    );
    // Feistel, 32-bit rounds; step 125 is the first of cycle 1.
    let sampler = build(1000, 8, 42, Mode::Cyclic);
    assert_eq!(
        batches(&sampler, &[0, 1, 125]),
        [
            [142, 585, 600, 307, 852, 501, 310, 911],
            [887, 817, 641, 897, 607, 70, 316, 139],
            [929, 748, 240, 704, 112, 322, 360, 172],
        ]
    );
    // Feistel, 64-bit rounds.
    let sampler = build((1 << 40) + 7, 4, 1, Mode::Cyclic);
    assert_eq!(
        batches(&sampler, &[0, 1 << 30]),
        [
            [
                45_394_192_939,
                647_142_004_253,
                1_007_792_876_170,
                827_903_489_965
            ],
            [
                256_775_405_369,
                230_470_482_317,
                1_021_090_101_010,
                309_748_618_334
            ],
        ]
    );
}

#[test]
fn block() {
    let sampler = build(1000, 8, 42, BLOCK);
    assert_eq!(
        batches(&sampler, &[0, 1, 124]),
        [
            [565, 53, 572, 56, 840, 838, 563, 562],
            [844, 49, 63, 55, 25, 61, 846, 832],
            [332, 466, 323, 473, 175, 333, 160, 465],
        ]
    );
    let sampler = build((1 << 40) + 7, 4, 1, BLOCK);
    assert_eq!(
        batches(&sampler, &[0, 1 << 30]),
        [
            [
                161_920_328_429,
                693_079_308_513,
                145_930_758_264,
                693_079_308_520
            ],
            [
                749_892_175_100,
                1_022_032_643_072,
                619_270_536_477,
                749_892_175_099
            ],
        ]
    );
}

#[test]
fn subset_and_shard() {
    let subset: Vec<u64> = (0..100).map(|i| i * 3).collect();
    let sampler = Sampler::builder_subset(subset, 6)
        .seed(9)
        .mode(Mode::Cyclic)
        .shard(1, 2)
        .build()
        .unwrap();
    assert_eq!(
        batches(&sampler, &[0, 1]),
        [[168, 117, 201], [228, 177, 252]]
    );
    // The fingerprint is stored in checkpoints: it is part of the format too.
    assert_eq!(sampler.subset_fingerprint(), Some(0xed96_a56a_f42f_68a6));
}

#[test]
fn counter_rng() {
    let mut rng = CounterRng::new(5, 6);
    assert_eq!(rng.next_u64(), 0xd4e8_228c_b1f0_4cc3);
    assert_eq!(rng.next_u64(), 0x7410_ca0f_a01a_3555);
}

/// An independent model of the documented iid and cyclic streams.
mod model {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    pub(super) fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn word(key: u64, counter: u64) -> u64 {
        mix(key.wrapping_add(counter.wrapping_add(1).wrapping_mul(GAMMA)))
    }

    fn base(seed: u64, tag: &[u8; 8]) -> u64 {
        mix(seed ^ u64::from_le_bytes(*tag))
    }

    /// Lemire: `(high, low)` words of `x · n`.
    fn lemire(x: u64, n: u64) -> (u64, u64) {
        let m = u128::from(x) * u128::from(n);
        ((m >> 64) as u64, m as u64)
    }

    pub(super) fn iid(seed: u64, n: u64, step: u64, k: u64) -> u64 {
        let key = word(base(seed, b"zs:iid\0\0"), step);
        let (sample, low) = lemire(word(key, k), n);
        let threshold = n.wrapping_neg() % n;
        if low >= threshold {
            return sample;
        }
        let stream = word(mix(key ^ u64::from_le_bytes(*b"zs:retry")), k);
        (0..)
            .map(|attempt| lemire(word(stream, attempt), n))
            .find(|&(_, low)| low >= threshold)
            .unwrap()
            .0
    }

    /// The cycle's permutation of `0..n`, image of position `p`.
    pub(super) fn cyclic(seed: u64, n: u64, cycle: u64, p: u64) -> u64 {
        let key = word(base(seed, b"zs:cycle"), cycle);
        if n <= 256 {
            // Fisher–Yates from the stream `key`.
            let mut table: Vec<u64> = (0..n).collect();
            let mut counter = 0;
            for i in (1..n).rev() {
                let j = loop {
                    let (j, low) = lemire(word(key, counter), i + 1);
                    counter += 1;
                    if low >= (i + 1).wrapping_neg() % (i + 1) {
                        break j;
                    }
                };
                table.swap(i as usize, j as usize);
            }
            return table[p as usize];
        }
        let bits = 64 - (n - 1).leading_zeros();
        let (lo_bits, hi_bits) = (bits / 2, bits - bits / 2);
        let keys: Vec<u64> = (0..8).map(|i| word(key, i)).collect();
        let round = |half: u64, k: u64, width: u32| -> u64 {
            if bits <= 32 {
                let mut h = (half as u32 ^ (k >> 32) as u32).wrapping_mul(0x7feb_352d);
                h ^= h >> 15;
                u64::from(h.wrapping_mul(0x846c_a68b) >> (32 - width))
            } else {
                let mut h = (half ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                h ^= h >> 32;
                h.wrapping_mul(0xd6e8_feb8_6659_fd93) >> (64 - width)
            }
        };
        let permute = |x: u64| {
            let (mut hi, mut lo) = (x >> lo_bits, x & ((1 << lo_bits) - 1));
            for pair in keys.chunks(2) {
                hi ^= round(lo, pair[0], hi_bits);
                lo ^= round(hi, pair[1], lo_bits);
            }
            (hi << lo_bits) | lo
        };
        let mut y = permute(p);
        while y >= n {
            y = permute(y);
        }
        y
    }
}

#[test]
fn matches_the_documented_model() {
    for (seed, n, batch) in [
        (0, 1, 1),
        (1, 7, 3),
        (2, 256, 10),
        (3, 257, 10),
        (4, 1000, 24),
        (5, (1 << 31) + 1, 16),
        (6, 1 << 32, 16),
        (7, (1 << 32) + 1, 16),
        (8, (1 << 40) + 7, 16),
        (9, u64::MAX, 16),
    ] {
        let iid = build(n, batch, seed, Mode::Iid);
        let cyclic = build(n, batch, seed, Mode::Cyclic);
        let per_cycle = n / batch;
        for step in [0, 1, 5, 1 << 33] {
            let expected: Vec<u64> = (0..batch).map(|k| model::iid(seed, n, step, k)).collect();
            assert_eq!(iid.batch_at(step), expected, "iid n {n} step {step}");
            let (cycle, first) = (step / per_cycle, (step % per_cycle) * batch);
            let expected: Vec<u64> = (first..first + batch)
                .map(|p| model::cyclic(seed, n, cycle, p))
                .collect();
            assert_eq!(cyclic.batch_at(step), expected, "cyclic n {n} step {step}");
        }
    }
    assert_eq!(model::word(0, 0), 0xe220_a839_7b1d_cdaf);
    assert_eq!(model::mix(0), 0);
}
