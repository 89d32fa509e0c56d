//! Burn Dataset and DataLoader over zrecord stores.
//!
//! This crate is a skeleton; its issue fills it.
