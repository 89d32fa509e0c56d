//! The quickstart: write the scikit-learn handwritten digits (shipped in
//! `examples/data/`) into zrecord stores, train a small Burn model on them
//! in a plain training loop fed by zrecord data loaders, then print the test
//! accuracy — over every test digit — and what the loader did.
//!
//! ```text
//! cargo run --profile quickstart -p zrecord-quickstart [-- DIR]
//! ```
//!
//! Offline; a few minutes the first time (compiling Burn), then seconds. The stores go under `DIR` (default: the system temp folder). This
//! file is self-contained: copy it into a crate of your own along with the
//! dependencies the README's Burn section lists. `burn_mnist.rs` trains with
//! Burn's `Learner` from the same kind of loaders instead.

use std::error::Error;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use zrecord::{Codec, DenseStore};
use zrecord_burn::{Batch, EpochMode, Mode, StoreDataLoader, dense_tensor};

/// Every fifth digit is held out for testing.
fn is_test(index: usize) -> bool {
    index.is_multiple_of(5)
}

/// Reads `digits.csv.gz` — rows of 64 pixels (0–16) and a label, no header —
/// into pixels scaled to 0.0..=1.0 and labels.
fn read_digits(path: &Path) -> Result<(Vec<f32>, Vec<i64>), Box<dyn Error>> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text)?;
    let (mut pixels, mut labels) = (Vec::new(), Vec::new());
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let values: Vec<u8> = line
            .split(',')
            .map(|v| v.trim().parse())
            .collect::<Result<_, _>>()?;
        match values.split_last() {
            Some((&label, row)) if row.len() == 64 && label <= 9 => {
                pixels.extend(row.iter().map(|&p| f32::from(p) / 16.0));
                labels.push(i64::from(label));
            }
            _ => {
                return Err(format!(
                    "{} line {}: expected 64 pixels and a label",
                    path.display(),
                    n + 1
                )
                .into());
            }
        }
    }
    Ok((pixels, labels))
}

/// Writes one split into an image store (64 `f32` pixels per record) and a
/// label store (one `i64` per record).
fn write_split(
    dir: &Path,
    pixels: &[f32],
    labels: &[i64],
    test: bool,
) -> Result<(DenseStore<f32>, DenseStore<i64>), zrecord::Error> {
    let keep = |k: &usize| is_test(*k) == test;
    let images = DenseStore::<f32>::create(dir.join("images"), &[64], Codec::Zstd)?;
    let split: Vec<f32> = pixels
        .chunks(64)
        .enumerate()
        .filter(|(k, _)| keep(k))
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    images.append(&split)?;
    let label_store = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw)?;
    let split: Vec<i64> = labels
        .iter()
        .enumerate()
        .filter(|(k, _)| keep(k))
        .map(|(_, &l)| l)
        .collect();
    label_store.append(&split)?;
    Ok((images, label_store))
}

/// A batch of flattened images and their class labels.
#[derive(Clone, Debug)]
struct ImageBatch {
    /// `(B, 64)`.
    images: Tensor<2>,
    /// `(B,)`.
    labels: Tensor<1, Int>,
}

/// A loader batch → the model's input, on the loader's worker threads. The
/// pixels are `f32` in the store, as the model wants them, so the gathered
/// buffer becomes the tensor as it is.
fn to_model_input(mut batch: Batch, device: &Device) -> zrecord_burn::Result<ImageBatch> {
    let images: Tensor<2> = dense_tensor(&mut batch, "image", device)?;
    let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
    Ok(ImageBatch { images, labels })
}

/// A perceptron with one hidden layer.
#[derive(Module, Debug)]
struct Mlp {
    hidden: Linear,
    output: Linear,
}

impl Mlp {
    fn new(inputs: usize, hidden: usize, classes: usize, device: &Device) -> Mlp {
        Mlp {
            hidden: LinearConfig::new(inputs, hidden).init(device),
            output: LinearConfig::new(hidden, classes).init(device),
        }
    }

    /// Class logits `(B, classes)`.
    fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        self.output.forward(relu(self.hidden.forward(images)))
    }

    /// The mean cross-entropy of the batch's predictions.
    fn loss(&self, batch: ImageBatch) -> Tensor<1> {
        let logits = self.forward(batch.images);
        CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits, batch.labels)
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
    let start = Instant::now();
    let root = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("zrecord-quickstart"),
        Into::into,
    );
    let _ = std::fs::remove_dir_all(&root); // start fresh

    // 1. The data: 1,797 8×8 digits into four zrecord stores.
    let (pixels, labels) =
        read_digits(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/digits.csv.gz"))?;
    let (train_images, train_labels) = write_split(&root.join("train"), &pixels, &labels, false)?;
    let (test_images, test_labels) = write_split(&root.join("test"), &pixels, &labels, true)?;
    println!(
        "wrote {} training and {} test digits to zrecord stores under {}",
        train_images.len(),
        test_images.len(),
        root.display()
    );

    // 2. Data loaders: our sampler (a fresh permutation every epoch), two
    //    worker threads gathering and converting ahead of the training loop.
    //    The test loader reads in order and scores every digit once per
    //    epoch: 360 digits are 5 batches of 64 and a last one of 40.
    let device = Device::flex();
    let autodiff = device.clone().autodiff();
    let train = StoreDataLoader::builder(32)
        .stream("image", train_images)
        .stream("label", train_labels)
        .seed(7)
        .build(&autodiff, to_model_input)?;
    let test = StoreDataLoader::builder(64)
        .stream("image", test_images)
        .stream("label", test_labels)
        .mode(Mode::Sequential)
        .epoch_mode(EpochMode::Repeat)
        .build(&device, to_model_input)?;

    // 3. A plain Burn training loop: each `train.iter()` is one epoch; a
    //    data error arrives as an `Err`, never a panic.
    let epochs = 20;
    let steps = epochs * train.steps_per_epoch() as usize;
    println!(
        "training a 64-256-10 perceptron for {epochs} epochs of {} steps",
        train.steps_per_epoch()
    );
    let mut model = Mlp::new(64, 256, 10, &autodiff);
    let mut optimizer = AdamConfig::new().init();
    let mut schedule = CosineAnnealingLrSchedulerConfig::new(3e-3, steps).init()?;
    for epoch in 1..=epochs {
        let (mut loss_sum, mut batches) = (0.0, 0);
        for batch in train.iter() {
            let loss = model.loss(batch?);
            loss_sum += loss.clone().into_scalar::<f32>();
            batches += 1;
            let gradients = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(schedule.step(), model, gradients);
        }
        if epoch % 5 == 0 || epoch == 1 {
            let (correct, n) = score(&model.valid(), &test)?;
            println!(
                "epoch {epoch:2}/{epochs}  train loss {:.4}  test accuracy {:.2} %",
                loss_sum / batches.max(1) as f32,
                100.0 * correct as f64 / n.max(1) as f64
            );
        }
    }

    // 4. Test accuracy, and what the loader did.
    let (correct, n) = score(&model.valid(), &test)?;
    let accuracy = correct as f64 / n.max(1) as f64;
    let c = train.counters();
    println!(
        "loader: {} steps, {:.1} MB gathered, gather {:.0} ms + convert {:.0} ms on the workers, \
         training loop waited {:.0} ms for data",
        c.steps_delivered,
        c.bytes_gathered as f64 / 1e6,
        c.gather_time.as_secs_f64() * 1e3,
        c.transform_time.as_secs_f64() * 1e3,
        c.consumer_wait.as_secs_f64() * 1e3,
    );
    println!("done in {:.1} s", start.elapsed().as_secs_f64());
    println!(
        "test accuracy: {:.2} % on {n} held-out digits",
        accuracy * 100.0
    );
    Ok(())
}
