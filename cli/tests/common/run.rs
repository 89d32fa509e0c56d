//! Running the `zrecord` command from tests, and finding its fixtures and
//! the real data sets.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `zrecord` with `args`.
pub fn zrecord<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(args)
        .output()
        .expect("run zrecord")
}

/// Runs `zrecord`, which must succeed; returns its stderr.
pub fn ok<S: AsRef<OsStr>>(args: &[S]) -> String {
    let out = zrecord(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "zrecord failed: {stderr}");
    stderr
}

/// Runs `zrecord`, which must fail with exit code 2 and one line on stderr
/// naming every one of `mentions`; returns that line.
pub fn fails<S: AsRef<OsStr>>(mentions: &[&str], args: &[S]) -> String {
    let out = zrecord(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for m in mentions {
        assert!(stderr.contains(m), "{stderr:?} names {m:?}");
    }
    stderr
}

/// A fixture this crate ships in `tests/fixtures`.
pub fn fixture(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(sub)
}

/// `sub` of the real data sets in `$ZRECORD_DATA` (by default the
/// checkout's `data/`), or `None` (after saying so) where it is absent: a
/// fresh clone has none until the README's Data section is followed.
pub fn data(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("ZRECORD_DATA").map_or_else(|| "data".into(), PathBuf::from);
    let path = root.join(sub);
    if path.exists() {
        Some(path)
    } else {
        zrecord_testkit::skip(format!("{} is absent (set ZRECORD_DATA)", path.display()));
        None
    }
}
