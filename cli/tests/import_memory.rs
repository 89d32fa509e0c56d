//! Imports stream: an importer's peak memory (the maximum resident set of
//! its process, from `wait4`) stays under a bound while its input is
//! several times larger. RELIABILITY.md lists every importer's peak on
//! larger inputs.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus};

const MIB: u64 = 1 << 20;
/// `import npy` streams bounded chunks of rows: 32 MiB measured on 1 GiB.
const NPY_BOUND: u64 = 64 * MIB;
/// `import text`: about 150 MiB measured on 20 MB to 414 MB alike.
const TEXT_BOUND: u64 = 256 * MIB;

/// Runs `command` and returns how it ended and its peak resident bytes.
fn peak_memory(command: &mut Command) -> (ExitStatus, u64) {
    // Reaped by `wait4` below, which also reports its resource use.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().expect("start zrecord");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child (not reaped elsewhere: `child` is
    // never waited on) and writes into the two locals above.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    // Linux reports `ru_maxrss` in KiB.
    (ExitStatus::from_raw(status), usage.ru_maxrss as u64 * 1024)
}

fn zrecord() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    command.arg("-q");
    command
}

/// A `.npy` file of `rows` rows of 1,024 `f32`.
fn write_npy(path: &Path, rows: u64) {
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, 1024), }}");
    let pad = (64 - (10 + header.len() + 1) % 64) % 64;
    let header = format!("{header}{}\n", " ".repeat(pad));
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(b"\x93NUMPY\x01\x00").unwrap();
    file.write_all(&(header.len() as u16).to_le_bytes())
        .unwrap();
    file.write_all(header.as_bytes()).unwrap();
    let row: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    for _ in 0..rows {
        file.write_all(&row).unwrap();
    }
}

#[test]
fn importing_npy_and_text_takes_memory_that_does_not_grow_with_the_input() {
    let dir = tempfile::tempdir().unwrap();

    let npy = dir.path().join("big.npy");
    write_npy(&npy, 128 * 1024); // 512 MiB
    let (status, peak) = peak_memory(
        zrecord()
            .args(["import", "npy"])
            .arg(&npy)
            .arg(dir.path().join("npy-store")),
    );
    assert!(status.success(), "import npy: {status}");
    eprintln!("import npy of 512 MiB: peak {} MiB", peak / MIB);
    assert!(peak < NPY_BOUND, "import npy peaked at {} MiB", peak / MIB);

    // Text: the importer's working set (rounds of 8 MiB of text tokenised
    // in parallel) does not grow with the file. The resident set also
    // counts the pages of the record table the store maps as it is
    // written (file pages the kernel can drop), a few bytes per document:
    // 3.5 million more documents may add those, not the file's size.
    let mut peaks = Vec::new();
    for (name, lines) in [("small.txt", 500_000u32), ("big.txt", 4_000_000)] {
        let text = dir.path().join(name);
        {
            let mut file = std::io::BufWriter::new(std::fs::File::create(&text).unwrap());
            for line in 0..lines {
                writeln!(
                    file,
                    "Line {line}: and the earth was without form, and void; and darkness was upon the deep."
                )
                .unwrap();
            }
        }
        let (status, peak) = peak_memory(
            zrecord()
                .args(["import", "text", "--tokenizer", "bytes"])
                .arg(&text)
                .arg(dir.path().join(format!("{name}-store"))),
        );
        assert!(status.success(), "import text {name}: {status}");
        let bytes = std::fs::metadata(&text).unwrap().len();
        eprintln!(
            "import text of {} MB: peak {} MiB",
            bytes / 1_000_000,
            peak / MIB
        );
        peaks.push(peak);
    }
    assert!(
        peaks[1] <= peaks[0] + 48 * MIB && peaks[1] < TEXT_BOUND,
        "import text peaked at {} MiB on 45 MB, {} MiB on 360 MB",
        peaks[0] / MIB,
        peaks[1] / MIB
    );
}
