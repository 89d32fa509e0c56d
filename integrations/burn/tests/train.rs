//! Burn's `Learner` trains from a `StoreDataLoader`: the loss falls after a
//! few steps, and a data error stops the training with the error reported.
//! The model's initial weights and the data order are seeded, so a failing
//! run is reproducible.

use std::sync::{Arc, Mutex, PoisonError};

use burn::data::dataloader::DataLoader;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::AdamConfig;
use burn::tensor::{Device, Int, Tensor};
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep,
};
use zrecord::{Codec, DenseStore};
use zrecord_burn::{Batch, EpochMode, Error, Mode, StoreDataLoader, dense_tensor};

#[derive(Clone, Debug)]
struct Points {
    x: Tensor<2>,
    y: Tensor<1, Int>,
}

#[derive(Module, Debug)]
struct Model {
    linear: Linear,
}

impl Model {
    fn output(&self, batch: Points) -> ClassificationOutput {
        let logits = self.linear.forward(batch.x);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.y.clone());
        ClassificationOutput::new(loss, logits, batch.y)
    }
}

impl TrainStep for Model {
    type Input = Points;
    type Output = ClassificationOutput;

    fn step(&self, batch: Points) -> TrainOutput<ClassificationOutput> {
        let output = self.output(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }
}

impl InferenceStep for Model {
    type Input = Points;
    type Output = ClassificationOutput;

    fn step(&self, batch: Points) -> ClassificationOutput {
        self.output(batch)
    }
}

fn convert(mut batch: Batch, device: &Device) -> zrecord_burn::Result<Points> {
    Ok(Points {
        x: dense_tensor(&mut batch, "x", device)?,
        y: dense_tensor(&mut batch, "y", device)?,
    })
}

/// 256 points in 2-D labelled by the sign of x + y: stores x (f32) and y (i64).
fn stores(dir: &std::path::Path, name: &str) -> (DenseStore<f32>, DenseStore<i64>) {
    let points: Vec<f32> = (0..512)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .collect();
    let labels: Vec<i64> = points
        .chunks(2)
        .map(|p| i64::from(p[0] + p[1] > 0.0))
        .collect();
    let x = DenseStore::<f32>::create(dir.join(name).join("x"), &[2], Codec::Zstd).unwrap();
    x.append(&points).unwrap();
    let y = DenseStore::<i64>::create(dir.join(name).join("y"), &[], Codec::Raw).unwrap();
    y.append(&labels).unwrap();
    (x, y)
}

/// The model with weights drawn from `seed`. Burn's initialisers draw from
/// the backend's generator (one per process on this backend): seeding it and
/// initialising happen under one lock, so parallel tests cannot interleave.
fn seeded_model(device: &Device, seed: u64) -> Model {
    static INIT: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INIT.lock().unwrap_or_else(PoisonError::into_inner);
    device.seed(seed);
    Model {
        linear: LinearConfig::new(2, 2).init(device),
    }
}

fn mean_loss(model: &Model, loader: &dyn DataLoader<Points>) -> f32 {
    let losses: Vec<f32> = loader
        .iter()
        .map(|b| model.output(b.unwrap()).loss.into_scalar::<f32>())
        .collect();
    losses.iter().sum::<f32>() / losses.len() as f32
}

#[test]
fn the_learner_trains_from_a_store_and_the_loss_falls() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::flex();
    let (x, y) = stores(dir.path(), "train");
    let train = StoreDataLoader::builder(16)
        .stream("x", x)
        .stream("y", y)
        .seed(3)
        .build(&device.clone().autodiff(), convert)
        .unwrap();
    let (x, y) = stores(dir.path(), "valid");
    let valid = Arc::new(
        StoreDataLoader::builder(64)
            .stream("x", x)
            .stream("y", y)
            .mode(Mode::Sequential)
            .epoch_mode(EpochMode::Repeat)
            .build(&device, convert)
            .unwrap(),
    );

    let model = seeded_model(&device.clone().autodiff(), 11);
    let before = mean_loss(&model.valid(), valid.as_ref());
    let learner = Learner::new(model, AdamConfig::new().init(), 0.05);
    let result = SupervisedTraining::new(dir.path().join("log"), Arc::new(train), valid.clone())
        .num_epochs(2)
        .with_application_logger(None)
        .launch(learner);
    assert!(
        result.error.is_none(),
        "{:?}",
        result.error.map(|e| e.to_string())
    );
    let after = mean_loss(&result.model, valid.as_ref());
    println!("weights seed 11, data seed 3: validation loss {before} before, {after} after");
    assert!(after < before * 0.8, "loss before {before}, after {after}");
}

#[test]
fn a_data_error_stops_the_learner_with_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::flex();
    let (x, y) = stores(dir.path(), "train");
    let train = StoreDataLoader::builder(16)
        .stream("x", x)
        .stream("y", y)
        .build(&device.clone().autodiff(), |batch, device| {
            if batch.step() == 3 {
                return Err(Error::user(std::io::Error::other(
                    "record 42 is unreadable",
                )));
            }
            convert(batch, device)
        })
        .unwrap();
    let (x, y) = stores(dir.path(), "valid");
    let valid = StoreDataLoader::builder(64)
        .stream("x", x)
        .stream("y", y)
        .build(&device, convert)
        .unwrap();
    let model = seeded_model(&device.clone().autodiff(), 12);
    let learner = Learner::new(model, AdamConfig::new().init(), 0.05);
    let result = SupervisedTraining::new(dir.path().join("log"), Arc::new(train), Arc::new(valid))
        .num_epochs(2)
        .with_application_logger(None)
        .launch(learner);
    let error = result.error.expect("the training must stop with the error");
    assert!(
        error.to_string().contains("record 42 is unreadable"),
        "{error}"
    );
}
