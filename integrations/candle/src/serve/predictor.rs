//! [`Predictor`]: what runs one batch; [`StorePredictor`]: a dense store and
//! a forward function.

use std::sync::Arc;

use candle_core::{Device, Tensor};
use zrecord::{DenseShards, StoreKind};
use zrecord_loader::Stream;

use crate::Result;
use crate::convert::to_tensor;

/// Runs a model on a batch of records named by id.
///
/// The [`Batcher`](crate::Batcher) calls [`predict`](Predictor::predict) on
/// its own thread with the ids of several requests end to end (already
/// checked against [`records`](Predictor::records)), and hands each request
/// the rows of the output that belong to it. It calls
/// [`records`](Predictor::records) from the threads that submit requests.
///
/// Implement it for inputs [`StorePredictor`] does not cover — several
/// streams, a ragged stream padded with [`pad_records`](crate::pad_records):
///
/// ```
/// use candle_core::{Device, Tensor};
/// use zrecord::RaggedStore;
/// use zrecord_candle::{Predictor, pad_records};
///
/// /// Mean token id of each sequence.
/// struct MeanToken {
///     tokens: RaggedStore<u32>,
/// }
///
/// impl Predictor for MeanToken {
///     fn records(&self) -> u64 {
///         self.tokens.len()
///     }
///     fn predict(&self, ids: &[u64]) -> zrecord_candle::Result<Tensor> {
///         let batch = self.tokens.gather(ids)?;
///         let padded = pad_records(batch.values(), batch.layout(), 0, &Device::Cpu)?;
///         let sums = padded.values.to_dtype(candle_core::DType::F32)?.sum(1)?;
///         Ok(sums.div(&padded.lengths.to_dtype(candle_core::DType::F32)?)?)
///     }
/// }
/// # let dir = tempfile::tempdir()?;
/// # let tokens = RaggedStore::<u32>::create(dir.path().join("t"), zrecord::Codec::Raw)?;
/// # tokens.append_slices(&[vec![1, 3], vec![4]])?;
/// # assert_eq!(MeanToken { tokens }.predict(&[0, 1])?.to_vec1::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Predictor: Send + Sync + 'static {
    /// Records that requests may name: ids `0..records()`. Called for every
    /// request, from the submitting thread; keep it cheap.
    fn records(&self) -> u64;

    /// Runs the model on records `ids` (any order, repeats allowed): a tensor
    /// whose axis 0 has one row per id, in order.
    ///
    /// # Errors
    /// Whatever fails; the batcher hands the error to the requests of the
    /// batch (after retrying them one by one, so one bad request does not
    /// fail the others).
    fn predict(&self, ids: &[u64]) -> Result<Tensor>;
}

/// A [`Predictor`] over one dense store: gathers the ids (one parallel batch
/// gather), hands the buffer to a `(B, *item_shape)` tensor without a copy
/// (see [`tensor_from_vec`](crate::tensor_from_vec)) and runs `forward` on it.
///
/// `forward` sees the store's dtype as the crate's dtype table maps it (say
/// `u8` pixels): casting and scaling belong to the model.
pub struct StorePredictor<F> {
    store: Arc<DenseShards>,
    device: Device,
    forward: F,
}

impl<F> StorePredictor<F>
where
    F: Fn(Tensor) -> candle_core::Result<Tensor> + Send + Sync + 'static,
{
    /// A predictor over `store` — any dense store, an `Arc<DynDenseStore>`
    /// shared with a loader, or a sharded dataset's dense stream (ids are
    /// its global indices) — whose tensors go to `device`.
    ///
    /// # Errors
    /// [`Error::Loader`](crate::Error::Loader) (a wrong-kind error) for a ragged store: implement
    /// [`Predictor`] with [`pad_records`](crate::pad_records) for those.
    pub fn new(store: impl Into<Stream>, device: &Device, forward: F) -> Result<Self> {
        match store.into() {
            Stream::Dense(store) => Ok(StorePredictor {
                store,
                device: device.clone(),
                forward,
            }),
            Stream::Ragged(store) => Err(zrecord_loader::Error::WrongKind {
                name: store.path().display().to_string(),
                expected: StoreKind::Dense,
                found: StoreKind::Ragged,
            }
            .into()),
        }
    }

    /// A predictor over the dense store at `path`, opened read-only, so a
    /// pool of servers (processes) can share it; see
    /// [`Stream::open`](zrecord_loader::Stream::open).
    ///
    /// # Errors
    /// [`Error::Store`](crate::Error::Store) when it does not open; as [`new`](Self::new).
    pub fn open(path: impl AsRef<std::path::Path>, device: &Device, forward: F) -> Result<Self> {
        Self::new(Stream::open(path)?, device, forward)
    }

    /// The records: a store, or a dataset's shards.
    pub fn store(&self) -> &Arc<DenseShards> {
        &self.store
    }

    /// The gathered input of records `ids` as the forward function sees it:
    /// for offline inference and tests.
    ///
    /// # Errors
    /// [`Error::Store`](crate::Error::Store) for an unknown id or a corrupt record; as
    /// [`tensor_from_vec`](crate::tensor_from_vec).
    pub fn input(&self, ids: &[u64]) -> Result<Tensor> {
        let values = self.store.gather_dyn(ids)?;
        let mut shape = Vec::with_capacity(1 + self.store.item_shape().len());
        shape.push(ids.len());
        shape.extend_from_slice(self.store.item_shape());
        to_tensor(values, &shape, &self.device, "input", false)
    }
}

impl<F> Predictor for StorePredictor<F>
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

impl<F> std::fmt::Debug for StorePredictor<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorePredictor")
            .field("store", &self.store.path())
            .field("dtype", &self.store.dtype())
            .field("item_shape", &self.store.item_shape())
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use zrecord::{Codec, Dataset, DenseStore, shard_folder};

    use super::*;

    #[test]
    fn a_sharded_dataset_serves_its_global_ids() {
        let dir = tempfile::tempdir().unwrap();
        for (k, values) in [vec![0u8, 1, 2], vec![3, 4]].into_iter().enumerate() {
            let shard = dir.path().join(shard_folder(k as u64, 2));
            std::fs::create_dir_all(&shard).unwrap();
            let store = DenseStore::<u8>::create(shard.join("x"), &[1], Codec::Raw).unwrap();
            store.append(&values).unwrap();
        }
        Dataset::join(dir.path()).unwrap();
        let dataset = Dataset::open(dir.path()).unwrap();
        let stream = dataset.stream("x").unwrap().clone();
        let predictor = StorePredictor::new(stream, &Device::Cpu, Ok).unwrap();
        assert_eq!(predictor.records(), 5);
        let rows = predictor.predict(&[4, 0, 3]).unwrap();
        assert_eq!(
            rows.to_vec2::<u8>().unwrap(),
            vec![vec![4], vec![0], vec![3]]
        );
    }
}
