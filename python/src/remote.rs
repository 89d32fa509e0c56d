//! Stores and datasets in object storage (`s3://`, S3-compatible servers),
//! read through zrecord-remote's node cache.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use zrecord::dataset::{MANIFEST_FILE, Manifest};
use zrecord::{AnyStore, OpenOptions};
use zrecord_remote::{Remote, RemoteOptions};

use crate::dataset::Dataset;
use crate::error::{self, ZrecordError};
use crate::store::Store;

/// Opens the store or dataset at `url`, read-only: a `Dataset` where
/// `dataset.zr` is, else a `Store` where `store.zr` is. `cache` is a folder
/// shared by the node's processes, `cache_limit` its size in bytes;
/// `options` are the object store's settings (`aws_endpoint`, `region`, …)
/// beside those the environment gives.
#[pyfunction]
#[pyo3(signature = (url, cache = None, cache_limit = 0, pin = false, options = None))]
pub fn open_url(
    py: Python<'_>,
    url: &str,
    cache: Option<PathBuf>,
    cache_limit: u64,
    pin: bool,
    options: Option<BTreeMap<String, String>>,
) -> PyResult<Py<PyAny>> {
    let url = url.trim_end_matches('/');
    let mut settings = settings(options).pin(pin);
    if let Some(cache) = cache {
        settings = settings.cache(cache, cache_limit);
    }
    let failed = |e: zrecord_remote::Error| ZrecordError::new_err(format!("{url}: {e}"));
    let listing = py
        .detach(|| zrecord_remote::list(url, &settings))
        .map_err(failed)?;
    let has = |name: &str| listing.iter().any(|(n, _)| n == name);
    if has(MANIFEST_FILE) {
        let dataset = py
            .detach(|| zrecord_remote::open_dataset(url, settings))
            .map_err(failed)?;
        return Ok(Py::new(py, Dataset::over(dataset))?.into_any());
    }
    if has("store.zr") {
        let store = py
            .detach(|| -> Result<AnyStore, String> {
                let remote = Remote::open(url, settings).map_err(|e| e.to_string())?;
                OpenOptions::new()
                    .read_only(true)
                    .open::<AnyStore>(Arc::new(remote))
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| ZrecordError::new_err(format!("{url}: {e}")))?;
        return Ok(Py::new(py, Store::over(store, PathBuf::from(url)))?.into_any());
    }
    Err(ZrecordError::new_err(format!(
        "{url}: neither a dataset ({MANIFEST_FILE}) nor a store (store.zr){}",
        if listing.is_empty() {
            ": nothing there"
        } else {
            ", or an unfinished push"
        }
    )))
}

/// The object store's settings (`aws_endpoint`, `region`, …) beside those
/// the environment gives.
type Settings = Option<BTreeMap<String, String>>;

fn settings(options: Settings) -> RemoteOptions {
    let mut settings = RemoteOptions::new();
    for (key, value) in options.unwrap_or_default() {
        settings = settings.store_option(key, value);
    }
    settings
}

/// Uploads the store, folder of stores or dataset at `local` into the
/// empty folder `url`, headers last; returns the bytes uploaded.
#[pyfunction]
#[pyo3(signature = (local, url, options = None))]
pub fn push(py: Python<'_>, local: PathBuf, url: &str, options: Settings) -> PyResult<u64> {
    let settings = settings(options);
    let report = py
        .detach(|| zrecord_remote::push(&local, url, &settings, false, |_, _| {}))
        .map_err(error::remote)?;
    Ok(report.bytes)
}

/// Every object under the folder `url`: its path below the folder, size.
#[pyfunction]
#[pyo3(signature = (url, options = None))]
pub fn list_url(py: Python<'_>, url: &str, options: Settings) -> PyResult<Vec<(String, u64)>> {
    let settings = settings(options);
    py.detach(|| zrecord_remote::list(url, &settings))
        .map_err(error::remote)
}

/// Deletes every object under the folder `url`; returns how many.
#[pyfunction]
#[pyo3(signature = (url, options = None))]
pub fn remove_url(py: Python<'_>, url: &str, options: Settings) -> PyResult<usize> {
    let settings = settings(options);
    py.detach(|| zrecord_remote::remove(url, &settings))
        .map_err(error::remote)
}

/// Joins the shard folders under `url` and uploads `dataset.zr`; returns
/// `[(folder, records)]`.
#[pyfunction]
#[pyo3(signature = (url, options = None))]
pub fn join_url(py: Python<'_>, url: &str, options: Settings) -> PyResult<Vec<(String, u64)>> {
    let settings = settings(options);
    let manifest = py
        .detach(|| zrecord_remote::join_dataset(url, &settings))
        .map_err(error::remote)?;
    Ok(manifest
        .shards
        .into_iter()
        .map(|s| (s.folder, s.records))
        .collect())
}

/// The shards `(folder, records)` the `dataset.zr` of the dataset folder or
/// URL `path` lists, read from the manifest alone.
#[pyfunction]
#[pyo3(signature = (path, options = None))]
pub fn manifest_shards(
    py: Python<'_>,
    path: &str,
    options: Settings,
) -> PyResult<Vec<(String, u64)>> {
    let manifest = if path.contains("://") {
        let settings = settings(options);
        py.detach(|| zrecord_remote::read_manifest(path, &settings))
            .map_err(error::remote)?
    } else {
        let file = std::path::Path::new(path).join(MANIFEST_FILE);
        let bytes = std::fs::read(&file)
            .map_err(|e| ZrecordError::new_err(format!("cannot read {}: {e}", file.display())))?;
        Manifest::decode(path.as_ref(), &bytes).map_err(error::store)?
    };
    Ok(manifest
        .shards
        .into_iter()
        .map(|s| (s.folder, s.records))
        .collect())
}
