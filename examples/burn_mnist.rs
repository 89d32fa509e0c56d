//! Train on MNIST (or Fashion-MNIST) with Burn, from zrecord stores.
//!
//! Imports the four IDX files of a folder (gzipped or plain, named as LeCun
//! names them: `train-images-idx3-ubyte[.gz]`, `train-labels-idx1-ubyte[.gz]`,
//! `t10k-images-idx3-ubyte[.gz]`, `t10k-labels-idx1-ubyte[.gz]`) into zstd
//! stores, trains a multi-layer perceptron with Burn's `Learner` fed by a
//! zrecord data loader, evaluates it on the test split and prints, last,
//! `test_accuracy=<value>`.
//!
//! ```text
//! cargo run --release --example burn_mnist -- MNIST_DIR [--epochs N] [--batch B] [--stores DIR]
//! cargo run --release --example burn_mnist -- MNIST_DIR --via s3://bucket/mnist
//! ```
//!
//! Each split is written as a sharded dataset (`--shards N`, default 1) and
//! read through `Dataset`. With `--via URL` both splits are pushed to object
//! storage and the model trains from there, through a local cache: credentials, region and
//! endpoint come from the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_ENDPOINT_URL`, …).
//!
//! Where to get the files: see the README ("Burn"). This file is
//! self-contained: copy it into a crate of your own along with the
//! dependencies the README's Burn section lists, zrecord's `idx` feature and
//! `zrecord-remote` (for `--via`).

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::AdamConfig;
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep,
};
use zrecord::{Codec, Dataset, DenseStore, shard_folder};
use zrecord_burn::{Batch, EpochMode, EpochReport, Mode, StoreDataLoader, dense_tensor};

/// Command-line options.
struct Options {
    data: PathBuf,
    stores: PathBuf,
    epochs: usize,
    batch: u64,
    shards: u64,
    /// Object storage to push the datasets to and train from.
    via: Option<String>,
    /// How to reach it (from the environment).
    remote: zrecord_remote::RemoteOptions,
}

fn options() -> Result<Options, String> {
    let usage = "usage: burn_mnist MNIST_DIR [--epochs N] [--batch B] [--stores DIR] [--shards N] \
                 [--via URL]";
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        data: PathBuf::new(),
        stores: std::env::temp_dir().join("zrecord-burn-mnist"),
        epochs: 6,
        batch: 128,
        shards: 1,
        via: None,
        remote: zrecord_remote::RemoteOptions::new(),
    };
    let mut data = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{usage}"));
        match arg.as_str() {
            "--epochs" => {
                options.epochs = value("--epochs")?.parse().map_err(|e| format!("{e}"))?;
            }
            "--batch" => options.batch = value("--batch")?.parse().map_err(|e| format!("{e}"))?,
            "--stores" => options.stores = value("--stores")?.into(),
            "--shards" => {
                options.shards = value("--shards")?.parse().map_err(|e| format!("{e}"))?;
                if options.shards == 0 {
                    return Err("--shards must be at least 1".into());
                }
            }
            "--via" => options.via = Some(value("--via")?),
            "-h" | "--help" => return Err(usage.into()),
            _ if data.is_none() && !arg.starts_with('-') => data = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}\n{usage}")),
        }
    }
    options.data = data.ok_or(usage)?;
    Ok(options)
}

/// An IDX file of unsigned bytes, gzipped or plain: its dimensions
/// (`[60000, 28, 28]` for MNIST's training images) and its elements.
fn read_idx_u8(path: &Path) -> Result<(Vec<usize>, Vec<u8>), Box<dyn Error>> {
    Ok(zrecord::idx::open(path)?.read_as::<u8>()?)
}

/// What an import wrote: images, pixels per image, bytes of zstd data.
struct Imported {
    images: u64,
    pixels: usize,
    stored_bytes: u64,
}

/// Imports one split's images and labels as a sharded dataset in
/// `stores/split`: shard k of n holds a zstd image store (`u8`, 28×28) and a
/// raw label store (`i64`), as n parallel import jobs would write them; the
/// join writes the manifest.
fn import(
    data: &Path,
    stores: &Path,
    split: &str,
    shards: u64,
) -> Result<Imported, Box<dyn Error>> {
    let find = |name: String| {
        zrecord::idx::find(data, &name).ok_or_else(|| {
            format!(
                "{} has no {name} (or {name}.gz); Fashion-MNIST's train split comes from \
                 Debian's dataset-fashion-mnist package (see the README)",
                data.display()
            )
        })
    };
    let (image_dims, images) = read_idx_u8(&find(format!("{split}-images-idx3-ubyte"))?)?;
    let (label_dims, labels) = read_idx_u8(&find(format!("{split}-labels-idx1-ubyte"))?)?;
    let item_shape = image_dims.get(1..).unwrap_or(&[]).to_vec();
    if image_dims.first() != label_dims.first() || item_shape.is_empty() {
        return Err(format!(
            "{split}: images {image_dims:?} and labels {label_dims:?} do not match"
        )
        .into());
    }
    let dir = stores.join(split);
    let _ = std::fs::remove_dir_all(&dir);
    let pixels: usize = item_shape.iter().product();
    let per_shard = labels.len().div_ceil(shards as usize);
    let mut stored_bytes = 0;
    for k in 0..shards {
        let first = (k as usize * per_shard).min(labels.len());
        let last = (first + per_shard).min(labels.len());
        let shard = dir.join(shard_folder(k, shards));
        let image = DenseStore::<u8>::create(shard.join("image"), &item_shape, Codec::Zstd)?;
        image.append(&images[first * pixels..last * pixels])?;
        stored_bytes += image.stats()?.chunk_bytes;
        let label = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw)?;
        label.append(
            &labels[first..last]
                .iter()
                .map(|&l| i64::from(l))
                .collect::<Vec<_>>(),
        )?;
    }
    Dataset::join(&dir)?;
    Ok(Imported {
        images: labels.len() as u64,
        pixels,
        stored_bytes,
    })
}

/// The datasets to train and test from: the local folders, or with `--via`
/// their copies in object storage.
fn open_splits(options: &Options) -> Result<(Dataset, Dataset), Box<dyn Error>> {
    match &options.via {
        None => Ok((
            Dataset::open(options.stores.join("train"))?,
            Dataset::open(options.stores.join("t10k"))?,
        )),
        Some(url) => remote::push_and_open(options, url),
    }
}

mod remote {
    use super::*;
    use zrecord_remote::{open_dataset, push};

    /// Pushes both splits to `url/train` and `url/t10k` (dataset.zr last,
    /// checksums read back) and opens them there, read through a cache
    /// beside the stores.
    pub(crate) fn push_and_open(
        options: &Options,
        url: &str,
    ) -> Result<(Dataset, Dataset), Box<dyn Error>> {
        let cache = options.stores.join("cache");
        let open = |split: &str| -> Result<Dataset, Box<dyn Error>> {
            let target = format!("{}/{split}", url.trim_end_matches('/'));
            let report = push(
                &options.stores.join(split),
                &target,
                &options.remote,
                true,
                |_, _| {},
            )?;
            println!(
                "pushed {split} to {target}: {:.1} MB",
                report.bytes as f64 / 1e6
            );
            let reading = options.remote.clone().cache(&cache, 1 << 30);
            Ok(open_dataset(&target, reading)?)
        };
        Ok((open("train")?, open("t10k")?))
    }
}

/// A batch of flattened, normalised images and their class labels.
#[derive(Clone, Debug)]
struct ImageBatch {
    /// `(B, pixels)`.
    images: Tensor<2>,
    /// `(B,)`.
    labels: Tensor<1, Int>,
}

/// A loader batch → the model's input: `u8` pixels to normalised `f32`
/// (Burn casts the gathered buffer once), flattened to `(B, 784)`.
fn to_model_input(mut batch: Batch, device: &Device) -> zrecord_burn::Result<ImageBatch> {
    let images: Tensor<3> = dense_tensor(&mut batch, "image", device)?;
    let [b, h, w] = images.dims();
    let images = ((images.reshape([b, h * w]) / 255.0) - 0.1307) / 0.3081;
    let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
    Ok(ImageBatch { images, labels })
}

/// A perceptron with two hidden layers: pixels → 256 → 128 → 10.
#[derive(Module, Debug)]
struct Mlp {
    hidden1: Linear,
    hidden2: Linear,
    output: Linear,
}

impl Mlp {
    fn new(pixels: usize, device: &Device) -> Mlp {
        Mlp {
            hidden1: LinearConfig::new(pixels, 256).init(device),
            hidden2: LinearConfig::new(256, 128).init(device),
            output: LinearConfig::new(128, 10).init(device),
        }
    }

    /// Class logits `(B, 10)`.
    fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        let x = relu(self.hidden1.forward(images));
        let x = relu(self.hidden2.forward(x));
        self.output.forward(x)
    }

    fn classify(&self, batch: ImageBatch) -> ClassificationOutput {
        let logits = self.forward(batch.images);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.labels.clone());
        ClassificationOutput::new(loss, logits, batch.labels)
    }
}

impl TrainStep for Mlp {
    type Input = ImageBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: ImageBatch) -> TrainOutput<ClassificationOutput> {
        let output = self.classify(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }
}

impl InferenceStep for Mlp {
    type Input = ImageBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: ImageBatch) -> ClassificationOutput {
        self.classify(batch)
    }
}

/// Correct predictions and images over one epoch of `loader`.
fn score(
    model: &Mlp,
    loader: &dyn DataLoader<ImageBatch>,
) -> Result<(usize, usize), Box<dyn Error>> {
    let (mut correct, mut total) = (0, 0);
    for batch in loader.iter() {
        let batch = batch?;
        let predicted = model.forward(batch.images).argmax(1).flatten::<1>(0, 1);
        total += batch.labels.dims()[0];
        correct += predicted
            .equal(batch.labels)
            .int()
            .sum()
            .into_scalar::<i64>() as usize;
    }
    Ok((correct, total))
}

fn main() -> Result<(), Box<dyn Error>> {
    let accuracy = train(&options()?)?;
    println!("test_accuracy={accuracy:.4}");
    Ok(())
}

/// Imports, trains and scores as `options` say; returns the test accuracy.
fn train(options: &Options) -> Result<f64, Box<dyn Error>> {
    let start = Instant::now();
    let imported = import(&options.data, &options.stores, "train", options.shards)?;
    let tested = import(&options.data, &options.stores, "t10k", options.shards)?;
    let pixels = imported.pixels;
    println!(
        "imported {} training and {} test images ({pixels} pixels) from {} in {:.1} s; \
         the training images take {:.1} MB in zstd stores ({:.1} MB raw), {} shard(s)",
        imported.images,
        tested.images,
        options.data.display(),
        start.elapsed().as_secs_f64(),
        imported.stored_bytes as f64 / 1e6,
        (imported.images as usize * pixels) as f64 / 1e6,
        options.shards,
    );
    let (train_set, test_set) = open_splits(options)?;

    let device = Device::flex();
    let train = Arc::new(
        StoreDataLoader::builder(options.batch)
            .dataset(train_set)
            .seed(2024)
            .build(&device.clone().autodiff(), to_model_input)?,
    );
    // The test split in order, the same steps every epoch; a batch size that
    // divides the test images covers every one exactly once.
    let test_batch = [500, 400, 250, 200, 100]
        .into_iter()
        .find(|b| tested.images.is_multiple_of(*b))
        .unwrap_or(100);
    let test = Arc::new(
        StoreDataLoader::builder(test_batch)
            .dataset(test_set)
            .mode(Mode::Sequential)
            .epoch_mode(EpochMode::Repeat)
            .build(&device, to_model_input)?,
    );

    let steps = train.steps_per_epoch() as usize * options.epochs;
    println!(
        "training a {pixels}-256-128-10 perceptron: {} epochs of {} steps of {} images",
        options.epochs,
        train.steps_per_epoch(),
        options.batch
    );
    let model = Mlp::new(pixels, &device.clone().autodiff());
    let scheduler = CosineAnnealingLrSchedulerConfig::new(2e-3, steps.max(1)).init()?;
    let learner = Learner::new(model, AdamConfig::new().init(), scheduler);
    let training = Instant::now();
    let result =
        SupervisedTraining::new(options.stores.join("training"), train.clone(), test.clone())
            .metrics((AccuracyMetric::new(), LossMetric::new()))
            .num_epochs(options.epochs)
            .renderer(Box::new(EpochReport::new()))
            .with_application_logger(None)
            .launch(learner);
    if let Some(error) = result.error {
        return Err(format!("training stopped: {error}").into());
    }
    let training = training.elapsed();

    let (correct, n) = score(&result.model, test.as_ref())?;
    let accuracy = correct as f64 / n.max(1) as f64;
    let c = train.counters();
    println!(
        "loader: {} steps, {:.0} MB gathered, gather {:.1} s + convert {:.1} s on the workers, \
         training loop waited {:.2} s for data",
        c.steps_delivered,
        c.bytes_gathered as f64 / 1e6,
        c.gather_time.as_secs_f64(),
        c.transform_time.as_secs_f64(),
        c.consumer_wait.as_secs_f64(),
    );
    if options.via.is_some() {
        println!(
            "object storage: {} blocks fetched ({:.1} MB), {} read from the cache",
            c.cache_misses,
            c.fetched_bytes as f64 / 1e6,
            c.cache_hits
        );
    }
    println!(
        "trained in {:.1} s; {:.1} s in all; {n} test images",
        training.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    Ok(accuracy)
}

/// The S3-compatible test server the remote tests use (started here when
/// `ZRECORD_S3_ENDPOINT` names none).
#[cfg(test)]
#[path = "../remote/tests/support/mod.rs"]
mod support;

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// The digits the examples ship (`data/digits.csv.gz`, 8×8 pixels of
    /// 0..16 and a label a row) as MNIST's four IDX files: 1,500 to train,
    /// the other 297 to test.
    fn digits_as_idx(dir: &Path) {
        let mut text = String::new();
        let csv = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits.csv.gz");
        flate2::read::GzDecoder::new(std::fs::File::open(csv).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let rows: Vec<Vec<u8>> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                l.split(',')
                    .map(|v| v.trim().parse::<f32>().unwrap() as u8)
                    .collect()
            })
            .collect();
        let idx = |dims: &[u32], data: Vec<u8>| {
            let mut out = vec![0, 0, 8, dims.len() as u8];
            dims.iter().for_each(|d| out.extend(d.to_be_bytes()));
            out.extend(data);
            out
        };
        for (split, part) in [("train", &rows[..1500]), ("t10k", &rows[1500..])] {
            let n = part.len() as u32;
            let pixels = part
                .iter()
                .flat_map(|r| r[..64].iter().map(|&v| v * 15))
                .collect();
            let labels = part.iter().map(|r| r[64]).collect();
            std::fs::write(
                dir.join(format!("{split}-images-idx3-ubyte")),
                idx(&[n, 8, 8], pixels),
            )
            .unwrap();
            std::fs::write(
                dir.join(format!("{split}-labels-idx1-ubyte")),
                idx(&[n], labels),
            )
            .unwrap();
        }
    }

    #[test]
    fn trains_from_a_sharded_dataset_in_s3() {
        let (endpoint, _watchdog) = server_or_skip!();
        let dir = tempfile::tempdir().unwrap();
        digits_as_idx(dir.path());
        let bucket = support::bucket(endpoint, "burn-mnist");
        let options = Options {
            data: dir.path().into(),
            stores: dir.path().join("stores"),
            epochs: 2,
            batch: 64,
            shards: 3,
            via: Some(format!("s3://{bucket}/digits")),
            remote: support::s3_options(endpoint),
        };
        let accuracy = train(&options).unwrap();
        // 2 epochs of 23 steps; chance is 0.1.
        assert!(accuracy > 0.5, "test accuracy {accuracy}");
        // Both splits are in the bucket as datasets: the manifest went last.
        let train = zrecord_remote::open_dataset(
            &format!("s3://{bucket}/digits/train"),
            support::s3_options(endpoint),
        )
        .unwrap();
        assert_eq!((train.len(), train.manifest().shards.len()), (1500, 3));
    }
}
