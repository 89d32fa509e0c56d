//! The `burn_gpt` model trains from a packed token store: a few dozen steps
//! on the first verses of the shipped King James Bible bring the held-out
//! loss well below the uniform guess (ln 256 = 5.55 nats per byte).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use burn::tensor::Device;
use zrecord::{Codec, RaggedStore};
use zrecord_examples::gpt::{GptConfig, TrainConfig, train};
use zrecord_loader::Packing;

#[test]
fn a_few_steps_bring_the_loss_down() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/kjv.txt.gz");
    let text = flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap());
    let verses: Vec<Vec<u8>> = BufReader::new(text)
        .split(b'\n')
        .take(1500)
        .map(|l| {
            let mut l = l.unwrap();
            l.push(b'\n');
            l
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let store = RaggedStore::<u8>::create(dir.path().join("kjv"), Codec::Zstd).unwrap();
    store.append_slices(&verses).unwrap();
    let validation: Vec<u64> = (0..1500).step_by(50).collect();
    let config = TrainConfig {
        model: GptConfig {
            vocab: 256,
            context: 32,
            d_model: 32,
            heads: 2,
            layers: 1,
        },
        rows: 8,
        learning_rate: 1e-2,
        warmup: 5,
        max_steps: 60,
        budget: Duration::from_secs(600),
        eval_every: 20,
        packing: Packing::BestFit,
        seed: 1,
    };
    let mut seen = Vec::new();
    let report = train(
        Arc::new(store.into_dyn()),
        &validation,
        &config,
        &Device::flex(),
        |e| seen.push(e.val_loss),
    )
    .unwrap();
    assert_eq!(report.evals.len(), 3);
    let (first, last) = (report.evals[0], report.evals[2]);
    assert!(last.val_loss < 4.0, "{:?}", report.evals);
    assert!(last.val_loss < first.train_loss, "{:?}", report.evals);
    assert!(report.tokens_per_second > 0.0);
    assert_eq!(
        seen,
        report.evals.iter().map(|e| e.val_loss).collect::<Vec<_>>()
    );
    let sample = report.model.generate(&[b'T'.into()], 5, 1.0, 3);
    assert!(sample.len() == 5 && sample.iter().all(|&t| t < 256));
}
