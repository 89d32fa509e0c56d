//! What the remote tests share: an S3-compatible server on loopback (the
//! one `ZRECORD_S3_ENDPOINT` names, or a `moto_server` started here), plain
//! HTTP uploads to it, and local stores to upload.

#![allow(dead_code)]

pub(crate) mod proxy;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use zrecord_remote::RemoteOptions;

/// The server's `http://host:port`, or why there is none (the test then
/// skips, saying why; under CI's `ZRECORD_NO_SKIP` it fails).
pub(crate) fn endpoint() -> Result<&'static str, &'static str> {
    static ENDPOINT: OnceLock<Result<String, String>> = OnceLock::new();
    ENDPOINT
        .get_or_init(|| match std::env::var("ZRECORD_S3_ENDPOINT") {
            Ok(url) => Ok(url.trim_end_matches('/').to_string()),
            Err(_) => start_moto(),
        })
        .as_ref()
        .map(String::as_str)
        .map_err(String::as_str)
}

/// How long one remote test may run before its watchdog fails the suite.
pub(crate) const TEST_LIMIT: Duration = Duration::from_secs(300);

/// The endpoint and a watchdog over the calling test (a hang fails the
/// suite after [`TEST_LIMIT`] instead of stalling it) — or, with no server,
/// a skip that says why (a failure under CI's `ZRECORD_NO_SKIP`).
#[macro_export]
macro_rules! server_or_skip {
    () => {
        match support::endpoint() {
            Ok(endpoint) => (
                endpoint,
                zrecord_testkit::watchdog(
                    concat!("the test at ", file!(), ":", line!()),
                    support::TEST_LIMIT,
                ),
            ),
            Err(reason) => {
                zrecord_testkit::skip(format!("no S3-compatible server: {reason}"));
                return;
            }
        }
    };
}

/// Starts `moto_server` on a free port, watched by a shell that stops it
/// when this test process ends.
fn start_moto() -> Result<String, String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let script = format!(
        "moto_server -H 127.0.0.1 -p {port} >/dev/null 2>&1 & m=$!; \
         while kill -0 {parent} 2>/dev/null && kill -0 $m 2>/dev/null; do sleep 1; done; kill $m 2>/dev/null",
        parent = std::process::id()
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(format!("http://127.0.0.1:{port}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err("moto_server did not start within 30 s (pip install \"moto[server]\")".into())
}

/// Sends one HTTP/1.1 request without signing (moto does not check
/// signatures) and returns the status code.
pub(crate) fn http(endpoint: &str, method: &str, path: &str, body: &[u8]) -> u16 {
    let host = endpoint.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).expect("connect to the server");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let line = String::from_utf8_lossy(&answer[..answer.len().min(64)]).to_string();
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {line:?}"))
}

/// A new bucket with a unique name.
pub(crate) fn bucket(endpoint: &str, name: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let bucket = format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let status = http(endpoint, "PUT", &format!("/{bucket}"), b"");
    assert_eq!(status, 200, "create bucket {bucket}");
    bucket
}

/// Uploads every file of the folder `dir` under `bucket/prefix/`.
pub(crate) fn upload(endpoint: &str, bucket: &str, prefix: &str, dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let body = std::fs::read(entry.path()).unwrap();
        let status = http(
            endpoint,
            "PUT",
            &format!("/{bucket}/{prefix}/{name}"),
            &body,
        );
        assert_eq!(status, 200, "upload {name}");
    }
}

/// Options that reach the server at `endpoint` with dummy credentials.
pub(crate) fn s3_options(endpoint: &str) -> RemoteOptions {
    RemoteOptions::new()
        .store_option("aws_endpoint", endpoint)
        .store_option("aws_allow_http", "true")
        .store_option("aws_access_key_id", "test")
        .store_option("aws_secret_access_key", "test")
        .store_option("aws_region", "us-east-1")
}

/// Opens the dense `u8` store at `url` read-only through a [`Remote`].
pub(crate) fn open_dense(
    url: &str,
    options: RemoteOptions,
) -> (
    std::sync::Arc<zrecord_remote::Remote>,
    zrecord::DenseStore<u8>,
) {
    let remote = std::sync::Arc::new(
        zrecord_remote::Remote::open(url, options).unwrap_or_else(|e| panic!("open {url}: {e}")),
    );
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<zrecord::DynDenseStore>(remote.clone())
        .unwrap()
        .typed::<u8>()
        .unwrap();
    (remote, store)
}
