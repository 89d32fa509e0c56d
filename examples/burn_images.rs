//! Train a small CNN with Burn from a folder of JPEG/PNG files.
//!
//! The images are stored encoded (a ragged `u8` store, as `zrecord import
//! images` writes it: each file decoded once to check it, one that does not
//! decode left out and counted) and decoded on the loader's worker threads: a random
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
//!
//! This file is self-contained: copy it into a crate of your own along with
//! the dependencies the README's Burn section lists, zrecord's `idx` and
//! zrecord-burn's `vision` features, and `png` (to write Fashion-MNIST out).

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::AdamConfig;
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep,
};
use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_burn::vision::{
    IMAGENET_MEAN, IMAGENET_STD, ImageFolder, RgbImage, Transform, read_checked,
};
use zrecord_burn::{
    BadRecords, Batch, EpochMode, EpochReport, Mode, StoreDataLoader, dense_tensor, image_tensor,
};

/// Seeds the training order and the augmentation.
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

/// Fashion-MNIST's class names in label order, as the folder names of the
/// written ImageFolder tree. The number in front makes the folders sort in
/// label order, and `ImageFolder` numbers classes by sorted folder name.
const FASHION_CLASSES: [&str; 10] = [
    "0-tshirt",
    "1-trouser",
    "2-pullover",
    "3-dress",
    "4-coat",
    "5-sandal",
    "6-shirt",
    "7-sneaker",
    "8-bag",
    "9-boot",
];

/// An IDX file of unsigned bytes, gzipped or plain: its dimensions and its
/// elements.
fn read_idx_u8(path: &Path) -> Result<(Vec<usize>, Vec<u8>), Box<dyn Error>> {
    Ok(zrecord::idx::open(path)?.read_as::<u8>()?)
}

/// Writes the images of IDX split `split` (e.g. `t10k`) in `idx_dir` as
/// grey PNG files: images `0..train` to `out/train/<class>/<n>.png` and the
/// next `test` to `out/test/<class>/<n>.png`. Gives the example a folder of
/// image files without a download beyond the IDX files.
fn write_fashion_pngs(
    idx_dir: &Path,
    split: &str,
    out: &Path,
    train: usize,
    test: usize,
) -> Result<(), Box<dyn Error>> {
    let find = |name: String| {
        zrecord::idx::find(idx_dir, &name)
            .ok_or_else(|| format!("{} has no {name}[.gz]", idx_dir.display()))
    };
    let (image_dims, images) = read_idx_u8(&find(format!("{split}-images-idx3-ubyte"))?)?;
    let (_, labels) = read_idx_u8(&find(format!("{split}-labels-idx1-ubyte"))?)?;
    let [n, h, w] = image_dims[..] else {
        return Err(format!("images shaped {image_dims:?}, not (N, H, W)").into());
    };
    if n < train + test || labels.len() != n {
        return Err(format!(
            "{n} images, {} labels: fewer than {}",
            labels.len(),
            train + test
        )
        .into());
    }
    for (k, (pixels, &label)) in images
        .chunks_exact(h * w)
        .zip(&labels)
        .take(train + test)
        .enumerate()
    {
        let part = if k < train { "train" } else { "test" };
        let class = FASHION_CLASSES
            .get(usize::from(label))
            .ok_or_else(|| format!("label {label} of image {k} is not a Fashion-MNIST class"))?;
        let dir = out.join(part).join(class);
        std::fs::create_dir_all(&dir)?;
        let mut png = Vec::new();
        let mut encoder = png::Encoder::new(&mut png, w as u32, h as u32);
        encoder.set_color(png::ColorType::Grayscale);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(pixels)?;
        writer.finish()?;
        std::fs::write(dir.join(format!("{k:05}.png")), png)?;
    }
    Ok(())
}

/// Imports the images of `folder` as they are (encoded) into a ragged `u8`
/// store `stores/images` and their labels into `stores/labels`, as
/// `zrecord import images --on-error skip` does: each image is decoded once
/// here, and one that does not decode (or cannot be read) is left out,
/// named and counted, so a truncated file is found now rather than in the
/// middle of the training. Training decodes again on the loader's workers.
fn import(
    folder: &ImageFolder,
    stores: &Path,
) -> Result<(RaggedStore<u8>, DenseStore<i64>), Box<dyn Error>> {
    let _ = std::fs::remove_dir_all(stores);
    let images = RaggedStore::<u8>::create(stores.join("images"), Codec::Raw)?;
    let labels = DenseStore::<i64>::create(stores.join("labels"), &[], Codec::Raw)?;
    let mut scratch = RgbImage::default();
    let mut skipped = 0;
    // 1,024 files at a time: the whole folder need not fit in memory.
    for chunk in folder.images.chunks(1024) {
        let (mut files, mut classes) = (Vec::new(), Vec::new());
        for image in chunk {
            match read_checked(&folder.root.join(&image.path), None, &mut scratch) {
                Ok(bytes) => {
                    files.push(bytes);
                    classes.push(image.label);
                }
                Err(e) => {
                    eprintln!("skipped {}: {e}", image.path.display());
                    skipped += 1;
                }
            }
        }
        if !files.is_empty() {
            images.append_slices(&files)?;
            labels.append(&classes)?;
        }
    }
    if images.is_empty() {
        return Err(format!("no image in {} decodes", folder.root.display()).into());
    }
    println!(
        "imported {} images of {} classes into {}{}",
        images.len(),
        folder.classes.len(),
        stores.display(),
        if skipped == 0 {
            String::new()
        } else {
            format!("; skipped {skipped} that did not decode")
        }
    );
    Ok((images, labels))
}

/// A batch of images and their class labels.
#[derive(Clone, Debug)]
struct PhotoBatch {
    /// `(B, 3, H, W)`, normalised.
    images: Tensor<4>,
    /// `(B,)`.
    labels: Tensor<1, Int>,
}

/// The training augmentation: a random crop of 60–100 % of the image
/// resized to `size × size`, flipped half the time.
fn augment(size: u32) -> Transform {
    Transform::random_resized_crop(size)
        .scale(0.6, 1.0)
        .flip(0.5)
        .normalize(IMAGENET_MEAN, IMAGENET_STD)
}

/// A loader batch → the model's input, on the worker threads: the encoded
/// images decoded and transformed into `(B, 3, S, S)`, and the labels. The
/// random crops and flips are keyed by `seed`, the step and the position in
/// the batch, so a run resumed at a step repeats them.
fn converter(
    transform: Transform,
    seed: u64,
) -> impl Fn(Batch, &Device) -> zrecord_burn::Result<PhotoBatch> + Send + Sync + 'static {
    move |mut batch, device| {
        let images = image_tensor(&batch, "image", &transform, seed, device)?;
        let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
        Ok(PhotoBatch { images, labels })
    }
}

/// conv 3→16 → pool → conv 16→32 → pool → linear → 128 → linear → classes.
#[derive(Module, Debug)]
struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    hidden: Linear,
    out: Linear,
}

impl Cnn {
    /// A classifier of `size × size` images into `classes` classes.
    fn new(size: usize, classes: usize, device: &Device) -> Cnn {
        // 3×3 convolutions padded to keep the side; each pool halves it.
        let conv = |i, o| {
            Conv2dConfig::new([i, o], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device)
        };
        let side = size / 4;
        Cnn {
            conv1: conv(3, 16),
            conv2: conv(16, 32),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            hidden: LinearConfig::new(32 * side * side, 128).init(device),
            out: LinearConfig::new(128, classes).init(device),
        }
    }

    /// Class logits `(B, classes)` of images `(B, 3, size, size)`.
    fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let x = self.pool.forward(relu(self.conv1.forward(images)));
        let x = self.pool.forward(relu(self.conv2.forward(x)));
        let x: Tensor<2> = x.flatten(1, 3);
        self.out.forward(relu(self.hidden.forward(x)))
    }

    fn classify(&self, batch: PhotoBatch) -> ClassificationOutput {
        let logits = self.forward(batch.images);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.labels.clone());
        ClassificationOutput::new(loss, logits, batch.labels)
    }
}

impl TrainStep for Cnn {
    type Input = PhotoBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: PhotoBatch) -> TrainOutput<ClassificationOutput> {
        let output = self.classify(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }
}

impl InferenceStep for Cnn {
    type Input = PhotoBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: PhotoBatch) -> ClassificationOutput {
        self.classify(batch)
    }
}

/// Correct predictions and images over one epoch of `loader`.
fn score(
    model: &Cnn,
    loader: &dyn DataLoader<PhotoBatch>,
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
    let centre = Transform::center_crop(size * 8 / 7, size).normalize(IMAGENET_MEAN, IMAGENET_STD);
    // Fashion-MNIST is already cropped to the object: test on the whole image.
    let centre = if options.fashion_mnist.is_some() {
        Transform::center_crop(size, size).normalize(IMAGENET_MEAN, IMAGENET_STD)
    } else {
        centre
    };
    let device = Device::flex();
    // The import left out what does not decode; should an image still fail
    // on the workers, the training replaces it (the same substitute on every
    // rank and after a resume) and counts it rather than stopping.
    let train = Arc::new(
        StoreDataLoader::builder(options.batch)
            .stream("image", train_images)
            .stream("label", train_labels)
            .seed(SEED)
            .bad_records(BadRecords::Skip)
            .workers(options.workers)
            .build(&device.clone().autodiff(), converter(augment(size), SEED))?,
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
            .build(&device, converter(centre, SEED))?,
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

    let (correct, n) = score(&result.model, test.as_ref())?;
    let accuracy = correct as f64 / n.max(1) as f64;
    let c = train.counters();
    println!(
        "loader: {} steps; on the workers, gather {:.1} s + decode and augment {:.1} s; \
         the training loop waited {:.2} s for data; {} bad images replaced",
        c.steps_delivered,
        c.gather_time.as_secs_f64(),
        c.transform_time.as_secs_f64(),
        c.consumer_wait.as_secs_f64(),
        c.bad_records_skipped,
    );
    println!(
        "trained in {:.1} s; {:.1} s in all; {n} test images",
        training.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    println!("test_accuracy={accuracy:.4}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use burn::optim::GradientsParams;

    use super::*;

    /// Fashion-MNIST's IDX files in `$ZRECORD_DATA/fashion-mnist` (the
    /// README says where to get them); `None`, saying so, when absent.
    fn fashion_mnist() -> Option<PathBuf> {
        let root = std::env::var_os("ZRECORD_DATA").map_or_else(|| "data".into(), PathBuf::from);
        let dir = root.join("fashion-mnist");
        if dir.is_dir() {
            Some(dir)
        } else {
            zrecord_testkit::skip(format!("{} is absent (set ZRECORD_DATA)", dir.display()));
            None
        }
    }

    /// 512 training PNGs imported into stores under a temporary folder.
    fn stores(idx: &Path) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        write_fashion_pngs(idx, "t10k", &dir.path().join("png"), 512, 0).unwrap();
        let folder = ImageFolder::scan(dir.path().join("png/train")).unwrap();
        assert_eq!(folder.classes, FASHION_CLASSES);
        assert_eq!(folder.images.len(), 512);
        let stores = dir.path().join("stores");
        let (images, labels) = import(&folder, &stores).unwrap();
        assert_eq!((images.len(), labels.len()), (512, 512));
        drop((images, labels)); // the loaders open them again
        (dir, stores)
    }

    /// A training loader over the stores, augmenting, from `start_step`.
    fn loader(stores: &Path, start_step: u64, device: &Device) -> StoreDataLoader<PhotoBatch> {
        let images = RaggedStore::<u8>::open(stores.join("images")).unwrap();
        let labels = DenseStore::<i64>::open(stores.join("labels")).unwrap();
        StoreDataLoader::builder(32)
            .stream("image", images)
            .stream("label", labels)
            .seed(5)
            .start_step(start_step)
            .build(device, converter(augment(28), 5))
            .unwrap()
    }

    /// A few training steps through the loader's image transforms lower the
    /// loss.
    #[test]
    fn a_few_steps_from_png_files_lower_the_loss() {
        let Some(idx) = fashion_mnist() else { return };
        let (_dir, stores) = stores(&idx);
        let device = Device::flex().autodiff();
        let train = loader(&stores, 0, &device);
        let mut model = Cnn::new(28, 10, &device);
        let mut optim = AdamConfig::new().init();
        let mut losses = Vec::new();
        // 40 steps: 16 batches an epoch, so two epochs and a half.
        for batch in std::iter::repeat_with(|| train.iter()).flatten().take(40) {
            let batch = batch.unwrap();
            assert_eq!(batch.images.dims(), [32, 3, 28, 28]);
            let output = model.classify(batch);
            losses.push(output.loss.clone().into_scalar::<f32>());
            let grads = GradientsParams::from_grads(output.loss.backward(), &model);
            model = optim.step(2e-3, model, grads);
        }
        let mean = |s: &[f32]| s.iter().sum::<f32>() / s.len() as f32;
        let (first, last) = (mean(&losses[..8]), mean(&losses[32..]));
        println!("loss {first:.3} -> {last:.3}");
        assert!(last < 0.8 * first, "loss {first} -> {last}: {losses:?}");
    }

    /// The import decodes every file and leaves out, and counts, one that
    /// does not decode; the labels stay with their images.
    #[test]
    fn the_import_leaves_out_an_image_that_does_not_decode() {
        let dir = tempfile::tempdir().unwrap();
        for (k, class) in ["a", "a", "b", "b", "b"].into_iter().enumerate() {
            let folder = dir.path().join("png").join(class);
            std::fs::create_dir_all(&folder).unwrap();
            let mut png = zrecord_burn::vision::testing::png_rgb(12, 10, k as u8);
            if k == 3 {
                png.truncate(png.len() / 2);
            }
            std::fs::write(folder.join(format!("{k}.png")), png).unwrap();
        }
        let folder = ImageFolder::scan(dir.path().join("png")).unwrap();
        let (images, labels) = import(&folder, &dir.path().join("stores")).unwrap();
        assert_eq!(images.len(), 4);
        let labels = labels.gather(&[0, 1, 2, 3]).unwrap();
        assert_eq!(labels.as_slice(), Some(&[0, 0, 1, 1][..]));
    }

    /// A loader resumed at a step reproduces that step's crops exactly.
    #[test]
    fn a_loader_resumed_at_a_step_reproduces_its_crops() {
        let Some(idx) = fashion_mnist() else { return };
        let (_dir, stores) = stores(&idx);
        let device = Device::flex();
        let from_start: Vec<Vec<f32>> = loader(&stores, 0, &device)
            .iter()
            .take(4)
            .map(|b| b.unwrap().images.into_data().try_to_vec::<f32>().unwrap())
            .collect();
        let resumed = loader(&stores, 3, &device).iter().next().unwrap().unwrap();
        assert_eq!(
            resumed.images.into_data().try_to_vec::<f32>().unwrap(),
            from_start[3]
        );
        assert_ne!(from_start[2], from_start[3]);
    }
}
