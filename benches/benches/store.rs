//! Store gather benchmarks (filled by the store issue).
fn main() {}
