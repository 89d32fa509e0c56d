//! The ready converters: dense streams to tensors of any rank and kind
//! (shapes, dtypes, values, no copy of the gathered buffer), ragged streams
//! to padded tensors with lengths and masks, and their errors.

use burn::tensor::{Bool, Device, Float, Int, Tensor, TensorData};
use half::f16;
use zrecord::{Codec, DenseStore, DynVec, RaggedStore};
use zrecord_burn::{Error, dense_tensor, ragged_padded, tensor_data};
use zrecord_loader::{Batch, Loader, Mode};

fn device() -> Device {
    Device::flex()
}

/// The first batch (records `0..batch`, in order) of a loader over `streams`.
fn first_batch(batch: u64, streams: Vec<(&str, zrecord_loader::Stream)>) -> Batch {
    let mut builder = Loader::builder(batch).mode(Mode::Sequential).workers(1);
    for (name, stream) in streams {
        builder = builder.stream(name, stream);
    }
    builder.build().unwrap().next_batch().unwrap()
}

fn dense<T: zrecord::Element>(
    dir: &std::path::Path,
    name: &str,
    shape: &[usize],
    values: &[T],
) -> zrecord_loader::Stream {
    let store = DenseStore::<T>::create(dir.join(name), shape, Codec::Zstd).unwrap();
    store.append(values).unwrap();
    store.into()
}

#[test]
fn tensor_data_reuses_the_vec_for_every_dtype() {
    fn check<T: zrecord::Element>(values: Vec<T>) {
        let (address, len) = (values.as_ptr() as usize, values.len());
        let data = tensor_data(DynVec::from(values), vec![len]).unwrap();
        assert_eq!(data.as_bytes().as_ptr() as usize, address, "{:?}", T::DTYPE);
        assert_eq!(data.as_bytes().len(), len * T::DTYPE.size());
    }
    check(vec![true, false]);
    check(vec![1u8, 2]);
    check(vec![1i8, -2]);
    check(vec![1u16, 2]);
    check(vec![1i16, -2]);
    check(vec![1u32, 2]);
    check(vec![1i32, -2]);
    check(vec![1u64, 2]);
    check(vec![1i64, -2]);
    check(vec![f16::from_f32(1.5), f16::from_f32(-2.0)]);
    check(vec![half::bf16::from_f32(1.5)]);
    check(vec![1.5f32, 2.5]);
    check(vec![1.5f64, 2.5]);
    assert!(matches!(
        tensor_data(DynVec::from(vec![1u8, 2, 3]), vec![2, 2]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_matching_dense_stream_becomes_a_tensor_without_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let x: Vec<f32> = (0..8 * 6).map(|v| v as f32 * 0.5).collect();
    let mut batch = first_batch(8, vec![("x", dense(dir.path(), "x", &[2, 3], &x))]);
    let gathered = batch
        .dense_column("x")
        .unwrap()
        .values()
        .as_bytes()
        .as_ptr() as usize;
    let tensor: Tensor<3> = dense_tensor(&mut batch, "x", &device()).unwrap();
    assert_eq!(tensor.dims(), [8, 2, 3]);
    let data = tensor.into_data();
    // flex keeps the TensorData's bytes, so reading back shows the allocation
    // the loader gathered into: no copy anywhere on the way.
    assert_eq!(data.as_bytes().as_ptr() as usize, gathered);
    assert_eq!(data.try_to_vec::<f32>().unwrap(), x);
}

#[test]
fn dense_streams_of_any_rank_and_dtype_become_float_int_or_bool_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let pixels: Vec<u8> = (0..4 * 2 * 2 * 3).map(|v| v as u8).collect();
    let labels: Vec<i64> = vec![3, -1, 4, 1];
    let halves: Vec<f16> = (0..4).map(|v| f16::from_f32(v as f32 / 4.0)).collect();
    let flags = vec![true, false, false, true];
    let shorts: Vec<u16> = vec![1, 2, 3, 4, 5, 6, 7, 8];
    let mut batch = first_batch(
        4,
        vec![
            ("pixels", dense(dir.path(), "pixels", &[2, 2, 3], &pixels)),
            ("labels", dense(dir.path(), "labels", &[], &labels)),
            ("halves", dense(dir.path(), "halves", &[], &halves)),
            ("flags", dense(dir.path(), "flags", &[], &flags)),
            ("shorts", dense(dir.path(), "shorts", &[2], &shorts)),
        ],
    );
    let device = device();

    let images: Tensor<4> = dense_tensor(&mut batch, "pixels", &device).unwrap();
    assert_eq!(images.dims(), [4, 2, 2, 3]);
    let floats = images.into_data();
    assert_eq!(floats.dtype(), burn::tensor::DType::F32);
    let expected: Vec<f32> = pixels.iter().map(|&p| f32::from(p)).collect();
    assert_eq!(floats.try_to_vec::<f32>().unwrap(), expected);

    let y: Tensor<1, Int> = dense_tensor(&mut batch, "labels", &device).unwrap();
    assert_eq!(y.dims(), [4]);
    assert_eq!(y.into_data().try_to_vec_as::<i64>().unwrap(), labels);

    let h: Tensor<1, Float> = dense_tensor(&mut batch, "halves", &device).unwrap();
    assert_eq!(
        h.into_data().try_to_vec::<f32>().unwrap(),
        vec![0.0, 0.25, 0.5, 0.75]
    );

    let b: Tensor<1, Bool> = dense_tensor(&mut batch, "flags", &device).unwrap();
    assert_eq!(b.into_data().try_to_vec_as::<bool>().unwrap(), flags);

    let s: Tensor<2, Int> = dense_tensor(&mut batch, "shorts", &device).unwrap();
    assert_eq!(s.dims(), [4, 2]);
    assert_eq!(
        s.into_data().try_to_vec_as::<i64>().unwrap(),
        vec![1, 2, 3, 4, 5, 6, 7, 8]
    );
}

#[test]
fn dense_errors_are_typed_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut batch = first_batch(
        2,
        vec![
            ("x", dense(dir.path(), "x", &[3], &[0.5f32; 6])),
            ("tokens", {
                let t = RaggedStore::<i32>::create(dir.path().join("t"), Codec::Raw).unwrap();
                t.append_slices(&[vec![1], vec![2, 3]]).unwrap();
                t.into()
            }),
        ],
    );
    let device = device();
    // Wrong rank: (2, 3) is rank 2.
    let r = dense_tensor::<3, Float>(&mut batch, "x", &device);
    assert!(matches!(r, Err(Error::Rank { expected: 3, ref shape, .. }) if shape == &[2, 3]));
    // Floats are not silently truncated into an int tensor.
    let r = dense_tensor::<2, Int>(&mut batch, "x", &device);
    assert!(matches!(r, Err(Error::UnsupportedDType { .. })));
    // Unknown and ragged streams.
    let r = dense_tensor::<2, Float>(&mut batch, "nope", &device);
    assert!(matches!(
        r,
        Err(Error::Loader(zrecord_loader::Error::UnknownStream { .. }))
    ));
    let r = dense_tensor::<2, Int>(&mut batch, "tokens", &device);
    assert!(matches!(
        r,
        Err(Error::Loader(zrecord_loader::Error::WrongKind { .. }))
    ));
    // Taken once, gone.
    let _: Tensor<2> = dense_tensor(&mut batch, "x", &device).unwrap();
    let r = dense_tensor::<2, Float>(&mut batch, "x", &device);
    assert!(matches!(
        r,
        Err(Error::Loader(zrecord_loader::Error::Taken { .. }))
    ));
}

fn ragged_batch<T: zrecord::Element>(
    dir: &std::path::Path,
    records: &[ndarray::ArrayD<T>],
) -> Batch {
    let store = RaggedStore::<T>::create(dir.join("r"), Codec::Zstd).unwrap();
    store.append(records).unwrap();
    first_batch(records.len() as u64, vec![("r", store.into())])
}

fn ints(t: Tensor<1, Int>) -> Vec<i64> {
    t.into_data().try_to_vec_as::<i64>().unwrap()
}

fn flags<const D: usize>(t: Tensor<D, Bool>) -> Vec<bool> {
    t.into_data().try_to_vec_as::<bool>().unwrap()
}

#[test]
fn ragged_sequences_pad_with_lengths_and_mask() {
    let dir = tempfile::tempdir().unwrap();
    let records =
        [vec![5, 6, 7], vec![8], vec![9, 10]].map(|v| ndarray::Array1::from(v).into_dyn());
    let batch = ragged_batch::<i32>(dir.path(), &records);
    let padded = ragged_padded::<i32, 2, Int>(&batch, "r", -1, &device()).unwrap();
    assert_eq!(padded.values.dims(), [3, 3]);
    assert_eq!(padded.mask.dims(), [3, 3]);
    let values = padded.values.into_data().try_to_vec_as::<i64>().unwrap();
    assert_eq!(values, vec![5, 6, 7, 8, -1, -1, 9, 10, -1]);
    assert_eq!(ints(padded.lengths), vec![3, 1, 2]);
    assert_eq!(
        flags(padded.mask),
        vec![true, true, true, true, false, false, true, true, false]
    );

    // The same tokens as a float tensor.
    let padded = ragged_padded::<i32, 2, Float>(&batch, "r", 0, &device()).unwrap();
    assert_eq!(
        padded.values.into_data().try_to_vec::<f32>().unwrap(),
        vec![5.0, 6.0, 7.0, 8.0, 0.0, 0.0, 9.0, 10.0, 0.0]
    );
}

#[test]
fn ragged_matrices_pad_on_every_axis() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![
        ndarray::arr2(&[[1.0f32, 2.0], [3.0, 4.0]]).into_dyn(),
        ndarray::arr2(&[[5.0f32, 6.0, 7.0]]).into_dyn(),
    ];
    let batch = ragged_batch::<f32>(dir.path(), &records);
    let padded = ragged_padded::<f32, 3, Float>(&batch, "r", 0.0, &device()).unwrap();
    assert_eq!(padded.values.dims(), [2, 2, 3]);
    assert_eq!(
        padded.values.into_data().try_to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 7.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(ints(padded.lengths), vec![2, 1]);
    assert_eq!(
        flags(padded.mask),
        vec![
            true, true, false, true, true, false, true, true, true, false, false, false
        ]
    );
}

#[test]
fn ragged_scalars_become_a_vector() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![ndarray::arr0(4u8).into_dyn(), ndarray::arr0(2u8).into_dyn()];
    let batch = ragged_batch::<u8>(dir.path(), &records);
    let padded = ragged_padded::<u8, 1, Int>(&batch, "r", 0, &device()).unwrap();
    assert_eq!(ints(padded.values), vec![4, 2]);
    assert_eq!(ints(padded.lengths), vec![1, 1]);
    assert_eq!(flags(padded.mask), vec![true, true]);
}

#[test]
fn ragged_errors_are_typed_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![
        ndarray::arr1(&[1i64, 2]).into_dyn(),
        ndarray::arr2(&[[3i64]]).into_dyn(),
    ];
    let batch = ragged_batch::<i64>(dir.path(), &records);
    let device = device();
    let r = ragged_padded::<i64, 2, Int>(&batch, "r", 0, &device);
    let Err(Error::Loader(zrecord_loader::Error::Pad { source, .. })) = &r else {
        panic!("{r:?}");
    };
    assert!(matches!(
        **source,
        zrecord_loader::Error::MixedRank {
            record: 1,
            expected: 1,
            found: 2,
        }
    ));
    let r = ragged_padded::<i64, 3, Int>(&batch, "r", 0, &device);
    assert!(matches!(r, Err(Error::Rank { expected: 3, .. })));
    let r = ragged_padded::<i32, 2, Int>(&batch, "r", 0, &device);
    assert!(matches!(
        r,
        Err(Error::Loader(zrecord_loader::Error::WrongDType { .. }))
    ));
    let r = ragged_padded::<i64, 0, Int>(&batch, "r", 0, &device);
    assert!(matches!(r, Err(Error::Rank { expected: 0, .. })));
}

#[test]
fn tensor_from_data_checks_rank() {
    let data = TensorData::new(vec![1.0f32; 6], [2, 3]);
    let r = zrecord_burn::tensor_from_data::<1, Float>(data, "d", &device());
    assert!(matches!(r, Err(Error::Rank { expected: 1, .. })));
}
