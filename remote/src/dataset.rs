//! [`open_dataset`]: a sharded dataset in object storage, its folder listed
//! once and every shard's stores opened through [`Remote`].

use std::collections::HashMap;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use zrecord::dataset::MANIFEST_FILE;
use zrecord::{AnyStore, Dataset, OpenOptions};

use crate::remote::list_under;
use crate::stores::store_for_url;
use crate::{Error, Remote, RemoteOptions, Result, runtime};

/// Opens the sharded dataset (a folder with `dataset.zr`, as `zrecord
/// dataset join` writes and [`push`](crate::push) uploads) at `url`: its
/// streams read every shard as one index space, through one cache.
///
/// ```no_run
/// use zrecord_loader::Loader;
/// use zrecord_remote::{RemoteOptions, open_dataset};
///
/// let options = RemoteOptions::new().cache("/tmp/zrecord-cache", 100 << 30);
/// let dataset = open_dataset("s3://my-bucket/imagenet", options)?;
/// let loader = Loader::builder(256).dataset(dataset).seed(7).build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The setting errors of [`Remote::open`], before any request;
/// [`Error::Url`] for a URL no enabled backend opens; [`Error::Incomplete`]
/// when there is no `dataset.zr` (an unfinished push, or not a dataset);
/// [`Error::Dataset`] for a damaged manifest or a shard that differs from
/// it; failed requests as in [`Remote`].
pub fn open_dataset(url: &str, options: RemoteOptions) -> Result<Dataset> {
    let (store, prefix) = store_for_url(url, &options)?;
    open_dataset_with_store(store, &prefix, url, options)
}

/// [`open_dataset`] in an object store configured by the caller; `url`
/// names the dataset in messages and keys its cache.
///
/// # Errors
/// As [`open_dataset`].
pub fn open_dataset_with_store(
    store: Arc<dyn ObjectStore>,
    prefix: &str,
    url: &str,
    options: RemoteOptions,
) -> Result<Dataset> {
    let url = url.trim_end_matches('/');
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    let listing = list_under(&store, &prefix, url)?;
    let manifest = listing
        .iter()
        .find(|(parts, _)| parts.len() == 1 && parts[0] == MANIFEST_FILE)
        .map(|(_, meta)| meta.location.clone())
        .ok_or_else(|| Error::Incomplete {
            url: url.into(),
            objects: listing.len(),
        })?;
    let bytes = {
        let (store, object) = (Arc::clone(&store), format!("{url}/{MANIFEST_FILE}"));
        runtime::run(async move {
            let got = async { store.get(&manifest).await?.bytes().await };
            got.await.map_err(|source| Error::Fetch {
                object,
                range: 0..0,
                attempts: 1,
                source: Box::new(source),
            })
        })?
    };
    // The listing by folder, once: each store takes its folder's files.
    let mut by_folder: HashMap<String, Vec<(Vec<String>, ObjectMeta)>> = HashMap::new();
    for (mut parts, meta) in listing {
        if let Some(name) = parts.pop() {
            by_folder
                .entry(parts.join("/"))
                .or_default()
                .push((vec![name], meta));
        }
    }
    // Remote errors met while opening shards, returned as themselves.
    let mut failed = None;
    let opened = Dataset::open_with(url, &bytes, |relative| {
        let in_store = by_folder.remove(relative).unwrap_or_default();
        let store_url = format!("{url}/{relative}");
        let remote =
            Remote::from_listing(Arc::clone(&store), &store_url, in_store, options.clone())
                .map_err(|e| {
                    let message = e.to_string();
                    failed = Some(e);
                    zrecord::Error::InvalidArgument(message)
                })?;
        OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(Arc::new(remote))
    });
    match (opened, failed) {
        (Ok(dataset), _) => Ok(dataset),
        (Err(_), Some(remote)) => Err(remote),
        (Err(e), None) => Err(Error::Dataset(e)),
    }
}
