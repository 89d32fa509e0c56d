//! Replays every input of the fuzz corpus (`fuzz/corpus/<target>/`, the
//! minimized corpus and every crash the fuzzers ever found) through the same
//! entry points the `cargo fuzz` targets call, so stable CI checks them all.
//!
//! Seeds: `cargo test -p zrecord --test fuzz_corpus -- --ignored write_seeds`
//! writes the seed inputs into the corpus folders.

use std::path::{Path, PathBuf};

use zrecord::fuzzing;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus")
}

#[test]
fn every_corpus_input_runs_clean() {
    let mut inputs = 0;
    for target in fuzzing::TARGETS {
        let dir = corpus().join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{target} has no corpus");
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let scratch = tempfile::tempdir().unwrap();
            let run = std::panic::catch_unwind(|| fuzzing::run(target, &data, scratch.path()));
            assert!(run.is_ok(), "{} panicked", file.display());
            inputs += 1;
        }
    }
    println!("{inputs} corpus inputs replayed");
}

#[test]
#[ignore = "writes the seed corpus into fuzz/corpus"]
fn write_seeds() {
    let scratch = tempfile::tempdir().unwrap();
    let mut seeds = fuzzing::seeds(scratch.path()).unwrap();
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1");
    for entry in std::fs::read_dir(&v1).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue; // the fixtures' README
        }
        let name = format!("v1-{}", path.file_name().unwrap().to_string_lossy());
        seeds.push(("store", name.clone(), fuzzing::pack_store(&path).unwrap()));
        seeds.push((
            "meta",
            name.clone(),
            std::fs::read(path.join("meta.zr")).unwrap(),
        ));
        seeds.push((
            "store_header",
            name,
            std::fs::read(path.join("store.zr")).unwrap(),
        ));
    }
    for (target, name, bytes) in seeds {
        let dir = corpus().join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
    }
}
