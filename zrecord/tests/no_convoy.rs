//! Readers never queue behind a writer that queues behind a long reader: a
//! gather and an append that opens a new chunk both finish while a
//! `verify` holds its view of the store.

use std::sync::mpsc;
use std::time::Duration;

use zrecord::{Codec, DenseStore, Geometry};

/// How long the test waits for a step before calling it stuck (a deadlock
/// guard, not a timing assertion: the steps take microseconds).
const STUCK: Duration = Duration::from_secs(60);

#[test]
fn gathers_and_appends_do_not_wait_for_a_running_verify() {
    let dir = tempfile::tempdir().unwrap();
    let geometry = Geometry {
        loc_segment_bits: 4,
        chunk_bits: 12,
    };
    let store = zrecord::OpenOptions::new()
        .geometry(geometry)
        .create::<DenseStore<u8>>(
            dir.path().join("s"),
            &zrecord::Schema::dense(<u8 as zrecord::Element>::DTYPE, &[1000]),
            Codec::Raw,
        )
        .unwrap();
    store.append(&vec![5u8; 20 * 1000]).unwrap();
    // Four 1,004-byte stored records per 4,095-byte chunk.
    let chunks = || {
        std::fs::read_dir(store.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "chunk")
            })
            .count()
    };
    assert_eq!(chunks(), 5);

    let (in_verify_tx, in_verify) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let store = &store;
    std::thread::scope(|s| {
        let verifier = s.spawn(move || {
            store.verify_with(|_, _| {
                in_verify_tx.send(()).unwrap();
                let _ = release_rx.recv();
            })
        });
        in_verify.recv_timeout(STUCK).expect("verify started");

        // An append that opens new chunks (a new file table).
        let (appended_tx, appended) = mpsc::channel();
        let (gathered_tx, gathered) = mpsc::channel();
        s.spawn(move || {
            let first = store.append(&(0..8 * 1000).map(|i| i as u8).collect::<Vec<_>>());
            appended_tx.send(first.map(|_| ())).unwrap();
        });
        s.spawn(move || {
            // Let the append queue first, where a writer-preferring lock would
            // make this gather wait behind it.
            std::thread::sleep(Duration::from_millis(50));
            gathered_tx
                .send(store.gather(&[3]).map(|b| b.len()))
                .unwrap();
        });
        let appended = appended.recv_timeout(STUCK);
        let gathered = gathered.recv_timeout(STUCK);
        release.send(()).unwrap();
        appended
            .expect("the append finished during verify")
            .unwrap();
        assert_eq!(
            gathered
                .expect("the gather finished during verify")
                .unwrap(),
            1000
        );
        assert_eq!(verifier.join().unwrap().unwrap().records, 20);
    });
    assert_eq!(store.len(), 28);
    assert_eq!(chunks(), 7);
    // Record 27 is the eighth appended: bytes 7000, 7001, ... as u8.
    assert_eq!(
        store.gather(&[27]).unwrap().as_slice().unwrap()[..3],
        [88, 89, 90]
    );
    assert_eq!(store.verify().unwrap().records, 28);
}
