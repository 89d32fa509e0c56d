//! Crafted store files — headers, table entries, journals, dictionaries,
//! links, foreign names — are typed errors naming the file, change nothing
//! outside the store (or inside it, for a failed open) and stay within
//! bounded memory: the open, verify and gather paths of hostile testing.
//!
//! Peak memory is measured in a child process (this test binary run again
//! with `ZRECORD_CRAFTED_CHILD` set), from its `VmHWM` in `/proc/self/status`.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use zrecord::{AnyStore, Codec, DenseStore, Error, RaggedStore};

/// These tests run one at a time: a store's lock belongs to its open file
/// description, which a child forked by another test thread shares until
/// it execs, so a reopen there could briefly see the store busy.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const CHILD_ENV: &str = "ZRECORD_CRAFTED_CHILD";
const CASE_ENV: &str = "ZRECORD_CRAFTED_CASE";
/// The memory any crafted store may cost beyond its records' declared sizes.
const BUDGET: u64 = 64 << 20;

fn patch(path: &Path, at: u64, bytes: &[u8]) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .write_all_at(bytes, at)
        .unwrap();
}

/// Patches `meta.zr`'s current header and its synced copy alike, as a
/// crafted store that was synced would hold them.
fn patch_meta(store: &Path, at: u64, bytes: &[u8]) {
    patch(&store.join("meta.zr"), at, bytes);
    patch(&store.join("meta.zr"), 32 + at, bytes);
}

/// What each entry of a folder is: its kind, size and (for files up to
/// 16 MiB) a CRC of its bytes — enough to see any change without reading
/// a sparse 4 GiB file.
fn snapshot(dir: &Path) -> BTreeMap<String, (String, u64, u32)> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = fs::symlink_metadata(e.path()).unwrap();
            let crc = if meta.is_file() && meta.len() <= 16 << 20 {
                crc32fast::hash(&fs::read(e.path()).unwrap())
            } else {
                0
            };
            let kind = format!("{:?}", meta.file_type());
            (
                e.file_name().to_string_lossy().into_owned(),
                (kind, meta.len(), crc),
            )
        })
        .collect()
}

/// A dense u8 `[4]` store of ten records, synced and closed.
fn dense(dir: &Path, name: &str, codec: Codec) -> PathBuf {
    let path = dir.join(name);
    let store = DenseStore::<u8>::create(&path, &[4], codec).unwrap();
    store.append(&(0..40).collect::<Vec<u8>>()).unwrap();
    store.sync().unwrap();
    path
}

/// Opens `path`, expecting an error; checks no file changed.
fn open_fails(path: &Path) -> Error {
    let before = snapshot(path);
    for read_only in [true, false] {
        let opened = if read_only {
            zrecord::OpenOptions::new()
                .read_only(true)
                .open::<AnyStore>(path)
        } else {
            AnyStore::open(path)
        };
        let Err(e) = opened else {
            panic!("{} opened (read-only: {read_only})", path.display());
        };
        assert_eq!(
            snapshot(path),
            before,
            "a failed open changed {}",
            path.display()
        );
        if !read_only {
            return e;
        }
    }
    unreachable!()
}

// ---------------------------------------------------------------------------
// Peak memory, in a child process.

/// The child's side: runs `case` on the store at `path`, then prints its
/// peak resident memory.
fn child_entry() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let case = std::env::var(CASE_ENV).unwrap();
    match case.as_str() {
        "open" => {
            let _ = AnyStore::open(&path);
            let _ = zrecord::OpenOptions::new()
                .read_only(true)
                .open::<AnyStore>(&path);
        }
        "verify" => match zrecord::OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(&path)
            .unwrap()
        {
            AnyStore::Dense(s) => println!("verify: {:?}", s.verify().map(|r| r.records)),
            AnyStore::Ragged(s) => println!("verify: {:?}", s.verify().map(|r| r.records)),
        },
        "gather" => match zrecord::OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(&path)
            .unwrap()
        {
            AnyStore::Dense(s) => println!("gather: {:?}", s.gather_dyn(&[0]).map(|v| v.len())),
            AnyStore::Ragged(s) => println!("gather: {:?}", s.gather_dyn(&[0]).map(|b| b.len())),
        },
        other => panic!("unknown case {other}"),
    }
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .parse::<u64>()
        .unwrap();
    println!("PEAK-BYTES {}", hwm * 1024);
    std::process::exit(0);
}

/// Runs `case` on `path` in a child; returns its peak memory in bytes.
fn peak(test: &str, case: &str, path: &Path) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .env(CASE_ENV, case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {case} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let peak = stdout
        .lines()
        .find_map(|l| l.split_once("PEAK-BYTES ").map(|(_, n)| n))
        .unwrap_or_else(|| panic!("no peak in {stdout}"))
        .parse()
        .unwrap();
    println!("{case} {}: peak {} MiB", path.display(), peak >> 20);
    peak
}

fn on_linux() -> bool {
    Path::new("/proc/self/status").exists()
}

// ---------------------------------------------------------------------------

#[test]
fn a_huge_tail_chunk_is_an_error_not_an_allocation() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dense(dir.path(), "s", Codec::Raw);
    patch_meta(&path, 6, &[0xFF; 4]);
    let e = open_fails(&path);
    assert!(
        matches!(&e, Error::Corrupt { path: p, .. } if p.ends_with("1.chunk")),
        "{e:?}"
    );
    if on_linux() {
        let peak = peak(
            "a_huge_tail_chunk_is_an_error_not_an_allocation",
            "open",
            &path,
        );
        assert!(peak < BUDGET, "open peaked at {peak} bytes");
    }
    // A length of u64::MAX is found as quickly: the second segment is missing.
    let path = dense(dir.path(), "t", Codec::Raw);
    patch_meta(&path, 14, &u64::MAX.to_le_bytes());
    assert!(matches!(open_fails(&path), Error::Corrupt { .. }));
}

#[test]
fn recovery_never_writes_through_a_link_or_to_a_non_file() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::write(&outside, vec![7u8; 5000]).unwrap();
    for name in ["0.chunk", "0.loc", "meta.zr", "store.zr"] {
        let path = dense(dir.path(), &format!("link-{name}"), Codec::Raw);
        fs::remove_file(path.join(name)).unwrap();
        std::os::unix::fs::symlink(&outside, path.join(name)).unwrap();
        let e = open_fails(&path);
        assert!(
            matches!(&e, Error::NotRegularFile { path: p, found: "a symbolic link" } if p.ends_with(name)),
            "{name}: {e:?}"
        );
        assert_eq!(fs::read(&outside).unwrap(), vec![7u8; 5000], "{name}");
    }
    // A folder or a FIFO in place of a file is refused, not waited on.
    let path = dense(dir.path(), "folder", Codec::Raw);
    fs::remove_file(path.join("0.chunk")).unwrap();
    fs::create_dir(path.join("0.chunk")).unwrap();
    assert!(matches!(
        open_fails(&path),
        Error::NotRegularFile {
            found: "a folder",
            ..
        }
    ));
    for name in ["0.loc", "store.zr", "compact.journal", "delete.journal"] {
        let path = dense(dir.path(), &format!("fifo-{name}"), Codec::Raw);
        let _ = fs::remove_file(path.join(name));
        assert!(
            Command::new("mkfifo")
                .arg(path.join(name))
                .status()
                .unwrap()
                .success()
        );
        assert!(
            matches!(
                open_fails(&path),
                Error::NotRegularFile {
                    found: "a FIFO",
                    ..
                }
            ),
            "{name}"
        );
    }
    // A link named like a stale chunk is removed as a name, its target kept.
    let path = dense(dir.path(), "stale-link", Codec::Raw);
    std::os::unix::fs::symlink(&outside, path.join("5.chunk")).unwrap();
    drop(AnyStore::open(&path).unwrap());
    assert!(!path.join("5.chunk").exists());
    assert_eq!(fs::read(&outside).unwrap(), vec![7u8; 5000]);
}

#[test]
fn only_canonical_names_are_touched() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dense(dir.path(), "s", Codec::Raw);
    let foreign = [
        "+1.chunk",
        "007.loc",
        "00.chunk",
        "01.loc",
        "1.chunk.bak",
        "notes.txt",
    ];
    for name in foreign {
        fs::write(path.join(name), b"mine").unwrap();
    }
    // Real leftovers of an interrupted append are still removed.
    fs::write(path.join("3.chunk"), b"stale").unwrap();
    fs::write(path.join("2.loc"), b"stale").unwrap();
    let store = DenseStore::<u8>::open(&path).unwrap();
    assert_eq!(store.len(), 10);
    for name in foreign {
        assert_eq!(fs::read(path.join(name)).unwrap(), b"mine", "{name}");
    }
    assert!(!path.join("3.chunk").exists() && !path.join("2.loc").exists());
}

#[test]
fn records_past_the_format_limits_are_errors() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // A ragged record whose entry claims 2^32 - 1 bytes.
    let path = dir.path().join("ragged");
    let store = RaggedStore::<u8>::create(&path, Codec::Raw).unwrap();
    store.append_slices(&[vec![1u8, 2, 3]]).unwrap();
    store.sync().unwrap();
    drop(store);
    patch(&path.join("0.loc"), 8, &u32::MAX.to_le_bytes());
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<RaggedStore<u8>>(&path)
        .unwrap();
    for result in [store.gather(&[0]).map(|_| ()), store.verify().map(|_| ())] {
        assert!(
            matches!(&result, Err(Error::CorruptRecord { index: 0, reason, .. }) if reason.contains("limit")),
            "{result:?}"
        );
    }
    drop(store);
    if on_linux() {
        for case in ["verify", "gather"] {
            let peak = peak("records_past_the_format_limits_are_errors", case, &path);
            assert!(peak < BUDGET, "{case} peaked at {peak} bytes");
        }
    }
}

#[test]
fn a_two_gib_record_is_verified_in_bounded_memory_and_repeats_cannot_overflow() {
    child_entry();
    let _serial = serial();
    if !on_linux() {
        zrecord_testkit::skip("peak memory needs /proc/self/status (Linux)");
        return;
    }
    // A dense store of one 2 GiB u8 record (zeros): the largest the format
    // allows, written as the frame a zstd store holds.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    let width = 1usize << 31;
    drop(DenseStore::<u8>::create(&path, &[width], Codec::Zstd).unwrap());
    let mut frame = Vec::new();
    {
        let mut encoder = zstd::stream::Encoder::new(&mut frame, 1).unwrap();
        encoder.include_checksum(true).unwrap();
        encoder.include_contentsize(true).unwrap();
        encoder.set_pledged_src_size(Some(width as u64)).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..width >> 20 {
            encoder.write_all(&zeros).unwrap();
        }
        encoder.finish().unwrap();
    }
    fs::write(path.join("0.chunk"), &frame).unwrap();
    let entry: Vec<u8> = [0u32, frame.len() as u32, width as u32, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    fs::write(path.join("0.loc"), entry).unwrap();
    patch_meta(&path, 10, &(frame.len() as u32).to_le_bytes());
    patch_meta(&path, 14, &1u64.to_le_bytes());

    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(&path)
        .unwrap();
    assert!(matches!(
        store.gather(&vec![0; 1_000_000]),
        Err(Error::BatchTooLarge {
            records: 1_000_000,
            ..
        })
    ));
    drop(store);
    let peak = peak(
        "a_two_gib_record_is_verified_in_bounded_memory_and_repeats_cannot_overflow",
        "verify",
        &path,
    );
    assert!(
        peak < BUDGET,
        "verify of a 2 GiB record peaked at {peak} bytes"
    );
}

#[test]
fn sparse_journals_and_dictionaries_are_found_from_their_size() {
    child_entry();
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // A 4 GiB sparse compact.journal and a 1 GiB sparse dict.zr.
    let journal = dense(dir.path(), "journal", Codec::Raw);
    fs::File::create(journal.join("compact.journal"))
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let e = open_fails(&journal);
    assert!(
        matches!(&e, Error::Corrupt { path, .. } if path.ends_with("compact.journal")),
        "{e:?}"
    );
    let dict_path = dir.path().join("dict");
    let samples: Vec<Vec<u8>> = (0..400u32)
        .map(|i| format!("record {i} of class {}", i % 9).into_bytes())
        .collect();
    let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let dict = zrecord::train_dict(&refs, zrecord::DictTier::Fast).unwrap();
    drop(DenseStore::<u8>::create(&dict_path, &[4], Codec::ZstdDict(dict)).unwrap());
    fs::OpenOptions::new()
        .write(true)
        .open(dict_path.join("dict.zr"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let e = open_fails(&dict_path);
    assert!(
        matches!(&e, Error::Corrupt { path, .. } if path.ends_with("dict.zr")),
        "{e:?}"
    );
    if on_linux() {
        for path in [&journal, &dict_path] {
            let peak = peak(
                "sparse_journals_and_dictionaries_are_found_from_their_size",
                "open",
                path,
            );
            assert!(
                peak < BUDGET,
                "open of {} peaked at {peak} bytes",
                path.display()
            );
        }
    }
    // The way out: repair removes the damaged journal, saying what may be lost.
    let report = zrecord::repair(&journal).unwrap();
    assert_eq!(report.discarded.len(), 1);
    assert!(report.discarded[0].path.ends_with("compact.journal"));
    assert!(!journal.join("compact.journal").exists());
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(&journal)
        .unwrap();
    assert_eq!(store.verify().unwrap().records, 10);
}

#[test]
fn damaged_delete_journals_are_errors_and_repair_removes_them() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dense(dir.path(), "s", Codec::Zstd);
    // Valid magic and length, targets out of order: no zrecord wrote that.
    let mut journal = b"ZRDELET1".to_vec();
    let mut body = 10u64.to_le_bytes().to_vec();
    body.extend_from_slice(&2u64.to_le_bytes());
    body.extend_from_slice(&1u64.to_le_bytes());
    body.extend_from_slice(&5u64.to_le_bytes());
    journal.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    journal.extend_from_slice(&body);
    fs::write(path.join("delete.journal"), &journal).unwrap();
    let e = open_fails(&path);
    assert!(
        matches!(&e, Error::Corrupt { path, .. } if path.ends_with("delete.journal")),
        "{e:?}"
    );
    let report = zrecord::repair(&path).unwrap();
    assert_eq!(report.discarded.len(), 1);
    assert!(report.discarded[0].risk.contains("twice"));
    assert_eq!(DenseStore::<u8>::open(&path).unwrap().len(), 10);
}

#[test]
fn unknown_versions_and_features_name_what_they_saw() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dense(dir.path(), "features", Codec::Raw);
    patch(&path.join("store.zr"), 20, &[0x07, 0, 0, 0x80]);
    assert!(matches!(
        open_fails(&path),
        Error::UnsupportedFeature {
            field: "features",
            bits: 0x8000_0000,
            ..
        }
    ));
    let path = dense(dir.path(), "flags", Codec::Raw);
    patch(&path.join("meta.zr"), 24, &[0x02]);
    assert!(matches!(
        open_fails(&path),
        Error::UnsupportedFeature {
            field: "flags",
            bits: 2,
            ..
        }
    ));
    let path = dense(dir.path(), "version", Codec::Raw);
    patch(&path.join("store.zr"), 4, &[9]);
    assert!(matches!(
        open_fails(&path),
        Error::UnsupportedVersion {
            found: 9,
            supported: 2,
            ..
        }
    ));
}
