//! Packed batches on Burn: the block-diagonal causal mask against a
//! brute-force reference on random segment ids, and packed tensors from a
//! packed loader.

use burn::tensor::{Device, Int, Tensor, TensorData};
use zrecord::{Codec, RaggedStore};
use zrecord_burn::{block_causal_mask, packed_tensors};
use zrecord_loader::{Mode, PackedLoader, Packing};

/// `true` where query `i` may not attend key `j`, the slow way.
fn reference(segments: &[Vec<i64>]) -> Vec<bool> {
    let mut out = Vec::new();
    for row in segments {
        for i in 0..row.len() {
            for j in 0..row.len() {
                out.push(!(j <= i && row[i] == row[j]));
            }
        }
    }
    out
}

#[test]
fn the_mask_matches_the_reference_on_random_rows() {
    let device = Device::flex();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    for _ in 0..20 {
        let (b, l) = (1 + next(4) as usize, 1 + next(24) as usize);
        // Packed rows: segments 1, 2, … in runs, then padding (0).
        let segments: Vec<Vec<i64>> = (0..b)
            .map(|_| {
                let mut row = Vec::new();
                let mut segment = 1;
                while row.len() < l {
                    if next(4) == 0 {
                        row.resize(l, 0);
                        break;
                    }
                    let run = 1 + next(6) as usize;
                    row.extend(std::iter::repeat_n(segment, run.min(l - row.len())));
                    segment += 1;
                }
                row
            })
            .collect();
        let flat: Vec<i64> = segments.iter().flatten().copied().collect();
        let ids = Tensor::<2, Int>::from_data(TensorData::new(flat, [b, l]), &device);
        let mask: Vec<bool> = block_causal_mask(ids).into_data().try_to_vec_as().unwrap();
        assert_eq!(mask, reference(&segments), "{segments:?}");
    }
}

#[test]
fn packed_tensors_carry_the_loader_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaggedStore::<u32>::create(dir.path().join("t"), Codec::Raw).unwrap();
    store
        .append_slices(&[vec![5, 6, 7], vec![8], vec![9, 10, 11, 12, 13]])
        .unwrap();
    let mut loader = PackedLoader::builder(4, 2)
        .tokens(store)
        .packing(Packing::ConcatSplit)
        .mode(Mode::Sequential)
        .build()
        .unwrap();
    let batch = loader.next_batch().unwrap();
    let t = packed_tensors(batch, &Device::flex()).unwrap();
    assert_eq!(t.tokens.dims(), [2, 4]);
    let ints = |t: Tensor<2, Int>| t.into_data().try_to_vec_as::<i64>().unwrap();
    assert_eq!(ints(t.tokens), vec![5, 6, 7, 8, 9, 10, 11, 12]);
    assert_eq!(ints(t.segment_ids.clone()), vec![1, 1, 1, 2, 1, 1, 1, 1]);
    assert_eq!(ints(t.positions), vec![0, 1, 2, 0, 0, 1, 2, 3]);
    // Token 3 (segment 2) sees only itself.
    let allowed: Vec<bool> = block_causal_mask(t.segment_ids)
        .bool_not()
        .into_data()
        .try_to_vec_as()
        .unwrap();
    assert_eq!(&allowed[12..16], &[false, false, false, true]);
}
