//! Ragged records padded into one tensor, with lengths and a mask.

use candle_core::{Device, Tensor};
use zrecord::{DynVec, Element, RaggedLayout};
use zrecord_loader::Batch;

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
/// each record's length and a mask. Every axis is padded to the batch's
/// largest extent with `pad`; the records must share one rank.
///
/// Padding writes every element once into a new buffer, which then becomes
/// the tensor's storage without a further copy on the CPU. The stream stays
/// in the batch.
///
/// ```
/// use candle_core::Device;
/// use zrecord::{Codec, RaggedStore};
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Loader`] for an unknown, dense or taken stream, or one of
/// another dtype than `T`; [`Error::MixedRank`] when the records differ in
/// rank; [`Error::OutOfRange`] for a `u64` value (or `pad`) above
/// `i64::MAX`; [`Error::Overflow`] for a padded size or a length that does
/// not fit; [`Error::Candle`] when the device refuses the buffers.
pub fn ragged_padded<T: Element>(
    batch: &Batch,
    name: &str,
    pad: T,
    device: &Device,
) -> Result<Padded> {
    let view = batch.ragged::<T>(name)?;
    pad_impl(view.values(), view.layout(), pad, device, name)
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
/// As [`ragged_padded`], and [`Error::Shape`] when `values` does not hold
/// exactly the layout's elements.
pub fn pad_records<T: Element>(
    values: &[T],
    layout: &RaggedLayout,
    pad: T,
    device: &Device,
) -> Result<Padded> {
    pad_impl(values, layout, pad, device, "values")
}

fn pad_impl<T: Element>(
    values: &[T],
    layout: &RaggedLayout,
    pad: T,
    device: &Device,
    stream: &str,
) -> Result<Padded> {
    if values.len() != layout.total() {
        return Err(Error::Shape {
            stream: stream.into(),
            shape: vec![layout.total()],
            elements: values.len(),
        });
    }
    let n = layout.len();
    let overflow = |what| Error::Overflow {
        stream: stream.into(),
        what,
    };

    // The padded extent of every record axis.
    let rank = layout.shape(0).map_or(0, <[usize]>::len);
    let mut extents = vec![0usize; rank];
    let mut lengths = Vec::with_capacity(n);
    for k in 0..n {
        let shape = layout.shape(k).unwrap_or(&[]);
        if shape.len() != rank {
            return Err(Error::MixedRank {
                stream: stream.into(),
                record: k,
                expected: rank,
                found: shape.len(),
            });
        }
        for (e, &d) in extents.iter_mut().zip(shape) {
            *e = (*e).max(d);
        }
        let length = shape.first().copied().unwrap_or(1);
        lengths.push(u32::try_from(length).map_err(|_| overflow("a record length (u32)"))?);
    }
    let per_record = extents
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| overflow("the padded record size"))?;
    let total = n
        .checked_mul(per_record)
        .ok_or_else(|| overflow("the padded batch size"))?;

    let mut padded = vec![pad; total];
    let mut mask = vec![0u8; total];
    // Row-major strides of a padded record; a "row" is a run along the last axis.
    let mut strides = vec![1usize; rank];
    for axis in (0..rank.saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * extents[axis + 1];
    }
    let mut index = vec![0usize; rank.saturating_sub(1)];
    for k in 0..n {
        let (Some(shape), Some(range)) = (layout.shape(k), layout.range(k)) else {
            continue;
        };
        let Some(record) = values.get(range) else {
            continue;
        };
        let row = shape.last().copied().unwrap_or(1);
        if row == 0 {
            continue; // an empty record: nothing to copy
        }
        let base = k * per_record;
        index.fill(0);
        for chunk in record.chunks(row) {
            let offset = base
                + index
                    .iter()
                    .zip(&strides)
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            let span = offset..offset + chunk.len();
            if let (Some(dst), Some(flags)) = (padded.get_mut(span.clone()), mask.get_mut(span)) {
                dst.copy_from_slice(chunk);
                flags.fill(1);
            }
            // The next row: advance the index over all axes but the last,
            // last of them fastest.
            for axis in (0..index.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
    }

    let mut padded_shape = Vec::with_capacity(rank + 1);
    padded_shape.push(n);
    padded_shape.extend_from_slice(&extents);
    Ok(Padded {
        values: to_tensor(DynVec::from(padded), &padded_shape, device, stream, false)?,
        lengths: Tensor::from_vec(lengths, n, device)?,
        mask: Tensor::from_vec(mask, padded_shape, device)?,
    })
}
