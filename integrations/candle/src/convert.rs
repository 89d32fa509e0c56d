//! Dense buffers to candle tensors: the dtype rule and the no-copy hand-over.

use candle_core::{DType as CandleDType, Device, Tensor};
use zrecord::{DType, DynVec};
use zrecord_loader::Batch;

use crate::{Error, Result};

/// The candle dtype a zrecord `dtype` becomes (see the crate's dtype table):
/// the same where candle has it; `bool` → `u8`, `i8` → `i16`, `u16` → `u32`,
/// `u64` → `i64` (checked per value at conversion).
///
/// ```
/// use zrecord::DType;
/// use zrecord_candle::candle_dtype;
///
/// assert_eq!(candle_dtype(DType::F32)?, candle_core::DType::F32);
/// assert_eq!(candle_dtype(DType::Bool)?, candle_core::DType::U8);
/// assert_eq!(candle_dtype(DType::U16)?, candle_core::DType::U32);
/// # Ok::<(), zrecord_candle::Error>(())
/// ```
///
/// # Errors
/// [`Error::UnsupportedDType`] for a dtype this version of the crate does
/// not know (`DType` may grow).
pub fn candle_dtype(dtype: DType) -> Result<CandleDType> {
    Ok(match dtype {
        DType::Bool | DType::U8 => CandleDType::U8,
        DType::I8 | DType::I16 => CandleDType::I16,
        DType::U16 | DType::U32 => CandleDType::U32,
        DType::I32 => CandleDType::I32,
        DType::U64 | DType::I64 => CandleDType::I64,
        DType::F16 => CandleDType::F16,
        DType::BF16 => CandleDType::BF16,
        DType::F32 => CandleDType::F32,
        DType::F64 => CandleDType::F64,
        dtype => return Err(Error::UnsupportedDType { dtype }),
    })
}

/// Makes a tensor of `shape` on `device` from a dtype-tagged buffer,
/// following the crate's dtype rule.
///
/// On the CPU the buffer **becomes the tensor's storage without a copy** for
/// every dtype candle has, and for `bool` and `u64` too (reinterpreted in
/// place); `i8` and `u16` are widened into a new buffer. On a CUDA device the
/// buffer is copied to the device once.
///
/// ```
/// use candle_core::{Device, Storage, CpuStorage};
/// use zrecord::DynVec;
///
/// let values = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
/// let address = values.as_ptr();
/// let t = zrecord_candle::tensor_from_vec(DynVec::from(values), &[2, 3], &Device::Cpu)?;
/// assert_eq!(t.dims(), &[2, 3]);
/// let (storage, _) = t.storage_and_layout();
/// assert!(matches!(&*storage, Storage::Cpu(CpuStorage::F32(v)) if v.as_ptr() == address)); // the same allocation
/// # Ok::<(), zrecord_candle::Error>(())
/// ```
///
/// # Errors
/// [`Error::Shape`] when `shape` does not hold exactly `values.len()`
/// elements; [`Error::OutOfRange`] for a `u64` above `i64::MAX`;
/// [`Error::Candle`] when the device refuses the buffer.
pub fn tensor_from_vec(values: DynVec, shape: &[usize], device: &Device) -> Result<Tensor> {
    to_tensor(values, shape, device, "values", false)
}

/// Moves dense stream `name` out of `batch` into a tensor shaped
/// `(B, *item_shape)` on `device`, without copying the gathered buffer on
/// the CPU (see [`tensor_from_vec`] and the crate's dtype table).
///
/// The stream's buffer leaves the loader's reuse pool (the loader allocates a
/// new one for a later step): that is the price of handing it over uncopied.
/// A refused conversion (an unknown, ragged or taken stream, a `u64` value
/// out of range) leaves the stream in the batch.
///
/// ```
/// use candle_core::Device;
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let x = DenseStore::<f32>::create(dir.path().join("x"), &[2, 2], Codec::Raw)?;
/// x.append(&(0..40).map(|v| v as f32).collect::<Vec<_>>())?;
/// let y = DenseStore::<bool>::create(dir.path().join("y"), &[], Codec::Raw)?;
/// y.append(&(0..10).map(|i| i % 3 == 0).collect::<Vec<_>>())?;
///
/// let mut loader = Loader::builder(4).stream("x", x).stream("y", y).mode(Mode::Sequential).build()?;
/// let mut batch = loader.next_batch()?;
/// let images = zrecord_candle::dense_tensor(&mut batch, "x", &Device::Cpu)?;
/// let flags = zrecord_candle::dense_tensor(&mut batch, "y", &Device::Cpu)?; // bool → u8
/// assert_eq!(images.dims(), &[4, 2, 2]);
/// assert_eq!(flags.to_vec1::<u8>()?, vec![1, 0, 0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Loader`] for an unknown, ragged or already taken stream;
/// [`Error::OutOfRange`] for a `u64` value above `i64::MAX`;
/// [`Error::Candle`] when the device refuses the buffer.
pub fn dense_tensor(batch: &mut Batch, name: &str, device: &Device) -> Result<Tensor> {
    // Check everything that can fail before taking the buffer out, so a
    // refused conversion leaves the stream in the batch.
    let column = batch.dense_column(name)?;
    candle_dtype(column.dtype())?;
    if let Some(values) = column.values().as_slice::<u64>() {
        check_u64(values, name)?;
    }
    let (values, shape) = batch.take_dense(name)?.into_parts();
    to_tensor(values, &shape, device, name, true)
}

/// The first `u64` above `i64::MAX`, as an error.
fn check_u64(values: &[u64], stream: &str) -> Result<()> {
    match values.iter().position(|&v| i64::try_from(v).is_err()) {
        None => Ok(()),
        Some(index) => Err(Error::OutOfRange {
            stream: stream.into(),
            index,
            value: values[index],
        }),
    }
}

/// Reinterprets a `Vec<A>` as a `Vec<B>` of the same size and alignment in
/// place; copies only if bytemuck refuses (it cannot for the pairs used here).
fn reinterpret<A, B>(values: Vec<A>, convert: impl Fn(A) -> B) -> Vec<B>
where
    A: bytemuck::NoUninit,
    B: bytemuck::AnyBitPattern,
{
    bytemuck::allocation::try_cast_vec(values)
        .unwrap_or_else(|(_, values)| values.into_iter().map(convert).collect())
}

/// [`tensor_from_vec`], naming `stream` in errors; `u64_checked` skips the
/// range scan that the caller already did.
pub(crate) fn to_tensor(
    values: DynVec,
    shape: &[usize],
    device: &Device,
    stream: &str,
    u64_checked: bool,
) -> Result<Tensor> {
    let elements = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    if elements != Some(values.len()) {
        return Err(Error::Shape {
            stream: stream.into(),
            shape: shape.to_vec(),
            elements: values.len(),
        });
    }
    let tensor = match values {
        DynVec::Bool(v) => Tensor::from_vec(reinterpret(v, u8::from), shape, device),
        DynVec::U8(v) => Tensor::from_vec(v, shape, device),
        DynVec::I8(v) => Tensor::from_vec(
            v.into_iter().map(i16::from).collect::<Vec<_>>(),
            shape,
            device,
        ),
        DynVec::U16(v) => Tensor::from_vec(
            v.into_iter().map(u32::from).collect::<Vec<_>>(),
            shape,
            device,
        ),
        DynVec::I16(v) => Tensor::from_vec(v, shape, device),
        DynVec::U32(v) => Tensor::from_vec(v, shape, device),
        DynVec::I32(v) => Tensor::from_vec(v, shape, device),
        DynVec::U64(v) => {
            if !u64_checked {
                check_u64(&v, stream)?;
            }
            // Every value is at most i64::MAX, so its bits are the same i64.
            Tensor::from_vec(
                reinterpret(v, |x| i64::try_from(x).unwrap_or(i64::MAX)),
                shape,
                device,
            )
        }
        DynVec::I64(v) => Tensor::from_vec(v, shape, device),
        DynVec::F16(v) => Tensor::from_vec(v, shape, device),
        DynVec::BF16(v) => Tensor::from_vec(v, shape, device),
        DynVec::F32(v) => Tensor::from_vec(v, shape, device),
        DynVec::F64(v) => Tensor::from_vec(v, shape, device),
    };
    Ok(tensor?)
}
