//! Opening a URL whose settings are missing fails before any request, with
//! an error naming the URL and the variable to set; a bucket that does not
//! exist is named as such.
//!
//! Tests of the process environment run in a child process (this test
//! binary again, one test, `env_clear`ed) so that neither the developer's
//! variables nor other tests' reach them.

mod support;

use std::path::Path;
use std::process::Command;

use zrecord::{Codec, DenseStore, DynDenseStore, OpenOptions};
use zrecord_remote::{Error, Remote, RemoteOptions, pull, push};

/// Set in the child: the test runs its body instead of spawning.
const CHILD: &str = "ZRECORD_REMOTE_TEST_CHILD";
/// The URL a child opens.
const URL: &str = "ZRECORD_REMOTE_TEST_URL";

/// Runs the test `name` of this binary in a child process whose environment
/// is `vars` alone, and fails with its output if it fails.
fn in_child(name: &str, vars: &[(&str, &str)]) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .envs(vars.iter().copied())
        .env(CHILD, "1")
        .output()
        .expect("run the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
}

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// A small store in `dir`.
fn store(dir: &Path) {
    let store = DenseStore::<u8>::create(dir, &[4], Codec::Raw).unwrap();
    store.append(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
}

#[test]
fn with_no_variables_set_every_entry_point_names_the_credentials() {
    if !is_child() {
        return in_child(
            "with_no_variables_set_every_entry_point_names_the_credentials",
            &[],
        );
    }
    let url = "s3://data/sets/one";
    let check = |e: Error| {
        assert!(matches!(e, Error::NoCredentials { .. }), "{e:?}");
        let message = e.to_string();
        for name in [url, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            assert!(message.contains(name), "{name} missing from: {message}");
        }
        // Nothing was asked of the instance metadata service.
        assert!(!message.contains("169.254") && !message.contains("api/token"));
    };
    check(Remote::open(url, RemoteOptions::new()).unwrap_err());
    check(zrecord_remote::open_dataset(url, RemoteOptions::new()).unwrap_err());
    let dir = tempfile::tempdir().unwrap();
    store(&dir.path().join("one"));
    let options = RemoteOptions::new();
    check(push(&dir.path().join("one"), url, &options, false, |_, _| {}).unwrap_err());
    check(pull(url, &dir.path().join("copy"), &options, |_, _| {}).unwrap_err());
}

#[test]
fn a_plain_http_endpoint_from_the_environment_needs_allow_http() {
    if !is_child() {
        return in_child(
            "a_plain_http_endpoint_from_the_environment_needs_allow_http",
            &[
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
            ],
        );
    }
    let e = Remote::open("s3://data/x", RemoteOptions::new()).unwrap_err();
    assert!(matches!(e, Error::HttpNotAllowed { .. }), "{e:?}");
    let message = e.to_string();
    for name in ["s3://data/x", "http://127.0.0.1:1", "AWS_ALLOW_HTTP=true"] {
        assert!(message.contains(name), "{name} missing from: {message}");
    }
}

/// The client is built with rustls and no crypto provider of its own: in a
/// fresh process, opening an https:// endpoint must install one, not panic.
/// (Nothing listens there: the listing fails, as a listing.)
#[test]
fn an_https_endpoint_gets_a_tls_provider() {
    if !is_child() {
        return in_child(
            "an_https_endpoint_gets_a_tls_provider",
            &[
                ("AWS_ENDPOINT_URL", "https://127.0.0.1:1"),
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
            ],
        );
    }
    let options = RemoteOptions::new().retries(0, std::time::Duration::ZERO);
    let e = Remote::open("s3://data/x", options).unwrap_err();
    assert!(matches!(e, Error::List { .. }), "{e:?}");
}

#[test]
fn the_environment_alone_reaches_an_s3_compatible_server() {
    if !is_child() {
        let (endpoint, _watchdog) = server_or_skip!();
        let dir = tempfile::tempdir().unwrap();
        store(dir.path());
        let bucket = support::bucket(endpoint, "env");
        support::upload(endpoint, &bucket, "one", dir.path());
        let url = format!("s3://{bucket}/one");
        return in_child(
            "the_environment_alone_reaches_an_s3_compatible_server",
            &[
                ("AWS_ENDPOINT_URL", endpoint),
                ("AWS_ALLOW_HTTP", "true"),
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
                (URL, &url),
            ],
        );
    }
    let url = std::env::var(URL).unwrap();
    let remote = Remote::open(&url, RemoteOptions::new()).unwrap();
    let store = OpenOptions::new()
        .read_only(true)
        .open::<DynDenseStore>(std::sync::Arc::new(remote))
        .unwrap()
        .typed::<u8>()
        .unwrap();
    let record: Vec<u8> = store.gather(&[1]).unwrap().iter().copied().collect();
    assert_eq!(record, [5, 6, 7, 8]);
}

#[test]
fn a_missing_bucket_is_named_with_how_to_create_it() {
    let (endpoint, _watchdog) = server_or_skip!();
    let bucket = format!("no-such-bucket-{}", std::process::id());
    let url = format!("s3://{bucket}/sets/one");
    let options = support::s3_options(endpoint);
    let check = |e: Error| {
        let Error::NoBucket { bucket: named, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(named, &bucket);
        let message = e.to_string();
        assert!(message.contains(&url), "{message}");
        assert!(
            message.contains(&format!("aws s3 mb s3://{bucket}")),
            "{message}"
        );
    };
    check(Remote::open(&url, options.clone()).unwrap_err());
    let dir = tempfile::tempdir().unwrap();
    store(&dir.path().join("one"));
    check(push(&dir.path().join("one"), &url, &options, false, |_, _| {}).unwrap_err());
    check(pull(&url, &dir.path().join("copy"), &options, |_, _| {}).unwrap_err());
}
