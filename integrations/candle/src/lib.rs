//! candle tensors from zrecord loader batches.
//!
//! This crate is a skeleton; its issue fills it.
