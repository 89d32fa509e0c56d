//! Batches are the same for every worker count and prefetch depth, in step
//! order, and every stream is gathered at the batch's indices.

mod common;

use zrecord_loader::{Batch, Loader, Mode};

/// What a test sees of one batch: step, indices, labels, image values, token
/// values and token offsets.
type Seen = (u64, Vec<u64>, Vec<i64>, Vec<f32>, Vec<u32>, Vec<usize>);

fn run(
    streams: &common::Streams,
    mode: Mode,
    workers: usize,
    prefetch: usize,
    n: u64,
) -> Vec<Seen> {
    let mut loader = Loader::builder(32)
        .stream("label", streams.label.clone())
        .stream("image", streams.image.clone())
        .stream("tokens", streams.tokens.clone())
        .mode(mode)
        .seed(11)
        .workers(workers)
        .prefetch(prefetch)
        .build()
        .unwrap();
    loader.steps(n).map(|b| record(&b.unwrap())).collect()
}

fn record(batch: &Batch) -> Seen {
    let label = batch.dense::<i64>("label").unwrap();
    let image = batch.dense::<f32>("image").unwrap();
    let tokens = batch.ragged::<u32>("tokens").unwrap();
    assert_eq!(image.shape(), &[32, 3, 4]);
    // Alignment: record k of every stream is record indices[k].
    for (k, &i) in batch.indices().iter().enumerate() {
        assert_eq!(label[[k]], i as i64);
        assert!(
            image
                .index_axis(ndarray::Axis(0), k)
                .iter()
                .all(|&v| v == i as f32)
        );
        let seq = tokens.get(k).unwrap();
        assert_eq!(seq.len(), (i % 7 + 1) as usize);
        assert!(seq.iter().all(|&t| u64::from(t) == i));
    }
    (
        batch.step(),
        batch.indices().to_vec(),
        label.iter().copied().collect(),
        image.iter().copied().collect(),
        tokens.values().to_vec(),
        tokens.layout().offsets().to_vec(),
    )
}

#[test]
fn every_worker_count_yields_the_same_batches() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    for mode in [
        Mode::Cyclic,
        Mode::Iid,
        Mode::Sequential,
        Mode::Block {
            block_size: 8,
            window_blocks: 4,
        },
    ] {
        let reference = run(&streams, mode, 1, 1, 40);
        assert!(
            reference.iter().enumerate().all(|(s, b)| b.0 == s as u64),
            "steps arrive in order"
        );
        for (workers, prefetch) in [(2, 4), (4, 2), (4, 16)] {
            assert_eq!(
                run(&streams, mode, workers, prefetch, 40),
                reference,
                "{mode}, {workers} workers"
            );
        }
    }
}

#[test]
fn cyclic_batches_cover_the_data_once_per_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let mut loader = Loader::builder(30)
        .stream("label", streams.label.clone())
        .workers(3)
        .build()
        .unwrap();
    assert_eq!(loader.steps_per_epoch(), 10);
    let epoch = loader.steps_per_epoch();
    let steps = loader.steps(epoch);
    assert_eq!(steps.len(), 10);
    let mut labels: Vec<i64> = steps
        .flat_map(|b| {
            b.unwrap()
                .dense::<i64>("label")
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>()
        })
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, (0..300).collect::<Vec<_>>());
    assert_eq!(loader.step(), 10);
}
