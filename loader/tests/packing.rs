//! Sequence packing: both packers against brute-force references on random
//! documents, and the packed loader's exact resume and rank sharding.

use proptest::prelude::*;
use zrecord::{Codec, RaggedStore};
use zrecord_loader::{Documents, Mode, PackedBatch, PackedLoader, Packer, Packing};

/// One packed row: tokens, segment ids, positions.
type Row = (Vec<u32>, Vec<u32>, Vec<u32>);

fn window(docs: &[Vec<u32>]) -> Documents {
    let mut w = Documents::new();
    for d in docs {
        w.push(d);
    }
    w
}

fn rows_of(batch: &PackedBatch) -> Vec<Row> {
    let l = batch.seq_len();
    (0..batch.rows())
        .map(|r| {
            let at = r * l..(r + 1) * l;
            (
                batch.tokens()[at.clone()].to_vec(),
                batch.segment_ids()[at.clone()].to_vec(),
                batch.positions()[at].to_vec(),
            )
        })
        .collect()
}

/// A row from its segments (each a run of tokens), padded with 0.
fn row(segments: &[&[u32]], seq_len: usize) -> Row {
    let (mut t, mut s, mut p) = (Vec::new(), Vec::new(), Vec::new());
    for (k, seg) in segments.iter().enumerate() {
        t.extend_from_slice(seg);
        s.extend(std::iter::repeat_n(k as u32 + 1, seg.len()));
        p.extend(0..seg.len() as u32);
    }
    t.resize(seq_len, 0);
    s.resize(seq_len, 0);
    p.resize(seq_len, 0);
    (t, s, p)
}

/// Concat-and-split the obvious way: every token with its document, cut into rows.
fn concat_reference(windows: &[Vec<Vec<u32>>], seq_len: usize, rows: usize) -> Vec<Row> {
    let stream: Vec<(usize, u32)> = windows
        .iter()
        .flatten()
        .enumerate()
        .flat_map(|(d, doc)| doc.iter().map(move |&t| (d, t)))
        .collect();
    stream
        .chunks_exact(seq_len)
        .take(rows)
        .map(|chunk| {
            let mut segments: Vec<Vec<u32>> = Vec::new();
            let mut last = None;
            for &(d, t) in chunk {
                if last != Some(d) {
                    segments.push(Vec::new());
                    last = Some(d);
                }
                segments.last_mut().unwrap().push(t);
            }
            let refs: Vec<&[u32]> = segments.iter().map(|s| &s[..]).collect();
            row(&refs, seq_len)
        })
        .collect()
}

/// Best fit decreasing the slow way: for each piece (longest first, ties in
/// order) scan every row for the least room that fits; ties go to the row
/// whose room changed last.
fn best_fit_reference(docs: &[Vec<u32>], seq_len: usize) -> Vec<Row> {
    let mut pieces: Vec<&[u32]> = docs.iter().flat_map(|d| d.chunks(seq_len)).collect();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.len()));
    // (room, stamp of the last change, pieces)
    let mut bins: Vec<(usize, u64, Vec<&[u32]>)> = Vec::new();
    for (stamp, piece) in (1u64..).zip(pieces) {
        let best = (0..bins.len())
            .filter(|&b| bins[b].0 >= piece.len() && bins[b].0 > 0)
            .min_by_key(|&b| (bins[b].0, std::cmp::Reverse(bins[b].1)));
        match best {
            Some(b) => {
                bins[b].0 -= piece.len();
                bins[b].1 = stamp;
                bins[b].2.push(piece);
            }
            None => bins.push((seq_len - piece.len(), stamp, vec![piece])),
        }
    }
    bins.iter().map(|(_, _, segs)| row(segs, seq_len)).collect()
}

/// Random documents in random windows: numbered tokens so any misplacement shows.
fn windows_strategy() -> impl Strategy<Value = Vec<Vec<Vec<u32>>>> {
    prop::collection::vec(prop::collection::vec(0usize..40, 0..12), 1..6).prop_map(|ws| {
        let mut next = 1u32;
        ws.into_iter()
            .map(|w| {
                w.into_iter()
                    .map(|n| {
                        let doc: Vec<u32> = (next..next + n as u32).collect();
                        next += n as u32;
                        doc
                    })
                    .collect()
            })
            .collect()
    })
}

fn pack_all(
    packing: Packing,
    windows: &[Vec<Vec<u32>>],
    seq_len: usize,
    rows: usize,
    batches: usize,
) -> Vec<Row> {
    let mut it = windows.iter().map(|w| window(w));
    let mut packer = Packer::new(packing, seq_len, rows).unwrap();
    (0..batches)
        .flat_map(|_| rows_of(&packer.next_batch(|| it.next()).unwrap()))
        .collect()
}

proptest! {
    #[test]
    fn concat_split_matches_the_reference(
        windows in windows_strategy(),
        seq_len in 1usize..24,
        rows in 1usize..4,
    ) {
        let total: usize = windows.iter().flatten().map(Vec::len).sum();
        let batches = total / (seq_len * rows);
        let got = pack_all(Packing::ConcatSplit, &windows, seq_len, rows, batches);
        prop_assert_eq!(got, concat_reference(&windows, seq_len, batches * rows));
    }

    #[test]
    fn best_fit_matches_the_reference(
        windows in windows_strategy(),
        seq_len in 1usize..24,
        rows in 1usize..4,
    ) {
        // Best fit packs window by window; rows run on across windows.
        let want: Vec<Row> = windows.iter().flat_map(|w| best_fit_reference(w, seq_len)).collect();
        let batches = want.len() / rows;
        let got = pack_all(Packing::BestFit, &windows, seq_len, rows, batches);
        prop_assert_eq!(&got[..], &want[..batches * rows]);
    }
}

#[test]
fn hand_computed_rows() {
    let docs = vec![vec![
        vec![1, 2, 3],
        vec![4, 5],
        vec![6, 7, 8, 9, 10],
        vec![11],
    ]];
    assert_eq!(
        pack_all(Packing::ConcatSplit, &docs, 4, 1, 2),
        vec![row(&[&[1, 2, 3], &[4]], 4), row(&[&[5], &[6, 7, 8]], 4)]
    );
    // Pieces by length: [6..10] cut into 4 + 1; 4-piece alone; 3 then the
    // 1s (11 and 10) fill rooms of 1; 2 opens a row.
    assert_eq!(
        pack_all(Packing::BestFit, &docs, 4, 3, 1),
        vec![
            row(&[&[6, 7, 8, 9]], 4),
            row(&[&[1, 2, 3], &[10]], 4),
            row(&[&[4, 5], &[11]], 4),
        ]
    );
}

fn store(dir: &std::path::Path) -> RaggedStore<u16> {
    let store = RaggedStore::<u16>::create(dir.join("tokens"), Codec::Zstd).unwrap();
    let docs: Vec<Vec<u16>> = (0..500u16)
        .map(|d| {
            (0..(d * 37 % 61 + 1))
                .map(|t| d.wrapping_mul(131) ^ t)
                .collect()
        })
        .collect();
    store.append_slices(&docs).unwrap();
    store
}

#[test]
fn resume_continues_exactly_on_any_world_size() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = std::sync::Arc::new(store(dir.path()).into_dyn());
    for packing in [Packing::ConcatSplit, Packing::BestFit] {
        let builder = PackedLoader::builder(32, 4)
            .tokens(tokens.clone())
            .packing(packing)
            .window(64)
            .mode(Mode::Cyclic)
            .seed(9);
        let mut whole = builder.clone().build().unwrap();
        let all: Vec<PackedBatch> = (0..40).map(|_| whole.next_batch().unwrap()).collect();

        let mut first = builder.clone().build().unwrap();
        for batch in &all[..17] {
            assert_eq!(&first.next_batch().unwrap(), batch);
        }
        let state = first.state();
        let json = serde_json::to_string(&state).unwrap();
        let state = serde_json::from_str(&json).unwrap();
        // Two ranks of two rows each, resumed: their rows make up the whole batch.
        let mut ranks: Vec<PackedLoader> = (0..2)
            .map(|r| builder.clone().resume(&state).shard(r, 2).build().unwrap())
            .collect();
        for batch in &all[17..] {
            let parts: Vec<PackedBatch> =
                ranks.iter_mut().map(|l| l.next_batch().unwrap()).collect();
            let tokens: Vec<u32> = parts.iter().flat_map(|p| p.tokens().to_vec()).collect();
            let segments: Vec<u32> = parts
                .iter()
                .flat_map(|p| p.segment_ids().to_vec())
                .collect();
            assert_eq!(tokens, batch.tokens(), "{packing:?} step {}", batch.step());
            assert_eq!(segments, batch.segment_ids());
            assert_eq!(parts[0].step(), batch.step());
        }
    }
}

#[test]
fn sequential_concat_split_reads_every_token_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let total: usize = store
        .gather(&(0..500).collect::<Vec<u64>>())
        .unwrap()
        .values()
        .len();
    let want: Vec<u32> = store
        .gather(&(0..500).collect::<Vec<u64>>())
        .unwrap()
        .values()
        .iter()
        .map(|&t| u32::from(t))
        .collect();
    let mut loader = PackedLoader::builder(50, 2)
        .tokens(store)
        .mode(Mode::Sequential)
        .window(70)
        .build()
        .unwrap();
    let mut got = Vec::new();
    while got.len() + 100 <= total {
        let batch = loader.next_batch().unwrap();
        assert_eq!(batch.padding(), 0);
        got.extend_from_slice(batch.tokens());
    }
    assert_eq!(got[..], want[..got.len()]);
}

#[test]
fn bad_configurations_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = std::sync::Arc::new(store(dir.path()).into_dyn());
    let e = PackedLoader::builder(0, 4).tokens(tokens.clone()).build();
    assert!(matches!(e, Err(zrecord_loader::Error::Packing(_))));
    let e = PackedLoader::builder(8, 3)
        .tokens(tokens.clone())
        .shard(0, 2)
        .build();
    assert!(matches!(e, Err(zrecord_loader::Error::Packing(_))));
    let floats = RaggedStore::<f32>::create(dir.path().join("f"), Codec::Raw).unwrap();
    floats.append_slices(&[vec![1.0f32]]).unwrap();
    let e = PackedLoader::builder(8, 1).tokens(floats).build();
    assert!(matches!(e, Err(zrecord_loader::Error::TokenDType { .. })));
    // A state saved with other rows.
    let mut loader = PackedLoader::builder(8, 2)
        .tokens(tokens.clone())
        .build()
        .unwrap();
    loader.next_batch().unwrap();
    let state = loader.state();
    let e = PackedLoader::builder(8, 4)
        .tokens(tokens)
        .resume(&state)
        .build();
    assert!(matches!(e, Err(zrecord_loader::Error::Packing(_))));
}
