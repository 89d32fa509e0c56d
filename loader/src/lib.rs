//! An endless, step-based prefetching loader over named zrecord streams.
//!
//! This crate is a skeleton; its issue fills it.
