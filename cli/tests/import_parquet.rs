//! `zrecord import parquet` on files written by pyarrow (the
//! fixtures in tests/fixtures/parquet): every column type maps to the store its README promises, with
//! the expected values; nulls and malformed files are clear errors that leave
//! nothing behind.
#![cfg(feature = "parquet")]

mod common;

use std::path::Path;

use common::listing;
use common::run::{data, fails, fixture, ok};
use zrecord::{AnyStore, DenseStore, RaggedStore};

fn import(input: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "import".to_string(),
        "parquet".into(),
        input.display().to_string(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    ok(&args);
}

fn strings(store: &Path) -> Vec<String> {
    let s = RaggedStore::<u8>::open(store).unwrap();
    s.gather(&(0..s.len()).collect::<Vec<u64>>())
        .unwrap()
        .iter()
        .map(|r| String::from_utf8(r.iter().copied().collect()).unwrap())
        .collect()
}

#[test]
fn genesis_columns_become_stores_in_row_order() {
    let dir = fixture("parquet");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("genesis");
    import(&dir.join("kjv_genesis.parquet"), &out, &[]);
    assert_eq!(listing(&out), ["book", "chapter", "text", "verse"]);
    let text = strings(&out.join("text"));
    assert_eq!(text.len(), 1533);
    assert_eq!(
        text[0],
        "In the beginning God created the heaven and the earth."
    );
    let chapter = DenseStore::<i16>::open(out.join("chapter")).unwrap();
    let verse = DenseStore::<i32>::open(out.join("verse")).unwrap();
    assert_eq!(chapter.item_shape(), &[] as &[usize]);
    assert_eq!(
        (
            chapter.get(1532).unwrap().sum(),
            verse.get(1532).unwrap().sum()
        ),
        (50, 26)
    );
    // Every verse against the source text, where it is there.
    if let Some(kjv) = data("text/kjv.tsv") {
        let want: Vec<String> = std::fs::read_to_string(kjv)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("Genesis\t"))
            .map(|l| l.splitn(4, '\t').nth(3).unwrap().to_string())
            .collect();
        assert_eq!(text, want);
    }
}

#[test]
fn digits_fixed_size_lists_become_dense_images() {
    let dir = fixture("parquet");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("digits");
    import(&dir.join("digits.parquet"), &out, &["--codec", "raw"]);
    let images = DenseStore::<u8>::open(out.join("image")).unwrap();
    let labels = DenseStore::<i64>::open(out.join("label")).unwrap();
    assert_eq!(images.item_shape(), &[8, 8]);
    assert_eq!(images.len(), 1797);
    // The same rows as the copy the examples ship.
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/digits.csv.gz");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(csv).unwrap()),
        &mut text,
    )
    .unwrap();
    let all: Vec<u64> = (0..1797).collect();
    let (pixels, classes) = (images.gather(&all).unwrap(), labels.gather(&all).unwrap());
    for (i, line) in text.lines().enumerate() {
        let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        let row: Vec<u8> = pixels
            .index_axis(ndarray::Axis(0), i)
            .iter()
            .copied()
            .collect();
        assert_eq!(
            row,
            v[..64].iter().map(|&p| p as u8).collect::<Vec<_>>(),
            "row {i}"
        );
        assert_eq!(classes[i], v[64] as i64);
    }
}

#[test]
fn every_type_maps_to_its_store() {
    let dir = fixture("parquet");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("types");
    let columns = "b,i8,u16,i64,f32,f64,vec3,tokens,nested";
    import(
        &dir.join("types.parquet"),
        &out,
        &["--columns", columns, "--flatten"],
    );
    let all: Vec<u64> = (0..10).collect();
    let b = DenseStore::<bool>::open(out.join("b"))
        .unwrap()
        .gather(&all)
        .unwrap();
    let i8s = DenseStore::<i8>::open(out.join("i8"))
        .unwrap()
        .gather(&all)
        .unwrap();
    let u16s = DenseStore::<u16>::open(out.join("u16"))
        .unwrap()
        .gather(&all)
        .unwrap();
    let i64s = DenseStore::<i64>::open(out.join("i64"))
        .unwrap()
        .gather(&all)
        .unwrap();
    let f32s = DenseStore::<f32>::open(out.join("f32"))
        .unwrap()
        .gather(&all)
        .unwrap();
    let f64s = DenseStore::<f64>::open(out.join("f64"))
        .unwrap()
        .gather(&all)
        .unwrap();
    let vec3 = DenseStore::<f32>::open(out.join("vec3")).unwrap();
    assert_eq!(vec3.item_shape(), &[3]);
    let vec3 = vec3.gather(&all).unwrap();
    let tokens = RaggedStore::<i32>::open(out.join("tokens"))
        .unwrap()
        .gather_arrays(&all)
        .unwrap();
    let nested = RaggedStore::<i16>::open(out.join("nested"))
        .unwrap()
        .gather_arrays(&all)
        .unwrap();
    for i in 0..10usize {
        let n = i as i64;
        assert_eq!(b[i], i % 3 == 0);
        assert_eq!(i8s[i], (n - 5) as i8);
        assert_eq!(u16s[i], (n * 1000) as u16);
        assert_eq!(i64s[i], n * 1_000_000_000_000);
        assert_eq!(f32s[i], n as f32 / 4.0);
        assert_eq!(f64s[i], n as f64 / 3.0);
        assert_eq!(
            vec3.index_axis(ndarray::Axis(0), i)
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            vec![n as f32, n as f32 + 0.5, -n as f32]
        );
        let want: Vec<i32> = (i as i32..i as i32 + (i % 4) as i32 + 1).collect();
        assert_eq!(tokens[i].iter().copied().collect::<Vec<_>>(), want);
        let want: Vec<i16> = (0..=(i % 3) as i16)
            .flat_map(|j| vec![j; j as usize + 1])
            .collect();
        assert_eq!(
            nested[i].iter().copied().collect::<Vec<_>>(),
            want,
            "row {i}"
        );
    }
    // Without --flatten, a jagged row of `nested` is an error naming it.
    let out = tmp.path().join("jagged");
    fails(
        &["nested", "row 1", "different lengths"],
        &[
            "import",
            "parquet",
            &dir.join("types.parquet").display().to_string(),
            &out.display().to_string(),
            "--columns",
            "nested",
        ],
    );
    assert_eq!(listing(tmp.path()), ["types"]);
}

#[test]
fn nulls_are_an_error_naming_column_and_row_unless_filled() {
    let dir = fixture("parquet");
    let tmp = tempfile::tempdir().unwrap();
    let input = dir.join("types.parquet").display().to_string();
    let out = tmp.path().join("maybe").display().to_string();
    fails(
        &["\"maybe\"", "row 2", "--fill"],
        &["import", "parquet", &input, &out, "--columns", "maybe"],
    );
    assert!(listing(tmp.path()).is_empty(), "nothing left behind");
    ok(&[
        "import",
        "parquet",
        &input,
        &out,
        "--columns",
        "maybe",
        "--fill",
        "-1",
    ]);
    let maybe = DenseStore::<i32>::open(Path::new(&out).join("maybe")).unwrap();
    let got: Vec<i32> = maybe
        .gather(&(0..10).collect::<Vec<u64>>())
        .unwrap()
        .iter()
        .copied()
        .collect();
    assert_eq!(got, vec![0, 1, -1, 3, 4, 5, 6, -1, 8, 9]);
}

#[test]
fn empty_strings_and_binaries_are_empty_records() {
    let dir = fixture("parquet");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("types");
    import(&dir.join("types.parquet"), &out, &["--columns", "s,bin"]);
    let s = strings(&out.join("s"));
    assert_eq!(
        s,
        [
            "",
            "a",
            "héllo",
            &"x".repeat(100),
            "日本",
            "z",
            "",
            "q",
            "tab\tin",
            "end"
        ]
    );
    let bin = RaggedStore::<u8>::open(out.join("bin")).unwrap();
    for i in 0..10u64 {
        let want: Vec<u8> = (0..i as u8).collect();
        assert_eq!(
            bin.get(i).unwrap().iter().copied().collect::<Vec<_>>(),
            want
        );
    }
}

#[test]
fn a_dataset_folder_imports_its_files_in_sorted_order() {
    let dir = fixture("parquet/hf_style");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ruth");
    import(&dir, &out, &[]);
    let text = strings(&out.join("text"));
    let labels = DenseStore::<i64>::open(out.join("label")).unwrap();
    assert_eq!((text.len(), labels.len()), (85, 85));
    if let Some(kjv) = data("text/kjv.tsv") {
        let ruth: Vec<String> = std::fs::read_to_string(kjv)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("Ruth\t"))
            .map(|l| l.splitn(4, '\t').nth(3).unwrap().to_string())
            .collect();
        // File k holds verses k, k + 3, …; files are read in name order.
        let want: Vec<String> = (0..3)
            .flat_map(|k| ruth.iter().skip(k).step_by(3).cloned())
            .collect();
        assert_eq!(text, want);
    }
}

#[test]
fn malformed_files_are_errors_that_leave_nothing_behind() {
    let dir = fixture("parquet");
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(dir.join("types.parquet")).unwrap();
    let truncated = tmp.path().join("truncated.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let magic = tmp.path().join("magic.parquet");
    let mut wrong = bytes.clone();
    wrong[..4].copy_from_slice(b"PAR2");
    let n = wrong.len();
    wrong[n - 4..].copy_from_slice(b"PAR2");
    std::fs::write(&magic, &wrong).unwrap();
    let out = tmp.path().join("out").display().to_string();
    for file in [&truncated, &magic] {
        let name = file.display().to_string();
        fails(
            &[&name, "not a readable Parquet file"],
            &["import", "parquet", &name, &out],
        );
    }
    fails(
        &["no column \"nope\""],
        &[
            "import",
            "parquet",
            &dir.join("types.parquet").display().to_string(),
            &out,
            "--columns",
            "nope",
        ],
    );
    assert_eq!(listing(tmp.path()), ["magic.parquet", "truncated.parquet"]);
    // A store opens as what it is: the chosen column only.
    import(
        &dir.join("types.parquet"),
        Path::new(&out),
        &["--columns", "u16"],
    );
    assert!(matches!(
        AnyStore::open(Path::new(&out).join("u16")).unwrap(),
        AnyStore::Dense(_)
    ));
}

/// A Parquet file written here (no shared fixture needed): `rows` rows of
/// `a` (i32), `b` (i64) and `s` (strings), with nulls at the given rows.
fn written(path: &Path, rows: usize, a_null: Option<usize>, b_null: Option<usize>) {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    let a: Int32Array = (0..rows)
        .map(|i| (Some(i) != a_null).then_some(i as i32))
        .collect();
    let b: Int64Array = (0..rows)
        .map(|i| (Some(i) != b_null).then_some(-(i as i64)))
        .collect();
    let s: StringArray = (0..rows).map(|i| Some("x".repeat(i % 7))).collect();
    let batch = RecordBatch::try_from_iter([
        ("a", Arc::new(a) as ArrayRef),
        ("b", Arc::new(b) as ArrayRef),
        ("s", Arc::new(s) as ArrayRef),
    ])
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(5000))
        .build();
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[test]
fn columns_appended_side_by_side_keep_row_order() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("t.parquet");
    // Several row groups and read batches, each column on its own thread.
    let rows = 30_000;
    written(&input, rows, None, None);
    for codec in ["raw", "zstd-dict"] {
        let out = tmp.path().join(codec);
        import(&input, &out, &["--codec", codec]);
        same_rows(&out, rows);
    }
}

/// The stores `written` makes, imported to `out`.
fn same_rows(out: &Path, rows: usize) {
    let all: Vec<u64> = (0..rows as u64).collect();
    let a = DenseStore::<i32>::open(out.join("a")).unwrap();
    let b = DenseStore::<i64>::open(out.join("b")).unwrap();
    assert_eq!(a.len(), rows as u64);
    assert_eq!(b.len(), rows as u64);
    assert!(
        a.gather(&all)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as i32)
    );
    assert!(
        b.gather(&all)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == -(i as i64))
    );
    let s = strings(&out.join("s"));
    assert_eq!(s.len(), rows);
    assert!(s.iter().enumerate().all(|(i, v)| *v == "x".repeat(i % 7)));
}

#[test]
fn the_earliest_null_is_the_one_reported_whatever_its_column() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("t.parquet");
    // `a`'s null is in a later read batch than `b`'s: `b`'s comes first in
    // row order, so it is the one named, as a row-by-row import would.
    written(&input, 30_000, Some(25_000), Some(9_000));
    let out = tmp.path().join("out").display().to_string();
    let input = input.display().to_string();
    for _ in 0..3 {
        let stderr = fails(
            &["\"b\"", "row 9000", "--fill"],
            &["import", "parquet", &input, &out],
        );
        assert!(!stderr.contains("\"a\""), "{stderr}");
        assert_eq!(listing(tmp.path()), ["t.parquet"], "nothing left behind");
    }
}

#[test]
fn a_damaged_row_group_fails_the_import_and_leaves_nothing() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("t.parquet");
    written(&input, 30_000, None, None);
    // Overwrite the page header of column `b` in the fourth row group: its
    // reader fails there while the others decode theirs.
    let at = {
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&input).unwrap()).unwrap();
        builder.metadata().row_group(3).column(1).data_page_offset() as usize
    };
    let mut bytes = std::fs::read(&input).unwrap();
    bytes[at..at + 16].fill(0xFF);
    std::fs::write(&input, &bytes).unwrap();
    let out = tmp.path().join("out").display().to_string();
    let input = input.display().to_string();
    fails(
        &[&input, "cannot read"],
        &["import", "parquet", &input, &out],
    );
    assert_eq!(listing(tmp.path()), ["t.parquet"], "nothing left behind");
}

/// The tokenizer these tests use: an OpenAI encoding where the build has
/// them, bytes otherwise.
fn a_tokenizer() -> &'static str {
    if cfg!(feature = "tiktoken") {
        "cl100k_base"
    } else {
        "bytes"
    }
}

#[test]
fn a_tokenizer_makes_string_columns_the_tokens_import_text_makes() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("t.parquet");
    written(&input, 300, None, None);
    let plain = tmp.path().join("plain");
    import(&input, &plain, &["--columns", "s"]);
    let texts = strings(&plain.join("s"));

    let tokens = tmp.path().join("tokens");
    import(
        &input,
        &tokens,
        &[
            "--tokenizer",
            a_tokenizer(),
            "--dtype",
            "u32",
            "--columns",
            "s,a",
        ],
    );
    // Numbers are untouched.
    assert!(matches!(
        AnyStore::open(tokens.join("a")).unwrap(),
        AnyStore::Dense(_)
    ));
    // The same documents through `import text` (JSON Lines, so empty
    // strings stay documents) give the same records.
    let jsonl = tmp.path().join("t.jsonl");
    let lines: Vec<String> = texts
        .iter()
        .map(|t| serde_json::json!({ "text": t }).to_string())
        .collect();
    std::fs::write(&jsonl, lines.join("\n") + "\n").unwrap();
    let text_store = tmp.path().join("text");
    ok(&[
        "import",
        "text",
        jsonl.to_str().unwrap(),
        text_store.to_str().unwrap(),
        "--tokenizer",
        a_tokenizer(),
        "-q",
    ]);
    let all: Vec<u64> = (0..300).collect();
    let open = |p: &Path| match AnyStore::open(p).unwrap() {
        AnyStore::Ragged(s) => s.gather_dyn(&all).unwrap(),
        AnyStore::Dense(_) => panic!("a dense store"),
    };
    assert_eq!(open(&tokens.join("s")), open(&text_store));

    // The summary names what was tokenised; --dtype alone is refused.
    let out = ok(&[
        "import",
        "parquet",
        input.to_str().unwrap(),
        tmp.path().join("u16").to_str().unwrap(),
        "--tokenizer",
        "bytes",
        "--dtype",
        "u16",
        "-q",
    ]);
    assert!(out.contains("imported 300 rows of 3 columns"), "{out}");
    assert!(out.contains("tokenised s with bytes"), "{out}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["import", "parquet"])
        .arg(&input)
        .arg(tmp.path().join("no"))
        .args(["--eod", "none"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tokenizer"));
}
