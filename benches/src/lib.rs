//! Shared pieces of the benchmarks: the exact workload generators of BENCH-DATA.md.
