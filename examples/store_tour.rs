//! A tour of the store: build a dense image store and a ragged token store from
//! generated data, gather random batches, delete, compact and verify.
//!
//! ```text
//! cargo run --release --example store_tour [-- DIR]
//! ```

use std::error::Error;
use std::time::Instant;

use zrecord::{Codec, DenseStore, DictTier, RaggedStore};

/// SplitMix64: a tiny deterministic generator for the demo data.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn main() -> Result<(), Box<dyn Error>> {
    let root = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("zrecord-store-tour"),
        Into::into,
    );
    let _ = std::fs::remove_dir_all(&root);
    println!("stores under {}", root.display());

    // 1. 60,000 MNIST-like 28×28 images: a noisy disc on black.
    let n = 60_000u64;
    let images: Vec<u8> = (0..n * 784)
        .map(|i| {
            let (r, p) = (i / 784, i % 784);
            let (x, y) = ((p % 28) as i64 - 14, (p / 28) as i64 - 14);
            let radius = 5 + (r % 7) as i64;
            if x * x + y * y < radius * radius {
                128 + (splitmix(i) % 128) as u8
            } else {
                0
            }
        })
        .collect();
    let labels: Vec<i64> = (0..n).map(|r| (r % 7) as i64).collect();

    for codec in [Codec::Raw, Codec::Zstd] {
        let path = root.join(format!("images-{codec}"));
        let start = Instant::now();
        let store = DenseStore::<u8>::create(&path, &[28, 28], codec.clone())?;
        for batch in images.chunks(4096 * 784) {
            store.append(batch)?;
        }
        store.sync()?;
        let write = start.elapsed();
        report(
            &format!("images ({codec})"),
            &store.stats()?,
            write,
            gather_rate(&store, n)?,
        );
    }
    let labels_store = DenseStore::<i64>::create(root.join("labels"), &[], Codec::Raw)?;
    labels_store.append(&labels)?;

    // 2. A dictionary trained on the images, for a store of small similar records.
    let raw = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(root.join("images-raw"))?;
    let dict = raw.train_dict(DictTier::Balanced)?;
    let dict_store = DenseStore::<u8>::create(
        root.join("images-zstd_dict"),
        &[28, 28],
        Codec::ZstdDict(dict),
    )?;
    let start = Instant::now();
    for batch in images.chunks(4096 * 784) {
        dict_store.append(batch)?;
    }
    report(
        "images (zstd_dict)",
        &dict_store.stats()?,
        start.elapsed(),
        gather_rate(&dict_store, n)?,
    );

    // 3. Ragged token sequences of 16..512 tokens.
    let tokens = RaggedStore::<u32>::create(root.join("tokens"), Codec::Zstd)?;
    let sequences: Vec<Vec<u32>> = (0..20_000u64)
        .map(|r| {
            (0..16 + splitmix(r) % 497)
                .map(|t| (splitmix(r * 1000 + t) % 50_257) as u32)
                .collect()
        })
        .collect();
    tokens.append_slices(&sequences)?;
    let batch = tokens.gather(&[7, 3, 7])?;
    println!(
        "tokens: {} sequences; a gathered batch of {} has lengths {:?} in one buffer of {} tokens",
        tokens.len(),
        batch.len(),
        batch.layout().lengths().collect::<Vec<_>>(),
        batch.values().len()
    );

    // 4. Delete every other image, then reclaim the space in place.
    let mut store = DenseStore::<u8>::open(root.join("images-zstd"))?;
    let doomed: Vec<u64> = (0..n).step_by(2).collect();
    store.delete(&doomed)?;
    let before = store.stats()?;
    store.compact()?;
    let after = store.stats()?;
    println!(
        "delete + compact: {} records left; reclaimable {} -> {} bytes",
        after.records, before.reclaimable_bytes, after.reclaimable_bytes
    );
    let checked = store.verify()?;
    println!("verify: {} records decoded and checked", checked.records);
    println!("label of record 12: {}", labels_store.gather(&[12])?[[0]]);
    Ok(())
}

/// Random batches of 256 per second, and MiB/s of logical bytes.
fn gather_rate(store: &DenseStore<u8>, n: u64) -> Result<(f64, f64), Box<dyn Error>> {
    let mut out = vec![0u8; 256 * 784];
    let start = Instant::now();
    let batches = 400u64;
    for b in 0..batches {
        let indices: Vec<u64> = (0..256).map(|k| splitmix(b * 256 + k) % n).collect();
        store.gather_into(&indices, &mut out)?;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((
        batches as f64 / secs,
        (batches * 256 * 784) as f64 / secs / (1 << 20) as f64,
    ))
}

fn report(name: &str, s: &zrecord::Stats, write: std::time::Duration, (batches, mib): (f64, f64)) {
    println!(
        "{name:20} {:>7} records  {:>6.1} MiB -> {:>6.1} MiB on disk ({:.2}x)  write {:>5.0} ms  gather {:>6.0} batches/s ({:.0} MiB/s)",
        s.records,
        s.logical_bytes as f64 / (1 << 20) as f64,
        s.chunk_bytes as f64 / (1 << 20) as f64,
        s.logical_bytes as f64 / s.chunk_bytes.max(1) as f64,
        write.as_secs_f64() * 1e3,
        batches,
        mib
    );
}
