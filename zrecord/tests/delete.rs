//! Delete is swap-last against a `Vec` model, on every storage backend:
//! indices name records of the store before the call, in any order, and an
//! index named twice is deleted once.

mod common;

use common::backends::{BACKENDS, Site};
use proptest::prelude::*;
use zrecord::{DType, Geometry, OpenOptions, RaggedStore};

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<u16>),
    Delete(Vec<prop::sample::Index>),
    DeleteLast,
    DeleteAll,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => prop::collection::vec(1u16..40, 1..8).prop_map(Op::Append),
        3 => prop::collection::vec(any::<prop::sample::Index>(), 0..6).prop_map(Op::Delete),
        1 => Just(Op::DeleteLast),
        1 => Just(Op::DeleteAll),
        1 => Just(Op::Reopen),
    ]
}

/// The model: `Vec::swap_remove` in descending order of distinct indices.
fn model_delete(model: &mut Vec<Vec<u8>>, indices: &[u64]) {
    let mut targets = indices.to_vec();
    targets.sort_unstable_by(|a, b| b.cmp(a));
    targets.dedup();
    for t in targets {
        model.swap_remove(t as usize);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn delete_matches_the_model(
        ops in prop::collection::vec(op(), 1..25),
        codec in 0usize..3,
        backend in 0..BACKENDS.len(),
    ) {
        let site = Site::new(BACKENDS[backend]);
        // Tiny segments, so entries move across segment files.
        let geometry = Geometry { loc_segment_bits: 4, chunk_bits: 12 };
        let open = || -> RaggedStore<u8> { site.open_ragged(OpenOptions::new()).unwrap().typed().unwrap() };
        drop(site.create_ragged(DType::U8, common::codec(codec), geometry).unwrap());
        let mut store = open();
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut next = 0u64;
        for op in ops {
            match op {
                Op::Append(lens) => {
                    let records: Vec<Vec<u8>> = lens
                        .iter()
                        .map(|&n| { next += 1; common::valid_bytes(zrecord::DType::U8, next, n as usize) })
                        .collect();
                    store.append_slices(&records).unwrap();
                    model.extend(records);
                }
                Op::Delete(picks) => {
                    if model.is_empty() { continue; }
                    let mut indices: Vec<u64> = picks.iter().map(|p| p.index(model.len()) as u64).collect();
                    // Name some records twice.
                    if let Some(&first) = indices.first() { indices.push(first); }
                    let deleted = store.delete(&indices).unwrap();
                    let before = model.len();
                    model_delete(&mut model, &indices);
                    prop_assert_eq!(deleted as usize, before - model.len());
                }
                Op::DeleteLast => {
                    if model.is_empty() { continue; }
                    let last = model.len() as u64 - 1;
                    store.delete(&[last]).unwrap();
                    model.pop();
                }
                Op::DeleteAll => {
                    let all: Vec<u64> = (0..model.len() as u64).collect();
                    store.delete(&all).unwrap();
                    model.clear();
                }
                Op::Reopen => {
                    drop(store);
                    store = open();
                }
            }
            prop_assert_eq!(store.len(), model.len() as u64);
            let all: Vec<u64> = (0..model.len() as u64).collect();
            let got: Vec<Vec<u8>> = store.gather_arrays(&all).unwrap().into_iter().map(|a| a.into_raw_vec_and_offset().0).collect();
            prop_assert_eq!(&got, &model);
        }
        store.verify().unwrap();
        let stats = store.stats().unwrap();
        prop_assert_eq!(stats.records, model.len() as u64);
        prop_assert_eq!(stats.logical_bytes, model.iter().map(|r| r.len() as u64).sum::<u64>());
    }
}
