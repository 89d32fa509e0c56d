//! The `store_header` decoder: see `zrecord::fuzzing::store_header`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zrecord::fuzzing::store_header(data));
