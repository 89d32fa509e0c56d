//! Stores and datasets in object storage (`s3://`, S3-compatible servers),
//! read through zrecord-remote's node cache.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use zrecord::dataset::MANIFEST_FILE;
use zrecord::{AnyStore, OpenOptions};
use zrecord_remote::{Remote, RemoteOptions};

use crate::dataset::Dataset;
use crate::error::ZrecordError;
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
    let mut settings = RemoteOptions::new().pin(pin);
    if let Some(cache) = cache {
        settings = settings.cache(cache, cache_limit);
    }
    for (key, value) in options.unwrap_or_default() {
        settings = settings.store_option(key, value);
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
