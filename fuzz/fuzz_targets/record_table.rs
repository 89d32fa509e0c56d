//! The `record_table` decoder: see `zrecord::fuzzing::record_table`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zrecord::fuzzing::record_table(data));
