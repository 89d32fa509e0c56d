//! Power loss, simulated: random sequences of appends, deletes, compactions
//! and syncs on an in-memory storage, cut at every point by a simulated
//! power failure that keeps what was synced and a prefix (the last write
//! possibly torn) of what was not. After every "reboot" the store opens,
//! verifies, and holds exactly the records of some state between its last
//! completed `sync` and the last operation — nothing acknowledged before
//! that sync is lost or changed.

mod common;

use std::sync::Arc;

use zrecord::storage::{Crash, Memory};
use zrecord::{Codec, DType, DynDenseStore, Geometry, OpenOptions};

/// 16-entry table segments, 4 KiB chunks: operations cross file boundaries.
const TINY: Geometry = Geometry {
    loc_segment_bits: 4,
    chunk_bits: 12,
};
const WIDTH: usize = 200;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn record(seed: u64) -> Vec<u8> {
    (0..WIDTH as u64)
        .map(|i| (seed.wrapping_mul(0x9E37).wrapping_add(i * 13) >> 3) as u8)
        .collect()
}

fn contents(store: &DynDenseStore) -> Vec<Vec<u8>> {
    let n = store.len();
    let mut out = vec![0; n as usize * WIDTH];
    store
        .gather_bytes(&(0..n).collect::<Vec<_>>(), &mut out)
        .unwrap();
    out.chunks(WIDTH).map(<[u8]>::to_vec).collect()
}

/// Cuts the power now in several ways; each reboot must show one of `states`.
fn crash_everywhere(memory: &Memory, states: &[Vec<Vec<u8>>], rng: &mut Rng) -> usize {
    let pending = memory.pending();
    let mut cuts: Vec<Crash> = vec![
        Crash::default(),
        Crash {
            kept: pending,
            torn_sectors: None,
        },
    ];
    for _ in 0..3 {
        let kept = rng.below(pending as u64 + 1) as usize;
        let torn_sectors = (rng.below(2) == 0).then(|| rng.below(10));
        cuts.push(Crash { kept, torn_sectors });
    }
    for crash in &cuts {
        let rebooted = memory.crash(*crash);
        let store = OpenOptions::new()
            .open::<DynDenseStore>(Arc::new(rebooted))
            .unwrap_or_else(|e| panic!("{crash:?} of {pending}: the store does not open: {e}"));
        store
            .verify()
            .unwrap_or_else(|e| panic!("{crash:?} of {pending}: verify: {e}"));
        let got = contents(&store);
        assert!(
            states.contains(&got),
            "{crash:?} of {pending}: {} records, no state since the last sync has that content",
            got.len()
        );
    }
    cuts.len()
}

#[test]
fn after_any_power_cut_the_store_opens_at_a_state_no_older_than_its_last_sync() {
    let mut crashes = 0;
    let mut seed = 0;
    while crashes < 10_000 {
        seed += 1;
        let mut rng = Rng(seed);
        let memory = Memory::new("power-loss");
        let codec = if seed % 2 == 0 {
            Codec::Raw
        } else {
            Codec::Zstd
        };
        let mut store = zrecord::OpenOptions::new()
            .geometry(TINY)
            .create::<DynDenseStore>(
                Arc::new(memory.clone()),
                &zrecord::Schema::dense(DType::U8, &[WIDTH]),
                codec,
            )
            .unwrap();
        let mut model: Vec<Vec<u8>> = Vec::new();
        // Every state since the last completed sync, oldest first.
        let mut states = vec![model.clone()];
        for step in 0..12 {
            match rng.below(8) {
                0..=3 => {
                    let n = 1 + rng.below(12);
                    let records: Vec<Vec<u8>> = (0..n).map(|_| record(rng.next())).collect();
                    store.append_bytes(DType::U8, &records.concat()).unwrap();
                    model.extend(records);
                }
                4 if !model.is_empty() => {
                    let targets: Vec<u64> = (0..1 + rng.below(4))
                        .map(|_| rng.below(model.len() as u64))
                        .collect();
                    store.delete(&targets).unwrap();
                    let mut sorted = targets;
                    sorted.sort_unstable_by(|a, b| b.cmp(a));
                    sorted.dedup();
                    for t in sorted {
                        model.swap_remove(t as usize);
                    }
                }
                5 => {
                    store.compact().unwrap();
                }
                _ => {
                    store.sync().unwrap();
                    states.clear();
                }
            }
            states.push(model.clone());
            crashes += crash_everywhere(&memory, &states, &mut rng);
            assert_eq!(contents(&store), model, "seed {seed} step {step}");
        }
    }
    eprintln!("{crashes} simulated power cuts over {seed} operation sequences");
}
