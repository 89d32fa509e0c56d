//! Runnable programs for zrecord (see the `[[example]]` targets) and the
//! helpers they share. The candle example lives in `candle/`, a crate of its
//! own, so these — the quickstart first — build without candle.
//!
//! * [`idx`] — MNIST's IDX files, gzipped or plain.
//! * [`classifier`] — a small Burn classifier the training examples share.
//! * [`cnn`] and [`image_folder`] — a small CNN and image folders (Fashion-MNIST
//!   as PNG files) for the `burn_images` example.
//! * [`gpt`] — a small Burn language model trained from packed token rows
//!   (the `burn_gpt` example).

pub mod classifier;
pub mod cnn;
pub mod gpt;
pub mod idx;
pub mod image_folder;
