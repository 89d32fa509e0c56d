//! [`image_tensor`]: encoded images of a ragged `u8` stream, decoded and
//! transformed on the worker threads, as one `(B, 3, H, W)` float tensor
//! (feature `vision`).

use burn::tensor::{Device, Tensor, TensorData};
use zrecord_loader::Batch;
use zrecord_vision::{BatchKey, Transform};

use crate::{Result, tensor_from_data};

/// Decodes and transforms the encoded images of ragged `u8` stream `name`
/// (as `zrecord import images` writes them) into a `(B, 3, H, W)` `f32`
/// tensor: the transform writes straight into the tensor's buffer, one
/// allocation per batch. Random choices are keyed by `(seed, batch.step(),
/// position)`, so a resumed run reproduces them.
///
/// Call it in the [`StoreDataLoader`](crate::StoreDataLoader)'s converter:
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use zrecord::{Codec, DenseStore, RaggedStore};
/// use zrecord_burn::vision::Transform;
/// use zrecord_burn::{StoreDataLoader, dense_tensor, image_tensor};
/// # let dir = tempfile::tempdir()?;
/// # let photos: Vec<Vec<u8>> = (0..8).map(|k| zrecord_burn::vision::testing::png_rgb(40, 30, k)).collect();
///
/// let images = RaggedStore::<u8>::create(dir.path().join("images"), Codec::Raw)?;
/// images.append_slices(&photos)?; // encoded PNG or JPEG files
/// let labels = DenseStore::<i64>::create(dir.path().join("labels"), &[], Codec::Raw)?;
/// labels.append(&[0, 1, 0, 1, 0, 1, 0, 1])?;
///
/// let augment = Transform::random_resized_crop(24).flip(0.5);
/// let loader = StoreDataLoader::builder(4)
///     .stream("image", images)
///     .stream("label", labels)
///     .build(&Device::flex(), move |mut batch, device| {
///         let x: Tensor<4> = image_tensor(&batch, "image", &augment, 7, device)?;
///         let y: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
///         Ok((x, y))
///     })?;
/// # use burn::data::dataloader::DataLoader;
/// let (x, _) = loader.iter().next().unwrap()?;
/// assert_eq!(x.dims(), [4, 3, 24, 24]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Loader`](crate::Error::Loader) when the batch has no ragged
/// `u8` stream `name`; [`Error::Image`](crate::Error::Image) naming step,
/// position and record of an image that fails to decode (unless the
/// transform blanks it, see [`OnCorrupt`](zrecord_vision::OnCorrupt)) — a
/// bad record: the data loader stops there, or, with
/// [`bad_records(BadRecords::Skip)`](crate::StoreDataLoaderBuilder::bad_records),
/// replaces it by a substitute and carries on.
pub fn image_tensor(
    batch: &Batch,
    name: &str,
    transform: &Transform,
    seed: u64,
    device: &Device,
) -> Result<Tensor<4>> {
    let view = batch.ragged::<u8>(name)?;
    let n = view.len();
    let mut values = vec![0f32; n * transform.image_len()];
    let records = (0..n).map(|k| {
        let range = view.layout().range(k).unwrap_or_default();
        view.values().get(range).unwrap_or_default()
    });
    let key = BatchKey {
        seed,
        step: batch.step(),
        first_position: batch.first_position(),
        records: batch.indices(),
    };
    transform.batch_f32(records, key, &mut values)?;
    let [c, h, w] = transform.chw();
    tensor_from_data(TensorData::new(values, [n, c, h, w]), name, device)
}
