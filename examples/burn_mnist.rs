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
//! ```
//!
//! Where to get the files: see the README ("Burn"). This file is
//! self-contained: copy it into a crate of your own along with the
//! dependencies the README's Burn section lists, and zrecord's `idx` feature.

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
use zrecord::{Codec, DenseStore};
use zrecord_burn::{Batch, EpochMode, EpochReport, Mode, StoreDataLoader, dense_tensor};

/// Command-line options.
struct Options {
    data: PathBuf,
    stores: PathBuf,
    epochs: usize,
    batch: u64,
}

fn options() -> Result<Options, String> {
    let usage = "usage: burn_mnist MNIST_DIR [--epochs N] [--batch B] [--stores DIR]";
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        data: PathBuf::new(),
        stores: std::env::temp_dir().join("zrecord-burn-mnist"),
        epochs: 6,
        batch: 128,
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

/// Imports one split's images and labels into a zstd image store
/// (`u8`, 28×28) and a raw label store (`i64`). Returns the stores.
fn import(
    data: &Path,
    stores: &Path,
    split: &str,
) -> Result<(DenseStore<u8>, DenseStore<i64>), Box<dyn Error>> {
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
    let image_store = DenseStore::<u8>::create(dir.join("images"), &item_shape, Codec::Zstd)?;
    image_store.append(&images)?;
    let label_store = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw)?;
    label_store.append(&labels.iter().map(|&l| i64::from(l)).collect::<Vec<_>>())?;
    Ok((image_store, label_store))
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
    let options = options()?;
    let start = Instant::now();

    let (train_images, train_labels) = import(&options.data, &options.stores, "train")?;
    let (test_images, test_labels) = import(&options.data, &options.stores, "t10k")?;
    let pixels = train_images.record_len();
    let stats = train_images.stats()?;
    println!(
        "imported {} training and {} test images ({pixels} pixels) from {} in {:.1} s; \
         the training images take {:.1} MB in a zstd store ({:.1} MB raw)",
        train_images.len(),
        test_images.len(),
        options.data.display(),
        start.elapsed().as_secs_f64(),
        stats.chunk_bytes as f64 / 1e6,
        (train_images.len() as usize * pixels) as f64 / 1e6,
    );

    let device = Device::flex();
    let train = Arc::new(
        StoreDataLoader::builder(options.batch)
            .stream("image", train_images)
            .stream("label", train_labels)
            .seed(2024)
            .build(&device.clone().autodiff(), to_model_input)?,
    );
    // The test split in order, the same steps every epoch; a batch size that
    // divides 10,000 covers every image exactly once.
    let test_batch = [500, 400, 250, 200, 100]
        .into_iter()
        .find(|b| test_images.len().is_multiple_of(*b))
        .unwrap_or(100);
    let test = Arc::new(
        StoreDataLoader::builder(test_batch)
            .stream("image", test_images)
            .stream("label", test_labels)
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
    println!(
        "trained in {:.1} s; {:.1} s in all; {n} test images",
        training.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    println!("test_accuracy={accuracy:.4}");
    Ok(())
}
