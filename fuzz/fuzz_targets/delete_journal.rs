//! The `delete_journal` decoder: see `zrecord::fuzzing::delete_journal`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zrecord::fuzzing::delete_journal(data));
