//! Train a small CNN with Burn from a folder of JPEG/PNG files.
//!
//! The images are stored encoded (a ragged `u8` store, as `zrecord import
//! images` writes it) and decoded on the loader's worker threads: a random
//! resized crop and a flip for training, the centre for testing, normalised
//! and written straight into the batch tensor. Trains with Burn's `Learner`,
//! evaluates on the test folder and prints, last, `test_accuracy=<value>`.
//!
//! ```text
//! # any two ImageFolder trees (<class>/<image>), e.g. Imagenette's train/ and val/:
//! cargo run --release --example burn_images -- TRAIN_DIR TEST_DIR [--size 64] [--epochs N]
//! # Fashion-MNIST's test split written out as PNG files: 9,000 to train on, 1,000 to test on
//! cargo run --release --example burn_images -- --fashion-mnist IDX_DIR
//! ```
//!
//! Options: `--size S` (crop side, default 28), `--epochs N` (10), `--batch B`
//! (64), `--workers W` (2), `--stores DIR` (where the stores and the written
//! folders go; default a temporary folder).

use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::AdamConfig;
use burn::tensor::{Device, Int, Tensor};
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::{Learner, SupervisedTraining};
use zrecord_burn::EpochReport;
use zrecord_burn::vision::{IMAGENET_MEAN, IMAGENET_STD, ImageFolder, Transform};
use zrecord_burn::{Batch, EpochMode, Mode, StoreDataLoader, dense_tensor, image_tensor};
use zrecord_examples::cnn::{Cnn, PhotoBatch, accuracy};
use zrecord_examples::image_folder::{import, write_fashion_pngs};

const SEED: u64 = 2024;

/// Command-line options.
struct Options {
    train: PathBuf,
    test: PathBuf,
    fashion_mnist: Option<PathBuf>,
    stores: PathBuf,
    size: u32,
    epochs: usize,
    batch: u64,
    workers: usize,
}

fn options() -> Result<Options, String> {
    let usage = "usage: burn_images (TRAIN_DIR TEST_DIR | --fashion-mnist IDX_DIR) \
                 [--size S] [--epochs N] [--batch B] [--workers W] [--stores DIR]";
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        train: PathBuf::new(),
        test: PathBuf::new(),
        fashion_mnist: None,
        stores: std::env::temp_dir().join("zrecord-burn-images"),
        size: 28,
        epochs: 10,
        batch: 64,
        workers: 2,
    };
    let mut folders = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{usage}"));
        let number = |text: String| text.parse::<u64>().map_err(|e| format!("{text}: {e}"));
        match arg.as_str() {
            "--fashion-mnist" => options.fashion_mnist = Some(value(&arg)?.into()),
            "--stores" => options.stores = value(&arg)?.into(),
            "--size" => options.size = number(value(&arg)?)? as u32,
            "--epochs" => options.epochs = number(value(&arg)?)? as usize,
            "--batch" => options.batch = number(value(&arg)?)?,
            "--workers" => options.workers = number(value(&arg)?)? as usize,
            "-h" | "--help" => return Err(usage.into()),
            _ if !arg.starts_with('-') => folders.push(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}\n{usage}")),
        }
    }
    match (&options.fashion_mnist, &folders[..]) {
        (Some(_), []) => {
            options.train = options.stores.join("folders/train");
            options.test = options.stores.join("folders/test");
        }
        (None, [train, test]) => (options.train, options.test) = (train.clone(), test.clone()),
        _ => return Err(usage.into()),
    }
    Ok(options)
}

/// A loader batch → the model's input, on the worker threads: the encoded
/// images decoded and transformed into `(B, 3, S, S)`, and the labels.
fn converter(
    transform: Transform,
) -> impl Fn(Batch, &Device) -> zrecord_burn::Result<PhotoBatch> + Send + Sync + 'static {
    move |mut batch, device| {
        let images = image_tensor(&batch, "image", &transform, SEED, device)?;
        let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
        Ok(PhotoBatch { images, labels })
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = options()?;
    let start = Instant::now();
    if let Some(idx) = &options.fashion_mnist {
        write_fashion_pngs(idx, "t10k", &options.stores.join("folders"), 9_000, 1_000)?;
        println!(
            "wrote Fashion-MNIST's test split as 9,000 + 1,000 PNG files under {} in {:.1} s",
            options.stores.join("folders").display(),
            start.elapsed().as_secs_f64()
        );
    }
    let train_folder = ImageFolder::scan(&options.train)?;
    let test_folder = ImageFolder::scan(&options.test)?;
    if train_folder.classes != test_folder.classes {
        return Err("the train and test folders have different classes".into());
    }
    let imported = Instant::now();
    let (train_images, train_labels) = import(&train_folder, &options.stores.join("train"))?;
    let (test_images, test_labels) = import(&test_folder, &options.stores.join("test"))?;
    println!(
        "imported {} training and {} test images of {} classes ({:.1} MB encoded) in {:.1} s",
        train_images.len(),
        test_images.len(),
        train_folder.classes.len(),
        train_images.stats()?.chunk_bytes as f64 / 1e6,
        imported.elapsed().as_secs_f64()
    );

    let size = options.size;
    let augment = Transform::random_resized_crop(size)
        .scale(0.6, 1.0)
        .flip(0.5)
        .normalize(IMAGENET_MEAN, IMAGENET_STD);
    let centre = Transform::center_crop(size * 8 / 7, size).normalize(IMAGENET_MEAN, IMAGENET_STD);
    // Fashion-MNIST is already cropped to the object: test on the whole image.
    let centre = if options.fashion_mnist.is_some() {
        Transform::center_crop(size, size).normalize(IMAGENET_MEAN, IMAGENET_STD)
    } else {
        centre
    };
    let device = Device::flex();
    let train = Arc::new(
        StoreDataLoader::builder(options.batch)
            .stream("image", train_images)
            .stream("label", train_labels)
            .seed(SEED)
            .workers(options.workers)
            .build(&device.clone().autodiff(), converter(augment))?,
    );
    let test_batch = [250, 200, 125, 100, 50, 25, 20, 10, 5, 4, 2, 1]
        .into_iter()
        .find(|b| test_images.len().is_multiple_of(*b))
        .unwrap_or(1);
    let test = Arc::new(
        StoreDataLoader::builder(test_batch)
            .stream("image", test_images)
            .stream("label", test_labels)
            .mode(Mode::Sequential)
            .epoch_mode(EpochMode::Repeat)
            .workers(options.workers)
            .build(&device, converter(centre))?,
    );

    let steps = train.steps_per_epoch() as usize * options.epochs;
    println!(
        "training a CNN on {size}x{size} crops: {} epochs of {} steps of {} images",
        options.epochs,
        train.steps_per_epoch(),
        options.batch
    );
    let classes = train_folder.classes.len();
    let model = Cnn::new(size as usize, classes, &device.clone().autodiff());
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

    let (accuracy, n) = accuracy(&result.model, test.as_ref())?;
    let c = train.counters();
    println!(
        "loader: {} steps; on the workers, gather {:.1} s + decode and augment {:.1} s; \
         the training loop waited {:.2} s for data",
        c.steps_delivered,
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
