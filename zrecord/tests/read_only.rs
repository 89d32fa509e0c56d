//! Read-only opens: any number of processes read one store at once while a
//! writer is refused, and the writer gets the store when they close; a
//! read-only open works on read-only files and mounts, never writes, reads
//! the last committed state, and refuses a store a killed delete or
//! compaction left for a writable open to finish.
//!
//! Other processes are this test binary run again: with
//! `ZRECORD_READER_CHILD` set, a test acts as a reader that gathers until
//! its stdin closes; with `ZRECORD_RO_MOUNT_CHILD`, as a process that finds
//! the store on a read-only bind mount (made with `unshare -m`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::snapshot;
use zrecord::{AnyStore, Codec, DenseStore, Error, OpenOptions, RaggedStore};

/// These tests run one at a time: a store's lock belongs to its open file
/// description, which a child forked by another test thread shares until
/// it execs, so a reopen there could briefly see the store busy.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const READER_ENV: &str = "ZRECORD_READER_CHILD";
const MOUNT_ENV: &str = "ZRECORD_RO_MOUNT_CHILD";
const READERS: usize = 8;
const RECORDS: u64 = 2000;

fn record(i: u64) -> [u32; 4] {
    std::array::from_fn(|j| (i * 4 + j as u64) as u32)
}

fn create(path: &Path) {
    let store = DenseStore::<u32>::create(path, &[4], Codec::Zstd).unwrap();
    let values: Vec<u32> = (0..RECORDS).flat_map(record).collect();
    store.append(&values).unwrap();
}

/// Gathers a pseudo-random batch and checks every value.
fn gather_and_check(store: &DenseStore<u32>, round: u64) -> bool {
    let indices: Vec<u64> = (0..64)
        .map(|k| (round * 7919 + k * 104_729) % RECORDS)
        .collect();
    let batch = store.gather(&indices).unwrap();
    indices
        .iter()
        .zip(batch.as_slice().unwrap().chunks(4))
        .all(|(&i, got)| got == record(i))
}

/// A reader process: opens read-only, says READING, gathers until its
/// stdin closes, then exits 0 if every batch was right.
fn reader_entry() {
    let Some(path) = std::env::var_os(READER_ENV) else {
        return;
    };
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u32>>(PathBuf::from(path))
        .unwrap();
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut rest);
        let _ = done_tx.send(());
    });
    let mut ok = gather_and_check(&store, 0);
    println!("READING");
    std::io::stdout().flush().unwrap();
    let mut rounds = 1;
    while done.try_recv().is_err() {
        ok &= gather_and_check(&store, rounds);
        rounds += 1;
    }
    println!("ROUNDS {rounds}");
    std::process::exit(if ok { 0 } else { 1 });
}

fn spawn_reader(test: &str, path: &Path) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(READER_ENV, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

#[test]
fn readers_in_many_processes_share_a_store_and_exclude_a_writer() {
    reader_entry();
    let _serial = serial();
    let test = "readers_in_many_processes_share_a_store_and_exclude_a_writer";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    create(&path);
    let before = snapshot(&path);
    let mut readers: Vec<_> = (0..READERS).map(|_| spawn_reader(test, &path)).collect();
    for (_, stdout) in &mut readers {
        let mut line = String::new();
        while !line.contains("READING") {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "a reader died");
        }
    }
    // Eight readers gather; a writer is refused, another reader is not.
    assert!(matches!(
        DenseStore::<u32>::open(&path),
        Err(Error::StoreBusy { .. })
    ));
    assert!(matches!(
        AnyStore::open(&path),
        Err(Error::StoreBusy { .. })
    ));
    let here = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u32>>(&path)
        .unwrap();
    assert!(gather_and_check(&here, 99));
    drop(here);
    let mut rounds = 0;
    for (mut child, mut stdout) in readers {
        drop(child.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        rounds += rest
            .lines()
            .find_map(|l| l.strip_prefix("ROUNDS "))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        assert!(child.wait().unwrap().success(), "a reader saw wrong data");
    }
    println!("{READERS} reader processes gathered {rounds} batches of 64");
    assert_eq!(snapshot(&path), before, "readers changed nothing");
    // They closed: the writer gets the store.
    let writer = DenseStore::<u32>::open(&path).unwrap();
    writer.append(&record(RECORDS)).unwrap();
    assert!(matches!(
        zrecord::OpenOptions::new()
            .read_only(true)
            .open::<DenseStore<u32>>(&path),
        Err(Error::StoreBusy { .. })
    ));
}

#[test]
fn read_only_handles_refuse_writes_and_read_the_committed_state() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    create(&path);
    // Bytes a killed append left past the frontier: a longer tail chunk, a
    // longer table, a stale next chunk.
    for (name, extra) in [("0.chunk", 100), ("0.loc", 16)] {
        let mut bytes = std::fs::read(path.join(name)).unwrap();
        bytes.extend(std::iter::repeat_n(0xAB, extra));
        std::fs::write(path.join(name), bytes).unwrap();
    }
    std::fs::write(path.join("1.chunk"), b"uncommitted").unwrap();
    let before = snapshot(&path);
    let options = OpenOptions::new().read_only(true).verify_on_read(true);
    let mut store = options.open::<DenseStore<u32>>(&path).unwrap();
    assert!(store.is_read_only());
    assert_eq!(store.len(), RECORDS);
    assert!(gather_and_check(&store, 1));
    assert_eq!(store.verify().unwrap().records, RECORDS);
    assert!(matches!(store.append(&[0; 4]), Err(Error::ReadOnly { .. })));
    assert!(matches!(store.delete(&[0]), Err(Error::ReadOnly { .. })));
    assert!(matches!(store.compact(), Err(Error::ReadOnly { .. })));
    store.sync().unwrap();
    drop(store);
    assert_eq!(snapshot(&path), before, "a read-only handle wrote nothing");
    // A writable open recovers; the uncommitted bytes go.
    drop(DenseStore::<u32>::open(&path).unwrap());
    assert!(!path.join("1.chunk").exists());
}

#[test]
fn a_pending_journal_is_refused_read_only_and_finished_by_a_writer() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = RaggedStore::<u8>::create(&path, Codec::Raw).unwrap();
    store
        .append_slices(&[b"a".to_vec(), b"bb".to_vec(), b"ccc".to_vec()])
        .unwrap();
    drop(store);
    // The delete journal a process killed before its first entry moved
    // leaves, with meta.zr's journal flag set.
    let mut body = 6u64.to_le_bytes().to_vec();
    body.extend_from_slice(&1u64.to_le_bytes());
    body.extend_from_slice(&0u64.to_le_bytes());
    let mut journal = b"ZRDELET1".to_vec();
    journal.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    journal.extend_from_slice(&body);
    std::fs::write(path.join("delete.journal"), journal).unwrap();
    let mut meta = std::fs::read(path.join("meta.zr")).unwrap();
    meta[24] = 1;
    std::fs::write(path.join("meta.zr"), &meta).unwrap();
    let before = snapshot(&path);
    let e = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<RaggedStore<u8>>(&path)
        .err()
        .unwrap();
    assert!(
        matches!(&e, Error::NeedsRecovery { path, .. } if path.ends_with("delete.journal")),
        "{e:?}"
    );
    assert_eq!(snapshot(&path), before);
    // A writable open finishes the delete, removes the journal, clears the flag.
    let store = RaggedStore::<u8>::open(&path).unwrap();
    assert_eq!(store.len(), 2);
    assert_eq!(store.get(0).unwrap().as_slice().unwrap(), b"ccc");
    drop(store);
    assert!(!path.join("delete.journal").exists());
    assert_eq!(std::fs::read(path.join("meta.zr")).unwrap()[24], 0);
    assert_eq!(
        zrecord::OpenOptions::new()
            .read_only(true)
            .open::<RaggedStore<u8>>(&path)
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_running_compaction_keeps_readers_that_ignore_journals_out() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    create(&path);
    let mut store = DenseStore::<u32>::open(&path).unwrap();
    store.delete(&[0, 5, 9]).unwrap();
    let meta = path.join("meta.zr");
    assert_eq!(std::fs::read(&meta).unwrap()[24..32], [0; 8]);
    let mut flagged = 0;
    store
        .compact_with(|_| {
            // Mid-compaction, meta.zr's bytes 24..32 are not zero: a version-1
            // reader (which requires them zero) refuses the store, and this
            // build's readers see the journal flag.
            let bytes = std::fs::read(&meta).unwrap();
            flagged += usize::from(bytes[24] == 1 && bytes[4] == 2);
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert!(flagged > 0);
    assert_eq!(std::fs::read(&meta).unwrap()[24], 0, "cleared at the end");
    assert_eq!(store.verify().unwrap().records, RECORDS - 3);
}

/// The child on a read-only mount: a read-only open works, a writable one
/// fails with the file system's error.
fn mount_entry() {
    let Some(path) = std::env::var_os(MOUNT_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    assert!(
        std::fs::write(path.join("probe"), b"x").is_err(),
        "the mount is writable"
    );
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u32>>(&path)
        .unwrap();
    assert!(gather_and_check(&store, 3));
    assert_eq!(store.verify().unwrap().records, RECORDS);
    drop(store);
    let e = DenseStore::<u32>::open(&path).err().unwrap();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    println!("MOUNT-OK");
    std::process::exit(0);
}

#[test]
fn a_read_only_open_works_on_a_read_only_mount() {
    mount_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    create(&path);
    for entry in std::fs::read_dir(&path).unwrap() {
        let file = entry.unwrap().path();
        let mut perms = std::fs::metadata(&file).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&file, perms).unwrap();
    }
    let before = snapshot(&path);
    // 0444 files open read-only, mount or not.
    assert!(gather_and_check(
        &zrecord::OpenOptions::new()
            .read_only(true)
            .open::<DenseStore<u32>>(&path)
            .unwrap(),
        4
    ));
    assert_eq!(snapshot(&path), before);
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "mount --bind '{p}' '{p}' && mount -o remount,bind,ro '{p}' && exec '{exe}' \
         a_read_only_open_works_on_a_read_only_mount --exact --nocapture",
        p = path.display(),
        exe = exe.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env(MOUNT_ENV, &path)
        .output();
    let out = match out {
        Ok(out)
            if out.status.success()
                || String::from_utf8_lossy(&out.stdout).contains("running 1 test") =>
        {
            out
        }
        other => {
            zrecord_testkit::skip(format!(
                "the read-only mount: `unshare -m` and `mount` need root ({other:?})"
            ));
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("MOUNT-OK"),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(&path), before);
}
