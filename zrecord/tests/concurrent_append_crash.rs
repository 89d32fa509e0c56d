//! Crash safety of concurrent appends: a child process whose four threads
//! append batches to one store is SIGKILLed — at a random moment after every
//! thread committed a batch, or held inside its n-th append (the crate's test
//! hooks) — and after every kill each thread's records in the store are a
//! prefix of its sequence in whole contiguous batches, and nothing else.
//!
//! The test binary re-executes itself: a run with `ZRECORD_APPENDERS_STORE`
//! in its environment opens the store, finds each thread's next batch from
//! what the store holds, and appends from four threads until it is killed.

mod common;

use std::io::{BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use common::appenders::{THREADS, Target, batch_size, holdings};
use zrecord::test_hooks::{HELD, HOLD_ENV};

const STORE_ENV: &str = "ZRECORD_APPENDERS_STORE";
const DENSE_ENV: &str = "ZRECORD_APPENDERS_DENSE";
const READY: &str = "ZRECORD-APPENDERS-READY";
const ROUNDS: u64 = 16;

/// The child: appends from every thread until killed (or 30 s pass).
fn child_entry() {
    let Some(path) = std::env::var_os(STORE_ENV) else {
        return;
    };
    let dense = std::env::var_os(DENSE_ENV).is_some();
    let target = Target::open(Path::new(&path), dense);
    let held = holdings(&target);
    let committed = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (target, committed) = (&target, &committed);
            let (mut k, mut seq) = (held.batches[t], held.records[t]);
            s.spawn(move || {
                while Instant::now() < deadline {
                    target.append_batch(t, k, seq);
                    if seq == held.records[t]
                        && committed.fetch_add(1, Ordering::SeqCst) + 1 == THREADS
                    {
                        let mut out = std::io::stdout().lock();
                        writeln!(out, "{READY}").expect("child: report readiness");
                        out.flush().expect("child: flush stdout");
                    }
                    seq += batch_size(t, k);
                    k += 1;
                }
            });
        }
    });
    std::process::exit(3);
}

/// The tests run one at a time: a child forked by one test's thread holds
/// the other test's store lock until it execs (see `crash.rs`).
static SERIAL: Mutex<()> = Mutex::new(());

/// Kills the child once per round; checks the store after every kill.
fn rounds(test: &str, dense: bool, codec: zrecord::Codec) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    drop(Target::create(&path, dense, codec));
    let (mut batches, mut held_rounds) = (0u64, 0);
    for round in 0..ROUNDS {
        // Odd rounds hold the child inside append n (n counted over all
        // threads): exactly n − 1 of its appends commit.
        let hold = (round % 2 == 1).then(|| {
            let point = if round % 4 == 1 {
                "append:payload"
            } else {
                "append:table"
            };
            (point, 1 + common::splitmix(17, round) % 12)
        });
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(STORE_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if dense {
            command.env(DENSE_ENV, "1");
        }
        if let Some((point, n)) = hold {
            command.env(HOLD_ENV, format!("{point}:{n}"));
        }
        let mut child = command.spawn().unwrap();
        let (marker, pipe, other): (&str, Box<dyn Read>, Box<dyn Read>) = match hold {
            Some(_) => (
                HELD,
                Box::new(child.stderr.take().unwrap()),
                Box::new(child.stdout.take().unwrap()),
            ),
            None => (
                READY,
                Box::new(child.stdout.take().unwrap()),
                Box::new(child.stderr.take().unwrap()),
            ),
        };
        let mut seen = String::new();
        if !common::wait_for(&mut BufReader::new(pipe), marker, &mut seen) {
            let status = child.wait().unwrap();
            let _ = BufReader::new(other).read_to_string(&mut seen);
            panic!("round {round}: the child ended ({status}) before {marker}:\n{seen}");
        }
        if hold.is_none() {
            std::thread::sleep(Duration::from_micros(common::splitmix(19, round) % 20_000));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(9),
            "round {round}: the child did not die by SIGKILL ({status})"
        );

        let target = Target::open(&path, dense);
        let held = holdings(&target);
        assert_eq!(target.verify(), target.len(), "round {round}: verify");
        let now: u64 = held.batches.iter().sum();
        match hold {
            Some((point, n)) => {
                assert_eq!(now, batches + n - 1, "round {round}: held at {point}:{n}");
                held_rounds += 1;
            }
            None => assert!(
                now >= batches + THREADS as u64,
                "round {round}: every thread committed a batch, yet {now} after {batches}"
            ),
        }
        batches = now;
    }
    println!(
        "{test}: {ROUNDS} kills ({held_rounds} held inside an append), {batches} batches \
         committed by {THREADS} threads"
    );
}

#[test]
fn killed_concurrent_appends_leave_a_prefix_per_thread_dense_raw() {
    child_entry();
    rounds(
        "killed_concurrent_appends_leave_a_prefix_per_thread_dense_raw",
        true,
        zrecord::Codec::Raw,
    );
}

#[test]
fn killed_concurrent_appends_leave_a_prefix_per_thread_ragged_zstd_dict() {
    child_entry();
    rounds(
        "killed_concurrent_appends_leave_a_prefix_per_thread_ragged_zstd_dict",
        false,
        common::codec(2),
    );
}
