//! Ragged records padded into one tensor, with lengths and a mask.

use candle_core::{Device, Tensor};
use zrecord::{DynVec, Element, RaggedLayout};
use zrecord_loader::Batch;
use zrecord_loader::{PaddedBatch, Padding};

use crate::convert::to_tensor;
use crate::{Error, Result};

/// A ragged stream padded into one tensor: what [`ragged_padded`] and
/// [`pad_records`] return.
#[derive(Clone, Debug)]
pub struct Padded {
    /// The records, padded: shape `(B, m₀, m₁, …)` where `mᵢ` is the largest
    /// extent of axis `i` in the batch (`(B,)` for scalar records); padding
    /// holds the pad value. Its dtype follows the crate's dtype table.
    pub values: Tensor,
    /// Each record's extent along its first axis (its sequence length),
    /// `u32`, shape `(B,)`; 1 for scalar records.
    pub lengths: Tensor,
    /// `1u8` where `values` holds a record's element, `0` on padding; the
    /// shape of `values`.
    pub mask: Tensor,
}

/// Pads ragged stream `name` of `batch` into one tensor on `device`, with
/// each record's length and a mask. `padding` is a fill value (every axis
/// padded to the batch's largest extent) or a [`Padding`] that caps or fixes
/// the sequence length; the records must share one rank.
///
/// The loader pads ([`Batch::padded`]): every element is written once into a
/// new buffer, which then becomes the tensor's storage without a further
/// copy on the CPU. The stream stays in the batch.
///
/// ```
/// use candle_core::Device;
/// use zrecord::{Codec, RaggedStore};
/// use zrecord_loader::Padding;
/// use zrecord_loader::{Loader, Mode};
/// # let dir = tempfile::tempdir()?;
///
/// let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Raw)?;
/// tokens.append_slices(&[vec![5, 6, 7], vec![8]])?;
/// let mut loader = Loader::builder(2).stream("tokens", tokens).mode(Mode::Sequential).build()?;
/// let batch = loader.next_batch()?;
///
/// let padded = zrecord_candle::ragged_padded::<u32>(&batch, "tokens", 0, &Device::Cpu)?;
/// assert_eq!(padded.values.to_vec2::<u32>()?, vec![vec![5, 6, 7], vec![8, 0, 0]]);
/// assert_eq!(padded.lengths.to_vec1::<u32>()?, vec![3, 1]);
/// assert_eq!(padded.mask.to_vec2::<u8>()?, vec![vec![1, 1, 1], vec![1, 0, 0]]);
///
/// let fixed = zrecord_candle::ragged_padded(&batch, "tokens", Padding::new(0u32).fixed_len(4), &Device::Cpu)?;
/// assert_eq!(fixed.values.dims(), &[2, 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Loader`] for an unknown, dense or taken stream, one of another
/// dtype than `T`, or records that cannot be padded (of different ranks, a
/// padded size that overflows); [`Error::OutOfRange`] for a `u64` value (or
/// fill) above `i64::MAX`; [`Error::Overflow`] for a length above
/// `u32::MAX`; [`Error::Candle`] when the device refuses the buffers.
pub fn ragged_padded<T: Element>(
    batch: &Batch,
    name: &str,
    padding: impl Into<Padding<T>>,
    device: &Device,
) -> Result<Padded> {
    to_padded(batch.padded(name, padding)?, device, name)
}

/// [`ragged_padded`] for packed records from anywhere: a store's
/// [`RaggedBatch`](zrecord::RaggedBatch) (`batch.values()`,
/// `batch.layout()`), a loader's [`RaggedView`](zrecord_loader::RaggedView),
/// or your own.
///
/// ```
/// use candle_core::Device;
/// use zrecord::RaggedBatch;
///
/// let mut images = RaggedBatch::<u8>::new();
/// images.push(&[2, 3], &[1, 2, 3, 4, 5, 6])?;  // a 2×3 record
/// images.push(&[3, 1], &[7, 8, 9])?;           // a 3×1 record
/// let padded = zrecord_candle::pad_records(images.values(), images.layout(), 0, &Device::Cpu)?;
/// assert_eq!(padded.values.dims(), &[2, 3, 3]);  // every axis padded to the batch's largest
/// assert_eq!(
///     padded.values.to_vec3::<u8>()?[1],
///     vec![vec![7, 0, 0], vec![8, 0, 0], vec![9, 0, 0]]
/// );
/// assert_eq!(padded.lengths.to_vec1::<u32>()?, vec![2, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`ragged_padded`], with the store's error ([`Error::Store`]) where
/// the records cannot be padded or `values` does not hold exactly the
/// layout's elements.
pub fn pad_records<T: Element>(
    values: &[T],
    layout: &RaggedLayout,
    padding: impl Into<Padding<T>>,
    device: &Device,
) -> Result<Padded> {
    to_padded(padding.into().pad(values, layout)?, device, "values")
}

/// The padded buffers as candle tensors: lengths as `u32`, the mask as `u8`.
fn to_padded<T: Element>(padded: PaddedBatch<T>, device: &Device, stream: &str) -> Result<Padded> {
    let PaddedBatch {
        values,
        mask,
        lengths,
        shape,
        ..
    } = padded;
    let lengths = lengths
        .into_iter()
        .map(|l| {
            u32::try_from(l).map_err(|_| Error::Overflow {
                stream: stream.into(),
                what: "a record length (u32)",
            })
        })
        .collect::<Result<Vec<u32>>>()?;
    let n = lengths.len();
    Ok(Padded {
        values: to_tensor(DynVec::from(values), &shape, device, stream, false)?,
        lengths: Tensor::from_vec(lengths, n, device)?,
        // bool → u8 reinterprets the buffer in place (the crate's dtype table).
        mask: to_tensor(DynVec::from(mask), &shape, device, stream, false)?,
    })
}
