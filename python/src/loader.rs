//! `Loader`: the Rust loader — the same batches for the same configuration
//! — delivering each batch's streams as buffers numpy wraps.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use zrecord::Stream;
use zrecord_loader::{Batch, LastBatch, Loader as RustLoader, LoaderState, Mode};

use crate::buffers;
use crate::dataset::Dataset;
use crate::error;

/// An endless prefetching loader over a dataset or named stores.
#[pyclass(module = "zrecord._zrecord")]
pub struct Loader {
    loader: RustLoader<Batch>,
}

#[pymethods]
impl Loader {
    /// A loader of global batches of `batch_size` records over `dataset` or
    /// the stores at `stores` (name → path), sharded by `rank` and
    /// `world_size` (by `RANK` and `WORLD_SIZE` when both are `None`),
    /// sampling only the records `subset` (`uint64` bytes) when given.
    #[new]
    #[pyo3(signature = (
        batch_size, *, dataset = None, stores = None, mode = "cyclic", block_size = None,
        window_blocks = None, seed = 0, rank = None, world_size = None, workers = None,
        prefetch = None, start_step = None, state = None, last_batch = "wrap", subset = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn new(
        py: Python<'_>,
        batch_size: u64,
        dataset: Option<&Bound<'_, Dataset>>,
        stores: Option<BTreeMap<String, PathBuf>>,
        mode: &str,
        block_size: Option<u64>,
        window_blocks: Option<u64>,
        seed: u64,
        rank: Option<u64>,
        world_size: Option<u64>,
        workers: Option<usize>,
        prefetch: Option<usize>,
        start_step: Option<u64>,
        state: Option<&str>,
        last_batch: &str,
        subset: Option<&[u8]>,
    ) -> PyResult<Loader> {
        let mode = match (mode, block_size, window_blocks) {
            ("cyclic", None, None) => Mode::Cyclic,
            ("iid", None, None) => Mode::Iid,
            ("sequential", None, None) => Mode::Sequential,
            ("block", Some(block_size), Some(window_blocks)) => Mode::Block {
                block_size,
                window_blocks,
            },
            ("block", _, _) => {
                return Err(error::value(
                    "mode \"block\" needs block_size and window_blocks",
                ));
            }
            (m @ ("cyclic" | "iid" | "sequential"), _, _) => {
                return Err(error::value(format!(
                    "block_size and window_blocks belong to mode \"block\", not {m:?}"
                )));
            }
            (other, _, _) => {
                return Err(error::value(format!(
                    "mode {other:?}: expected \"cyclic\", \"iid\", \"sequential\" or \"block\""
                )));
            }
        };
        let last_batch = match last_batch {
            "wrap" => LastBatch::Wrap,
            "short" => LastBatch::Short,
            other => {
                return Err(error::value(format!(
                    "last_batch {other:?}: expected \"wrap\" or \"short\""
                )));
            }
        };
        let mut builder = RustLoader::builder(batch_size)
            .mode(mode)
            .seed(seed)
            .last_batch(last_batch);
        match (dataset, stores) {
            (Some(dataset), None) => builder = builder.dataset(dataset.get().dataset.clone()),
            (None, Some(stores)) if !stores.is_empty() => {
                for (name, path) in stores {
                    let stream = py.detach(|| Stream::open(&path)).map_err(error::store)?;
                    builder = builder.stream(name, stream);
                }
            }
            _ => {
                return Err(error::value(
                    "give a dataset or stores (name → path), not both",
                ));
            }
        }
        builder = match (rank, world_size) {
            (Some(rank), Some(world_size)) => builder.shard(rank, world_size),
            (None, None) => builder.shard_from_env().map_err(error::loader)?,
            _ => return Err(error::value("give rank and world_size together")),
        };
        if let Some(workers) = workers {
            builder = builder.workers(workers);
        }
        if let Some(prefetch) = prefetch {
            builder = builder.prefetch(prefetch);
        }
        if let Some(step) = start_step {
            builder = builder.start_step(step);
        }
        if let Some(subset) = subset {
            builder = builder.subset(buffers::indices(subset)?);
        }
        if let Some(state) = state {
            let state: LoaderState = serde_json::from_str(state)
                .map_err(|e| error::value(format!("state: not a loader state: {e}")))?;
            builder = builder.resume(&state);
        }
        let loader = py.detach(|| builder.build()).map_err(error::loader)?;
        Ok(Loader { loader })
    }

    /// The next batch as `(step, indices, columns)`: `indices` as `uint64`
    /// bytes, `columns` a list of `(name, (kind, dtype, parts))` where a
    /// dense column's parts are `(values,)` and a ragged one's
    /// `(values, offsets, dims, ranks)`. The values are the batch's own
    /// buffers, lent without a copy; they return to the loader's pool when
    /// the last array over them is gone.
    fn next_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let loader = &mut self.loader;
        let batch = py.detach(|| loader.next_batch()).map_err(error::loader)?;
        let step = batch.step();
        let indices: Vec<u8> = batch
            .indices()
            .iter()
            .flat_map(|i| i.to_le_bytes())
            .collect();
        let columns = buffers::batch(py, batch)?;
        (step, PyBytes::new(py, &indices), columns).into_pyobject(py)
    }

    /// The loader's state as JSON: resume from it with `state=`.
    fn state(&self) -> PyResult<String> {
        serde_json::to_string(&self.loader.state())
            .map_err(|e| error::value(format!("cannot encode the state: {e}")))
    }

    /// The step the next batch belongs to.
    #[getter]
    fn step(&self) -> u64 {
        self.loader.step()
    }

    /// Records in this rank's batch.
    #[getter]
    fn batch_size(&self) -> usize {
        self.loader.batch_size()
    }

    /// Steps in one epoch of the global batches.
    #[getter]
    fn steps_per_epoch(&self) -> u64 {
        self.loader.steps_per_epoch()
    }
}
