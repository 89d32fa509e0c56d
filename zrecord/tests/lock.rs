//! The store lock: while a handle is open, a second open — from this process or another — fails with `StoreBusy`; once the handle is dropped (or its process dies) the store opens again; `create` on an existing store is `AlreadyExists` and leaves its files byte-identical.
//!
//! Cross-process checks re-execute the test binary: a `#[test]` function that
//! finds `ZRECORD_LOCK_CHILD` in its environment acts as the other process
//! instead of running the test. A `probe` child tries to open the store and
//! answers through its exit code; a `hold` child opens the store and keeps it
//! until its stdin closes.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use zrecord::{
    AnyStore, Codec, DType, DenseStore, DynDenseStore, DynRaggedStore, Error, RaggedStore,
    StoreKind,
};

const CHILD_ENV: &str = "ZRECORD_LOCK_CHILD";
const MODE_ENV: &str = "ZRECORD_LOCK_MODE";
const KIND_ENV: &str = "ZRECORD_LOCK_KIND";
const EXPECT_ENV: &str = "ZRECORD_LOCK_EXPECT_LEN";

/// Probe exit codes (none of them 0, which a child that ran no test returns).
const OPENED: i32 = 10;
const BUSY: i32 = 3;
const OTHER_ERROR: i32 = 4;
const WRONG_CONTENT: i32 = 5;
const BUSY_DISAGREE: i32 = 6;

const HOLDING: &str = "ZRECORD-LOCK-HOLDING";
const RELEASED: &str = "ZRECORD-LOCK-RELEASED";

/// These tests run one at a time. A store's lock belongs to its open file
/// description, which a child forked by another test thread shares until it
/// execs; run side by side, one test's spawn could briefly hold another
/// test's lock.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------
// Deterministic content.

/// Dense `u16` records of shape `[3]`.
fn dense_record(r: u64) -> [u16; 3] {
    std::array::from_fn(|j| (r * 31 + j as u64 * 7) as u16)
}

/// Ragged `u16` records of 1..=5 elements.
fn ragged_record(r: u64) -> Vec<u16> {
    (0..=r % 5).map(|j| (r * 10 + j) as u16).collect()
}

fn dense_values(records: std::ops::Range<u64>) -> Vec<u16> {
    records.flat_map(dense_record).collect()
}

fn ragged_records(records: std::ops::Range<u64>) -> Vec<Vec<u16>> {
    records.map(ragged_record).collect()
}

fn check_dense(store: &DenseStore<u16>, len: u64) -> bool {
    let indices: Vec<u64> = (0..len).collect();
    let mut got = vec![0u16; len as usize * 3];
    store.len() == len
        && store.gather_into(&indices, &mut got).is_ok()
        && got == dense_values(0..len)
}

fn check_ragged(store: &RaggedStore<u16>, len: u64) -> bool {
    let indices: Vec<u64> = (0..len).collect();
    let Ok(batch) = store.gather(&indices) else {
        return false;
    };
    let want = ragged_records(0..len);
    store.len() == len
        && batch.len() == want.len()
        && want.iter().enumerate().all(|(k, rec)| {
            batch.layout().shape(k) == Some(&[rec.len()][..])
                && batch.layout().range(k).map(|r| &batch.values()[r]) == Some(&rec[..])
        })
}

fn new_dense(path: &Path, len: u64) -> DenseStore<u16> {
    let store = DenseStore::<u16>::create(path, &[3], Codec::Zstd).expect("create a dense store");
    store.append(&dense_values(0..len)).expect("append");
    store
}

fn new_ragged(path: &Path, len: u64) -> RaggedStore<u16> {
    let store = RaggedStore::<u16>::create(path, Codec::Raw).expect("create a ragged store");
    store
        .append_slices(&ragged_records(0..len))
        .expect("append");
    store
}

fn assert_busy<T>(result: zrecord::Result<T>, what: &str, path: &Path) {
    match result {
        Err(Error::StoreBusy { path: busy }) => assert_eq!(busy, path, "{what}: the busy path"),
        Err(e) => panic!("{what}: expected StoreBusy, got {e:?}"),
        Ok(_) => panic!("{what}: a second open of an open store succeeded"),
    }
}

fn kind_name(kind: StoreKind) -> &'static str {
    match kind {
        StoreKind::Dense => "dense",
        StoreKind::Ragged => "ragged",
    }
}

// ---------------------------------------------------------------------------
// The other process.

/// Acts as the other process if this is a lock child.
fn child_entry() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let kind = std::env::var(KIND_ENV).expect("a lock child needs its kind");
    match std::env::var(MODE_ENV).as_deref() {
        Ok("probe") => {
            let expect: u64 = std::env::var(EXPECT_ENV)
                .expect("a probe needs the expected length")
                .parse()
                .expect("a length");
            std::process::exit(probe_child(&path, &kind, expect))
        }
        Ok("hold") => hold_child(&path, &kind),
        other => panic!("unknown lock child mode {other:?}"),
    }
}

/// Opens the store with `AnyStore` and the typed API; returns an exit code.
fn probe_child(path: &Path, kind: &str, expect: u64) -> i32 {
    let typed_busy = || match kind {
        "dense" => matches!(DenseStore::<u16>::open(path), Err(Error::StoreBusy { .. })),
        _ => matches!(RaggedStore::<u16>::open(path), Err(Error::StoreBusy { .. })),
    };
    match AnyStore::open(path) {
        Err(Error::StoreBusy { .. }) => {
            if typed_busy() {
                BUSY
            } else {
                BUSY_DISAGREE
            }
        }
        Err(e) => {
            eprintln!("probe: AnyStore::open: {e:?}");
            OTHER_ERROR
        }
        Ok(any) => {
            if any.len() != expect || kind_name(any.kind()) != kind {
                eprintln!("probe: {} records of kind {:?}", any.len(), any.kind());
                return WRONG_CONTENT;
            }
            drop(any);
            let content_ok = match kind {
                "dense" => DenseStore::<u16>::open(path).map(|s| check_dense(&s, expect)),
                _ => RaggedStore::<u16>::open(path).map(|s| check_ragged(&s, expect)),
            };
            match content_ok {
                Ok(true) => OPENED,
                Ok(false) => WRONG_CONTENT,
                Err(e) => {
                    eprintln!("probe: typed open after AnyStore: {e:?}");
                    OTHER_ERROR
                }
            }
        }
    }
}

/// Opens the store, says so, keeps it until stdin closes, then drops it,
/// says so, and stays alive (without the store) until killed.
fn hold_child(path: &Path, kind: &str) -> ! {
    let store = match kind {
        "dense" => AnyStore::Dense(
            DenseStore::<u16>::open(path)
                .expect("hold: open")
                .into_dyn(),
        ),
        _ => AnyStore::Ragged(
            RaggedStore::<u16>::open(path)
                .expect("hold: open")
                .into_dyn(),
        ),
    };
    say(HOLDING);
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut rest).expect("hold: read stdin");
    drop(store);
    say(RELEASED);
    std::thread::sleep(std::time::Duration::from_secs(60));
    std::process::exit(0)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("write stdout");
    out.flush().expect("flush stdout");
}

// ---------------------------------------------------------------------------
// The parent's side.

fn child_command(test_name: &str, path: &Path, mode: &str, kind: StoreKind) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([
        test_name,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "--include-ignored",
    ])
    .env(CHILD_ENV, path)
    .env(MODE_ENV, mode)
    .env(KIND_ENV, kind_name(kind));
    cmd
}

/// Runs a probe child; returns its exit code.
fn probe(test_name: &str, path: &Path, kind: StoreKind, expect: u64) -> i32 {
    let out = child_command(test_name, path, "probe", kind)
        .env(EXPECT_ENV, expect.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run the probe");
    out.status.code().unwrap_or_else(|| {
        panic!(
            "the probe died: {}; stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn assert_probe(test_name: &str, path: &Path, kind: StoreKind, expect: u64, want: i32) {
    let code = probe(test_name, path, kind, expect);
    assert_eq!(
        code, want,
        "another process opening the {kind:?} store: exit code {code}, wanted {want} \
         ({OPENED} opened, {BUSY} StoreBusy, {OTHER_ERROR} other error, \
         {WRONG_CONTENT} wrong content, {BUSY_DISAGREE} AnyStore busy but typed open not)"
    );
}

/// Spawns a hold child and waits until it has the store.
fn spawn_holder(test_name: &str, path: &Path, kind: StoreKind) -> (Child, BufReader<ChildStdout>) {
    let mut child = child_command(test_name, path, "hold", kind)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the holder");
    let mut stdout = BufReader::new(child.stdout.take().expect("the holder's stdout"));
    wait_for(&mut stdout, HOLDING);
    (child, stdout)
}

fn wait_for(stdout: &mut BufReader<ChildStdout>, token: &str) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout
            .read_line(&mut line)
            .expect("read the child's stdout");
        assert!(n > 0, "the child exited before saying {token}");
        if line.contains(token) {
            return;
        }
    }
}

/// Every file of a folder and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .expect("list the store")
        .map(|e| {
            let e = e.expect("a folder entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).expect("read a store file"),
            )
        })
        .collect()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list the folder")
        .map(|e| {
            e.expect("a folder entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------
// Tests.

#[test]
fn second_open_of_a_dense_store_in_this_process_is_busy() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    let owner = new_dense(&path, 10);

    assert_busy(DenseStore::<u16>::open(&path), "DenseStore::open", &path);
    assert_busy(
        zrecord::OpenOptions::new().open::<DynDenseStore>(&path),
        "DynDenseStore::open",
        &path,
    );
    assert_busy(AnyStore::open(&path), "AnyStore::open", &path);
    // The lock is taken before the type is looked at.
    assert_busy(
        DenseStore::<u8>::open(&path),
        "DenseStore::<u8>::open",
        &path,
    );
    assert_busy(RaggedStore::<u16>::open(&path), "RaggedStore::open", &path);

    // The failed opens left the owner's handle, and its lock, intact.
    owner.append(&dense_values(10..14)).unwrap();
    assert!(check_dense(&owner, 14));
    assert_busy(
        AnyStore::open(&path),
        "AnyStore::open after an append",
        &path,
    );
    drop(owner);

    let again = DenseStore::<u16>::open(&path).expect("open after the owner dropped its handle");
    assert!(check_dense(&again, 14));
    assert_busy(
        AnyStore::open(&path),
        "AnyStore::open of the reopened store",
        &path,
    );
    drop(again);

    let any = AnyStore::open(&path).expect("AnyStore::open after every handle dropped");
    assert_eq!(
        (any.kind(), any.dtype(), any.len()),
        (StoreKind::Dense, DType::U16, 14)
    );
    assert_busy(
        DenseStore::<u16>::open(&path),
        "DenseStore::open under AnyStore",
        &path,
    );
    drop(any);
    drop(
        zrecord::OpenOptions::new()
            .open::<DynDenseStore>(&path)
            .expect("DynDenseStore::open after AnyStore dropped"),
    );
}

#[test]
fn second_open_of_a_ragged_store_in_this_process_is_busy() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ragged");
    let owner = new_ragged(&path, 9);

    assert_busy(RaggedStore::<u16>::open(&path), "RaggedStore::open", &path);
    assert_busy(
        zrecord::OpenOptions::new().open::<DynRaggedStore>(&path),
        "DynRaggedStore::open",
        &path,
    );
    assert_busy(AnyStore::open(&path), "AnyStore::open", &path);
    assert_busy(DenseStore::<u16>::open(&path), "DenseStore::open", &path);

    owner.append_slices(&ragged_records(9..12)).unwrap();
    assert!(check_ragged(&owner, 12));
    drop(owner);

    let any = AnyStore::open(&path).expect("AnyStore::open after the owner dropped its handle");
    assert_eq!(
        (any.kind(), any.dtype(), any.len()),
        (StoreKind::Ragged, DType::U16, 12)
    );
    assert_busy(
        RaggedStore::<u16>::open(&path),
        "RaggedStore::open under AnyStore",
        &path,
    );
    drop(any);
    let again = RaggedStore::<u16>::open(&path).expect("open after AnyStore dropped");
    assert!(check_ragged(&again, 12));
}

#[test]
fn second_open_from_another_process_is_busy() {
    child_entry();
    let _serial = serial();
    const NAME: &str = "second_open_from_another_process_is_busy";
    let dir = tempfile::tempdir().unwrap();
    let dense_path = dir.path().join("dense");
    let ragged_path = dir.path().join("ragged");
    let dense = new_dense(&dense_path, 20);
    let ragged = new_ragged(&ragged_path, 7);

    assert_probe(NAME, &dense_path, StoreKind::Dense, 20, BUSY);
    assert_probe(NAME, &ragged_path, StoreKind::Ragged, 7, BUSY);

    // A failed open in this process closes its own descriptor of meta.zr;
    // that must not release the owner's lock (as closing would with POSIX
    // record locks).
    assert_busy(
        DenseStore::<u16>::open(&dense_path),
        "DenseStore::open",
        &dense_path,
    );
    assert_busy(AnyStore::open(&ragged_path), "AnyStore::open", &ragged_path);
    assert_probe(NAME, &dense_path, StoreKind::Dense, 20, BUSY);
    assert_probe(NAME, &ragged_path, StoreKind::Ragged, 7, BUSY);

    drop(dense);
    assert_probe(NAME, &dense_path, StoreKind::Dense, 20, OPENED);
    assert_probe(NAME, &ragged_path, StoreKind::Ragged, 7, BUSY);
    drop(ragged);
    assert_probe(NAME, &ragged_path, StoreKind::Ragged, 7, OPENED);

    // And this process opens them again after the other process is done.
    let dense = DenseStore::<u16>::open(&dense_path).expect("reopen the dense store");
    assert!(check_dense(&dense, 20));
    let ragged = RaggedStore::<u16>::open(&ragged_path).expect("reopen the ragged store");
    assert!(check_ragged(&ragged, 7));
}

#[test]
fn a_store_held_by_another_process_is_busy_until_released_or_killed() {
    child_entry();
    let _serial = serial();
    const NAME: &str = "a_store_held_by_another_process_is_busy_until_released_or_killed";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    drop(new_dense(&path, 5));

    // The holder drops its handle but stays alive: the store opens here.
    let (mut holder, mut stdout) = spawn_holder(NAME, &path, StoreKind::Dense);
    assert_busy(DenseStore::<u16>::open(&path), "DenseStore::open", &path);
    assert_busy(AnyStore::open(&path), "AnyStore::open", &path);
    drop(holder.stdin.take());
    wait_for(&mut stdout, RELEASED);
    let store = DenseStore::<u16>::open(&path).expect("open after the other process dropped it");
    assert!(check_dense(&store, 5));
    store.append(&dense_values(5..8)).unwrap();
    drop(store);
    let _ = holder.kill();
    holder.wait().expect("reap the holder");

    // The holder is killed with the store open: the lock dies with it.
    let ragged_path = dir.path().join("ragged");
    drop(new_ragged(&ragged_path, 4));
    let (mut holder, stdout) = spawn_holder(NAME, &ragged_path, StoreKind::Ragged);
    assert_busy(
        RaggedStore::<u16>::open(&ragged_path),
        "RaggedStore::open",
        &ragged_path,
    );
    assert_busy(AnyStore::open(&ragged_path), "AnyStore::open", &ragged_path);
    holder.kill().expect("kill the holder");
    let status = holder.wait().expect("reap the holder");
    assert_eq!(status.signal(), Some(9), "the holder died by SIGKILL");
    drop(stdout);
    let ragged = RaggedStore::<u16>::open(&ragged_path).expect("open after the holder was killed");
    assert!(check_ragged(&ragged, 4));
    let dense = DenseStore::<u16>::open(&path).expect("the dense store is free too");
    assert!(check_dense(&dense, 8));
}

#[test]
fn create_on_an_existing_store_is_already_exists_and_changes_nothing() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let dense_path = dir.path().join("dense");
    let ragged_path = dir.path().join("ragged");
    let dense = new_dense(&dense_path, 12);
    let ragged = new_ragged(&ragged_path, 6);
    // Synced, so closing them below changes nothing either.
    dense.sync().unwrap();
    ragged.sync().unwrap();
    let names = listing(dir.path());
    let dense_files = snapshot(&dense_path);
    let ragged_files = snapshot(&ragged_path);

    let attempts = |path: &Path, open: bool| {
        let what = |api: &str| {
            format!(
                "{api} on {} ({})",
                path.display(),
                if open { "open" } else { "closed" }
            )
        };
        let results: Vec<(String, zrecord::Result<()>)> = vec![
            (
                what("DenseStore::create"),
                DenseStore::<u16>::create(path, &[3], Codec::Zstd).map(drop),
            ),
            (
                what("DenseStore::create of another type"),
                DenseStore::<f32>::create(path, &[2, 2], Codec::Raw).map(drop),
            ),
            (
                what("DynDenseStore::create"),
                zrecord::OpenOptions::new()
                    .create::<DynDenseStore>(
                        path,
                        &zrecord::Schema::dense(DType::U16, &[3]),
                        Codec::Zstd,
                    )
                    .map(drop),
            ),
            (
                what("RaggedStore::create"),
                RaggedStore::<u16>::create(path, Codec::Raw).map(drop),
            ),
            (
                what("DynRaggedStore::create"),
                zrecord::OpenOptions::new()
                    .create::<DynRaggedStore>(
                        path,
                        &zrecord::Schema::ragged(DType::I64),
                        Codec::Zstd,
                    )
                    .map(drop),
            ),
        ];
        for (what, result) in results {
            match result {
                Err(Error::AlreadyExists { path: at }) => assert_eq!(at, path, "{what}"),
                other => panic!("{what}: expected AlreadyExists, got {other:?}"),
            }
        }
    };

    attempts(&dense_path, true);
    attempts(&ragged_path, true);
    assert_eq!(
        snapshot(&dense_path),
        dense_files,
        "the dense store's files changed"
    );
    assert_eq!(
        snapshot(&ragged_path),
        ragged_files,
        "the ragged store's files changed"
    );
    assert_eq!(
        listing(dir.path()),
        names,
        "create left something beside the stores"
    );
    assert!(check_dense(&dense, 12));
    assert!(check_ragged(&ragged, 6));
    drop((dense, ragged));

    attempts(&dense_path, false);
    attempts(&ragged_path, false);
    assert_eq!(
        snapshot(&dense_path),
        dense_files,
        "the dense store's files changed"
    );
    assert_eq!(
        snapshot(&ragged_path),
        ragged_files,
        "the ragged store's files changed"
    );
    assert_eq!(
        listing(dir.path()),
        names,
        "create left something beside the stores"
    );

    // The stores still open, with their records.
    assert!(check_dense(
        &DenseStore::<u16>::open(&dense_path).unwrap(),
        12
    ));
    assert!(check_ragged(
        &RaggedStore::<u16>::open(&ragged_path).unwrap(),
        6
    ));

    // A plain file and a folder that holds something are refused too.
    let file = dir.path().join("file");
    fs::write(&file, b"not a store").unwrap();
    let folder = dir.path().join("folder");
    fs::create_dir(&folder).unwrap();
    fs::write(folder.join("notes.txt"), b"keep me").unwrap();
    for path in [&file, &folder] {
        assert!(matches!(
            DenseStore::<u16>::create(path, &[3], Codec::Raw),
            Err(Error::AlreadyExists { .. })
        ));
        assert!(matches!(
            RaggedStore::<u16>::create(path, Codec::Raw),
            Err(Error::AlreadyExists { .. })
        ));
    }
    assert_eq!(fs::read(&file).unwrap(), b"not a store");
    assert_eq!(listing(&folder), ["notes.txt"]);
    assert_eq!(fs::read(folder.join("notes.txt")).unwrap(), b"keep me");
}
