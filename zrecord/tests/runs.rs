//! A dense raw store finds most records from its run index (pages of the
//! record table whose entries lie end to end) instead of their entries.
//! Against a `Vec` model, under appends, deletes, compactions and reopens,
//! with a gather between every step so pages are classified before the
//! next step rewrites, cuts or extends the table: a stale page would hand
//! back another record's bytes.

mod common;

use common::backends::{BACKENDS, Site};
use proptest::prelude::*;
use zrecord::{Codec, DType, DenseStore, Error, Geometry, OpenOptions};

/// Odd-sized records (41 stored bytes with the checksum), so runs do not
/// line up with pages, chunks or cache lines.
const WIDTH: usize = 37;

#[derive(Clone, Debug)]
enum Op {
    Append(u16),
    Delete(Vec<prop::sample::Index>),
    /// Deletes the last records: the table is cut, and no entry rewritten.
    DeleteLast(u16),
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u16..400).prop_map(Op::Append),
        3 => prop::collection::vec(any::<prop::sample::Index>(), 0..12).prop_map(Op::Delete),
        2 => (1u16..300).prop_map(Op::DeleteLast),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

/// Tiny segments and chunks (pages of 16 entries, runs cut by chunk
/// rollover), or segments of 1024 entries (pages of 256) in 1 MiB chunks.
fn geometry(i: usize) -> Geometry {
    match i {
        0 => Geometry {
            loc_segment_bits: 4,
            chunk_bits: 12,
        },
        _ => Geometry {
            loc_segment_bits: 10,
            chunk_bits: 20,
        },
    }
}

/// Gathers every record in a shuffled order, and a batch with repeats,
/// and compares them with the model.
fn check(store: &DenseStore<u8>, model: &[Vec<u8>], seed: u64) -> Result<(), TestCaseError> {
    let n = model.len() as u64;
    let mut order: Vec<u64> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(
            i,
            (common::splitmix(seed, i as u64) % (i as u64 + 1)) as usize,
        );
    }
    order.extend(order.iter().take(7).copied().collect::<Vec<_>>());
    let mut out = vec![0u8; order.len() * WIDTH];
    store.gather_into(&order, &mut out).unwrap();
    for (k, &i) in order.iter().enumerate() {
        prop_assert_eq!(
            &out[k * WIDTH..(k + 1) * WIDTH],
            &model[i as usize][..],
            "record {}",
            i
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn gathers_match_the_model_through_every_table_change(
        ops in prop::collection::vec(op(), 1..16),
        geometry_at in 0usize..2,
        backend in 0..BACKENDS.len(),
    ) {
        let site = Site::new(BACKENDS[backend]);
        let open = || -> DenseStore<u8> { site.open_dense(OpenOptions::new()).unwrap().typed().unwrap() };
        drop(site.create_dense(DType::U8, &[WIDTH], Codec::Raw, geometry(geometry_at)).unwrap());
        let mut store = open();
        let mut model: Vec<Vec<u8>> = Vec::new();
        // Every record ever appended differs from every other.
        let mut appended = 0u64;
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Append(n) => {
                    let first = appended;
                    appended += u64::from(n);
                    let records: Vec<Vec<u8>> = (first..appended)
                        .map(|r| common::valid_bytes(DType::U8, r, WIDTH))
                        .collect();
                    store.append(&records.concat()).unwrap();
                    model.extend(records);
                }
                Op::Delete(picks) => {
                    if model.is_empty() { continue; }
                    let mut targets: Vec<usize> = picks.iter().map(|p| p.index(model.len())).collect();
                    let indices: Vec<u64> = targets.iter().map(|&t| t as u64).collect();
                    store.delete(&indices).unwrap();
                    targets.sort_unstable_by(|a, b| b.cmp(a));
                    targets.dedup();
                    for t in targets {
                        model.swap_remove(t);
                    }
                }
                Op::DeleteLast(n) => {
                    let keep = model.len().saturating_sub(usize::from(n));
                    let last: Vec<u64> = (keep as u64..model.len() as u64).collect();
                    store.delete(&last).unwrap();
                    model.truncate(keep);
                }
                Op::Compact => {
                    store.compact().unwrap();
                }
                Op::Reopen => {
                    drop(store);
                    store = open();
                }
            }
            prop_assert_eq!(store.len(), model.len() as u64);
            check(&store, &model, step as u64)?;
        }
        store.verify().unwrap();
    }
}

/// A record whose entry was damaged inside what would otherwise be a run
/// is found through its entry and refused, and its neighbours, in a run
/// page and in the damaged one, are still read.
#[test]
fn a_damaged_entry_inside_a_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = DenseStore::<u8>::create(&path, &[WIDTH], Codec::Raw).unwrap();
    let records: Vec<Vec<u8>> = (0..600)
        .map(|r| common::valid_bytes(DType::U8, r, WIDTH))
        .collect();
    store.append(&records.concat()).unwrap();
    store.sync().unwrap();
    drop(store);

    // Entry 300 (in the second page of 256) points at the end of the
    // committed bytes: its record would lie past them.
    let table = path.join("0.loc");
    let mut bytes = std::fs::read(&table).unwrap();
    let end = (600 * (WIDTH + 4)) as u32;
    bytes[300 * 16..300 * 16 + 4].copy_from_slice(&end.to_le_bytes());
    std::fs::write(&table, &bytes).unwrap();

    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(&path)
        .unwrap();
    let mut out = vec![0u8; 2 * WIDTH];
    for pair in [[10u64, 299], [299, 301], [512, 0]] {
        store.gather_into(&pair, &mut out).unwrap();
        assert_eq!(out[..WIDTH], records[pair[0] as usize][..]);
        assert_eq!(out[WIDTH..], records[pair[1] as usize][..]);
    }
    for batch in [&[300u64][..], &[5, 300, 6], &(290..310).collect::<Vec<_>>()] {
        let mut out = vec![0u8; batch.len() * WIDTH];
        match store.gather_into(batch, &mut out) {
            Err(Error::CorruptRecord { index: 300, .. }) => {}
            other => panic!("record 300 read as {other:?}"),
        }
    }
    assert!(store.verify().is_err());
}
