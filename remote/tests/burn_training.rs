//! Burn trains from a sharded dataset in object storage: the handwritten
//! digits the examples ship, written as three shards (as three import jobs
//! would), joined, pushed to the loopback server and read back as one index
//! space through a node cache by `StoreDataLoader`, a perceptron's loss
//! falling step by step.

mod support;

use std::io::Read;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use zrecord::{Codec, Dataset, DenseStore, shard_folder};
use zrecord_burn::{Batch, StoreDataLoader, dense_tensor};
use zrecord_remote::{Error, open_dataset, push};

#[derive(Module, Debug)]
struct Mlp {
    hidden: Linear,
    output: Linear,
}

impl Mlp {
    fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        self.output.forward(relu(self.hidden.forward(images)))
    }
}

struct Digits {
    images: Tensor<2>,
    labels: Tensor<1, Int>,
}

fn to_input(mut batch: Batch, device: &Device) -> zrecord_burn::Result<Digits> {
    Ok(Digits {
        images: dense_tensor(&mut batch, "image", device)?,
        labels: dense_tensor(&mut batch, "label", device)?,
    })
}

/// The digits (`examples/data/digits.csv.gz`: 64 pixels and a label a row)
/// written as `shards` shards of two streams under `dir`, then joined.
fn write_digits(dir: &std::path::Path, shards: usize) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/data/digits.csv.gz"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let (mut pixels, mut labels) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.is_empty()) {
        let values: Vec<f32> = line.split(',').map(|v| v.trim().parse().unwrap()).collect();
        pixels.extend(values[..64].iter().map(|p| p / 16.0));
        labels.push(values[64] as i64);
    }
    let rows = labels.len();
    for k in 0..shards {
        let (from, to) = (k * rows / shards, (k + 1) * rows / shards);
        let shard = dir.join(shard_folder(k as u64, shards as u64));
        std::fs::create_dir_all(&shard).unwrap();
        let images = DenseStore::<f32>::create(shard.join("image"), &[64], Codec::Zstd).unwrap();
        images.append(&pixels[from * 64..to * 64]).unwrap();
        let label = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw).unwrap();
        label.append(&labels[from..to]).unwrap();
    }
    Dataset::join(dir).unwrap();
}

#[test]
fn a_perceptron_learns_the_digits_from_s3() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    write_digits(dir.path(), 3);
    let bucket = support::bucket(endpoint, "digits");
    let url = format!("s3://{bucket}/digits");
    push(
        dir.path(),
        &url,
        &support::s3_options(endpoint),
        false,
        |_, _| {},
    )
    .unwrap();

    let cache = tempfile::tempdir().unwrap();
    let options = support::s3_options(endpoint).cache(cache.path(), 64 << 20);
    let dataset = open_dataset(&url, options).unwrap();
    assert_eq!((dataset.len(), dataset.manifest().shards.len()), (1797, 3));
    let device = Device::flex().autodiff();
    let loader = StoreDataLoader::builder(32)
        .dataset(dataset)
        .seed(7)
        .build(&device, to_input)
        .unwrap();

    let mut model = Mlp {
        hidden: LinearConfig::new(64, 64).init(&device),
        output: LinearConfig::new(64, 10).init(&device),
    };
    let mut optimizer = AdamConfig::new().init();
    let mut losses = Vec::new();
    // Epochs of the loader (each a permutation of the digits) until 150 steps.
    while losses.len() < 150 {
        for batch in loader.iter().take(150 - losses.len()) {
            let batch = batch.unwrap();
            let logits = model.forward(batch.images);
            let loss = CrossEntropyLossConfig::new()
                .init(&logits.device())
                .forward(logits, batch.labels);
            losses.push(loss.clone().into_scalar::<f32>());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(3e-3, model, grads);
        }
    }
    let mean = |s: &[f32]| s.iter().sum::<f32>() / s.len() as f32;
    let (first, last) = (mean(&losses[..20]), mean(&losses[130..]));
    assert!(last < first * 0.5, "loss {first:.3} → {last:.3}");
    // The records were fetched by the loader's workers and are in its
    // counters (building the loader reads nothing).
    let counters = loader.counters();
    assert!(
        counters.cache_misses > 0 && counters.cache_hits > 0 && counters.fetched_bytes > 0,
        "{counters:?}"
    );
}

#[test]
fn a_dataset_without_its_manifest_is_an_unfinished_upload() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    write_digits(dir.path(), 2);
    std::fs::remove_file(dir.path().join("dataset.zr")).unwrap();
    let bucket = support::bucket(endpoint, "unjoined");
    let url = format!("s3://{bucket}/digits");
    let options = support::s3_options(endpoint);
    push(dir.path(), &url, &options, false, |_, _| {}).unwrap();
    let open = open_dataset(&url, options.clone()).unwrap_err();
    assert!(matches!(open, Error::Incomplete { .. }), "{open}");
    let target = dir.path().join("pulled");
    let pulled = zrecord_remote::pull(&url, &target, &options, |_, _| {}).unwrap_err();
    assert!(matches!(pulled, Error::Incomplete { .. }), "{pulled}");
}
