//! Runnable programs for zrecord (see the `[[example]]` targets), the helpers
//! they share, and the README's code, compiled and run as doc-tests.
//!
//! * [`digits`] — the scikit-learn digits set shipped in `examples/data/`.
//! * [`idx`] — MNIST's IDX files, gzipped or plain.
//! * [`classifier`] — a small Burn classifier the training examples share.
//! * [`cnn`] and [`image_folder`] — a small CNN and image folders (Fashion-MNIST
//!   as PNG files) for the `burn_images` example.
//! * [`report`] — a quiet renderer for Burn's `Learner`: one line per epoch.
//! * [`candle_mnist`] — a candle digit classifier trained from stores and
//!   served with `zrecord-candle`'s batcher (the `candle_serve` example).

pub mod candle_mnist;
pub mod classifier;
pub mod cnn;
pub mod digits;
pub mod idx;
pub mod image_folder;
pub mod report;

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
