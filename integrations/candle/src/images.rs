//! Encoded images into candle tensors (feature `vision`): [`image_tensor`]
//! for loader batches, [`ImagePredictor`] to serve an image classifier from
//! a store of JPEG/PNG files, decoding and transforming per request.

use std::sync::Arc;

use candle_core::{Device, Tensor};
use zrecord::{RaggedLayout, RaggedShards, StoreKind};
use zrecord_loader::{Batch, Stream};
use zrecord_vision::{BatchKey, Transform};

use crate::{Predictor, Result};

/// Transforms the encoded images `values`/`layout` into a `(B, 3, H, W)`
/// `f32` tensor on `device`, written straight into its buffer.
fn transform_into_tensor(
    values: &[u8],
    layout: &RaggedLayout,
    transform: &Transform,
    key: BatchKey<'_>,
    device: &Device,
) -> Result<Tensor> {
    let n = layout.len();
    let mut out = vec![0f32; n * transform.image_len()];
    let images = (0..n).map(|k| {
        let range = layout.range(k).unwrap_or_default();
        values.get(range).unwrap_or_default()
    });
    transform.batch_f32(images, key, &mut out)?;
    let [c, h, w] = transform.chw();
    Ok(Tensor::from_vec(out, (n, c, h, w), device)?)
}

/// Decodes and transforms the encoded images of ragged `u8` stream `name`
/// into a `(B, 3, H, W)` `f32` tensor (on the CPU the buffer the transform
/// wrote becomes the tensor's storage). Random choices are keyed by `(seed,
/// batch.step(), position)`.
///
/// # Errors
/// [`Error::Loader`](crate::Error::Loader) when the batch has no ragged `u8`
/// stream `name`; [`Error::Image`](crate::Error::Image) naming the step,
/// position and record of an image that fails to decode — a bad record, to
/// which the loader's [`BadRecords`](zrecord_loader::BadRecords) policy
/// applies when this runs in a
/// [`try_transform`](zrecord_loader::LoaderBuilder::try_transform).
pub fn image_tensor(
    batch: &Batch,
    name: &str,
    transform: &Transform,
    seed: u64,
    device: &Device,
) -> Result<Tensor> {
    let view = batch.ragged::<u8>(name)?;
    let key = BatchKey {
        seed,
        step: batch.step(),
        first_position: batch.first_position(),
        records: batch.indices(),
    };
    transform_into_tensor(view.values(), view.layout(), transform, key, device)
}

/// A [`Predictor`] over a store of encoded images (as `zrecord import
/// images` writes them): gathers the requested records, decodes and
/// transforms them (say [`Transform::center_crop`] + normalise) into one
/// `(B, 3, H, W)` tensor and runs `forward` on it.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use zrecord::{Codec, RaggedStore};
/// use zrecord_candle::vision::Transform;
/// use zrecord_candle::{BatchConfig, Batcher, ImagePredictor};
/// # let dir = tempfile::tempdir()?;
/// # let photos: Vec<Vec<u8>> = (0..4).map(|k| zrecord_candle::vision::testing::png_rgb(40, 30, k)).collect();
///
/// let images = RaggedStore::<u8>::create(dir.path().join("images"), Codec::Raw)?;
/// images.append_slices(&photos)?; // encoded PNG or JPEG files
/// // A stand-in model: the mean of each channel.
/// let predictor = ImagePredictor::new(images, Transform::center_crop(32, 24), &Device::Cpu, |x: Tensor| x.mean((2, 3)))?;
/// let batcher = Batcher::start(predictor, BatchConfig::default())?;
/// let rows = batcher.predict(vec![3, 0])?;
/// assert_eq!(rows.dims(), [2, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ImagePredictor<F> {
    store: Arc<RaggedShards>,
    transform: Transform,
    device: Device,
    forward: F,
}

impl<F> ImagePredictor<F>
where
    F: Fn(Tensor) -> candle_core::Result<Tensor> + Send + Sync + 'static,
{
    /// A predictor over `store`, a ragged `u8` store of encoded images.
    ///
    /// # Errors
    /// [`Error::Loader`](crate::Error::Loader) (a wrong-kind or wrong-dtype
    /// error) for any other store; [`Error::Image`](crate::Error::Image) for
    /// an invalid transform.
    pub fn new(
        store: impl Into<Stream>,
        transform: Transform,
        device: &Device,
        forward: F,
    ) -> Result<Self> {
        transform.check()?;
        let store = match store.into() {
            Stream::Ragged(store) if store.dtype() == zrecord::DType::U8 => store,
            Stream::Ragged(store) => {
                return Err(zrecord_loader::Error::WrongDType {
                    name: store.path().display().to_string(),
                    expected: zrecord::DType::U8,
                    found: store.dtype(),
                }
                .into());
            }
            Stream::Dense(store) => {
                return Err(zrecord_loader::Error::WrongKind {
                    name: store.path().display().to_string(),
                    expected: StoreKind::Ragged,
                    found: StoreKind::Dense,
                }
                .into());
            }
        };
        Ok(ImagePredictor {
            store,
            transform,
            device: device.clone(),
            forward,
        })
    }

    /// The model's input for records `ids`: decoded, transformed, `(B, 3, H, W)`.
    ///
    /// # Errors
    /// [`Error::Store`](crate::Error::Store) for an unknown id;
    /// [`Error::Image`](crate::Error::Image) naming an image that fails to decode.
    pub fn input(&self, ids: &[u64]) -> Result<Tensor> {
        let batch = self.store.gather_dyn(ids)?;
        let values = batch.values().as_slice::<u8>().unwrap_or_default();
        let key = BatchKey {
            seed: 0,
            step: 0,
            first_position: 0,
            records: ids,
        };
        transform_into_tensor(values, batch.layout(), &self.transform, key, &self.device)
    }
}

impl<F> Predictor for ImagePredictor<F>
where
    F: Fn(Tensor) -> candle_core::Result<Tensor> + Send + Sync + 'static,
{
    fn records(&self) -> u64 {
        self.store.len()
    }

    fn predict(&self, ids: &[u64]) -> Result<Tensor> {
        Ok((self.forward)(self.input(ids)?)?)
    }
}

impl<F> std::fmt::Debug for ImagePredictor<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImagePredictor")
            .field("store", &self.store.path())
            .field("transform", &self.transform)
            .finish_non_exhaustive()
    }
}
