//! The `compact_journal` decoder: see `zrecord::fuzzing::compact_journal`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zrecord::fuzzing::compact_journal(data));
