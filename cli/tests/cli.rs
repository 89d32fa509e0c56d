//! The `zrecord` command end to end: imports round-trip bit-exactly through
//! export, verify finds damage, and bad input is a one-line error with exit
//! code 2 that leaves nothing behind.

mod common;

use std::fs;
use std::io::Write;

use common::listing;
use std::process::{Command, Output};

fn zrecord(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().expect("run zrecord")
}

fn ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = zrecord(args);
    assert!(
        out.status.success(),
        "zrecord failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a failing command: checks its exit code, that stderr is one line
/// naming `mention`, and returns that line.
fn fails(code: i32, mention: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = zrecord(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(mention), "{stderr:?} names {mention:?}");
    stderr
}

/// An .npy file as NumPy writes it (version 1.0, C order, 64-byte aligned header).
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let unpadded = 10 + text.len() + 1;
    text.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    text.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(data);
    out
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) % 5)
        .collect()
}

#[test]
fn npy_round_trips_bit_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &[usize], usize); 6] = [
        ("<f4", &[10, 3, 4], 4),
        ("|u1", &[7, 28, 28], 1),
        ("<i8", &[25], 8),
        ("|b1", &[6, 2], 1),
        ("<f2", &[3, 2, 2, 2], 2),
        ("<u2", &[4, 1], 2),
    ];
    for (k, (descr, shape, size)) in cases.iter().enumerate() {
        let mut data = bytes(shape.iter().product::<usize>() * size, k as u8);
        if *descr == "|b1" {
            data.iter_mut().for_each(|b| *b &= 1);
        }
        let input = d.join(format!("in{k}.npy"));
        fs::write(&input, npy(descr, shape, &data)).unwrap();
        // A dictionary needs at least 8 records to train on.
        let codecs: &[&str] = if shape[0] >= 8 {
            &["raw", "zstd", "zstd-dict"]
        } else {
            &["raw", "zstd"]
        };
        for codec in codecs {
            let store = d.join(format!("s{k}-{codec}"));
            let out = d.join(format!("out{k}-{codec}.npy"));
            ok(&[
                &"import", &"npy", &input, &store, &"--codec", &codec, &"--tier", &"fast",
            ]);
            let info: serde_json::Value =
                serde_json::from_str(&ok(&[&"info", &store, &"--json"])).unwrap();
            assert_eq!(info["records"], shape[0]);
            assert_eq!(
                info["item_shape"].as_array().unwrap().len(),
                shape.len() - 1
            );
            assert!(ok(&[&"verify", &store]).starts_with("ok:"));
            ok(&[&"export", &store, &out]);
            assert_eq!(
                fs::read(&out).unwrap(),
                fs::read(&input).unwrap(),
                "{descr} {shape:?} via {codec}"
            );
        }
    }
    // Big-endian input is swapped on the way in.
    let be: Vec<u8> = [1i32, -2, 300]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    fs::write(d.join("be.npy"), npy(">i4", &[3], &be)).unwrap();
    ok(&[&"import", &"npy", &d.join("be.npy"), &d.join("be")]);
    ok(&[&"export", &d.join("be"), &d.join("le.npy")]);
    let le: Vec<u8> = [1i32, -2, 300]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(fs::read(d.join("le.npy")).unwrap(), npy("<i4", &[3], &le));
}

fn idx(kind: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, kind, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

#[test]
fn idx_imports_plain_and_gzipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let images = bytes(5 * 4 * 3, 9);
    fs::write(d.join("images.idx3-ubyte"), idx(0x08, &[5, 4, 3], &images)).unwrap();
    fs::write(d.join("images.gz"), gzip(&idx(0x08, &[5, 4, 3], &images))).unwrap();
    let floats: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    fs::write(d.join("floats.gz"), gzip(&idx(0x0D, &[2], &floats))).unwrap();
    for name in ["images.idx3-ubyte", "images.gz"] {
        let store = d.join(format!("{name}.store"));
        ok(&[&"import", &"idx", &d.join(name), &store]);
        ok(&[&"export", &store, &d.join(format!("{name}.npy"))]);
        assert_eq!(
            fs::read(d.join(format!("{name}.npy"))).unwrap(),
            npy("|u1", &[5, 4, 3], &images)
        );
    }
    ok(&[&"import", &"idx", &d.join("floats.gz"), &d.join("floats")]);
    ok(&[&"export", &d.join("floats"), &d.join("floats.npy")]);
    let le: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(
        fs::read(d.join("floats.npy")).unwrap(),
        npy("<f4", &[2], &le)
    );
}

#[test]
fn mnist_imports_when_the_data_is_there() {
    let Some(mnist) = common::run::data("mnist") else {
        return;
    };
    if !mnist.join("t10k-labels-idx1-ubyte.gz").exists() {
        println!(
            "skipped: {} has no t10k-labels-idx1-ubyte.gz",
            mnist.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels");
    ok(&[
        &"import",
        &"idx",
        &mnist.join("t10k-labels-idx1-ubyte.gz"),
        &labels,
    ]);
    ok(&[
        &"import",
        &"idx",
        &mnist.join("t10k-images-idx3-ubyte.gz"),
        &dir.path().join("images"),
    ]);
    let info: serde_json::Value =
        serde_json::from_str(&ok(&[&"info", &dir.path().join("images"), &"--json"])).unwrap();
    assert_eq!(
        (info["records"].as_u64(), info["logical_bytes"].as_u64()),
        (Some(10_000), Some(7_840_000))
    );
    ok(&[&"export", &labels, &dir.path().join("labels.npy")]);
    let npy = fs::read(dir.path().join("labels.npy")).unwrap();
    assert_eq!(
        &npy[npy.len() - 10_000..][..5],
        &[7, 2, 1, 0, 4],
        "the first test labels"
    );
}

#[test]
fn npy_shards_join_into_the_whole_array() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = bytes(7 * 6, 3);
    fs::write(d.join("a.npy"), npy("|u1", &[7, 2, 3], &data)).unwrap();
    for k in 0..3 {
        let shard = format!("{k}/3");
        ok(&[
            &"import",
            &"npy",
            &d.join("a.npy"),
            &d.join("ds"),
            &"--shard",
            &shard,
        ]);
    }
    assert!(ok(&[&"dataset", &"join", &d.join("ds")]).contains("3 shards, 7 records"));
    let dataset = zrecord::Dataset::open(d.join("ds")).unwrap();
    let records = dataset.stream("records").unwrap().as_dense().unwrap();
    assert_eq!(records.starts(), &[0, 3, 6, 7]); // shards of ⌈7/3⌉ but the last
    assert_eq!(dataset.shard_block(), Some(3));
    let all: Vec<u64> = (0..7).collect();
    assert_eq!(records.gather_dyn(&all).unwrap().as_bytes(), &data[..]);
    // A missing shard keeps the dataset from being joined.
    fs::remove_dir_all(d.join("ds").join(zrecord::shard_folder(1, 3))).unwrap();
    fails(
        2,
        "shard-00001-of-00003 is missing",
        &[&"dataset", &"join", &d.join("ds")],
    );
}

#[test]
fn safetensors_imports_one_tensor() {
    use safetensors::tensor::{Dtype, TensorView};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let weights: Vec<u8> = (0..24)
        .flat_map(|i| (i as f32 * 0.25).to_le_bytes())
        .collect();
    let ids: Vec<u8> = (0..6i64).flat_map(|i| (i * 1000).to_le_bytes()).collect();
    let tensors = [
        (
            "weights",
            TensorView::new(Dtype::F32, vec![6, 2, 2], &weights).unwrap(),
        ),
        ("ids", TensorView::new(Dtype::I64, vec![6], &ids).unwrap()),
    ];
    safetensors::serialize_to_file(tensors, None, &d.join("model.safetensors")).unwrap();
    ok(&[
        &"import",
        &"safetensors",
        &d.join("model.safetensors"),
        &"weights",
        &d.join("w"),
    ]);
    ok(&[&"export", &d.join("w"), &d.join("w.npy")]);
    assert_eq!(
        fs::read(d.join("w.npy")).unwrap(),
        npy("<f4", &[6, 2, 2], &weights)
    );
    ok(&[
        &"import",
        &"safetensors",
        &d.join("model.safetensors"),
        &"ids",
        &d.join("ids"),
    ]);
    ok(&[&"export", &d.join("ids"), &d.join("ids.npy")]);
    assert_eq!(fs::read(d.join("ids.npy")).unwrap(), npy("<i8", &[6], &ids));
    let before = listing(d);
    fails(
        2,
        "no tensor \"bias\"",
        &[
            &"import",
            &"safetensors",
            &d.join("model.safetensors"),
            &"bias",
            &d.join("b"),
        ],
    );
    assert_eq!(listing(d), before);
}

#[test]
fn files_and_lines_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = d.join("src");
    fs::create_dir_all(src.join("a/b")).unwrap();
    let files = [
        ("a/b/x.jpg", bytes(300, 1)),
        ("a/y.jpg", bytes(20, 2)),
        ("z.jpg", bytes(7, 3)),
        ("notes.txt", b"hi".to_vec()),
    ];
    for (name, content) in &files {
        fs::write(src.join(name), content).unwrap();
    }
    ok(&[
        &"import",
        &"files",
        &src,
        &d.join("jpgs"),
        &"--glob",
        &"*.jpg",
    ]);
    assert_eq!(
        fs::read_to_string(d.join("jpgs/paths.txt")).unwrap(),
        "a/b/x.jpg\na/y.jpg\nz.jpg\n"
    );
    ok(&[&"export", &d.join("jpgs"), &d.join("back")]);
    for (name, content) in &files[..3] {
        assert_eq!(
            &fs::read(d.join("back").join(name)).unwrap(),
            content,
            "{name}"
        );
    }
    assert!(!d.join("back/notes.txt").exists());

    fs::write(d.join("text.txt"), "first line\nsecond\r\nthird").unwrap();
    ok(&[
        &"import",
        &"lines",
        &d.join("text.txt"),
        &d.join("lines"),
        &"--codec",
        &"raw",
    ]);
    ok(&[&"export", &d.join("lines"), &d.join("lines-out")]);
    let got: Vec<String> = listing(&d.join("lines-out"))
        .iter()
        .map(|n| fs::read_to_string(d.join("lines-out").join(n)).unwrap())
        .collect();
    assert_eq!(got, ["first line", "second", "third"]);

    // An empty line is an empty record, or left out with --skip-empty.
    fs::write(d.join("gaps.txt"), "a\n\nb\n").unwrap();
    ok(&[&"import", &"lines", &d.join("gaps.txt"), &d.join("gaps")]);
    let gaps = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<zrecord::RaggedStore<u8>>(d.join("gaps"))
        .unwrap();
    let batch = gaps.gather(&[0, 1, 2]).unwrap();
    let lines: Vec<&[u8]> = (0..3)
        .map(|i| &batch.values()[batch.layout().range(i).unwrap()])
        .collect();
    assert_eq!(lines, [&b"a"[..], b"", b"b"]);
    ok(&[
        &"import",
        &"lines",
        &d.join("gaps.txt"),
        &d.join("gaps-skipped"),
        &"--skip-empty",
    ]);
    let skipped = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<zrecord::RaggedStore<u8>>(d.join("gaps-skipped"))
        .unwrap();
    assert_eq!(skipped.len(), 2);
}

#[test]
fn info_shows_record_lengths_of_ragged_stores() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tokens =
        zrecord::RaggedStore::<u32>::create(d.join("tokens"), zrecord::Codec::Zstd).unwrap();
    let records: Vec<Vec<u32>> = (1..=40u32).map(|n| (0..n).collect()).collect();
    tokens.append_slices(&records).unwrap();
    tokens.append_slices(&[vec![9u32; 120]]).unwrap();
    drop(tokens);
    let text = ok(&[&"info", &d.join("tokens")]);
    let line = text
        .lines()
        .find(|l| l.starts_with("lengths"))
        .unwrap_or_else(|| panic!("no lengths line in {text}"));
    assert!(
        line.contains("min 1 ") && line.contains("max 120 "),
        "{line}"
    );
    // 1..=40 and 120: exact median 21, mean 940 / 41.
    assert!(
        line.contains("p50 21 ") && line.contains("mean 22.9 elements"),
        "{line}"
    );
    let info: serde_json::Value =
        serde_json::from_str(&ok(&[&"info", &d.join("tokens"), &"--json"])).unwrap();
    let lengths = &info["lengths"];
    assert_eq!(
        (lengths["records"].as_u64(), lengths["total"].as_u64()),
        (Some(41), Some(940))
    );
    assert_eq!(
        (lengths["min"].as_u64(), lengths["max"].as_u64()),
        (Some(1), Some(120))
    );
    // An empty ragged store has no line; a dense store has neither.
    zrecord::RaggedStore::<u8>::create(d.join("empty"), zrecord::Codec::Raw).unwrap();
    assert!(!ok(&[&"info", &d.join("empty")]).contains("lengths"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&[&"info", &d.join("empty"), &"--json"])).unwrap();
    assert_eq!(json["lengths"]["records"], 0);
    let dense =
        zrecord::DenseStore::<u8>::create(d.join("dense"), &[4], zrecord::Codec::Raw).unwrap();
    dense.append(&[1; 8]).unwrap();
    drop(dense);
    assert!(!ok(&[&"info", &d.join("dense")]).contains("lengths"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&[&"info", &d.join("dense"), &"--json"])).unwrap();
    assert!(json.get("lengths").is_none());
}

#[test]
fn verify_finds_a_flipped_byte_and_a_truncated_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("in.npy"), npy("|u1", &[50, 64], &bytes(50 * 64, 4))).unwrap();
    ok(&[&"import", &"npy", &d.join("in.npy"), &d.join("short")]);
    // A flipped byte in a raw store is caught by its CRC-32C, in a zstd
    // store by the frame checksum.
    for codec in ["raw", "zstd"] {
        let store = d.join(format!("flip-{codec}"));
        ok(&[
            &"import",
            &"npy",
            &d.join("in.npy"),
            &store,
            &"--codec",
            &codec,
        ]);
        let chunk = store.join("0.chunk");
        let mut b = fs::read(&chunk).unwrap();
        let middle = b.len() / 2;
        b[middle] ^= 0x55;
        fs::write(&chunk, b).unwrap();
        let out = fails(1, "corrupt", &[&"verify", &store]);
        assert!(out.contains("record"), "{codec}: {out}");
    }
    let loc = d.join("short/0.loc");
    let b = fs::read(&loc).unwrap();
    fs::write(&loc, &b[..b.len() - 16]).unwrap();
    fails(1, "0.loc", &[&"verify", &d.join("short")]);
}

#[test]
fn verify_repair_says_what_a_power_cut_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let writer = d.join("writer");
    let store = zrecord::DenseStore::<u8>::create(&writer, &[4], zrecord::Codec::Raw).unwrap();
    store.append(&[1; 40]).unwrap();
    store.sync().unwrap();
    store.append(&[2; 12]).unwrap();
    // The files as a power cut leaves them: the header of the unsynced
    // append on disk, its bytes not (closing the writer would sync).
    let cut = d.join("cut");
    fs::create_dir(&cut).unwrap();
    for entry in fs::read_dir(&writer).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), cut.join(entry.file_name())).unwrap();
    }
    drop(store);
    let chunk = fs::OpenOptions::new()
        .write(true)
        .open(cut.join("0.chunk"))
        .unwrap();
    chunk.set_len(10 * 8).unwrap();
    drop(chunk);
    let out = ok(&[&"verify", &"--repair", &cut]);
    assert!(
        out.contains("rolled back to its last sync: 3 records"),
        "{out}"
    );
    let out = ok(&[&"verify", &"--repair", &cut]);
    assert!(!out.contains("rolled back"), "{out}");
    ok(&[&"verify", &cut]);
}

#[test]
fn maintenance_commands_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(
        d.join("in.npy"),
        npy("<u2", &[400, 32], &bytes(400 * 64, 5)),
    )
    .unwrap();
    ok(&[&"import", &"npy", &d.join("in.npy"), &d.join("s")]);
    {
        let mut store = zrecord::DenseStore::<u16>::open(d.join("s")).unwrap();
        store
            .delete(&(0..400).step_by(2).collect::<Vec<u64>>())
            .unwrap();
    }
    let out = ok(&[&"compact", &d.join("s")]);
    assert!(out.contains("200 records"), "{out}");
    let info: serde_json::Value =
        serde_json::from_str(&ok(&[&"info", &d.join("s"), &"--json"])).unwrap();
    assert_eq!(info["reclaimable_bytes"], 0);
    ok(&[
        &"train-dict",
        &d.join("s"),
        &d.join("s.dict"),
        &"--tier",
        &"fast",
    ]);
    ok(&[
        &"recode",
        &d.join("s"),
        &d.join("dict"),
        &"--codec",
        &"zstd-dict",
        &"--dict",
        &d.join("s.dict"),
    ]);
    ok(&[
        &"recode",
        &d.join("dict"),
        &d.join("raw"),
        &"--codec",
        &"raw",
    ]);
    ok(&[&"export", &d.join("s"), &d.join("a.npy")]);
    ok(&[&"export", &d.join("raw"), &d.join("b.npy")]);
    assert_eq!(
        fs::read(d.join("a.npy")).unwrap(),
        fs::read(d.join("b.npy")).unwrap()
    );
    assert!(
        ok(&[
            &"bench",
            &d.join("raw"),
            &"--batch",
            &"16",
            &"--batches",
            &"20"
        ])
        .contains("MiB/s")
    );
    // An existing target needs --force.
    fails(
        2,
        "already exists",
        &[&"recode", &d.join("s"), &d.join("raw"), &"--codec", &"zstd"],
    );
    ok(&[
        &"recode",
        &d.join("s"),
        &d.join("raw"),
        &"--codec",
        &"zstd",
        &"--force",
    ]);
    let info: serde_json::Value =
        serde_json::from_str(&ok(&[&"info", &d.join("raw"), &"--json"])).unwrap();
    assert_eq!(info["codec"], "zstd");
}

#[test]
fn bad_input_is_one_line_with_exit_code_2_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let full = npy("<f4", &[4, 2], &bytes(32, 6));
    let mut fortran = npy("<f4", &[2, 2], &[0; 16]);
    let at = fortran.windows(5).position(|w| w == b"False").unwrap();
    fortran[at..at + 5].copy_from_slice(b"True ");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated.npy",
            full[..full.len() - 5].to_vec(),
            "truncated",
        ),
        ("magic.npy", b"NOTNUMPY0000".to_vec(), "not an .npy file"),
        (
            "complex.npy",
            npy("<c8", &[2], &[0; 16]),
            "unsupported dtype",
        ),
        ("fortran.npy", fortran, "Fortran"),
        ("scalar.npy", npy("<f4", &[], &[0; 4]), "no records"),
    ];
    for (name, content, mention) in cases {
        fs::write(d.join(name), content).unwrap();
        let before = listing(d);
        let line = fails(
            2,
            mention,
            &[&"import", &"npy", &d.join(name), &d.join("out")],
        );
        assert!(line.contains(name), "names the file: {line}");
        assert_eq!(listing(d), before, "{name}: nothing left behind");
    }
    let idx_full = idx(0x08, &[3, 2, 2], &[1; 12]);
    fs::write(d.join("short.idx"), &idx_full[..idx_full.len() - 3]).unwrap();
    fs::write(
        d.join("short.idx.gz"),
        gzip(&idx_full[..idx_full.len() - 3]),
    )
    .unwrap();
    fs::write(d.join("kind.idx"), idx(0x42, &[1], &[0])).unwrap();
    for (name, mention) in [
        ("short.idx", "truncated"),
        ("short.idx.gz", "truncated"),
        ("kind.idx", "element type"),
    ] {
        let before = listing(d);
        fails(
            2,
            mention,
            &[&"import", &"idx", &d.join(name), &d.join("out")],
        );
        assert_eq!(listing(d), before, "{name}: nothing left behind");
    }
    fs::write(
        d.join("bad.safetensors"),
        b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}",
    )
    .unwrap();
    fails(
        2,
        "not a valid safetensors file",
        &[
            &"import",
            &"safetensors",
            &d.join("bad.safetensors"),
            &"t",
            &d.join("out"),
        ],
    );
    fails(
        2,
        "missing.npy",
        &[&"import", &"npy", &d.join("missing.npy"), &d.join("out")],
    );
    fs::create_dir(d.join("folder")).unwrap();
    fs::write(d.join("folder/readme.txt"), "not a store").unwrap();
    for cmd in ["info", "verify", "compact", "bench"] {
        fails(2, "not a zrecord store", &[&cmd, &d.join("folder")]);
    }
    assert!(!d.join("out").exists());
}

#[test]
fn the_zstd_level_is_chosen_on_import_and_recode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<u8> = (0..400 * 784u32)
        .map(|i| ((i % 784) * (i / 784 % 7) % 251) as u8)
        .collect();
    fs::write(d.join("x.npy"), npy("|u1", &[400, 784], &data)).unwrap();
    let stored = |name: &str| {
        zrecord::OpenOptions::new()
            .read_only(true)
            .open::<zrecord::AnyStore>(d.join(name))
            .unwrap()
    };
    let size = |name: &str| match stored(name) {
        zrecord::AnyStore::Dense(s) => s.stats().unwrap().live_bytes,
        zrecord::AnyStore::Ragged(s) => s.stats().unwrap().live_bytes,
    };
    for (codec, low, high) in [("zstd", "1", "19"), ("zstd-dict", "1", "19")] {
        for level in [low, high] {
            let name = format!("{codec}-{level}");
            ok(&[
                &"import",
                &"npy",
                &d.join("x.npy"),
                &d.join(&name),
                &"--codec",
                &codec,
                &"--level",
                &level,
            ]);
            let zrecord::AnyStore::Dense(s) = stored(&name) else {
                panic!("{name}: dense")
            };
            let mut back = vec![0; data.len()];
            s.gather_bytes(&(0..400).collect::<Vec<u64>>(), &mut back)
                .unwrap();
            assert!(back == data, "{name} reads back what was imported");
        }
        assert_ne!(
            size(&format!("{codec}-{low}")),
            size(&format!("{codec}-{high}")),
            "{codec}"
        );
    }
    ok(&[
        &"recode",
        &d.join("zstd-1"),
        &d.join("recoded"),
        &"--codec",
        &"zstd",
        &"--level",
        &"19",
    ]);
    assert_eq!(size("recoded"), size("zstd-19"));
    let line = fails(
        2,
        "zstd level 99",
        &[
            &"import",
            &"npy",
            &d.join("x.npy"),
            &d.join("bad"),
            &"--level",
            &"99",
        ],
    );
    assert!(line.contains("outside"), "{line}");
    assert!(!d.join("bad").exists(), "a refused import leaves nothing");
}

#[test]
fn a_closed_pipe_ends_the_command_without_a_panic() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    zrecord::DenseStore::<u8>::create(&store, &[4], zrecord::Codec::Raw)
        .unwrap()
        .append(&[1u8; 4000])
        .unwrap();
    // Reading nothing and closing the pipe at once, like `| head -0`.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args([std::ffi::OsStr::new("info"), store.as_os_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
