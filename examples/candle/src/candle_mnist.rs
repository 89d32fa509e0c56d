//! The candle side of the examples: a small classifier for 28×28 digit
//! images, trained from zrecord stores through the loader, saved as
//! safetensors, and served with [`zrecord_candle`]'s dynamic batcher.
//!
//! The model takes the images as they are stored — `u8` pixels — and does
//! its own scaling, so a server hands it gathered records without touching
//! them.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use candle_core::{D, DType, Device, Tensor};
use candle_nn::{Linear, Module, Optimizer, VarBuilder, VarMap};
use zrecord::{Codec, DenseStore, DynVec};
use zrecord_candle::dense_tensor;
use zrecord_loader::Loader;

/// Errors of the example helpers.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// The shape of one image.
pub const IMAGE: [usize; 2] = [28, 28];
/// Pixels per image.
pub const PIXELS: usize = 28 * 28;
/// Digit classes.
pub const CLASSES: usize = 10;
/// The weights file [`train`]'s caller saves and the server loads.
pub const WEIGHTS: &str = "mnist-mlp.safetensors";

/// A two-layer perceptron: `u8` images `(B, 28, 28)` → scaled to `[0, 1]`
/// → 784 → `hidden` (ReLU) → 10 logits.
#[derive(Clone, Debug)]
pub struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    /// A new model whose weights live in `vb` (`fc1.*`, `fc2.*`).
    ///
    /// # Errors
    /// candle's, when `vb` holds weights of other shapes.
    pub fn new(vb: VarBuilder<'_>, hidden: usize) -> candle_core::Result<Mlp> {
        Ok(Mlp {
            fc1: candle_nn::linear(PIXELS, hidden, vb.pp("fc1"))?,
            fc2: candle_nn::linear(hidden, CLASSES, vb.pp("fc2"))?,
        })
    }

    /// Loads weights saved from a [`VarMap`] (see [`train`]); the hidden
    /// width is read from the file.
    ///
    /// # Errors
    /// An unreadable file, or tensors missing or of the wrong shapes.
    pub fn load(path: &Path, device: &Device) -> Result<Mlp, BoxError> {
        let tensors = candle_core::safetensors::load(path, device)
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        let hidden = tensors
            .get("fc1.weight")
            .and_then(|w| w.dims().first().copied())
            .ok_or_else(|| format!("{} has no fc1.weight", path.display()))?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, device);
        Ok(Mlp::new(vb, hidden).map_err(|e| format!("{}: {e}", path.display()))?)
    }

    /// The logits `(B, 10)` of images `(B, 28, 28)` of any dtype (pixels
    /// 0..=255).
    ///
    /// # Errors
    /// candle's, for input of the wrong shape.
    pub fn logits(&self, images: &Tensor) -> candle_core::Result<Tensor> {
        let x = images
            .to_dtype(DType::F32)?
            .affine(1.0 / 255.0, 0.0)?
            .flatten_from(1)?;
        self.fc2.forward(&self.fc1.forward(&x)?.relu()?)
    }

    /// The predicted class (`u32`) of each image.
    ///
    /// # Errors
    /// As [`logits`](Self::logits).
    pub fn classify(&self, images: &Tensor) -> candle_core::Result<Tensor> {
        self.logits(images)?.argmax(D::Minus1)
    }
}

/// The four stores of a split data set, under one folder.
#[derive(Clone, Debug)]
pub struct StorePaths {
    /// The folder.
    pub dir: PathBuf,
}

impl StorePaths {
    /// Stores under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StorePaths { dir: dir.into() }
    }

    /// `train-images`, `train-labels`, `test-images` or `test-labels`.
    pub fn path(&self, split: &str, what: &str) -> PathBuf {
        self.dir.join(format!("{split}-{what}"))
    }
}

/// The `u8` IDX file `name` in `dir`: its dimensions and its elements.
fn read_idx_u8(dir: &Path, name: &str) -> Result<(Vec<usize>, Vec<u8>), BoxError> {
    let path = zrecord::idx::find(dir, name)
        .ok_or_else(|| format!("{}: no {name}[.gz]", dir.display()))?;
    Ok(zrecord::idx::open(&path)?.read_as::<u8>()?)
}

/// Imports the four IDX files of an MNIST-style folder into zstd stores
/// (images `u8 (28, 28)`, labels `u8` scalars), replacing any there.
/// Returns (train, test) record counts.
///
/// # Errors
/// A missing or malformed file (named), or a store error.
pub fn import_mnist(data: &Path, stores: &StorePaths) -> Result<(u64, u64), BoxError> {
    if stores.dir.exists() {
        std::fs::remove_dir_all(&stores.dir)?;
    }
    std::fs::create_dir_all(&stores.dir)?;
    let mut counts = [0u64; 2];
    for (k, (split, prefix)) in [("train", "train"), ("test", "t10k")]
        .into_iter()
        .enumerate()
    {
        let (image_dims, images) = read_idx_u8(data, &format!("{prefix}-images-idx3-ubyte"))?;
        let (label_dims, labels) = read_idx_u8(data, &format!("{prefix}-labels-idx1-ubyte"))?;
        if image_dims.get(1..) != Some(&IMAGE[..]) || label_dims.first() != image_dims.first() {
            return Err(format!(
                "{split}: images {image_dims:?} and labels {label_dims:?} are not N×28×28 and N"
            )
            .into());
        }
        write_split(stores, split, &images, &labels)?;
        counts[k] = labels.len() as u64;
    }
    Ok((counts[0], counts[1]))
}

/// Writes one split's images and labels as stores.
///
/// # Errors
/// A store error (the stores must not exist yet).
pub fn write_split(
    stores: &StorePaths,
    split: &str,
    images: &[u8],
    labels: &[u8],
) -> Result<(), BoxError> {
    let store = DenseStore::<u8>::create(stores.path(split, "images"), &IMAGE, Codec::Zstd)?;
    store.append(images)?;
    let store = DenseStore::<u8>::create(stores.path(split, "labels"), &[], Codec::Raw)?;
    store.append(labels)?;
    Ok(())
}

/// `n` synthetic 28×28 "digits" and their labels, for tests and CI where
/// MNIST is absent: class `c` is a bright horizontal bar on rows
/// `2c + 3..2c + 6` with its ends jittered, over faint noise. Deterministic
/// in `seed`.
pub fn synthetic_digits(n: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let mut state = seed;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut images = vec![0u8; n * PIXELS];
    let mut labels = Vec::with_capacity(n);
    for image in images.chunks_mut(PIXELS) {
        let class = (next() % CLASSES as u64) as usize;
        labels.push(class as u8);
        for p in image.iter_mut() {
            *p = (next() % 40) as u8;
        }
        let (from, to) = (2 + (next() % 6) as usize, 20 + (next() % 6) as usize);
        for row in 2 * class + 3..2 * class + 6 {
            for col in from..to {
                image[row * 28 + col] = 200 + (next() % 56) as u8;
            }
        }
    }
    (images, labels)
}

/// Training settings.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// Passes over the training split.
    pub epochs: usize,
    /// Images per step.
    pub batch: u64,
    /// Hidden width.
    pub hidden: usize,
    /// AdamW learning rate.
    pub lr: f64,
    /// Seeds the weights and the loader's shuffles.
    pub seed: u64,
    /// Loader worker threads.
    pub workers: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            epochs: 5,
            batch: 128,
            hidden: 128,
            lr: 1e-3,
            seed: 42,
            workers: 1,
        }
    }
}

/// What training did.
#[derive(Clone, Debug)]
pub struct TrainReport {
    /// Mean loss of each epoch.
    pub epoch_loss: Vec<f32>,
    /// Wall time of the training loop.
    pub time: Duration,
    /// Time the loop spent waiting for the loader.
    pub loader_wait: Duration,
}

/// Trains an [`Mlp`] on a split's stores, read through the loader (a fresh
/// permutation every epoch; the worker threads gather and hand each batch to
/// candle without a copy). Returns the model and the [`VarMap`] that holds
/// its weights (`varmap.save(path)` writes them as safetensors).
///
/// `on_epoch(epoch, mean_loss)` runs after every epoch.
///
/// # Errors
/// A store, loader or candle error.
pub fn train(
    stores: &StorePaths,
    config: &TrainConfig,
    device: &Device,
    mut on_epoch: impl FnMut(usize, f32),
) -> Result<(Mlp, VarMap, TrainReport), BoxError> {
    let images = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(stores.path("train", "images"))?;
    let labels = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(stores.path("train", "labels"))?;
    let dev = device.clone();
    let mut loader = Loader::builder(config.batch)
        .stream("image", images)
        .stream("label", labels)
        .seed(config.seed)
        .workers(config.workers)
        .transform(move |mut batch| {
            let x = dense_tensor(&mut batch, "image", &dev)?; // (B, 28, 28) u8, no copy
            let y = dense_tensor(&mut batch, "label", &dev)?.to_dtype(DType::U32)?;
            Ok::<_, zrecord_candle::Error>((x, y))
        })
        .build()?;

    let varmap = VarMap::new();
    let model = Mlp::new(
        VarBuilder::from_varmap(&varmap, DType::F32, device),
        config.hidden,
    )?;
    seed_weights(&varmap, config.seed)?;
    let mut optimizer = candle_nn::AdamW::new(
        varmap.all_vars(),
        candle_nn::ParamsAdamW {
            lr: config.lr,
            ..Default::default()
        },
    )?;

    let start = Instant::now();
    let steps = loader.steps_per_epoch();
    let mut epoch_loss = Vec::with_capacity(config.epochs);
    for epoch in 1..=config.epochs {
        let mut sum = 0.0f32;
        for batch in loader.steps(steps) {
            let (x, y) = batch??;
            let loss = candle_nn::loss::cross_entropy(&model.logits(&x)?, &y)?;
            optimizer.backward_step(&loss)?;
            sum += loss.to_scalar::<f32>()?;
        }
        let mean = sum / steps as f32;
        epoch_loss.push(mean);
        on_epoch(epoch, mean);
    }
    let report = TrainReport {
        epoch_loss,
        time: start.elapsed(),
        loader_wait: loader.counters().snapshot().consumer_wait,
    };
    Ok((model, varmap, report))
}

/// Replaces every weight with a seeded uniform `±1/√fan_in` draw (candle's
/// CPU initialisers cannot be seeded), so a run is reproducible.
fn seed_weights(varmap: &VarMap, seed: u64) -> Result<(), BoxError> {
    let vars = varmap
        .data()
        .lock()
        .map_err(|_| "the VarMap lock is poisoned")?;
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    let mut state = seed ^ 0x5eed;
    for name in names {
        let var = &vars[name];
        let dims = var.dims().to_vec();
        let fan_in = if name.ends_with(".weight") {
            dims.last().copied().unwrap_or(1)
        } else {
            // A bias: its layer's input width, from the matching weight.
            let weight = name.replace(".bias", ".weight");
            vars.get(&weight)
                .and_then(|w| w.dims().last().copied())
                .unwrap_or(1)
        };
        let bound = 1.0 / (fan_in.max(1) as f32).sqrt();
        let values: Vec<f32> = (0..var.elem_count())
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
                (2.0 * unit - 1.0) * bound
            })
            .collect();
        var.set(&Tensor::from_vec(values, dims, var.device())?)?;
    }
    Ok(())
}

/// Offline batched inference: the classes of records `ids` of a `u8` image
/// store, gathered and classified in batches of `batch`.
///
/// # Errors
/// A store or candle error.
pub fn classify_records(
    model: &Mlp,
    images: &DenseStore<u8>,
    ids: &[u64],
    batch: usize,
    device: &Device,
) -> Result<Vec<u32>, BoxError> {
    let mut classes = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(batch.max(1)) {
        let mut values = vec![0u8; chunk.len() * PIXELS];
        images.gather_into(chunk, &mut values)?;
        let x = zrecord_candle::tensor_from_vec(
            DynVec::from(values),
            &[chunk.len(), IMAGE[0], IMAGE[1]],
            device,
        )?;
        classes.extend(model.classify(&x)?.to_vec1::<u32>()?);
    }
    Ok(classes)
}

/// The share of a split's records the model classifies right.
///
/// # Errors
/// A store or candle error.
pub fn accuracy(
    model: &Mlp,
    stores: &StorePaths,
    split: &str,
    device: &Device,
) -> Result<f64, BoxError> {
    let images = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(stores.path(split, "images"))?;
    let labels = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(stores.path(split, "labels"))?;
    let ids: Vec<u64> = (0..images.len()).collect();
    let predicted = classify_records(model, &images, &ids, 1000, device)?;
    let truth = labels.gather(&ids)?;
    let right = predicted
        .iter()
        .zip(truth.iter())
        .filter(|&(&p, &t)| p == u32::from(t))
        .count();
    Ok(right as f64 / ids.len().max(1) as f64)
}
