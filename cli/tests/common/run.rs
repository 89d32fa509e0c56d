//! Running the `zrecord` command from tests, and finding the shared data
//! sets next to the repository.

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

/// `sub` of the shared data folder next to the repository, or `None` (after
/// saying so) where it is absent: a user's clone has none.
pub fn shared(sub: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(sub);
    if dir.exists() {
        Some(dir)
    } else {
        println!("skipped: {} is absent", dir.display());
        None
    }
}
