//! A sharded dataset as the loader's streams: the same batches as one store
//! holding every record, and a block shuffle whose blocks are whole shards
//! reads one shard at a time.

use zrecord::{Codec, Dataset, DenseStore, RaggedStore, shard_folder};
use zrecord_loader::{Batch, Loader, Mode};

/// `sizes` shards of a label stream (record `i` holds `i`) and a token
/// stream (record `i` is `i % 5 + 1` copies of `i`), joined.
fn sharded(dir: &std::path::Path, sizes: &[u64]) -> Dataset {
    let mut next = 0u64;
    for (k, &n) in sizes.iter().enumerate() {
        let shard = dir.join(shard_folder(k as u64, sizes.len() as u64));
        std::fs::create_dir_all(&shard).unwrap();
        let ids: Vec<i64> = (next as i64..(next + n) as i64).collect();
        let labels = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw).unwrap();
        labels.append(&ids).unwrap();
        let tokens = RaggedStore::<u32>::create(shard.join("tokens"), Codec::Zstd).unwrap();
        let docs: Vec<Vec<u32>> = ids
            .iter()
            .map(|&i| vec![i as u32; i as usize % 5 + 1])
            .collect();
        tokens.append_slices(&docs).unwrap();
        next += n;
    }
    Dataset::join(dir).unwrap();
    Dataset::open(dir).unwrap()
}

/// Each batch's labels, checked against its indices and tokens.
fn labels(batch: &Batch) -> Vec<i64> {
    let labels: Vec<i64> = batch
        .dense::<i64>("label")
        .unwrap()
        .iter()
        .copied()
        .collect();
    let indices: Vec<i64> = batch.indices().iter().map(|&i| i as i64).collect();
    assert_eq!(labels, indices);
    let tokens = batch.ragged::<u32>("tokens").unwrap();
    for (k, &i) in batch.indices().iter().enumerate() {
        let doc = tokens.get(k).unwrap();
        assert_eq!(doc.len(), i as usize % 5 + 1);
        assert!(doc.iter().all(|&t| u64::from(t) == i));
    }
    labels
}

#[test]
fn shards_load_as_the_records_of_one_index_space() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = sharded(dir.path(), &[40, 0, 25, 35]);
    assert_eq!(dataset.len(), 100);
    let mut loader = Loader::builder(16)
        .dataset(dataset)
        .mode(Mode::Cyclic)
        .seed(3)
        .build()
        .unwrap();
    let mut seen: Vec<i64> = (0..6)
        .flat_map(|_| labels(&loader.next_batch().unwrap()))
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 96); // one cycle: a permutation, the remainder dropped
}

/// Shards each of the first 14 batches (one cycle) reads, for `mode`.
fn shards_per_batch(dataset: Dataset, mode: Mode) -> Vec<usize> {
    let mut loader = Loader::builder(16)
        .dataset(dataset)
        .mode(mode)
        .seed(5)
        .build()
        .unwrap();
    (0..14)
        .map(|_| {
            let labels = labels(&loader.next_batch().unwrap());
            let mut shards: Vec<i64> = labels.iter().map(|l| l / 64).collect();
            shards.sort_unstable();
            shards.dedup();
            shards.len()
        })
        .collect()
}

#[test]
fn a_block_shuffle_of_whole_shards_reads_one_shard_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = sharded(dir.path(), &[64, 64, 64, 40]);
    let block = dataset.shard_block().unwrap();
    assert_eq!(block, 64);
    let mode = Mode::Block {
        block_size: block,
        window_blocks: 1,
    };
    let blocked = shards_per_batch(dataset.clone(), mode);
    // One shard per batch, but where a batch crosses from one block (shard)
    // to the next — at most once per block boundary of the cycle.
    assert!(blocked.iter().all(|&n| n <= 2), "{blocked:?}");
    assert!(
        blocked.iter().filter(|&&n| n == 2).count() <= 3,
        "{blocked:?}"
    );
    assert!(
        blocked.iter().filter(|&&n| n == 1).count() >= 11,
        "{blocked:?}"
    );
    // A plain shuffle reads nearly every shard in every batch.
    let shuffled = shards_per_batch(dataset, Mode::Cyclic);
    assert!(shuffled.iter().sum::<usize>() > 3 * 14, "{shuffled:?}");
}
