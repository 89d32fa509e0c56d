//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use zrecord::{Codec, DType, DictTier, Dictionary};

pub mod appenders;
pub mod backends;

/// Every file of a store folder, by name: to prove an operation changed nothing.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The names in `dir`, sorted: to check what an operation left behind.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Reads `reader` (a child's stdout or stderr) line by line until a line
/// holds `marker`; what came before goes to `seen`. False if the stream
/// ended first: the child died.
pub fn wait_for(reader: &mut impl std::io::BufRead, marker: &str, seen: &mut String) -> bool {
    let mut line = String::new();
    loop {
        line.clear();
        if reader
            .read_line(&mut line)
            .expect("read the child's output")
            == 0
        {
            return false;
        }
        if line.contains(marker) {
            return true;
        }
        seen.push_str(&line);
    }
}

/// SplitMix64 output `k` of the stream seeded with `seed`.
pub fn splitmix(seed: u64, k: u64) -> u64 {
    let mut z = seed.wrapping_add((k + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` deterministic bytes that are valid elements of `dtype` (0/1 for bool).
pub fn valid_bytes(dtype: DType, seed: u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            let b = splitmix(seed, i as u64 / 4) as u8 ^ (i as u8).wrapping_mul(31);
            if dtype == DType::Bool { b & 1 } else { b % 17 }
        })
        .collect()
}

/// A dictionary trained once for the whole test binary.
pub fn dictionary() -> Dictionary {
    static DICT: OnceLock<Dictionary> = OnceLock::new();
    DICT.get_or_init(|| {
        let samples: Vec<Vec<u8>> = (0..2000u64)
            .map(|r| valid_bytes(DType::U8, r % 50, 64 + (r % 7) as usize * 16))
            .collect();
        let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
        zrecord::train_dict(&refs, DictTier::Fast).unwrap()
    })
    .clone()
}

/// The three codecs, by index 0..3.
pub fn codec(i: usize) -> Codec {
    match i % 3 {
        0 => Codec::Raw,
        1 => Codec::Zstd,
        _ => Codec::ZstdDict(dictionary()),
    }
}
