//! Ready converters from loader batches to Burn tensors.
//!
//! * [`tensor_data`] turns a gathered buffer into a [`TensorData`] without a
//!   copy: the `Vec` the loader filled becomes the tensor's storage.
//! * [`dense_tensor`] takes a dense stream out of a [`Batch`] as a
//!   `Tensor<D, K>` of any rank and kind (float, int or bool).
//! * [`ragged_padded`] pads a ragged stream into one tensor, with each
//!   record's length and a mask of the real elements.

use burn::tensor::kind::{Basic, Kind, TensorKind};
use burn::tensor::{Bool, DType as BurnDType, Device, Int, Tensor, TensorData};
use zrecord::{DType, DynVec};
use zrecord_loader::Batch;
use zrecord_loader::{PaddedBatch, Padding};

use crate::{Error, Result};

/// Wraps a gathered buffer and its shape in a [`TensorData`] **without
/// copying**: the `Vec` inside `values` becomes the data's storage.
///
/// Pair it with [`DenseColumn::into_parts`](zrecord_loader::DenseColumn::into_parts)
/// (or [`Batch::take_dense`]) to hand a dense stream to Burn as it was gathered.
///
/// ```
/// use zrecord::DynVec;
///
/// let values = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
/// let address = values.as_ptr() as usize;
/// let data = zrecord_burn::tensor_data(DynVec::from(values), vec![2, 3])?;
/// assert_eq!(data.shape().as_slice(), &[2, 3]);
/// assert_eq!(data.as_bytes().as_ptr() as usize, address); // the same allocation
/// # Ok::<(), zrecord_burn::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when `shape` does not hold exactly
/// `values.len()` elements.
pub fn tensor_data(values: DynVec, shape: Vec<usize>) -> Result<TensorData> {
    let elements = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    if elements != Some(values.len()) {
        return Err(Error::InvalidArgument(format!(
            "shape {shape:?} does not hold {} elements",
            values.len()
        )));
    }
    Ok(match values {
        DynVec::Bool(v) => TensorData::new(v, shape),
        DynVec::U8(v) => TensorData::new(v, shape),
        DynVec::I8(v) => TensorData::new(v, shape),
        DynVec::U16(v) => TensorData::new(v, shape),
        DynVec::I16(v) => TensorData::new(v, shape),
        DynVec::U32(v) => TensorData::new(v, shape),
        DynVec::I32(v) => TensorData::new(v, shape),
        DynVec::U64(v) => TensorData::new(v, shape),
        DynVec::I64(v) => TensorData::new(v, shape),
        DynVec::F16(v) => TensorData::new(v, shape),
        DynVec::BF16(v) => TensorData::new(v, shape),
        DynVec::F32(v) => TensorData::new(v, shape),
        DynVec::F64(v) => TensorData::new(v, shape),
    })
}

/// The dtype a tensor of kind `K` gets on `device` (its default for the kind).
pub fn target_dtype<K: TensorKind>(device: &Device) -> BurnDType {
    let settings = device.settings();
    match K::KIND {
        Kind::Float => settings.float_dtype.into(),
        Kind::Int => settings.int_dtype.into(),
        Kind::Bool => settings.bool_dtype.into(),
    }
}

/// Makes a `Tensor<D, K>` on `device` from `data`, checking its rank and
/// converting its dtype to the device's default for `K` first, so a bad
/// input is an error rather than a panic inside Burn.
///
/// When `data` already has that dtype (an `f32` stream into a float tensor
/// on a device whose float type is `f32`), nothing is converted: on a CPU
/// backend such as `flex` the tensor keeps `data`'s allocation. Otherwise
/// Burn converts the elements once (in place when the widths match).
///
/// # Errors
/// [`Error::Rank`] when the data is not of rank `D`; [`Error::Tensor`] when
/// Burn cannot convert the dtype. `stream` names the data in the message.
pub fn tensor_from_data<const D: usize, K>(
    data: TensorData,
    stream: &str,
    device: &Device,
) -> Result<Tensor<D, K>>
where
    K: Basic + TensorKind,
{
    if data.shape().as_slice().len() != D {
        return Err(Error::Rank {
            stream: stream.into(),
            expected: D,
            shape: data.shape().as_slice().to_vec(),
        });
    }
    let data = data
        .try_cast(target_dtype::<K>(device))
        .map_err(|e| Error::Tensor {
            stream: stream.into(),
            reason: e.to_string(),
        })?;
    Ok(Tensor::from_data(data, device))
}

/// Moves dense stream `name` out of `batch` into a `Tensor<D, K>` shaped
/// `(B, *item_shape)` — float, int or bool, any rank — without copying the
/// gathered buffer (see [`tensor_from_data`] for when Burn converts dtypes).
///
/// The stream's buffer leaves the loader's reuse pool (the loader allocates a
/// new one for a later step): that is the price of handing it over uncopied.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use zrecord::{Codec, DenseStore};
/// use zrecord_loader::{Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let x = DenseStore::<f32>::create(dir.path().join("x"), &[2, 2], Codec::Raw)?;
/// x.append(&(0..40).map(|v| v as f32).collect::<Vec<_>>())?;
/// let y = DenseStore::<i64>::create(dir.path().join("y"), &[], Codec::Raw)?;
/// y.append(&(0..10).collect::<Vec<i64>>())?;
///
/// let mut loader = Loader::builder(4).stream("x", x).stream("y", y).mode(Mode::Sequential).build()?;
/// let mut batch = loader.next_batch()?;
/// let device = Device::flex();
/// let images: Tensor<3> = zrecord_burn::dense_tensor(&mut batch, "x", &device)?;
/// let labels: Tensor<1, Int> = zrecord_burn::dense_tensor(&mut batch, "y", &device)?;
/// assert_eq!(images.dims(), [4, 2, 2]);
/// assert_eq!(labels.into_data().try_to_vec_as::<i64>()?, vec![0, 1, 2, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The batch's errors for an unknown, ragged or already taken stream
/// ([`Error::Loader`]); [`Error::Rank`] unless the stream has `D` axes
/// (batch axis included); [`Error::Tensor`] for a dtype Burn cannot convert.
pub fn dense_tensor<const D: usize, K>(
    batch: &mut Batch,
    name: &str,
    device: &Device,
) -> Result<Tensor<D, K>>
where
    K: Basic + TensorKind,
{
    // Check before taking the buffer out, so a refused conversion leaves the
    // stream in the batch.
    let column = batch.dense_column(name)?;
    if !dtype_fits::<K>(column.dtype()) {
        return Err(Error::UnsupportedDType {
            stream: name.into(),
            dtype: column.dtype(),
            kind: K::KIND.as_str(),
        });
    }
    if column.shape().len() != D {
        return Err(Error::Rank {
            stream: name.into(),
            expected: D,
            shape: column.shape().to_vec(),
        });
    }
    let (values, shape) = batch.take_dense(name)?.into_parts();
    tensor_from_data(tensor_data(values, shape)?, name, device)
}

/// An element type that both a zrecord store ([`zrecord::Element`]) and a
/// Burn tensor ([`burn::tensor::Element`]) hold: every numeric type and
/// `bool` ([`ragged_padded`] takes one).
pub trait StoreTensorElement: zrecord::Element + burn::tensor::Element {}

impl<T: zrecord::Element + burn::tensor::Element> StoreTensorElement for T {}

/// A ragged stream padded into one tensor: what [`ragged_padded`] returns.
#[derive(Clone, Debug)]
pub struct Padded<const D: usize, K: Basic = Int> {
    /// The records, padded: shape `(B, m₀, m₁, …)` where `mᵢ` is the
    /// largest extent of axis `i` in the batch; padding holds the pad value.
    pub values: Tensor<D, K>,
    /// Each record's extent along its first axis (its sequence length), `(B,)`;
    /// 1 for scalar records.
    pub lengths: Tensor<1, Int>,
    /// `true` where `values` holds a record's element, `false` on padding;
    /// same shape as `values`.
    pub mask: Tensor<D, Bool>,
}

/// Pads ragged stream `name` of `batch` into a `Tensor<D, K>` plus lengths
/// and mask. Records must share one rank, `D - 1`. `padding` is a fill value
/// (every axis padded to the batch's largest extent) or a
/// [`Padding`](zrecord_loader::Padding) that caps or fixes the sequence length.
///
/// The loader pads ([`Batch::padded`]); every element is written once into
/// the padded buffer, which then becomes the tensor's storage without a
/// further copy.
///
/// ```
/// use burn::tensor::{Device, Int};
/// use zrecord::{Codec, RaggedStore};
/// use zrecord_loader::Padding;
/// use zrecord_loader::{Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let tokens = RaggedStore::<i32>::create(dir.path().join("tokens"), Codec::Raw)?;
/// tokens.append_slices(&[vec![5, 6, 7], vec![8]])?;
/// let mut loader = Loader::builder(2).stream("tokens", tokens).mode(Mode::Sequential).build()?;
/// let batch = loader.next_batch()?;
///
/// let padded = zrecord_burn::ragged_padded::<i32, 2, Int>(&batch, "tokens", 0, &Device::flex())?;
/// assert_eq!(padded.values.into_data().try_to_vec_as::<i64>()?, vec![5, 6, 7, 8, 0, 0]);
/// assert_eq!(padded.lengths.into_data().try_to_vec_as::<i64>()?, vec![3, 1]);
/// assert_eq!(padded.mask.dims(), [2, 3]);
///
/// let capped = zrecord_burn::ragged_padded::<i32, 2, Int>(&batch, "tokens", Padding::new(0).max_len(2), &Device::flex())?;
/// assert_eq!(capped.values.into_data().try_to_vec_as::<i64>()?, vec![5, 6, 8, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The batch's errors for an unknown or dense stream, one of another dtype
/// than `T`, or records that cannot be padded — of different ranks, say
/// ([`Error::Loader`]); [`Error::Rank`] when the records are not of rank
/// `D - 1`; [`Error::Tensor`] for a dtype Burn cannot convert.
pub fn ragged_padded<T, const D: usize, K>(
    batch: &Batch,
    name: &str,
    padding: impl Into<Padding<T>>,
    device: &Device,
) -> Result<Padded<D, K>>
where
    T: StoreTensorElement,
    K: Basic + TensorKind,
{
    if !dtype_fits::<K>(<T as zrecord::Element>::DTYPE) {
        return Err(Error::UnsupportedDType {
            stream: name.into(),
            dtype: <T as zrecord::Element>::DTYPE,
            kind: K::KIND.as_str(),
        });
    }
    let view = batch.ragged::<T>(name)?;
    let n = view.len();
    let rank_error = |record: &[usize]| Error::Rank {
        stream: name.into(),
        expected: D,
        shape: std::iter::once(n).chain(record.iter().copied()).collect(),
    };
    let rank = D.checked_sub(1).ok_or_else(|| rank_error(&[]))?;
    if let Some(first) = view.layout().shape(0)
        && first.len() != rank
    {
        return Err(rank_error(first));
    }
    let PaddedBatch {
        values,
        mask,
        lengths,
        mut shape,
        ..
    } = batch.padded(name, padding)?;
    if n == 0 {
        shape = vec![0; D]; // no record to take the rank from
    }
    let lengths = lengths
        .into_iter()
        .map(|l| i64::try_from(l).map_err(|_| Error::InvalidArgument(format!("length {l}"))))
        .collect::<Result<Vec<i64>>>()?;
    Ok(Padded {
        values: tensor_from_data(TensorData::new(values, shape.clone()), name, device)?,
        lengths: tensor_from_data(TensorData::new(lengths, [n]), name, device)?,
        mask: tensor_from_data(TensorData::new(mask, shape), name, device)?,
    })
}

/// Whether a stream of `dtype` can become a tensor of kind `K` without
/// losing its meaning: any dtype for float and bool tensors, integer and
/// bool dtypes for int tensors.
pub fn dtype_fits<K: TensorKind>(dtype: DType) -> bool {
    match K::KIND {
        Kind::Float | Kind::Bool => true,
        Kind::Int => !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64),
    }
}
