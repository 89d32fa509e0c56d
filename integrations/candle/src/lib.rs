//! candle tensors from zrecord batches, and a dynamically batched inference
//! engine that reads a model's inputs from a store.
//!
//! # Converters
//!
//! * [`dense_tensor`] — a dense stream of a loader [`Batch`] as one
//!   [`Tensor`] shaped `(B, *item_shape)`. On the CPU the gathered `Vec`
//!   **becomes the tensor's storage without a copy** ([`Tensor::from_vec`]
//!   takes it); on a CUDA device it is copied to the device once.
//! * [`tensor_from_vec`] — the same for any dtype-tagged buffer
//!   ([`DynVec`](zrecord::DynVec)) and shape, for code that gathers from a
//!   store itself.
//! * [`ragged_padded`] / [`pad_records`] — a ragged stream as a padded
//!   tensor, each record's length and a mask ([`Padded`]).
//!
//! Every converter takes a `&Device`, so the same call serves CPU and CUDA
//! builds (enable this crate's `cuda` feature, which forwards to
//! `candle-core/cuda`).
//!
//! ## dtypes
//!
//! candle has no `i8`, `u16`, `bool` or `u64`. The rule, the same for every
//! converter:
//!
//! | zrecord | candle | cost on the CPU |
//! | --- | --- | --- |
//! | `u8`, `i16`, `u32`, `i32`, `i64`, `f16`, `bf16`, `f32`, `f64` | the same | none: the `Vec` is the storage |
//! | `bool` | `u8` (0 or 1) | none: the bytes are reinterpreted in place |
//! | `i8` | `i16` (widened) | one pass into a new buffer |
//! | `u16` | `u32` (widened) | one pass into a new buffer |
//! | `u64` | `i64`, when every value is at most `i64::MAX` | one scan, no copy; a larger value is [`Error::OutOfRange`] naming it |
//!
//! No value is ever truncated or wrapped: a conversion is exact or an error.
//! [`candle_dtype`] tells the target dtype of each.
//!
//! ## Ragged padding
//!
//! Records of any one rank pad: every axis is padded to the largest extent in
//! the batch, so rank-1 records `(Lᵢ,)` give `(B, max Lᵢ)` and rank-2
//! records `(Hᵢ, Wᵢ)` give `(B, max Hᵢ, max Wᵢ)`, each record in the top-left
//! corner of its slot; a [`zrecord_loader::Padding`] caps or fixes the sequence
//! length instead. Records of different ranks in one batch are an error.
//! `lengths` is each record's extent along its first axis (`u32`), `mask` is
//! `1u8` where `values` holds a record's element.
//!
//! # Serving
//!
//! [`Batcher`] answers "predict records `ids`" requests from many threads
//! with one gather and one forward pass per batch: requests that queued up
//! while the model was busy — and, with a [`BatchConfig::max_wait`], those
//! that arrive within it — run together, up to [`BatchConfig::max_batch`]
//! records. [`StorePredictor`]
//! gathers a dense store and runs a forward function; implement
//! [`Predictor`] for anything else. With the `http` feature, `http::HttpServer`
//! puts a batcher behind `POST /predict`, `GET /health` and `GET /metrics`.
//!
//! # Features
//!
//! * `vision` — encoded JPEG/PNG images into tensors: `image_tensor` for
//!   loader batches and `ImagePredictor`, which serves an image classifier
//!   from a store of encoded files (decode + resize + normalise per request
//!   in the batcher), with the transforms of `zrecord-vision` (re-exported as
//!   `zrecord_candle::vision`).
//! * `http` — the `http` module: a small synchronous HTTP server
//!   (`tiny_http`, `serde_json`) over a [`Batcher`].
//! * `cuda` — builds candle with CUDA (`candle-core/cuda`; needs the CUDA
//!   toolkit); pass `Device::new_cuda(0)?` where the examples pass
//!   `Device::Cpu`.
//!
//! # Example
//!
//! Train a linear model a few steps from a store through the loader, then
//! serve it with dynamic batching:
//!
//! ```
//! use std::sync::Arc;
//! use candle_core::{D, DType, Device, Tensor, Var};
//! use zrecord::{Codec, DenseStore};
//! use zrecord_candle::{BatchConfig, Batcher, StorePredictor, dense_tensor};
//! use zrecord_loader::Loader;
//! # let dir = tempfile::tempdir()?;
//!
//! // 256 points in 2-D, labelled by the sign of x + y. The features store is
//! // shared by the training loader and the server.
//! let points: Vec<f32> = (0..512).map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0).collect();
//! let labels: Vec<u8> = points.chunks(2).map(|p| u8::from(p[0] + p[1] > 0.0)).collect();
//! let x = Arc::new(DenseStore::<f32>::create(dir.path().join("x"), &[2], Codec::Zstd)?.into_dyn());
//! x.append(&points)?;
//! let y = DenseStore::<u8>::create(dir.path().join("y"), &[], Codec::Raw)?;
//! y.append(&labels)?;
//!
//! let device = Device::Cpu;
//! let dev = device.clone();
//! let mut loader = Loader::builder(32)
//!     .stream("x", Arc::clone(&x))
//!     .stream("y", y)
//!     .seed(7)
//!     .transform(move |mut batch| {                    // runs on the loader's threads
//!         let x = dense_tensor(&mut batch, "x", &dev)?; // (32, 2) f32, no copy
//!         let y = dense_tensor(&mut batch, "y", &dev)?; // (32,) u8
//!         Ok::<_, zrecord_candle::Error>((x, y))
//!     })
//!     .build()?;
//!
//! // Plain gradient descent on the softmax loss of a 2×2 weight matrix.
//! let w = Var::zeros((2, 2), DType::F32, &device)?;
//! for batch in loader.steps(40) {
//!     let (x, y) = batch??;
//!     let logits = x.matmul(w.as_tensor())?;
//!     let picked = logits.gather(&y.to_dtype(DType::U32)?.unsqueeze(1)?, 1)?.squeeze(1)?;
//!     let loss = logits.log_sum_exp(D::Minus1)?.sub(&picked)?.mean_all()?;
//!     let grads = loss.backward()?;
//!     if let Some(g) = grads.get(&w) {
//!         w.set(&w.as_tensor().sub(&g.affine(0.5, 0.0)?)?)?;
//!     }
//! }
//!
//! // Serve: concurrent requests for record ids share one gather + one forward pass.
//! let weights = w.as_tensor().clone();
//! let forward = move |x: Tensor| x.matmul(&weights)?.argmax(D::Minus1);
//! let batcher = Batcher::start(StorePredictor::new(x, &device, forward)?, BatchConfig::default())?;
//! let classes = batcher.predict(vec![0, 5, 9])?.to_vec1::<u32>()?;
//! let right = classes.iter().zip([0, 5, 9]).filter(|&(&c, i)| c == u32::from(labels[i])).count();
//! assert!(right >= 2, "{classes:?}");
//! println!("{:?}", batcher.metrics().snapshot());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod convert;
mod error;
#[cfg(feature = "vision")]
mod images;
mod padded;
mod serve;

#[cfg(feature = "http")]
pub mod http;

pub use candle_core::{Device, Tensor};
pub use convert::{candle_dtype, dense_tensor, tensor_from_vec};
pub use error::{Error, Result};
#[cfg(feature = "vision")]
pub use images::{ImagePredictor, image_tensor};
pub use padded::{Padded, pad_records, ragged_padded};
pub use serve::{BatchConfig, Batcher, Metrics, MetricsSnapshot, Predictor, StorePredictor};
pub use zrecord_loader::Batch;
/// Image transforms: decode, crop, flip, normalise (feature `vision`).
#[cfg(feature = "vision")]
pub use zrecord_vision as vision;

// The README's examples run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;
