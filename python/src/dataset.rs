//! `Dataset`: a sharded dataset folder, read; and `join`, which makes one.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use zrecord::{Dataset as RustDataset, DenseShards, RaggedShards, Stream};

use crate::buffers::{self, Array, RaggedParts};
use crate::error;
use crate::recycler::Recycler;
use crate::store::kind_name;

/// A dataset folder (shards and their `dataset.zr` manifest), read-only.
#[pyclass(module = "zrecord._zrecord", frozen)]
pub struct Dataset {
    pub(crate) dataset: RustDataset,
    recycler: Arc<Recycler>,
}

#[pymethods]
impl Dataset {
    /// Opens the dataset folder `path` and every shard's stores, read-only.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Dataset> {
        let dataset = py
            .detach(|| RustDataset::open(&path))
            .map_err(error::store)?;
        Ok(Dataset::over(dataset))
    }

    fn __len__(&self) -> usize {
        self.dataset.len() as usize
    }

    /// Every stream as `(name, kind, dtype, shape)`; `shape` is `None` for a
    /// ragged stream.
    fn streams(&self) -> Vec<(String, &'static str, &'static str, Option<Vec<usize>>)> {
        self.dataset
            .streams()
            .map(|(name, stream)| {
                let shape = stream.as_dense().map(|d| d.item_shape().to_vec());
                (
                    name.to_string(),
                    kind_name(stream.kind()),
                    stream.dtype().name(),
                    shape,
                )
            })
            .collect()
    }

    /// Shards as `(folder, records)`, in index order.
    fn shards(&self) -> Vec<(String, u64)> {
        self.dataset
            .manifest()
            .shards
            .iter()
            .map(|s| (s.folder.clone(), s.records))
            .collect()
    }

    /// Dense records `indices` of stream `name`: as `Store.gather_dense`.
    fn gather_dense(&self, py: Python<'_>, name: &str, indices: &[u8]) -> PyResult<Array> {
        let dense = self.dense(name)?;
        let stream = (dense.dtype(), dense.item_shape());
        buffers::gather_dense(
            py,
            &self.recycler,
            self.slot(name),
            stream,
            indices,
            |i, out| dense.gather_into(i, out),
        )
    }

    /// Dense records `indices` of stream `name` into the caller's array: as
    /// `Store.gather_dense_into`.
    fn gather_dense_into(
        &self,
        py: Python<'_>,
        name: &str,
        indices: &[u8],
        address: usize,
        len: usize,
    ) -> PyResult<()> {
        let dense = self.dense(name)?;
        let indices = buffers::indices(indices)?;
        crate::raw::fill_at(py, address, len, |out| dense.gather_bytes(&indices, out))
    }

    /// Ragged records `indices` of stream `name`: as `Store.gather_ragged`.
    fn gather_ragged<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        indices: &[u8],
    ) -> PyResult<RaggedParts<'py>> {
        let ragged = self.ragged(name)?;
        let slot = self.slot(name);
        buffers::gather_ragged(
            py,
            &self.recycler,
            slot,
            ragged.dtype(),
            indices,
            |i, out| ragged.gather_into(i, out),
        )
    }
}

impl Dataset {
    /// A handle over an opened dataset.
    pub fn over(dataset: RustDataset) -> Dataset {
        Dataset {
            dataset,
            recycler: Arc::default(),
        }
    }

    /// Stream `name`'s place among the streams: its recycler slot.
    fn slot(&self, name: &str) -> usize {
        self.dataset
            .streams()
            .position(|(n, _)| n == name)
            .unwrap_or(usize::MAX)
    }

    fn dense(&self, name: &str) -> PyResult<&DenseShards> {
        self.stream(name)?
            .as_dense()
            .ok_or_else(|| error::value(format!("stream {name:?} is ragged: use gather_ragged")))
    }

    fn ragged(&self, name: &str) -> PyResult<&RaggedShards> {
        self.stream(name)?
            .as_ragged()
            .ok_or_else(|| error::value(format!("stream {name:?} is dense: use gather_dense")))
    }

    fn stream(&self, name: &str) -> PyResult<&Stream> {
        self.dataset.stream(name).ok_or_else(|| {
            let names: Vec<&str> = self.dataset.streams().map(|(n, _)| n).collect();
            error::value(format!(
                "no stream {name:?}: the dataset has {}",
                names.join(", ")
            ))
        })
    }
}

/// Checks the shard folders of `path` and writes its manifest: returns the
/// shards as `(folder, records)`.
#[pyfunction]
pub fn join(py: Python<'_>, path: PathBuf) -> PyResult<Vec<(String, u64)>> {
    let manifest = py
        .detach(|| RustDataset::join(&path))
        .map_err(error::store)?;
    Ok(manifest
        .shards
        .iter()
        .map(|s| (s.folder.clone(), s.records))
        .collect())
}
