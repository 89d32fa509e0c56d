//! Ragged padding: values, padding of every axis, lengths, mask and dtypes,
//! for records of rank 0, 1 and 2, and the errors.

use candle_core::{DType as CDType, Device};
use zrecord::{Codec, Element, RaggedBatch, RaggedStore};
use zrecord_candle::{Error, Padded, pad_records, ragged_padded};
use zrecord_loader::{Batch, Loader, Mode};

/// A batch holding ragged stream "r": all `records` of a fresh store, in order.
fn ragged_batch<T: Element>(dir: &std::path::Path, records: &[(Vec<usize>, Vec<T>)]) -> Batch {
    let store = RaggedStore::<T>::create(dir.join("r"), Codec::Zstd).unwrap();
    let mut packed = RaggedBatch::<T>::new();
    for (shape, values) in records {
        packed.push(shape, values).unwrap();
    }
    store.append_batch(&packed).unwrap();
    let mut loader = Loader::builder(records.len() as u64)
        .stream("r", store)
        .mode(Mode::Sequential)
        .workers(1)
        .build()
        .unwrap();
    loader.next_batch().unwrap()
}

fn lengths(p: &Padded) -> Vec<u32> {
    assert_eq!(p.lengths.dtype(), CDType::U32);
    p.lengths.to_vec1::<u32>().unwrap()
}

#[test]
fn rank_1_records_pad_to_the_longest() {
    let dir = tempfile::tempdir().unwrap();
    let batch = ragged_batch(
        dir.path(),
        &[
            (vec![3], vec![1i32, 2, 3]),
            (vec![1], vec![9]),
            (vec![5], vec![4, 5, 6, 7, 8]),
        ],
    );
    let p = ragged_padded::<i32>(&batch, "r", -1, &Device::Cpu).unwrap();
    assert_eq!(p.values.dtype(), CDType::I32);
    assert_eq!(
        p.values.to_vec2::<i32>().unwrap(),
        vec![
            vec![1, 2, 3, -1, -1],
            vec![9, -1, -1, -1, -1],
            vec![4, 5, 6, 7, 8]
        ]
    );
    assert_eq!(lengths(&p), vec![3, 1, 5]);
    assert_eq!(p.mask.dtype(), CDType::U8);
    assert_eq!(
        p.mask.to_vec2::<u8>().unwrap(),
        vec![vec![1, 1, 1, 0, 0], vec![1, 0, 0, 0, 0], vec![1; 5]]
    );
    assert!(
        batch.ragged::<i32>("r").is_ok(),
        "padding leaves the stream in the batch"
    );
}

#[test]
fn rank_2_records_pad_every_axis_to_the_batch_max() {
    let dir = tempfile::tempdir().unwrap();
    let batch = ragged_batch(
        dir.path(),
        &[
            (vec![2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]),
            (vec![3, 1], vec![7.0, 8.0, 9.0]),
            (vec![1, 2], vec![10.0, 11.0]),
        ],
    );
    let p = ragged_padded::<f32>(&batch, "r", 0.5, &Device::Cpu).unwrap();
    assert_eq!(p.values.dims(), &[3, 3, 3]);
    let v = p.values.to_vec3::<f32>().unwrap();
    assert_eq!(
        v[0],
        vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0], vec![0.5; 3]]
    );
    assert_eq!(
        v[1],
        vec![
            vec![7.0, 0.5, 0.5],
            vec![8.0, 0.5, 0.5],
            vec![9.0, 0.5, 0.5]
        ]
    );
    assert_eq!(
        v[2],
        vec![vec![10.0, 11.0, 0.5], vec![0.5; 3], vec![0.5; 3]]
    );
    let m = p.mask.to_vec3::<u8>().unwrap();
    assert_eq!(m[0], vec![vec![1, 1, 1], vec![1, 1, 1], vec![0, 0, 0]]);
    assert_eq!(m[1], vec![vec![1, 0, 0]; 3]);
    assert_eq!(m[2], vec![vec![1, 1, 0], vec![0; 3], vec![0; 3]]);
    assert_eq!(lengths(&p), vec![2, 3, 1], "lengths are first-axis extents");
}

#[test]
fn scalar_records_stack_into_a_vector() {
    let dir = tempfile::tempdir().unwrap();
    let batch = ragged_batch(dir.path(), &[(vec![], vec![7u8]), (vec![], vec![9u8])]);
    let p = ragged_padded::<u8>(&batch, "r", 0, &Device::Cpu).unwrap();
    assert_eq!(p.values.to_vec1::<u8>().unwrap(), vec![7, 9]);
    assert_eq!(p.mask.to_vec1::<u8>().unwrap(), vec![1, 1]);
    assert_eq!(lengths(&p), vec![1, 1]);
}

#[test]
fn records_of_different_ranks_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let batch = ragged_batch(
        dir.path(),
        &[(vec![2], vec![1i64, 2]), (vec![1, 1], vec![3])],
    );
    let result = ragged_padded::<i64>(&batch, "r", 0, &Device::Cpu);
    let Err(Error::Loader(zrecord_loader::Error::Pad { stream, source })) = &result else {
        panic!("{result:?}");
    };
    assert_eq!(stream, "r");
    assert!(
        matches!(
            **source,
            zrecord_loader::Error::MixedRank {
                record: 1,
                expected: 1,
                found: 2
            }
        ),
        "{source:?}"
    );
}

#[test]
fn dtypes_candle_lacks_follow_the_table() {
    let cpu = Device::Cpu;
    let mut i8s = RaggedBatch::<i8>::new();
    i8s.push(&[2], &[i8::MIN, i8::MAX]).unwrap();
    i8s.push(&[1], &[-3]).unwrap();
    let p = pad_records(i8s.values(), i8s.layout(), -1, &cpu).unwrap();
    assert_eq!(p.values.dtype(), CDType::I16);
    assert_eq!(
        p.values.to_vec2::<i16>().unwrap(),
        vec![vec![-128, 127], vec![-3, -1]]
    );

    let mut u16s = RaggedBatch::<u16>::new();
    u16s.push(&[1], &[u16::MAX]).unwrap();
    u16s.push(&[2], &[1, 2]).unwrap();
    let p = pad_records(u16s.values(), u16s.layout(), 0, &cpu).unwrap();
    assert_eq!(p.values.dtype(), CDType::U32);
    assert_eq!(
        p.values.to_vec2::<u32>().unwrap(),
        vec![vec![65535, 0], vec![1, 2]]
    );

    let mut flags = RaggedBatch::<bool>::new();
    flags.push(&[2], &[true, false]).unwrap();
    flags.push(&[1], &[true]).unwrap();
    let p = pad_records(flags.values(), flags.layout(), false, &cpu).unwrap();
    assert_eq!(p.values.dtype(), CDType::U8);
    assert_eq!(
        p.values.to_vec2::<u8>().unwrap(),
        vec![vec![1, 0], vec![1, 0]]
    );

    let mut ids = RaggedBatch::<u64>::new();
    ids.push(&[2], &[i64::MAX as u64, 5]).unwrap();
    ids.push(&[1], &[6]).unwrap();
    let p = pad_records(ids.values(), ids.layout(), 0, &cpu).unwrap();
    assert_eq!(p.values.dtype(), CDType::I64);
    assert_eq!(
        p.values.to_vec2::<i64>().unwrap(),
        vec![vec![i64::MAX, 5], vec![6, 0]]
    );
    // A value, or a pad value that lands in the tensor, above i64::MAX is refused.
    ids.push(&[1], &[u64::MAX]).unwrap();
    assert!(matches!(
        pad_records(ids.values(), ids.layout(), 0, &cpu),
        Err(Error::OutOfRange {
            index: 4,
            value: u64::MAX,
            ..
        })
    ));
    let mut short = RaggedBatch::<u64>::new();
    short.push(&[1], &[1]).unwrap();
    short.push(&[2], &[1, 2]).unwrap();
    assert!(matches!(
        pad_records(short.values(), short.layout(), u64::MAX, &cpu),
        Err(Error::OutOfRange { index: 1, .. })
    ));

    let mut halves = RaggedBatch::<half::f16>::new();
    halves.push(&[1], &[half::f16::ONE]).unwrap();
    let p = pad_records(halves.values(), halves.layout(), half::f16::ZERO, &cpu).unwrap();
    assert_eq!(p.values.dtype(), CDType::F16);
}

#[test]
fn a_wrong_dtype_or_a_dense_stream_is_a_loader_error() {
    let dir = tempfile::tempdir().unwrap();
    let batch = ragged_batch(dir.path(), &[(vec![1], vec![1.0f64])]);
    assert!(matches!(
        ragged_padded::<f32>(&batch, "r", 0.0, &Device::Cpu),
        Err(Error::Loader(zrecord_loader::Error::WrongDType { .. }))
    ));
    assert!(matches!(
        ragged_padded::<f64>(&batch, "nope", 0.0, &Device::Cpu),
        Err(Error::Loader(zrecord_loader::Error::UnknownStream { .. }))
    ));
}

#[test]
fn values_that_do_not_match_the_layout_are_an_error() {
    let mut batch = RaggedBatch::<u32>::new();
    batch.push(&[3], &[1, 2, 3]).unwrap();
    let result = pad_records(&[1, 2], batch.layout(), 0, &Device::Cpu);
    assert!(
        matches!(
            result,
            Err(Error::Loader(zrecord_loader::Error::PaddingBuffer {
                expected: 3,
                got: 2
            }))
        ),
        "{result:?}"
    );
}

#[test]
fn an_empty_batch_pads_to_nothing() {
    let batch = RaggedBatch::<f32>::new();
    let p = pad_records(batch.values(), batch.layout(), 0.0, &Device::Cpu).unwrap();
    assert_eq!(p.values.dims(), &[0]);
    assert_eq!(p.lengths.dims(), &[0]);
}

#[test]
fn empty_records_are_all_padding() {
    // Stores refuse empty records, but a batch built by hand may hold them.
    let mut batch = RaggedBatch::<f32>::new();
    batch.push(&[0, 2], &[]).unwrap();
    batch.push(&[1, 0], &[]).unwrap();
    batch.push(&[1, 1], &[4.0]).unwrap();
    let p = pad_records(batch.values(), batch.layout(), -1.0, &Device::Cpu).unwrap();
    assert_eq!(p.values.dims(), &[3, 1, 2]);
    assert_eq!(
        p.values.to_vec3::<f32>().unwrap(),
        vec![
            vec![vec![-1.0, -1.0]],
            vec![vec![-1.0, -1.0]],
            vec![vec![4.0, -1.0]]
        ]
    );
    assert_eq!(
        p.mask
            .sum_all()
            .unwrap()
            .to_dtype(CDType::U32)
            .unwrap()
            .to_scalar::<u32>()
            .unwrap(),
        1
    );
    assert_eq!(lengths(&p), vec![0, 1, 1]);
}
