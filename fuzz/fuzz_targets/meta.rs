//! The `meta` decoder: see `zrecord::fuzzing::meta`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zrecord::fuzzing::meta(data));
