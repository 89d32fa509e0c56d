//! Golden values: the streams are part of the contract. The same configuration
//! yields these exact indices on every platform and in every release with the
//! same `SamplerState::VERSION`; a change here is a change of algorithm.
//!
//! The values are not the sampler's own output: `tests/reference/golden.txt`
//! is the output of `tests/reference/sampler.py`, an independent Python
//! implementation of zsampler/README.md's "The streams, exactly". The test
//! regenerates it wherever python3 is installed. A second model, in Rust,
//! checks the iid and cyclic streams over many more configurations.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rand_core::Rng;
use zsampler::{CounterRng, Mode, Sampler};

const GOLDEN: &str = include_str!("reference/golden.txt");

fn build(len: u64, batch: u64, seed: u64, mode: Mode) -> Sampler {
    Sampler::builder(len, batch)
        .seed(seed)
        .mode(mode)
        .build()
        .unwrap()
}

/// The subsets golden.txt names: `ap:start,step,count` or `list:a,b,…`.
fn subset(name: &str) -> Vec<u64> {
    let (kind, numbers) = name.split_once(':').expect("a subset name");
    let numbers: Vec<u64> = numbers.split(',').map(|n| n.parse().unwrap()).collect();
    match kind {
        "ap" => (0..numbers[2])
            .map(|i| numbers[0] + i * numbers[1])
            .collect(),
        "list" => numbers,
        other => panic!("unknown subset kind {other}"),
    }
}

/// The sampler a `sample` line describes.
fn sampler(p: &HashMap<&str, &str>) -> Sampler {
    let num = |key: &str| -> u64 { p[key].parse().unwrap_or_else(|_| panic!("{key} in {p:?}")) };
    let mode = match p["mode"] {
        "sequential" => Mode::Sequential,
        "iid" => Mode::Iid,
        "cyclic" => Mode::Cyclic,
        "block" => Mode::Block {
            block_size: num("block_size"),
            window_blocks: num("window_blocks"),
        },
        other => panic!("unknown mode {other}"),
    };
    let builder = match p["subset"] {
        "-" => Sampler::builder(num("len"), num("batch")),
        name => Sampler::builder_subset(Arc::<[u64]>::from(subset(name)), num("batch")),
    };
    builder
        .seed(num("seed"))
        .mode(mode)
        .shard(num("rank"), num("world"))
        .build()
        .unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

#[test]
fn the_sampler_reproduces_the_reference_values() {
    let mut checked = HashMap::new();
    for line in GOLDEN.lines().filter(|l| !l.starts_with('#')) {
        let (name, values) = line.split_once(" : ").expect("`name : values`");
        let values: Vec<u64> = values.split(' ').map(|v| v.parse().unwrap()).collect();
        let mut words = name.split(' ');
        let kind = words.next().unwrap();
        let p: HashMap<&str, &str> = words.map(|w| w.split_once('=').unwrap()).collect();
        match kind {
            "sample" => {
                let sampler = sampler(&p);
                assert_eq!(sampler.len(), p["len"].parse::<u64>().unwrap(), "{name}");
                let step = p["step"].parse().unwrap();
                assert_eq!(sampler.batch_at(step), values, "{name}");
            }
            "fingerprint" => {
                let sampler = Sampler::builder_subset(subset(p["subset"]), 1)
                    .build()
                    .unwrap();
                assert_eq!(sampler.subset_fingerprint(), Some(values[0]), "{name}");
            }
            "counter" => {
                let (seed, stream) = (p["seed"].parse().unwrap(), p["stream"].parse().unwrap());
                let mut rng = CounterRng::new(seed, stream);
                let words: Vec<u64> = values.iter().map(|_| rng.next_u64()).collect();
                assert_eq!(words, values, "{name}");
                // `step_rng(s)` is the same stream.
                let sampler = build(10, 1, seed, Mode::Iid);
                assert_eq!(sampler.step_rng(stream).next_u64(), values[0], "{name}");
            }
            other => panic!("unknown golden line kind {other}"),
        }
        *checked
            .entry(p.get("mode").copied().unwrap_or(kind))
            .or_insert(0) += 1;
    }
    println!("golden values checked: {checked:?}");
    for kind in [
        "sequential",
        "iid",
        "cyclic",
        "block",
        "fingerprint",
        "counter",
    ] {
        assert!(
            checked.get(kind).copied().unwrap_or(0) >= 3,
            "{kind}: {checked:?}"
        );
    }
}

#[test]
fn golden_txt_is_what_the_reference_says() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference");
    let output = match std::process::Command::new("python3")
        .arg(dir.join("sampler.py"))
        .arg("--check")
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            zrecord_testkit::skip(format!(
                "python3 does not run here ({e}); golden.txt stands unchecked"
            ));
            return;
        }
    };
    assert!(
        output.status.success(),
        "sampler.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout) == GOLDEN,
        "golden.txt differs from the reference's output: run \
         `python3 tests/reference/sampler.py > tests/reference/golden.txt` and review the change"
    );
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
