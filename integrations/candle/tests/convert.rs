//! Dense conversions: every dtype's mapping and values, the no-copy
//! hand-over on the CPU, shapes of every rank, and the errors.

use candle_core::{CpuStorage, DType as CDType, Device, Storage, Tensor, WithDType};
use half::{bf16, f16};
use zrecord::{Codec, DType, DenseStore, DynVec, Element, RaggedStore};
use zrecord_candle::{Error, candle_dtype, dense_tensor, tensor_from_vec};
use zrecord_loader::{Batch, Loader, Mode};

/// The address of a CPU tensor's storage.
fn storage_address(t: &Tensor) -> usize {
    let (storage, _) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        panic!("not a CPU tensor")
    };
    match cpu {
        CpuStorage::U8(v) => v.as_ptr() as usize,
        CpuStorage::U32(v) => v.as_ptr() as usize,
        CpuStorage::I16(v) => v.as_ptr() as usize,
        CpuStorage::I32(v) => v.as_ptr() as usize,
        CpuStorage::I64(v) => v.as_ptr() as usize,
        CpuStorage::BF16(v) => v.as_ptr() as usize,
        CpuStorage::F16(v) => v.as_ptr() as usize,
        CpuStorage::F32(v) => v.as_ptr() as usize,
        CpuStorage::F64(v) => v.as_ptr() as usize,
        _ => panic!("unexpected storage dtype"),
    }
}

/// One batch of all `records` (each of `item_shape`) of a fresh store.
fn batch_of<T: Element>(dir: &std::path::Path, item_shape: &[usize], values: &[T]) -> Batch {
    let store = DenseStore::<T>::create(dir.join("x"), item_shape, Codec::Zstd).unwrap();
    store.append(values).unwrap();
    let records = store.len();
    let mut loader = Loader::builder(records)
        .stream("x", store)
        .mode(Mode::Sequential)
        .workers(1)
        .build()
        .unwrap();
    loader.next_batch().unwrap()
}

/// Converts `values` (two records of 2×3) through a loader batch and checks
/// dtype, shape, every value, and whether the gathered buffer was kept.
fn check<T: Element, U: WithDType + std::fmt::Debug>(
    values: &[T],
    dtype: CDType,
    expected: &[U],
    same_buffer: bool,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut batch = batch_of(dir.path(), &[2, 3], values);
    let gathered = batch
        .dense_column("x")
        .unwrap()
        .values()
        .as_bytes()
        .as_ptr() as usize;
    let t = dense_tensor(&mut batch, "x", &Device::Cpu).unwrap();
    assert_eq!(t.dtype(), dtype, "{}", T::DTYPE);
    assert_eq!(candle_dtype(T::DTYPE).unwrap(), dtype);
    assert_eq!(t.dims(), &[2, 2, 3]);
    assert_eq!(t.flatten_all().unwrap().to_vec1::<U>().unwrap(), expected);
    assert_eq!(
        storage_address(&t) == gathered,
        same_buffer,
        "{}: the tensor should {}use the gathered buffer",
        T::DTYPE,
        if same_buffer { "" } else { "not " }
    );
    assert!(matches!(
        batch.dense_column("x"),
        Err(zrecord_loader::Error::Taken { .. })
    ));
}

#[test]
fn dtypes_candle_has_keep_the_gathered_buffer() {
    check(
        &[0u8, 1, 2, 3, 254, 255, 9, 8, 7, 6, 5, 4],
        CDType::U8,
        &[0u8, 1, 2, 3, 254, 255, 9, 8, 7, 6, 5, 4],
        true,
    );
    let i16s = [i16::MIN, -1, 0, 1, i16::MAX, 7, 8, 9, 10, 11, 12, 13];
    check(&i16s, CDType::I16, &i16s, true);
    let u32s = [0, 1, u32::MAX, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    check(&u32s, CDType::U32, &u32s, true);
    let i32s = [i32::MIN, -1, 0, 1, i32::MAX, 5, 6, 7, 8, 9, 10, 11];
    check(&i32s, CDType::I32, &i32s, true);
    let i64s = [i64::MIN, -1, 0, 1, i64::MAX, 5, 6, 7, 8, 9, 10, 11];
    check(&i64s, CDType::I64, &i64s, true);
    let f16s: Vec<f16> = (0..12)
        .map(|v| f16::from_f32(v as f32 * 0.5 - 2.0))
        .collect();
    check(&f16s, CDType::F16, &f16s, true);
    let bf16s: Vec<bf16> = (0..12)
        .map(|v| bf16::from_f32(v as f32 * 0.25 - 1.0))
        .collect();
    check(&bf16s, CDType::BF16, &bf16s, true);
    let f32s: Vec<f32> = (0..12).map(|v| v as f32 / 3.0).collect();
    check(&f32s, CDType::F32, &f32s, true);
    let f64s = [
        f64::MIN,
        -0.5,
        0.0,
        1e-300,
        f64::MAX,
        5.0,
        6.0,
        7.0,
        8.0,
        9.0,
        10.0,
        11.0,
    ];
    check(&f64s, CDType::F64, &f64s, true);
}

#[test]
fn bool_and_u64_are_reinterpreted_in_place() {
    let flags = [
        true, false, false, true, true, true, false, false, true, false, true, false,
    ];
    let bytes: Vec<u8> = flags.iter().map(|&b| u8::from(b)).collect();
    check(&flags, CDType::U8, &bytes, true);
    let big = [0u64, 1, 2, i64::MAX as u64, 4, 5, 6, 7, 8, 9, 10, 11];
    let as_i64: Vec<i64> = big.iter().map(|&v| v as i64).collect();
    check(&big, CDType::I64, &as_i64, true);
}

#[test]
fn i8_and_u16_are_widened_exactly() {
    let i8s = [i8::MIN, -1, 0, 1, i8::MAX, 5, 6, 7, 8, 9, 10, 11];
    let widened: Vec<i16> = i8s.iter().map(|&v| i16::from(v)).collect();
    check(&i8s, CDType::I16, &widened, false);
    let u16s = [0u16, 1, u16::MAX, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    let widened: Vec<u32> = u16s.iter().map(|&v| u32::from(v)).collect();
    check(&u16s, CDType::U32, &widened, false);
}

#[test]
fn u64_above_i64_max_is_an_error_naming_it_and_the_stream_stays() {
    let dir = tempfile::tempdir().unwrap();
    let mut batch = batch_of(dir.path(), &[2], &[1u64, 2, 3, u64::MAX]);
    let result = dense_tensor(&mut batch, "x", &Device::Cpu);
    assert!(
        matches!(&result, Err(Error::OutOfRange { stream, index: 3, value: u64::MAX }) if stream == "x"),
        "{result:?}"
    );
    let message = result.unwrap_err().to_string();
    assert!(
        message.contains("18446744073709551615") && message.contains("i64"),
        "{message}"
    );
    assert!(
        batch.dense_column("x").is_ok(),
        "a refused conversion leaves the stream"
    );
    // The bare-buffer path refuses it too.
    let values = DynVec::from(vec![i64::MAX as u64 + 1]);
    assert!(matches!(
        tensor_from_vec(values, &[1], &Device::Cpu),
        Err(Error::OutOfRange { index: 0, .. })
    ));
}

#[test]
fn every_rank_of_item_shape_converts() {
    let dir = tempfile::tempdir().unwrap();
    for (k, item_shape) in [vec![], vec![5], vec![2, 3], vec![1, 2, 3, 2]]
        .iter()
        .enumerate()
    {
        let per: usize = item_shape.iter().product();
        let values: Vec<i32> = (0..3 * per as i32).collect();
        let mut batch = batch_of(&dir.path().join(k.to_string()), item_shape, &values);
        let t = dense_tensor(&mut batch, "x", &Device::Cpu).unwrap();
        let mut expected = vec![3];
        expected.extend_from_slice(item_shape);
        assert_eq!(t.dims(), &expected[..]);
        assert_eq!(t.flatten_all().unwrap().to_vec1::<i32>().unwrap(), values);
    }
}

#[test]
fn tensor_from_vec_checks_the_shape() {
    let result = tensor_from_vec(DynVec::from(vec![1.0f32; 6]), &[4, 2], &Device::Cpu);
    assert!(
        matches!(&result, Err(Error::Shape { shape, elements: 6, .. }) if shape == &[4, 2]),
        "{result:?}"
    );
    let overflow = tensor_from_vec(DynVec::from(vec![0u8]), &[usize::MAX, 2], &Device::Cpu);
    assert!(matches!(overflow, Err(Error::Shape { .. })));
    for dtype in DType::ALL {
        let t = tensor_from_vec(DynVec::zeros(dtype, 4), &[2, 2], &Device::Cpu).unwrap();
        assert_eq!(t.dtype(), candle_dtype(dtype).unwrap());
        assert_eq!(
            t.sum_all()
                .unwrap()
                .to_dtype(CDType::F64)
                .unwrap()
                .to_scalar::<f64>()
                .unwrap(),
            0.0
        );
    }
}

#[test]
fn a_stream_that_is_unknown_ragged_or_taken_is_a_loader_error() {
    let dir = tempfile::tempdir().unwrap();
    let dense = DenseStore::<f32>::create(dir.path().join("d"), &[2], Codec::Raw).unwrap();
    dense.append(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    let ragged = RaggedStore::<f32>::create(dir.path().join("r"), Codec::Raw).unwrap();
    ragged.append_slices(&[vec![1.0], vec![2.0, 3.0]]).unwrap();
    let mut loader = Loader::builder(2)
        .stream("d", dense)
        .stream("r", ragged)
        .mode(Mode::Sequential)
        .build()
        .unwrap();
    let mut batch = loader.next_batch().unwrap();
    let cpu = Device::Cpu;
    assert!(matches!(
        dense_tensor(&mut batch, "nope", &cpu),
        Err(Error::Loader(zrecord_loader::Error::UnknownStream { .. }))
    ));
    assert!(matches!(
        dense_tensor(&mut batch, "r", &cpu),
        Err(Error::Loader(zrecord_loader::Error::WrongKind { .. }))
    ));
    assert!(batch.ragged::<f32>("r").is_ok(), "the ragged stream stays");
    dense_tensor(&mut batch, "d", &cpu).unwrap();
    assert!(matches!(
        dense_tensor(&mut batch, "d", &cpu),
        Err(Error::Loader(zrecord_loader::Error::Taken { .. }))
    ));
}

#[test]
fn a_transform_yields_tensors_from_worker_threads() {
    let dir = tempfile::tempdir().unwrap();
    let store = DenseStore::<u8>::create(dir.path().join("x"), &[4], Codec::Zstd).unwrap();
    store.append(&(0..=255).collect::<Vec<u8>>()).unwrap();
    let device = Device::Cpu;
    let mut loader = Loader::builder(8)
        .stream("x", store)
        .mode(Mode::Sequential)
        .workers(2)
        .transform(move |mut batch| {
            let x = dense_tensor(&mut batch, "x", &device)?;
            Ok::<_, Error>((batch.indices().to_vec(), x))
        })
        .build()
        .unwrap();
    for batch in loader.steps(16) {
        let (indices, x) = batch.unwrap().unwrap();
        let rows = x.to_vec2::<u8>().unwrap();
        for (i, row) in indices.iter().zip(rows) {
            let first = (*i * 4) as u8;
            assert_eq!(row, vec![first, first + 1, first + 2, first + 3]);
        }
    }
    let counters = loader.counters().snapshot();
    assert!(
        counters.buffers_allocated >= 16,
        "taken buffers are replaced: {counters:?}"
    );
}
