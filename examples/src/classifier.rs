//! A small image classifier for the examples: a multi-layer perceptron over
//! flattened images, trained by Burn's `Learner`.

use burn::data::dataloader::DataLoader;
use burn::data::dataset::DatasetError;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor};
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};

/// A batch of images (flattened, normalised) and their class labels.
#[derive(Clone, Debug)]
pub struct ImageBatch {
    /// `(B, pixels)`.
    pub images: Tensor<2>,
    /// `(B,)`, the class of each image.
    pub labels: Tensor<1, Int>,
}

/// A multi-layer perceptron: linear layers with ReLU between them.
#[derive(Module, Debug)]
pub struct Mlp {
    layers: Vec<Linear>,
}

impl Mlp {
    /// Layers of `sizes[0] → sizes[1] → … → sizes[n]` on `device`.
    pub fn new(sizes: &[usize], device: &Device) -> Mlp {
        Mlp {
            layers: sizes
                .windows(2)
                .map(|w| LinearConfig::new(w[0], w[1]).init(device))
                .collect(),
        }
    }

    /// Class logits `(B, classes)` of images `(B, pixels)`.
    pub fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        let last = self.layers.len().saturating_sub(1);
        let mut x = images;
        for (k, layer) in self.layers.iter().enumerate() {
            x = layer.forward(x);
            if k < last {
                x = relu(x);
            }
        }
        x
    }

    /// Logits, loss and targets of a batch.
    pub fn classify(&self, batch: ImageBatch) -> ClassificationOutput {
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

/// The share of images in one epoch of `loader` that `model` classifies
/// correctly, and how many images that was.
///
/// # Errors
/// The first error the loader yields.
pub fn accuracy(
    model: &Mlp,
    loader: &dyn DataLoader<ImageBatch>,
) -> Result<(f64, usize), DatasetError> {
    let (mut correct, mut total) = (0usize, 0usize);
    for batch in loader.iter() {
        let batch = batch?;
        let predicted = model.forward(batch.images).argmax(1).flatten::<1>(0, 1);
        let labels = batch.labels;
        total += labels.dims()[0];
        correct += predicted
            .equal(labels)
            .int()
            .sum()
            .into_scalar::<i64>()
            .max(0) as usize;
    }
    Ok((correct as f64 / total.max(1) as f64, total))
}
