//! Killed imports and recodes: a `zrecord import` or `zrecord recode` is
//! SIGKILLed — held inside one of its appends (the crate's test hooks) or at a
//! random moment — and afterwards the target is either absent or complete
//! (it opens, verifies and holds every record); the only other thing beside
//! it is the killed run's staging folder, which the next run removes, leaving
//! nothing behind.

mod common;

use std::fs;
use std::io::BufReader;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::listing;
use zrecord::test_hooks::{HELD, HOLD_ENV};
use zrecord::{Codec, DenseStore};

const RECORDS: usize = 256;
const WIDTH: usize = 4096;

/// Record `r`: compressible, different per record.
fn record(r: usize) -> Vec<u8> {
    (0..WIDTH)
        .map(|i| ((i / 64) as u8).wrapping_mul(7) ^ (r as u8) ^ (i % 3) as u8)
        .collect()
}

/// A `|u1` .npy file of `RECORDS` records of `WIDTH` bytes (format 1.0).
fn npy(path: &Path) {
    let mut header =
        format!("{{'descr': '|u1', 'fortran_order': False, 'shape': ({RECORDS}, {WIDTH}), }}");
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for r in 0..RECORDS {
        out.extend_from_slice(&record(r));
    }
    fs::write(path, out).unwrap();
}

/// How a round stops its command.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// Held at the `n`-th arrival at a hold point.
    Held(&'static str, u64),
    /// This many microseconds after the start.
    After(u64),
}

/// Runs `args`, kills it as `kill` says; returns whether the kill landed
/// before the command finished, and its process id.
fn run_and_kill(args: &[&dyn AsRef<std::ffi::OsStr>], kill: Kill) -> (bool, u32) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    command.arg("--quiet");
    for a in args {
        command.arg(a);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Kill::Held(point, n) = kill {
        command.env(HOLD_ENV, format!("{point}:{n}"));
    }
    let mut child = command.spawn().expect("run zrecord");
    let pid = child.id();
    match kill {
        Kill::Held(point, n) => {
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut seen = String::new();
            if !common::wait_for(&mut stderr, HELD, &mut seen) {
                let status = child.wait().unwrap();
                panic!("zrecord ended ({status}) before arrival {n} at {point}:\n{seen}");
            }
        }
        Kill::After(micros) => std::thread::sleep(Duration::from_micros(micros)),
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    match status.signal() {
        Some(9) => (true, pid),
        _ => {
            assert!(status.success(), "zrecord failed: {status}");
            (false, pid)
        }
    }
}

/// Checks the state a killed run left: `target` absent or complete, and
/// nothing else beside `keep` but the killed run's staging paths. Returns
/// whether the target was there.
fn check_after_kill(dir: &Path, target: &Path, keep: &[&str], pid: u32, what: &str) -> bool {
    let name = target.file_name().unwrap().to_string_lossy().into_owned();
    let staging = format!(".{name}.zrecord-tmp-{pid}");
    for entry in listing(dir) {
        // The run's staging folders, and those the store's `create` stages
        // beside them (their name after a `.`).
        let staged =
            entry.starts_with(&staging) || entry.get(1..).is_some_and(|e| e.starts_with(&staging));
        assert!(
            keep.contains(&entry.as_str()) || entry == name || staged,
            "{what}: {entry} left beside the target"
        );
    }
    if !target.exists() {
        return false;
    }
    let store = DenseStore::<u8>::open(target)
        .unwrap_or_else(|e| panic!("{what}: the target is there but does not open: {e}"));
    assert_eq!(store.len(), RECORDS as u64, "{what}: a partial target");
    store
        .verify()
        .unwrap_or_else(|e| panic!("{what}: verify: {e}"));
    let all: Vec<u64> = (0..RECORDS as u64).collect();
    let got = store.gather(&all).unwrap();
    let got = got.as_slice().unwrap();
    for r in 0..RECORDS {
        assert!(
            got[r * WIDTH..(r + 1) * WIDTH] == record(r)[..],
            "{what}: record {r} differs"
        );
    }
    true
}

/// Kills `args` (which write `target`) as `kill` says, checks what is left,
/// then runs them again with `--force` and checks that nothing but the
/// complete target remains.
fn round(
    dir: &Path,
    target: &Path,
    keep: &[&str],
    args: &[&dyn AsRef<std::ffi::OsStr>],
    kill: Kill,
) {
    let what = format!("{kill:?} of {:?}", args[0].as_ref());
    let (landed, pid) = run_and_kill(args, kill);
    let complete = check_after_kill(dir, target, keep, pid, &what);
    println!(
        "{what}: {}, the target {}",
        if landed { "killed" } else { "finished first" },
        if complete { "complete" } else { "absent" }
    );
    if let Kill::Held(..) = kill {
        assert!(
            landed && !complete,
            "{what}: held mid-append, yet the target is complete"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .arg("--quiet")
        .args(args.iter().map(|a| a.as_ref()))
        .arg("--force")
        .output()
        .expect("run zrecord again");
    assert!(
        out.status.success(),
        "{what}: the rerun failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Process id 0 is no one's: no staging path is allowed any more.
    assert!(check_after_kill(dir, target, keep, 0, &what));
    let mut left = listing(dir);
    left.retain(|n| !keep.contains(&n.as_str()));
    assert_eq!(
        left,
        [target.file_name().unwrap().to_string_lossy()],
        "{what}"
    );
    fs::remove_dir_all(target).unwrap();
}

#[test]
fn killed_imports_leave_the_target_absent_or_complete() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.npy");
    npy(&input);
    let target: PathBuf = d.join("store");
    let keep = ["in.npy"];
    for (codec, kill) in [
        ("raw", Kill::Held("append:payload", 1)),
        ("zstd", Kill::Held("append:table", 1)),
        // The raw import's append, then (after training) the recode's.
        ("zstd-dict", Kill::Held("append:table", 2)),
        ("zstd-dict", Kill::Held("append:payload", 1)),
        ("raw", Kill::After(2_000)),
        ("zstd", Kill::After(15_000)),
        ("zstd-dict", Kill::After(40_000)),
        ("zstd-dict", Kill::After(120_000)),
    ] {
        round(
            d,
            &target,
            &keep,
            &[
                &"import", &"npy", &input, &target, &"--codec", &codec, &"--tier", &"fast",
            ],
            kill,
        );
    }
}

#[test]
fn killed_recodes_leave_the_target_absent_or_complete() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = d.join("source");
    let store = DenseStore::<u8>::create(&source, &[WIDTH], Codec::Raw).unwrap();
    for r in 0..RECORDS {
        store.append(&record(r)).unwrap();
    }
    drop(store);
    let target = d.join("recoded");
    let keep = ["source"];
    for (codec, kill) in [
        ("zstd", Kill::Held("append:payload", 1)),
        ("zstd-dict", Kill::Held("append:table", 1)),
        ("raw", Kill::After(3_000)),
        ("zstd", Kill::After(20_000)),
        ("zstd-dict", Kill::After(60_000)),
    ] {
        round(
            d,
            &target,
            &keep,
            &[
                &"recode", &source, &target, &"--codec", &codec, &"--tier", &"fast",
            ],
            kill,
        );
    }
}
