//! Quickstart (in progress).
fn main() {}
