//! Round trips: every dtype × codec × shape, on every storage backend,
//! gathered in random order with repeats, returns exactly what was appended.

mod common;

use common::backends::{BACKENDS, Site};

use half::{bf16, f16};
use proptest::prelude::*;
use zrecord::{
    DType, DenseStore, DynRaggedBatch, Element, Geometry, OpenOptions, RaggedBatch, RaggedStore,
};

fn dtype() -> impl Strategy<Value = DType> {
    (0..DType::ALL.len()).prop_map(|i| DType::ALL[i])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn dense_round_trip(
        dtype in dtype(),
        codec in 0usize..3,
        item_shape in prop::collection::vec(1usize..5, 0..=4),
        batches in prop::collection::vec(1usize..12, 1..4),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        seed in any::<u64>(),
        backend in 0..BACKENDS.len(),
    ) {
        let site = Site::new(BACKENDS[backend]);
        let store = site.create_dense(dtype, &item_shape, common::codec(codec), Geometry::default()).unwrap();
        let width = store.record_bytes();
        let mut model: Vec<Vec<u8>> = Vec::new();
        for (b, &n) in batches.iter().enumerate() {
            let bytes = common::valid_bytes(dtype, seed ^ b as u64, n * width);
            let first = store.append_bytes(dtype, &bytes).unwrap();
            prop_assert_eq!(first, model.len() as u64);
            model.extend(bytes.chunks(width).map(<[u8]>::to_vec));
        }
        prop_assert_eq!(store.len(), model.len() as u64);
        let indices: Vec<u64> = picks.iter().map(|p| p.index(model.len()) as u64).collect();
        let mut out = vec![0u8; indices.len() * width];
        store.gather_bytes(&indices, &mut out).unwrap();
        let expected: Vec<u8> = indices.iter().flat_map(|&i| model[i as usize].clone()).collect();
        prop_assert_eq!(&out, &expected);
        // The dtype-tagged buffer path gives the same bytes.
        let dyn_batch = store.gather_dyn(&indices).unwrap();
        prop_assert_eq!(dyn_batch.as_bytes(), &expected[..]);
        // And so does a reopened store.
        drop(store);
        let store = site.open_dense(OpenOptions::new()).unwrap();
        store.gather_bytes(&indices, &mut out).unwrap();
        prop_assert_eq!(out, expected);
        prop_assert_eq!(store.verify().unwrap().records, model.len() as u64);
    }

    #[test]
    fn ragged_round_trip(
        dtype in dtype(),
        codec in 0usize..3,
        shapes in prop::collection::vec(prop::collection::vec(1usize..6, 0..=3), 1..30),
        cut in any::<prop::sample::Index>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        seed in any::<u64>(),
        backend in 0..BACKENDS.len(),
    ) {
        let site = Site::new(BACKENDS[backend]);
        let store = site.create_ragged(dtype, common::codec(codec), Geometry::default()).unwrap();
        let size = dtype.size();
        let records: Vec<(Vec<usize>, Vec<u8>)> = shapes
            .iter()
            .enumerate()
            .map(|(r, s)| (s.clone(), common::valid_bytes(dtype, seed ^ r as u64, s.iter().product::<usize>() * size)))
            .collect();
        // Append in two batches, split at `cut`, through the packed form.
        let split = cut.index(records.len() + 1);
        for part in [&records[..split], &records[split..]] {
            let mut values = Vec::new();
            let mut layout = zrecord::RaggedLayout::new();
            for (shape, bytes) in part {
                layout.push(shape).unwrap();
                values.extend_from_slice(bytes);
            }
            store.append_batch(&packed(dtype, values, layout)).unwrap();
        }
        prop_assert_eq!(store.len(), records.len() as u64);
        let indices: Vec<u64> = picks.iter().map(|p| p.index(records.len()) as u64).collect();
        let got = store.gather_dyn(&indices).unwrap();
        prop_assert_eq!(got.len(), indices.len());
        let mut expected_values = Vec::new();
        for (k, &i) in indices.iter().enumerate() {
            let (shape, bytes) = &records[i as usize];
            prop_assert_eq!(got.layout().shape(k).unwrap(), &shape[..]);
            expected_values.extend_from_slice(bytes);
        }
        prop_assert_eq!(got.values().as_bytes(), &expected_values[..]);
        prop_assert_eq!(store.verify().unwrap().records, records.len() as u64);
    }
}

/// A packed batch of `dtype` from raw bytes, through the typed API.
fn packed(dtype: DType, bytes: Vec<u8>, layout: zrecord::RaggedLayout) -> DynRaggedBatch {
    fn typed<T: Element + bytemuck_free::FromLe>(
        bytes: &[u8],
        layout: zrecord::RaggedLayout,
    ) -> DynRaggedBatch {
        let values: Vec<T> = bytes.chunks(size_of::<T>()).map(T::from_le).collect();
        RaggedBatch::from_parts(values, layout).unwrap().into()
    }
    match dtype {
        DType::Bool => typed::<bool>(&bytes, layout),
        DType::U8 => typed::<u8>(&bytes, layout),
        DType::I8 => typed::<i8>(&bytes, layout),
        DType::U16 => typed::<u16>(&bytes, layout),
        DType::I16 => typed::<i16>(&bytes, layout),
        DType::U32 => typed::<u32>(&bytes, layout),
        DType::I32 => typed::<i32>(&bytes, layout),
        DType::U64 => typed::<u64>(&bytes, layout),
        DType::I64 => typed::<i64>(&bytes, layout),
        DType::F16 => typed::<f16>(&bytes, layout),
        DType::BF16 => typed::<bf16>(&bytes, layout),
        DType::F32 => typed::<f32>(&bytes, layout),
        DType::F64 => typed::<f64>(&bytes, layout),
        other => panic!("no test conversion for {other}"),
    }
}

/// Decoding little-endian element bytes without unsafe code.
mod bytemuck_free {
    use half::{bf16, f16};

    pub(crate) trait FromLe {
        fn from_le(b: &[u8]) -> Self;
    }
    macro_rules! from_le {
        ($($t:ty),*) => {$(
            impl FromLe for $t {
                fn from_le(b: &[u8]) -> Self {
                    <$t>::from_le_bytes(b.try_into().unwrap())
                }
            }
        )*};
    }
    from_le!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);
    impl FromLe for bool {
        fn from_le(b: &[u8]) -> Self {
            b[0] == 1
        }
    }
    impl FromLe for f16 {
        fn from_le(b: &[u8]) -> Self {
            f16::from_bits(<u16 as FromLe>::from_le(b))
        }
    }
    impl FromLe for bf16 {
        fn from_le(b: &[u8]) -> Self {
            bf16::from_bits(<u16 as FromLe>::from_le(b))
        }
    }
}

/// The typed API sees the same values as the bytes, for a few element types.
fn typed_dense_round_trip<T: Element>(values: Vec<T>, item_shape: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let store =
        DenseStore::<T>::create(dir.path().join("s"), item_shape, zrecord::Codec::Zstd).unwrap();
    store.append(&values).unwrap();
    let n = store.len();
    let indices: Vec<u64> = (0..n).rev().chain(0..n).collect();
    let batch = store.gather(&indices).unwrap();
    let per = store.record_len();
    let expected: Vec<T> = indices
        .iter()
        .flat_map(|&i| values[i as usize * per..(i as usize + 1) * per].to_vec())
        .collect();
    assert_eq!(batch.as_slice().unwrap(), &expected[..]);
    let mut shape = vec![indices.len()];
    shape.extend_from_slice(item_shape);
    assert_eq!(batch.shape(), &shape[..]);
}

#[test]
fn typed_dense_stores_keep_values() {
    typed_dense_round_trip((0..60).map(|i| i as f32 * 0.5 - 3.0).collect(), &[3, 2]);
    typed_dense_round_trip((0..60).map(|i| i % 3 == 0).collect(), &[5]);
    typed_dense_round_trip((0..60).map(|i| bf16::from_f32(i as f32)).collect(), &[]);
    typed_dense_round_trip((0..64).map(|i| -(i as i64) << 40).collect(), &[2, 2, 2]);
}

#[test]
fn typed_ragged_stores_keep_shapes_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaggedStore::<f64>::create(
        dir.path().join("s"),
        zrecord::Codec::ZstdDict(common::dictionary()),
    )
    .unwrap();
    let a = ndarray::Array::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64).into_dyn();
    let scalar = ndarray::arr0(9.5).into_dyn();
    let transposed = a.t().to_owned().into_dyn(); // a non-standard layout view below
    store.append(&[a.view(), scalar.view(), a.t()]).unwrap();
    assert_eq!(store.get(0).unwrap(), a);
    assert_eq!(store.get(1).unwrap(), scalar);
    assert_eq!(store.get(2).unwrap(), transposed);
    let arrays = store.gather_arrays(&[2, 1, 1, 0]).unwrap();
    assert_eq!(arrays, vec![transposed, scalar.clone(), scalar, a]);
    // Buffers are reused: gathering a smaller batch into the same packed form.
    let mut batch = RaggedBatch::new();
    store.gather_into(&[0, 0, 0], &mut batch).unwrap();
    store.gather_into(&[1], &mut batch).unwrap();
    assert_eq!(batch.values(), &[9.5]);
    assert_eq!(batch.layout().shape(0), Some(&[][..]));
}

/// Raw records of 4 KiB and more take the vector copy (with non-temporal
/// stores once a batch reaches 16 MiB); every byte must still land, at odd
/// destination offsets too.
#[test]
fn large_raw_records_gather_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let width = 4096 + 40;
    let records = 40u64;
    let store =
        DenseStore::<u8>::create(dir.path().join("s"), &[width], zrecord::Codec::Raw).unwrap();
    let values: Vec<u8> = (0..records as usize * width)
        .map(|i| (i % 251) as u8)
        .collect();
    store.append(&values).unwrap();
    // 4,200 records ≈ 17 MiB: the streaming path; 7 records: the cached one.
    for count in [4200, 7] {
        let indices: Vec<u64> = (0..count).map(|k| (k * 17 + 3) % records).collect();
        let mut out = vec![0u8; indices.len() * width + 1];
        store.gather_into(&indices, &mut out[1..]).unwrap();
        for (k, &i) in indices.iter().enumerate() {
            let at = 1 + k * width;
            let want = &values[i as usize * width..(i as usize + 1) * width];
            assert!(out[at..at + width] == *want, "record {i} at batch slot {k}");
        }
    }
}
