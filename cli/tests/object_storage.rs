//! `zrecord push`, `pull`, `info`, `verify` and `export` against an
//! S3-compatible server on loopback (the one `ZRECORD_S3_ENDPOINT` names,
//! or a `moto_server` started here): a store, a folder of stores and a
//! sharded dataset read by URL give the answers their local copies give,
//! and a pull brings back every file bit-exactly.

#[path = "../../remote/tests/support/mod.rs"]
mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `zrecord` with the server's endpoint and dummy credentials in its
/// environment (and nothing else of the test's AWS settings).
fn zrecord(endpoint: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(args)
        .env_remove("AWS_PROFILE")
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("run zrecord")
}

/// Runs it; it must succeed. Returns stdout.
fn ok(endpoint: &str, args: &[&str]) -> String {
    let out = zrecord(endpoint, args);
    assert!(
        out.status.success(),
        "zrecord {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// An .npy file of `u16` records of 3 values: record i is (i, i+1, i+2)·7.
fn npy(path: &Path, records: usize) {
    let header = format!("{{'descr': '<u2', 'fortran_order': False, 'shape': ({records}, 3), }}");
    let unpadded = 10 + header.len() + 1;
    let mut text = header;
    text.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    text.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    for i in 0..records * 3 {
        bytes.extend_from_slice(&((i * 7) as u16).to_le_bytes());
    }
    fs::write(path, bytes).expect("write the .npy file");
}

/// Every file under `dir`: its path below `dir` and its bytes, sorted.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).expect("list") {
            let path = entry.expect("list").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let bytes = fs::read(&path).expect("read");
                out.push((path.strip_prefix(dir).expect("below").to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// `info --json` without what differs between a local folder and its
/// copy in object storage: the paths and the blocks allocated on disk.
fn info(endpoint: &str, at: &str) -> Value {
    let mut v: Value = serde_json::from_str(&ok(endpoint, &["info", "--json", at])).expect("JSON");
    fn scrub(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("path");
                map.remove("bytes_on_disk");
                map.values_mut().for_each(scrub);
            }
            Value::Array(items) => items.iter_mut().for_each(scrub),
            _ => {}
        }
    }
    scrub(&mut v);
    v
}

/// Pushes `local` to `url`, then checks that `info`, `verify` and
/// `export` by URL say what they say of `local`, and that a pull brings
/// back every file bit-exactly.
fn round_trip(endpoint: &str, local: &Path, url: &str, work: &Path) {
    let local_s = local.to_str().expect("UTF-8 path");
    ok(endpoint, &["push", local_s, url, "--verify"]);

    assert_eq!(
        info(endpoint, url),
        info(endpoint, local_s),
        "info of {url}"
    );
    let local_verify = ok(endpoint, &["verify", local_s]);
    assert!(local_verify.starts_with("ok: "), "{local_verify}");
    assert_eq!(ok(endpoint, &["verify", url]), local_verify);

    let (a, b) = (work.join("export-local"), work.join("export-remote"));
    ok(endpoint, &["export", local_s, a.to_str().expect("UTF-8")]);
    ok(endpoint, &["export", url, b.to_str().expect("UTF-8")]);
    if a.is_dir() {
        assert_eq!(files(&a), files(&b), "export of {url}");
    } else {
        assert_eq!(fs::read(&a).expect("read"), fs::read(&b).expect("read"));
    }

    let pulled = work.join("pulled");
    ok(endpoint, &["pull", url, pulled.to_str().expect("UTF-8")]);
    assert_eq!(files(&pulled), files(local), "pull of {url}");
}

#[test]
fn a_store_pushed_reads_by_url_as_it_reads_locally() {
    let (endpoint, _watchdog) = server_or_skip!();
    let bucket = support::bucket(endpoint, "cli-store");
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    npy(&d.join("x.npy"), 1000);
    let store = d.join("store");
    ok(
        endpoint,
        &[
            "import",
            "npy",
            d.join("x.npy").to_str().unwrap(),
            store.to_str().unwrap(),
        ],
    );
    round_trip(endpoint, &store, &format!("s3://{bucket}/x"), d);

    // The same store's text `info` by URL, with the settings as --option
    // and a cache folder.
    let cache = d.join("cache");
    let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .env_clear()
        .args(["info", &format!("s3://{bucket}/x")])
        .args(["--option", &format!("aws_endpoint={endpoint}")])
        .args(["--option", "aws_allow_http=true"])
        .args(["--option", "aws_access_key_id=test"])
        .args(["--option", "aws_secret_access_key=test"])
        .args(["--option", "aws_region=us-east-1"])
        .args(["--cache", cache.to_str().unwrap(), "--cache-limit", "64M"])
        .output()
        .expect("run zrecord");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("records      1000"), "{stdout}");
    assert!(cache.is_dir(), "the cache folder is made");
}

#[test]
fn a_sharded_dataset_pushed_reads_by_url_as_it_reads_locally() {
    let (endpoint, _watchdog) = server_or_skip!();
    let bucket = support::bucket(endpoint, "cli-dataset");
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    npy(&d.join("x.npy"), 1001);
    let dataset = d.join("dataset");
    for k in 0..3 {
        ok(
            endpoint,
            &[
                "import",
                "npy",
                d.join("x.npy").to_str().unwrap(),
                dataset.to_str().unwrap(),
                "--shard",
                &format!("{k}/3"),
            ],
        );
    }
    ok(endpoint, &["dataset", "join", dataset.to_str().unwrap()]);
    let text = ok(endpoint, &["info", dataset.to_str().unwrap()]);
    assert!(text.contains("shard-00002-of-00003"), "{text}");
    let json = info(endpoint, dataset.to_str().unwrap());
    assert_eq!(json["records"], 1001);
    assert_eq!(json["shards"][0]["records"], 334);
    assert_eq!(json["shards"][2]["records"], 333);
    assert_eq!(json["streams"][0]["dtype"], "u16");
    round_trip(endpoint, &dataset, &format!("s3://{bucket}/ds"), d);
}

#[cfg(feature = "images")]
#[test]
fn a_folder_of_stores_pushed_reads_by_url_as_it_reads_locally() {
    let (endpoint, _watchdog) = server_or_skip!();
    let bucket = support::bucket(endpoint, "cli-stores");
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    for (class, n) in [("cat", 3), ("dog", 2)] {
        fs::create_dir_all(d.join("in").join(class)).unwrap();
        for i in 0..n {
            fs::write(
                d.join("in").join(class).join(format!("{i}.png")),
                png(4 + i),
            )
            .unwrap();
        }
    }
    let out = d.join("out");
    ok(
        endpoint,
        &[
            "import",
            "images",
            d.join("in").to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    let json = info(endpoint, out.to_str().unwrap());
    assert_eq!(json["kind"], "stores");
    assert_eq!(json["stores"][0]["name"], "images");
    assert_eq!(json["stores"][0]["records"], 5);
    assert_eq!(json["stores"][1]["name"], "labels");
    round_trip(endpoint, &out, &format!("s3://{bucket}/imgs"), d);
}

/// A gray `side`×`side` PNG.
#[cfg(feature = "images")]
fn png(side: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    let mut writer = encoder.write_header().unwrap();
    writer
        .write_image_data(&vec![(side * 9) as u8; (side * side) as usize])
        .unwrap();
    writer.finish().unwrap();
    bytes
}

#[test]
fn a_push_without_settings_fails_in_one_line_naming_what_to_set() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    npy(&d.join("x.npy"), 10);
    let store = d.join("store");
    let status = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args([
            "import",
            "npy",
            d.join("x.npy").to_str().unwrap(),
            store.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let push = |env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
            .env_clear()
            .envs(env.iter().copied())
            .args(["push", store.to_str().unwrap(), "s3://nowhere/x"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        stderr
    };
    let line = push(&[]);
    assert!(
        line.contains("s3://nowhere/x")
            && line.contains("AWS_ACCESS_KEY_ID")
            && line.contains("AWS_SECRET_ACCESS_KEY"),
        "{line}"
    );
    let line = push(&[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s")]);
    assert!(
        line.contains("AWS_REGION") && line.contains("AWS_ENDPOINT_URL"),
        "{line}"
    );
}

#[test]
fn urls_are_read_only_and_unknown_schemes_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["verify", "--repair", "s3://bucket/x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--repair") && stderr.contains("s3://bucket/x"),
        "{stderr}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["info", "ftp://host/x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ftp"), "{stderr}");
}

#[test]
fn a_file_url_reads_like_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    npy(&d.join("x.npy"), 50);
    let store = d.join("store");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&[
        "import",
        "npy",
        d.join("x.npy").to_str().unwrap(),
        store.to_str().unwrap(),
    ]);
    let url = format!("file://{}", store.display());
    assert_eq!(
        run(&["verify", &url]),
        run(&["verify", store.to_str().unwrap()])
    );
}
