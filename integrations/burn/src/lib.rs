//! Burn's data traits over zrecord: train a Burn model straight from
//! zrecord stores.
//!
//! * [`StoreDataLoader`] — a Burn [`DataLoader`](burn::data::dataloader::DataLoader)
//!   driven by [`zrecord_loader::Loader`]: our sampler (cyclic
//!   permutations, iid, sequential, block shuffles, rank shards), our
//!   prefetching worker threads, batches in step order. Hand it to Burn's
//!   `SupervisedTraining` (the `Learner`) as it is. Epochs are virtual: a
//!   chosen number of steps of the endless loader.
//! * `EpochReport` (feature `train`) — a renderer for Burn's `Learner` that
//!   prints one readable line of metrics per epoch and split, in a terminal
//!   or a log.
//! * [`StoreDataset`] — stores as a Burn [`Dataset`](burn::data::dataset::Dataset)
//!   (one typed item per record; `get_many` is one batch gather), so code
//!   built on Burn's own `DataLoaderBuilder` keeps working.
//!
//! # Converters
//!
//! A [`StoreDataLoader`] turns each [`Batch`] into the model's input with a
//! function you give it, run on the worker threads. The ready-made parts:
//!
//! * [`dense_tensor`] — a dense stream as a `Tensor<D, K>` of any rank and
//!   kind; the gathered `Vec` becomes the tensor's storage **without a copy**
//!   ([`tensor_data`]), and when the stream's dtype is the device's dtype for
//!   the kind (say `f32` for float tensors) nothing is converted either.
//! * [`ragged_padded`] — a ragged stream as a padded tensor, each record's
//!   length, and a mask of the real elements ([`Padded`]).
//! * `image_tensor` (feature `vision`) — encoded JPEG/PNG images of a ragged
//!   `u8` stream, decoded, cropped, flipped and normalised on the worker
//!   threads into a `(B, 3, H, W)` tensor with the transforms of
//!   [`zrecord-vision`](https://docs.rs/zrecord-vision), re-exported as
//!   `zrecord_burn::vision`.
//! * [`packed_tensors`] and [`block_causal_mask`] — packed token rows from a
//!   [`PackedLoader`](zrecord_loader::PackedLoader), and the attention mask
//!   that keeps every token within its document.
//!
//! # Example
//!
//! Write a store, then train a linear classifier a few steps from it with the
//! data loader:
//!
//! ```
//! use burn::data::dataloader::DataLoader;
//! use burn::module::Module;
//! use burn::nn::loss::CrossEntropyLossConfig;
//! use burn::nn::{Linear, LinearConfig};
//! use burn::optim::{AdamConfig, GradientsParams};
//! use burn::tensor::{Device, Int, Tensor};
//! use zrecord::{Codec, DenseStore};
//! use zrecord_burn::{StoreDataLoader, dense_tensor};
//! # let dir = tempfile::tempdir()?;
//!
//! // 256 points in 2-D, labelled by the sign of x + y.
//! let points: Vec<f32> = (0..512).map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0).collect();
//! let labels: Vec<i64> = points.chunks(2).map(|p| i64::from(p[0] + p[1] > 0.0)).collect();
//! let x = DenseStore::<f32>::create(dir.path().join("x"), &[2], Codec::Zstd)?;
//! x.append(&points)?;
//! let y = DenseStore::<i64>::create(dir.path().join("y"), &[], Codec::Raw)?;
//! y.append(&labels)?;
//!
//! let device = Device::flex().autodiff();
//! let train = StoreDataLoader::builder(32)
//!     .stream("x", x)
//!     .stream("y", y)
//!     .seed(1)
//!     .build(&device, |mut batch, device| {
//!         let x: Tensor<2> = dense_tensor(&mut batch, "x", device)?;   // no copy
//!         let y: Tensor<1, Int> = dense_tensor(&mut batch, "y", device)?;
//!         Ok((x, y))
//!     })?;
//!
//! let mut model: Linear = LinearConfig::new(2, 2).init(&device);
//! let mut optim = AdamConfig::new().init();
//! let mut losses = Vec::new();
//! for _epoch in 0..3 {
//!     for batch in train.iter() {
//!         let (x, y) = batch?;
//!         let loss = CrossEntropyLossConfig::new().init(&device).forward(model.forward(x), y);
//!         losses.push(loss.clone().into_scalar::<f32>());
//!         let grads = GradientsParams::from_grads(loss.backward(), &model);
//!         model = optim.step(0.05, model, grads);
//!     }
//! }
//! assert!(losses.last() < losses.first());
//! println!("{:?}", train.counters());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod convert;
mod dataloader;
mod dataset;
mod error;
#[cfg(feature = "vision")]
mod images;
mod packed;
#[cfg(feature = "train")]
mod report;

pub use convert::{
    Padded, StoreTensorElement, dense_tensor, dtype_fits, ragged_padded, target_dtype, tensor_data,
    tensor_from_data,
};
pub use dataloader::{EpochMode, StoreDataLoader, StoreDataLoaderBuilder};
pub use dataset::{Record, StoreDataset, StoreDatasetBuilder};
pub use error::{Error, Result};
#[cfg(feature = "vision")]
pub use images::image_tensor;
pub use packed::{PackedTensors, block_causal_mask, packed_tensors};
#[cfg(feature = "train")]
pub use report::EpochReport;
pub use zrecord_loader::{
    BadRecords, Batch, CounterSnapshot, LastBatch, LoaderConfig, Mixture, Mode, Padding, Schedule,
    Source, SourceProgress, Stream,
};
/// Image transforms for the converter: decode, crop, flip, normalise (feature `vision`).
#[cfg(feature = "vision")]
pub use zrecord_vision as vision;

// The README's examples run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
