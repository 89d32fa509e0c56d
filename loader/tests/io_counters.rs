//! The loader's I/O counters: what its gathers read from disk.

use std::time::Duration;

use zrecord::storage::Io;
use zrecord::{Codec, DenseStore, OpenOptions};
use zrecord_loader::{CounterSnapshot, Loader};

const WIDTH: usize = 784;

/// Runs a loader for `steps` batches of 32 over a raw store of 1,000
/// records read through `io`, and returns its counters once its workers stopped.
fn counters(io: Io, steps: u64) -> CounterSnapshot {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("images");
    let store = DenseStore::<u8>::create(&path, &[WIDTH], Codec::Raw).unwrap();
    store.append(&vec![9; WIDTH * 1000]).unwrap();
    drop(store);
    let store = OpenOptions::new()
        .io(io)
        .open::<DenseStore<u8>>(&path)
        .unwrap();
    let mut loader = Loader::builder(32)
        .stream("image", store)
        .workers(2)
        .build()
        .unwrap();
    for batch in loader.steps(steps) {
        batch.unwrap();
    }
    let counters = loader.counters();
    drop(loader); // joins the workers: nothing is gathered after this
    counters.snapshot()
}

#[test]
fn direct_reads_count_every_record_and_table_entry_read_from_disk() {
    let c = counters(Io::Direct, 10);
    assert!(c.bytes_gathered >= 10 * 32 * WIDTH as u64, "{c:?}");
    // A raw record is read straight into the batch, after its 16-byte
    // table entry: exactly 800 bytes from disk per 784 gathered.
    assert_eq!(
        c.disk_bytes_read * WIDTH as u64,
        c.bytes_gathered * (WIDTH as u64 + 16),
        "{c:?}"
    );
    assert!(
        c.io_wait > Duration::ZERO && c.io_wait <= c.gather_time,
        "{c:?}"
    );
}

#[test]
fn mapped_gathers_read_nothing_explicitly() {
    let c = counters(Io::Mapped, 10);
    assert!(c.bytes_gathered >= 10 * 32 * WIDTH as u64, "{c:?}");
    assert_eq!((c.disk_bytes_read, c.io_wait), (0, Duration::ZERO), "{c:?}");
}
