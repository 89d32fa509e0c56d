//! The quickstart: write the scikit-learn handwritten digits (shipped in
//! `examples/data/`) into zrecord stores, train a small Burn model on them
//! with Burn's `Learner` fed by a zrecord data loader, then print the test
//! accuracy and what the loader did.
//!
//! ```text
//! cargo run --release --example quickstart [-- DIR]
//! ```
//!
//! Offline; about a minute on two cores (most of it compiling Burn the first
//! time). The stores and Burn's training logs go under `DIR` (default: the
//! system temp folder).

use std::error::Error;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::AdamConfig;
use burn::tensor::{Device, Int, Tensor};
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::{Learner, SupervisedTraining};
use zrecord::{Codec, DenseStore};
use zrecord_burn::EpochReport;
use zrecord_burn::{Batch, EpochMode, Mode, StoreDataLoader, dense_tensor};
use zrecord_examples::classifier::{ImageBatch, Mlp, accuracy};
use zrecord_examples::digits;

/// Every fifth digit is held out for testing.
fn is_test(index: usize) -> bool {
    index.is_multiple_of(5)
}

/// Writes one split into an image store (64 `f32` pixels per record) and a
/// label store (one `i64` per record).
fn write_split(
    dir: &Path,
    digits: &digits::Digits,
    test: bool,
) -> Result<(DenseStore<f32>, DenseStore<i64>), zrecord::Error> {
    let keep = |k: &usize| is_test(*k) == test;
    let pixels: Vec<f32> = digits
        .pixels
        .chunks(64)
        .enumerate()
        .filter(|(k, _)| keep(k))
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    let labels: Vec<i64> = digits
        .labels
        .iter()
        .enumerate()
        .filter(|(k, _)| keep(k))
        .map(|(_, &l)| l)
        .collect();
    let images = DenseStore::<f32>::create(dir.join("images"), &[64], Codec::Zstd)?;
    images.append(&pixels)?;
    let label_store = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw)?;
    label_store.append(&labels)?;
    Ok((images, label_store))
}

/// A loader batch → the model's input. The pixels are `f32` in the store,
/// as the model wants them, so the gathered buffer becomes the tensor as it is.
fn to_model_input(mut batch: Batch, device: &Device) -> zrecord_burn::Result<ImageBatch> {
    let images: Tensor<2> = dense_tensor(&mut batch, "image", device)?;
    let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
    Ok(ImageBatch { images, labels })
}

fn main() -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    let root = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("zrecord-quickstart"),
        Into::into,
    );
    let _ = std::fs::remove_dir_all(&root);

    // 1. The data: 1,797 8×8 digits into four zrecord stores.
    let digits = digits::read(&digits::shipped_path())?;
    let (train_images, train_labels) = write_split(&root.join("train"), &digits, false)?;
    let (test_images, test_labels) = write_split(&root.join("test"), &digits, true)?;
    println!(
        "wrote {} training and {} test digits to zrecord stores under {}",
        train_images.len(),
        test_images.len(),
        root.display()
    );

    // 2. Data loaders: our sampler (a fresh permutation every epoch), two
    //    worker threads gathering and converting ahead of the training loop.
    let device = Device::flex();
    let train = Arc::new(
        StoreDataLoader::builder(32)
            .stream("image", train_images)
            .stream("label", train_labels)
            .seed(7)
            .build(&device.clone().autodiff(), to_model_input)?,
    );
    let test = Arc::new(
        StoreDataLoader::builder(40) // 360 test digits: 9 full batches
            .stream("image", test_images)
            .stream("label", test_labels)
            .mode(Mode::Sequential)
            .epoch_mode(EpochMode::Repeat)
            .build(&device, to_model_input)?,
    );

    // 3. Burn's Learner trains from them as from any Burn data loader.
    let epochs = 20;
    let steps = epochs * train.steps_per_epoch() as usize;
    println!(
        "training a 64-256-10 perceptron for {epochs} epochs of {} steps",
        train.steps_per_epoch()
    );
    let model = Mlp::new(&[64, 256, 10], &device.clone().autodiff());
    let schedule = CosineAnnealingLrSchedulerConfig::new(3e-3, steps).init()?;
    let learner = Learner::new(model, AdamConfig::new().init(), schedule);
    let result = SupervisedTraining::new(root.join("training"), train.clone(), test.clone())
        .metrics((AccuracyMetric::new(), LossMetric::new()))
        .num_epochs(epochs)
        .renderer(Box::new(EpochReport::new()))
        .with_application_logger(None)
        .launch(learner);
    if let Some(error) = result.error {
        return Err(format!("training stopped: {error}").into());
    }

    // 4. Test accuracy, and what the loader did.
    let (accuracy, n) = accuracy(&result.model, test.as_ref())?;
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
