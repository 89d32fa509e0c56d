//! `Store`: one store, opened or created, read and written.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use zrecord::{AnyStore, Codec, DType, OpenOptions, Schema, StoreKind};

use crate::buffers::{self, Array, RaggedParts};
use crate::error;
use crate::recycler::Recycler;

/// A store: dense (fixed-shape records) or ragged (variable-shape), of one
/// dtype. The Python `zrecord.Store` wraps it with numpy.
#[pyclass(module = "zrecord._zrecord")]
pub struct Store {
    store: Option<AnyStore>,
    path: PathBuf,
    recycler: Arc<Recycler>,
}

#[pymethods]
impl Store {
    /// Opens the store at `path`; `read_only` shares it with other readers.
    #[staticmethod]
    #[pyo3(signature = (path, read_only = false))]
    fn open(py: Python<'_>, path: PathBuf, read_only: bool) -> PyResult<Store> {
        let options = OpenOptions::new().read_only(read_only);
        let store = py
            .detach(|| options.open::<AnyStore>(&path))
            .map_err(error::store)?;
        Ok(Store::over(store, path))
    }

    /// Creates an empty store at `path`: dense with records of `shape`, or
    /// ragged when `shape` is `None`.
    #[staticmethod]
    #[pyo3(signature = (path, dtype, shape = None, codec = "zstd", zstd_level = None))]
    fn create(
        path: PathBuf,
        dtype: &str,
        shape: Option<Vec<usize>>,
        codec: &str,
        zstd_level: Option<i32>,
    ) -> PyResult<Store> {
        let dtype = dtype_named(dtype)?;
        let schema = match &shape {
            Some(shape) => Schema::dense(dtype, shape),
            None => Schema::ragged(dtype),
        };
        let codec = match codec {
            "zstd" => Codec::Zstd,
            "raw" => Codec::Raw,
            other => {
                return Err(error::value(format!(
                    "codec {other:?}: expected \"zstd\" or \"raw\""
                )));
            }
        };
        let mut options = OpenOptions::new();
        if let Some(level) = zstd_level {
            options = options.zstd_level(level);
        }
        let store = options
            .create::<AnyStore>(&path, &schema, codec)
            .map_err(error::store)?;
        Ok(Store::over(store, path))
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.get()?.len() as usize)
    }

    /// `"dense"` or `"ragged"`.
    #[getter]
    fn kind(&self) -> PyResult<&'static str> {
        Ok(kind_name(self.get()?.kind()))
    }

    /// The dtype's name: `u8`, `f32`, `bf16`, …
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.get()?.dtype().name())
    }

    /// A dense record's shape; `None` for a ragged store.
    #[getter]
    fn shape(&self) -> PyResult<Option<Vec<usize>>> {
        Ok(self.get()?.schema().item_shape().map(<[usize]>::to_vec))
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Records, bytes and the store's format, as a dict.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let store = self.get()?;
        let stats = store.stats().map_err(error::store)?;
        let info = PyDict::new(py);
        info.set_item("kind", kind_name(store.kind()))?;
        info.set_item("dtype", store.dtype().name())?;
        info.set_item("shape", store.schema().item_shape().map(<[usize]>::to_vec))?;
        info.set_item("records", stats.records)?;
        info.set_item("logical_bytes", stats.logical_bytes)?;
        info.set_item("live_bytes", stats.live_bytes)?;
        info.set_item("chunk_bytes", stats.chunk_bytes)?;
        info.set_item("reclaimable_bytes", stats.reclaimable_bytes)?;
        info.set_item("codec", codec_name(store.codec()))?;
        info.set_item("format_version", store.format_version())?;
        info.set_item("read_only", store.is_read_only())?;
        Ok(info)
    }

    /// Dense records `indices` (`uint64` bytes) as one new array, decoded
    /// with the GIL released.
    fn gather_dense(&self, py: Python<'_>, indices: &[u8]) -> PyResult<Array> {
        let dense = self.get()?.as_dense().map_err(error::store)?;
        let stream = (dense.dtype(), dense.item_shape());
        buffers::gather_dense(py, &self.recycler, 0, stream, indices, |i, out| {
            dense.gather_into(i, out)
        })
    }

    /// Dense records `indices` into the caller's array at `address`
    /// (`len` bytes): private to the `zrecord` package, which checks the
    /// array first (see `raw::fill_at`).
    fn gather_dense_into(
        &self,
        py: Python<'_>,
        indices: &[u8],
        address: usize,
        len: usize,
    ) -> PyResult<()> {
        let dense = self.get()?.as_dense().map_err(error::store)?;
        let indices = buffers::indices(indices)?;
        crate::raw::fill_at(py, address, len, |out| dense.gather_bytes(&indices, out))
    }

    /// Ragged records `indices` (`uint64` bytes), gathered with the GIL
    /// released, as `(values, offsets, dims, ranks)`.
    fn gather_ragged<'py>(&self, py: Python<'py>, indices: &[u8]) -> PyResult<RaggedParts<'py>> {
        let ragged = self.get()?.as_ragged().map_err(error::store)?;
        buffers::gather_ragged(py, &self.recycler, 0, ragged.dtype(), indices, |i, out| {
            ragged.gather_into(i, out)
        })
    }

    /// Appends dense records given as bytes of `dtype`; returns the first
    /// new index.
    fn append_dense(&self, py: Python<'_>, dtype: &str, data: &[u8]) -> PyResult<u64> {
        let dense = self.get()?.as_dense().map_err(error::store)?;
        let dtype = dtype_named(dtype)?;
        py.detach(|| dense.append_bytes(dtype, data))
            .map_err(error::store)
    }

    /// Appends ragged records: their values as bytes of `dtype`, end to
    /// end, shaped by `dims` and `ranks` (`uint64` bytes, as
    /// `gather_ragged` gives them). Returns the first new index.
    fn append_ragged(
        &self,
        py: Python<'_>,
        dtype: &str,
        data: &[u8],
        dims: &[u8],
        ranks: &[u8],
    ) -> PyResult<u64> {
        let ragged = self.get()?.as_ragged().map_err(error::store)?;
        let dtype = dtype_named(dtype)?;
        let layout = buffers::layout(dims, ranks)?;
        py.detach(|| ragged.append_bytes(dtype, data, &layout))
            .map_err(error::store)
    }

    /// Makes every record appended so far durable.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.get()?;
        py.detach(|| store.sync()).map_err(error::store)
    }

    /// Deletes records `indices` (`uint64` bytes); returns how many.
    fn delete(&mut self, py: Python<'_>, indices: &[u8]) -> PyResult<u64> {
        let indices = buffers::indices(indices)?;
        let store = self.get_mut()?;
        py.detach(|| store.delete(&indices)).map_err(error::store)
    }

    /// Rewrites the store without its deleted records' bytes.
    fn compact<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let store = self.get_mut()?;
        let progress = py.detach(|| store.compact()).map_err(error::store)?;
        let out = PyDict::new(py);
        out.set_item("visited", progress.visited)?;
        out.set_item("total", progress.total)?;
        out.set_item("moved", progress.moved)?;
        out.set_item("moved_bytes", progress.moved_bytes)?;
        Ok(out)
    }

    /// Reads and checks every record.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let store = self.get()?;
        let report = py.detach(|| store.verify()).map_err(error::store)?;
        let out = PyDict::new(py);
        out.set_item("records", report.records)?;
        out.set_item("logical_bytes", report.logical_bytes)?;
        out.set_item("stored_bytes", report.stored_bytes)?;
        Ok(out)
    }

    /// Closes the store, releasing its lock; later calls raise.
    fn close(&mut self) {
        self.store = None;
    }
}

impl Store {
    /// A handle over an opened store.
    pub fn over(store: AnyStore, path: PathBuf) -> Store {
        Store {
            store: Some(store),
            path,
            recycler: Arc::default(),
        }
    }

    fn get(&self) -> PyResult<&AnyStore> {
        self.store.as_ref().ok_or_else(|| self.closed())
    }

    fn get_mut(&mut self) -> PyResult<&mut AnyStore> {
        let closed = self.closed();
        self.store.as_mut().ok_or(closed)
    }

    fn closed(&self) -> PyErr {
        error::value(format!("{}: the store is closed", self.path.display()))
    }
}

pub fn dtype_named(name: &str) -> PyResult<DType> {
    DType::from_name(name).ok_or_else(|| {
        let all: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        error::value(format!(
            "dtype {name:?}: expected one of {}",
            all.join(", ")
        ))
    })
}

pub fn kind_name(kind: StoreKind) -> &'static str {
    match kind {
        StoreKind::Dense => "dense",
        StoreKind::Ragged => "ragged",
    }
}

fn codec_name(codec: &Codec) -> &'static str {
    match codec {
        Codec::Raw => "raw",
        Codec::Zstd => "zstd",
        Codec::ZstdDict(_) => "zstd-dict",
    }
}
