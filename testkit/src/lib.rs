//! What the workspace's tests share: how a test that cannot run here says
//! so, and a watchdog that turns a hang into a failure.
//!
//! A test that needs something a machine may lack (the real data sets, the
//! S3-compatible server, root privilege, io_uring, a disk that honours
//! `O_DIRECT`, python3) calls [`skip`] and returns. On a developer's machine
//! that prints the reason, past the test harness's output capture, and the
//! test passes. Where [`NO_SKIP`] is set, as CI sets it, a skip fails the
//! test instead: CI provides all of these, so nothing there passes by
//! skipping.
//!
//! ```
//! fn needs_python() -> bool {
//!     if std::process::Command::new("python3").arg("-V").output().is_err() {
//!         zrecord_testkit::skip("python3 does not run here");
//!         return false;
//!     }
//!     true
//! }
//! # let _ = needs_python;
//! ```

use std::fmt::Display;
use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

/// The environment variable under which a [`skip`] fails the test.
pub const NO_SKIP: &str = "ZRECORD_NO_SKIP";

/// Whether skips fail: [`NO_SKIP`] set to anything but `0` or nothing.
pub fn skips_fail() -> bool {
    std::env::var_os(NO_SKIP).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Says that the calling test (or the part of it that follows) does not run
/// here, and why; the caller then returns. Under [`NO_SKIP`] it panics with
/// the reason instead.
#[track_caller]
pub fn skip(reason: impl Display) {
    if skips_fail() {
        panic!("skipped under {NO_SKIP}=1, where nothing may be: {reason}");
    }
    // Straight to the process's stderr: the harness captures only the print
    // macros' output, and shows it only for failing tests.
    let _ = writeln!(std::io::stderr().lock(), "skipped: {reason}");
}

/// While alive, watches the calling test: if it is not dropped within its
/// limit, the whole test process exits with a failure naming what hung — a
/// hang (a server that never answers, a lock never released) fails the
/// suite instead of stalling it. Hold it for the test's length:
///
/// ```
/// let _watchdog = zrecord_testkit::watchdog("a quick test", std::time::Duration::from_secs(60));
/// assert_eq!(1 + 1, 2);
/// ```
#[must_use = "the watchdog stops watching when dropped"]
pub struct Watchdog {
    _alive: mpsc::Sender<()>,
}

/// Starts a [`Watchdog`] over `what`, failing the process after `limit`.
pub fn watchdog(what: impl Display, limit: Duration) -> Watchdog {
    let (alive, dropped) = mpsc::channel::<()>();
    let what = what.to_string();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = dropped.recv_timeout(limit) {
            let _ = writeln!(
                std::io::stderr().lock(),
                "watchdog: {what} still running after {limit:?}; failing the test process"
            );
            std::process::exit(101);
        }
    });
    Watchdog { _alive: alive }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child processes the tests below start: what to do there.
    const CHILD: &str = "ZRECORD_TESTKIT_CHILD";

    fn child_role() -> Option<String> {
        std::env::var(CHILD).ok()
    }

    /// This test binary run again as `test`'s child, with `role` and the
    /// skip switch at `no_skip`: (passed, stderr).
    fn child(test: &str, role: &str, no_skip: Option<&str>) -> (bool, String) {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([test, "--exact", "--nocapture"])
            .env(CHILD, role);
        match no_skip {
            Some(v) => command.env(NO_SKIP, v),
            None => command.env_remove(NO_SKIP),
        };
        let out = command.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn a_skip_fails_exactly_when_the_switch_is_on() {
        if child_role().as_deref() == Some("skip") {
            skip("no widget here");
            return;
        }
        let test = "tests::a_skip_fails_exactly_when_the_switch_is_on";
        let (passed, stderr) = child(test, "skip", None);
        assert!(
            passed && stderr.contains("skipped: no widget here"),
            "{stderr}"
        );
        assert!(child(test, "skip", Some("0")).0);
        let (passed, stderr) = child(test, "skip", Some("1"));
        assert!(!passed && stderr.contains("no widget here"), "{stderr}");
    }

    #[test]
    fn a_hang_fails_the_process_and_a_finished_test_does_not() {
        if child_role().as_deref() == Some("hang") {
            let _watchdog = watchdog("a sleeper", Duration::from_millis(100));
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        let test = "tests::a_hang_fails_the_process_and_a_finished_test_does_not";
        let (passed, stderr) = child(test, "hang", None);
        assert!(!passed, "{stderr}");
        assert!(
            stderr.contains("watchdog: a sleeper still running after"),
            "{stderr}"
        );
        // Dropped in time, it never fires (this process would exit).
        drop(watchdog("a quick test", Duration::from_millis(200)));
        std::thread::sleep(Duration::from_millis(400));
    }
}
