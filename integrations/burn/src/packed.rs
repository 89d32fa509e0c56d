//! Packed token batches ([`PackedBatch`]) as Burn tensors, and the
//! block-diagonal causal mask that keeps attention within each document.

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use zrecord::DynVec;
use zrecord_loader::PackedBatch;

use crate::{Result, tensor_data, tensor_from_data};

/// A packed batch on a device: three `(rows, seq_len)` int tensors.
#[derive(Clone, Debug)]
pub struct PackedTensors {
    /// Token ids.
    pub tokens: Tensor<2, Int>,
    /// Segment ids: 1, 2, … per row, 0 for padding.
    pub segment_ids: Tensor<2, Int>,
    /// Positions from 0 at each segment start.
    pub positions: Tensor<2, Int>,
}

/// Moves a packed batch onto `device` as [`PackedTensors`]: the batch's
/// `Vec`s become the tensors' data without a copy (Burn converts `u32` to
/// the device's int type once).
///
/// ```
/// use burn::tensor::Device;
/// use zrecord_loader::{Documents, Packer, Packing};
///
/// let mut docs = Documents::new();
/// docs.push(&[7, 8, 9]);
/// docs.push(&[4, 5]);
/// let mut windows = vec![docs].into_iter();
/// let batch = Packer::new(Packing::BestFit, 4, 2)?.next_batch(|| windows.next())?;
/// let t = zrecord_burn::packed_tensors(batch, &Device::flex())?;
/// assert_eq!(t.segment_ids.into_data().try_to_vec_as::<i64>()?, vec![1, 1, 1, 0, 1, 1, 0, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Tensor`](crate::Error::Tensor) when Burn cannot convert the ids.
pub fn packed_tensors(batch: PackedBatch, device: &Device) -> Result<PackedTensors> {
    let shape = vec![batch.rows(), batch.seq_len()];
    let (tokens, segment_ids, positions) = batch.into_parts();
    let tensor = |values: Vec<u32>, name: &str| -> Result<Tensor<2, Int>> {
        let data: TensorData = tensor_data(DynVec::U32(values), shape.clone())?;
        tensor_from_data(data, name, device)
    };
    Ok(PackedTensors {
        tokens: tensor(tokens, "tokens")?,
        segment_ids: tensor(segment_ids, "segment_ids")?,
        positions: tensor(positions, "positions")?,
    })
}

/// The attention mask of packed rows: `(B, L, L)`, `true` where query `i`
/// may **not** attend key `j` — a later position, or another segment.
///
/// Burn's convention (as `generate_autoregressive_mask`): hand it to
/// `MhaInput::mask_attn`. Every token attends at least to itself, padding
/// to earlier padding only, so no row of the softmax is empty.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
///
/// let device = Device::flex();
/// let segments = Tensor::<2, Int>::from_data([[1, 1, 2, 0]], &device);
/// let mask = zrecord_burn::block_causal_mask(segments);
/// let allowed: Vec<bool> = mask.bool_not().into_data().try_to_vec_as()?;
/// assert_eq!(allowed, vec![
///     true,  false, false, false, // token 0 sees itself
///     true,  true,  false, false, // token 1 sees 0 and 1 (segment 1)
///     false, false, true,  false, // token 2 starts segment 2
///     false, false, false, true,  // padding sees itself
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn block_causal_mask(segment_ids: Tensor<2, Int>) -> Tensor<3, Bool> {
    let [b, l] = segment_ids.dims();
    let device = segment_ids.device();
    let query = segment_ids.clone().reshape([b, l, 1]).expand([b, l, l]);
    let key = segment_ids.reshape([b, 1, l]).expand([b, l, l]);
    let future = Tensor::<2, Bool>::tril_mask([l, l], 0, &device)
        .unsqueeze::<3>()
        .expand([b, l, l]);
    query.not_equal(key).bool_or(future)
}
