//! The `shape` decoder: see `zrecord::fuzzing::shape`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zrecord::fuzzing::shape(data));
