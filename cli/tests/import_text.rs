//! `zrecord import text`: documents tokenised into a ragged token store, each
//! ending with the end-of-document token; bad input (JSON, UTF-8, token ids,
//! tokenizer names) is a clear error with exit code 2 and nothing written.

mod common;

use std::io::Read;
use std::path::Path;

use common::listing;
use common::run::{fails, ok};
use zrecord::{AnyStore, RaggedStore};

/// The first `n` verses of the King James Bible shipped with the examples.
fn kjv_lines(n: usize) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/kjv.txt.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines().take(n).map(str::to_string).collect()
}

fn records(store: &Path) -> Vec<Vec<u64>> {
    match AnyStore::open(store).unwrap() {
        AnyStore::Ragged(s) => {
            let batch = s.gather_dyn(&(0..s.len()).collect::<Vec<u64>>()).unwrap();
            let bytes = batch.values().as_bytes();
            let size = s.dtype().size();
            let values: Vec<u64> = bytes
                .chunks(size)
                .map(|c| c.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
                .collect();
            batch
                .layout()
                .offsets()
                .windows(2)
                .map(|w| values[w[0]..w[1]].to_vec())
                .collect()
        }
        AnyStore::Dense(_) => panic!("a dense store"),
    }
}

fn run(file: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "import".to_string(),
        "text".into(),
        file.display().to_string(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    ok(&args)
}

#[test]
fn bytes_tokens_are_the_verses_with_a_newline() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = kjv_lines(200); // Genesis 1–8
    let file = tmp.path().join("kjv.txt");
    std::fs::write(&file, lines.join("\n") + "\n\n").unwrap();
    let out = tmp.path().join("tokens");
    run(&file, &out, &["--tokenizer", "bytes", "--dtype", "u8"]);
    let store = RaggedStore::<u8>::open(&out).unwrap();
    assert_eq!(store.len(), 200);
    for (i, line) in lines.iter().enumerate() {
        let mut want = line.as_bytes().to_vec();
        want.push(b'\n');
        assert_eq!(
            store
                .get(i as u64)
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            want
        );
    }
}

#[test]
fn paragraphs_and_json_lines_are_documents() {
    let tmp = tempfile::tempdir().unwrap();
    let text = tmp.path().join("p.txt");
    std::fs::write(&text, "ab\ncd\n\n\nef\n").unwrap();
    let out = tmp.path().join("p");
    run(
        &text,
        &out,
        &[
            "--tokenizer",
            "bytes",
            "--format",
            "paragraphs",
            "--eod",
            "none",
        ],
    );
    assert_eq!(
        records(&out),
        vec![
            b"ab\ncd".map(u64::from).to_vec(),
            vec![u64::from(b'e'), u64::from(b'f')]
        ]
    );

    let jsonl = tmp.path().join("d.jsonl");
    std::fs::write(
        &jsonl,
        "{\"text\": \"hi\", \"n\": 1}\n\n{\"text\": \"yo\"}\n",
    )
    .unwrap();
    let out = tmp.path().join("j");
    run(&jsonl, &out, &["--tokenizer", "bytes", "--eod", "0"]);
    assert_eq!(records(&out), vec![vec![104, 105, 0], vec![121, 111, 0]]);
}

#[test]
fn bad_json_lines_name_the_line_or_are_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let jsonl = tmp.path().join("d.jsonl");
    std::fs::write(
        &jsonl,
        "{\"text\": \"a\"}\n{oops\n{\"body\": \"b\"}\n{\"text\": \"c\"}\n",
    )
    .unwrap();
    let no_field = tmp.path().join("e.jsonl");
    std::fs::write(&no_field, "{\"text\": \"a\"}\n\n{\"body\": \"b\"}\n").unwrap();
    let out = tmp.path().join("out").display().to_string();
    let (file, other) = (jsonl.display().to_string(), no_field.display().to_string());
    fails(
        &["line 2", "not JSON", "--on-error skip"],
        &["import", "text", &file, &out, "--tokenizer", "bytes"],
    );
    fails(
        &["line 3", "no field \"text\""],
        &["import", "text", &other, &out, "--tokenizer", "bytes"],
    );
    assert_eq!(listing(tmp.path()), ["d.jsonl", "e.jsonl"]);
    let stderr = ok(&[
        "import",
        "text",
        &file,
        &out,
        "--tokenizer",
        "bytes",
        "--on-error",
        "skip",
    ]);
    assert!(stderr.contains("skipped 2 bad lines"), "{stderr}");
    assert_eq!(records(Path::new(&out)), vec![vec![97, 10], vec![99, 10]]);
}

#[test]
fn invalid_utf8_unknown_tokenizers_and_oversized_ids_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("t.txt");
    std::fs::write(&file, b"fine\nbad \xff byte\n").unwrap();
    let (f, out) = (
        file.display().to_string(),
        tmp.path().join("o").display().to_string(),
    );
    fails(
        &["unknown tokenizer \"gpt7\"", "bytes"],
        &["import", "text", &f, &out, "--tokenizer", "gpt7"],
    );
    // A token id above the store's dtype.
    fails(
        &["line 1", "token id 300", "u8"],
        &[
            "import",
            "text",
            &f,
            &out,
            "--tokenizer",
            "bytes",
            "--eod",
            "300",
            "--dtype",
            "u8",
        ],
    );
    assert_eq!(listing(tmp.path()), ["t.txt"]);
    // bytes takes any bytes.
    ok(&["import", "text", &f, &out, "--tokenizer", "bytes"]);
    assert_eq!(records(Path::new(&out))[1].len(), 11);
}

#[cfg(feature = "tiktoken")]
#[test]
fn openai_encodings_need_utf8_unless_lossy() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("t.txt");
    std::fs::write(&file, b"hello world\nbad \xff byte\n").unwrap();
    let (f, out) = (
        file.display().to_string(),
        tmp.path().join("o").display().to_string(),
    );
    fails(
        &["line 2", "invalid UTF-8", "--lossy"],
        &["import", "text", &f, &out, "--tokenizer", "cl100k_base"],
    );
    fails(
        &["line 1", "token id 100257", "u16"],
        &[
            "import",
            "text",
            &f,
            &out,
            "--tokenizer",
            "cl100k_base",
            "--dtype",
            "u16",
            "--lossy",
        ],
    );
    assert_eq!(listing(tmp.path()), ["t.txt"]);
    ok(&[
        "import",
        "text",
        &f,
        &out,
        "--tokenizer",
        "cl100k_base",
        "--lossy",
    ]);
    let docs = records(Path::new(&out));
    // "hello world" in cl100k_base, then <|endoftext|>.
    assert_eq!(docs[0], vec![15339, 1917, 100257]);
    assert_eq!(docs[1].last(), Some(&100257));
}

#[cfg(feature = "tokenizers")]
#[test]
fn tokenizer_json_files_tokenise_and_find_their_end_token() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("tokenizer.json");
    std::fs::write(
        &json,
        r#"{"version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [{"id": 3, "content": "</s>", "single_word": false, "lstrip": false,
                              "rstrip": false, "normalized": false, "special": true}],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"hello": 0, "world": 1, "[UNK]": 2, "</s>": 3},
                      "unk_token": "[UNK]"}}"#,
    )
    .unwrap();
    let file = tmp.path().join("t.txt");
    std::fs::write(&file, "hello world\nworld peace\n").unwrap();
    let out = tmp.path().join("o");
    run(&file, &out, &["--tokenizer", &json.display().to_string()]);
    assert_eq!(records(&out), vec![vec![0, 1, 3], vec![1, 2, 3]]);
}

#[test]
fn quiet_keeps_the_summary_and_silent_drops_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("t.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let stderr = run(&file, &tmp.path().join("q"), &["--tokenizer", "bytes"]);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("imported 3 documents, 14 tokens (bytes)"),
        "{stderr}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["--silent", "import", "text", "--tokenizer", "bytes"])
        .arg(&file)
        .arg(tmp.path().join("s"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty() && out.stdout.is_empty());

    // Every importer has its summary line under --quiet.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["-q", "import", "lines"])
        .arg(&file)
        .arg(tmp.path().join("l"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("imported 3 records into "), "{stderr}");

    // `import text` points at `import parquet --tokenizer` for Parquet columns.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["import", "text", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("import parquet --tokenizer"));
}
