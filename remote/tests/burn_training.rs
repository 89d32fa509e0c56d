//! Burn trains from a dataset in object storage: the handwritten digits the
//! examples ship, pushed to the loopback server, read back through a node
//! cache by `StoreDataLoader`, a perceptron's loss falling step by step.

mod support;

use std::io::Read;
use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use zrecord::{Codec, DenseStore, DynDenseStore, OpenOptions};
use zrecord_burn::{Batch, StoreDataLoader, dense_tensor};
use zrecord_remote::{Remote, push};

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
/// written as a dataset of two stores under `dir`.
fn write_digits(dir: &std::path::Path) {
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
    let images = DenseStore::<f32>::create(dir.join("image"), &[64], Codec::Zstd).unwrap();
    images.append(&pixels).unwrap();
    let label_store = DenseStore::<i64>::create(dir.join("label"), &[], Codec::Raw).unwrap();
    label_store.append(&labels).unwrap();
}

#[test]
fn a_perceptron_learns_the_digits_from_s3() {
    let endpoint = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    write_digits(dir.path());
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
    let mut remotes = Vec::new();
    let mut open = |name: &str| {
        let options = support::s3_options(endpoint).cache(cache.path(), 64 << 20);
        let remote = Arc::new(Remote::open(&format!("{url}/{name}"), options).unwrap());
        remotes.push(Arc::clone(&remote));
        DynDenseStore::open_in(remote, OpenOptions::new().read_only(true)).unwrap()
    };
    let device = Device::flex().autodiff();
    let loader = StoreDataLoader::builder(32)
        .stream("image", open("image").typed::<f32>().unwrap())
        .stream("label", open("label").typed::<i64>().unwrap())
        .seed(7)
        .build(&device, to_input)
        .unwrap();
    let fetched = || remotes.iter().map(|r| r.stats().bytes_fetched).sum::<u64>();
    let at_open = fetched();

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
    // Every byte fetched after the stores opened was fetched by the loader's
    // workers and is in its counters (building the loader reads nothing).
    let counters = loader.counters();
    assert!(
        counters.cache_misses > 0 && counters.cache_hits > 0,
        "{counters:?}"
    );
    assert_eq!(counters.fetched_bytes, fetched() - at_open, "{counters:?}");
}
