//! Runnable programs for zrecord (see the `[[example]]` targets), the helpers
//! they share, and the README's code, compiled and run as doc-tests.
//!
//! * [`digits`] — the scikit-learn digits set shipped in `examples/data/`.
//! * [`idx`] — MNIST's IDX files, gzipped or plain.
//! * [`classifier`] — a small Burn classifier the training examples share.
//! * [`gpt`] — a small Burn language model trained from packed token rows
//!   (the `burn_gpt` example).
//! * [`report`] — a quiet renderer for Burn's `Learner`: one line per epoch.
//! * [`candle_mnist`] — a candle digit classifier trained from stores and
//!   served with `zrecord-candle`'s batcher (the `candle_serve` example).

pub mod candle_mnist;
pub mod classifier;
pub mod digits;
pub mod gpt;
pub mod idx;
pub mod report;

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
