//! A whole store: the input unpacks into store files (see
//! `zrecord::fuzzing::pack_store`), which are then opened read-only and
//! writable, gathered, verified, deleted from, appended to and compacted.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a scratch folder");
    zrecord::fuzzing::store(data, dir.path());
});
