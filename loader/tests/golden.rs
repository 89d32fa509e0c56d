//! The loader's batches pinned to values it did not produce: the golden
//! values of zsampler's independent Python reference
//! (`zsampler/tests/reference/sampler.py`, written from the sampler's
//! documented formulas, not from its code). For every golden case small
//! enough to store — sequential, iid, cyclic and block modes, ranks of
//! several world sizes, subsets — a loader over a store whose record `i`
//! holds `i` delivers exactly the reference's indices at that step, and so
//! does a loader resumed there from another loader's state taken at world
//! size 1.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use zrecord::{Codec, DenseStore};
use zrecord_loader::{Batch, Loader, Mode};

const GOLDEN: &str = include_str!("../../zsampler/tests/reference/golden.txt");

/// The largest store the cases may need (the reference also covers lengths
/// up to 2^64 − 1, which only the sampler's own golden test can reach).
const MAX_RECORDS: u64 = 20_000;

/// One `sample` line of golden.txt.
struct Case {
    mode: Mode,
    len: u64,
    batch: u64,
    seed: u64,
    rank: u64,
    world: u64,
    subset: Option<Vec<u64>>,
    step: u64,
    indices: Vec<u64>,
    line: &'static str,
}

fn cases() -> Vec<Case> {
    GOLDEN
        .lines()
        .filter(|l| l.starts_with("sample "))
        .map(|line| {
            let (fields, values) = line.split_once(" : ").expect("` : ` in a sample line");
            let field: HashMap<&str, &str> = fields
                .split(' ')
                .skip(1)
                .map(|kv| kv.split_once('=').expect("key=value"))
                .collect();
            let int = |k: &str| field[k].parse::<u64>().expect(k);
            let mode = match field["mode"] {
                "sequential" => Mode::Sequential,
                "iid" => Mode::Iid,
                "cyclic" => Mode::Cyclic,
                "block" => Mode::Block {
                    block_size: int("block_size"),
                    window_blocks: int("window_blocks"),
                },
                other => panic!("unknown mode {other}"),
            };
            Case {
                mode,
                len: int("len"),
                batch: int("batch"),
                seed: int("seed"),
                rank: int("rank"),
                world: int("world"),
                subset: subset(field["subset"]),
                step: int("step"),
                indices: values.split(' ').map(|v| v.parse().unwrap()).collect(),
                line,
            }
        })
        .collect()
}

/// golden.txt's subset notation: `-`, `ap:start,step,count` or `list:a,b,…`.
fn subset(text: &str) -> Option<Vec<u64>> {
    let (kind, args) = text.split_once(':')?;
    let n: Vec<u64> = args.split(',').map(|v| v.parse().unwrap()).collect();
    Some(match kind {
        "ap" => (0..n[2]).map(|k| n[0] + k * n[1]).collect(),
        "list" => n,
        other => panic!("unknown subset {other}"),
    })
}

/// Records the case's indices reach into.
fn records(case: &Case) -> u64 {
    match &case.subset {
        Some(s) => s.iter().max().map_or(0, |m| m + 1),
        None => case.len,
    }
}

/// A raw store of `n` u64 records, record `i` holding `i`.
fn store(dir: &Path, n: u64) -> DenseStore<u64> {
    let path = dir.join(n.to_string());
    if !path.exists() {
        let store = DenseStore::<u64>::create(&path, &[], Codec::Raw).unwrap();
        store.append(&(0..n).collect::<Vec<u64>>()).unwrap();
    }
    zrecord::OpenOptions::new()
        .read_only(true)
        .open(&path)
        .unwrap()
}

/// The batch's indices, after checking that its records hold them.
fn delivered(loader: &mut Loader<Batch>, case: &Case) -> Vec<u64> {
    let batch = loader.next_batch().unwrap();
    assert_eq!(batch.step(), case.step, "{}", case.line);
    let values = batch.dense::<u64>("i").unwrap();
    let values: Vec<u64> = values.iter().copied().collect();
    assert_eq!(values, batch.indices(), "{}", case.line);
    values
}

#[test]
fn the_loader_delivers_the_references_batches_fresh_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| records(c) <= MAX_RECORDS)
        .collect();
    let (mut ranks, mut modes) = (0, std::collections::HashSet::new());
    for case in &cases {
        let build = || {
            let builder = Loader::builder(case.batch)
                .stream("i", store(dir.path(), records(case)))
                .seed(case.seed)
                .mode(case.mode)
                .workers(1);
            match &case.subset {
                Some(s) => builder.subset(Arc::<[u64]>::from(&s[..])),
                None => builder,
            }
        };
        let mut fresh = build()
            .shard(case.rank, case.world)
            .start_step(case.step)
            .build()
            .unwrap();
        assert_eq!(delivered(&mut fresh, case), case.indices, "{}", case.line);
        // Another run's state at this step, taken at world size 1,
        // resumed at the case's rank and world size.
        let state = build().start_step(case.step).build().unwrap().state();
        let mut resumed = build()
            .resume(&state)
            .shard(case.rank, case.world)
            .build()
            .unwrap();
        assert_eq!(delivered(&mut resumed, case), case.indices, "{}", case.line);
        ranks += usize::from(case.world > 1);
        modes.insert(format!("{:?}", std::mem::discriminant(&case.mode)));
    }
    // The filter keeps cases of every mode, of several ranks and subsets.
    assert!(cases.len() >= 80, "{} cases", cases.len());
    assert!(
        ranks >= 5 && modes.len() == 4,
        "{ranks} ranked cases, modes {modes:?}"
    );
    assert!(cases.iter().filter(|c| c.subset.is_some()).count() >= 3);
}
