//! A small convolutional classifier for the image examples: two 3×3
//! convolution + max-pool stages and two linear layers, trained by Burn's
//! `Learner` on `(B, 3, H, W)` batches.

use burn::data::dataloader::DataLoader;
use burn::data::dataset::DatasetError;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};

/// A batch of images and their class labels.
#[derive(Clone, Debug)]
pub struct PhotoBatch {
    /// `(B, 3, H, W)`, normalised.
    pub images: Tensor<4>,
    /// `(B,)`, the class of each image.
    pub labels: Tensor<1, Int>,
}

/// conv 3→16 → pool → conv 16→32 → pool → linear → 128 → linear → classes.
#[derive(Module, Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    hidden: Linear,
    out: Linear,
}

impl Cnn {
    /// A classifier of `size × size` images into `classes` classes.
    pub fn new(size: usize, classes: usize, device: &Device) -> Cnn {
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
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let x = self.pool.forward(relu(self.conv1.forward(images)));
        let x = self.pool.forward(relu(self.conv2.forward(x)));
        let x: Tensor<2> = x.flatten(1, 3);
        self.out.forward(relu(self.hidden.forward(x)))
    }

    /// Logits, loss and targets of a batch.
    pub fn classify(&self, batch: PhotoBatch) -> ClassificationOutput {
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

/// The share of images in one epoch of `loader` that `model` classifies
/// correctly, and how many images that was.
///
/// # Errors
/// The first error the loader yields.
pub fn accuracy(
    model: &Cnn,
    loader: &dyn DataLoader<PhotoBatch>,
) -> Result<(f64, usize), DatasetError> {
    let (mut correct, mut total) = (0usize, 0usize);
    for batch in loader.iter() {
        let batch = batch?;
        let predicted = model.forward(batch.images).argmax(1).flatten::<1>(0, 1);
        total += batch.labels.dims()[0];
        correct += predicted
            .equal(batch.labels)
            .int()
            .sum()
            .into_scalar::<i64>()
            .max(0) as usize;
    }
    Ok((correct as f64 / total.max(1) as f64, total))
}
