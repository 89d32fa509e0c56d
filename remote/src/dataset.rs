//! [`open_dataset`]: a sharded dataset in object storage, its folder listed
//! once and every shard's stores opened through [`Remote`].

use std::collections::HashMap;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload};
use zrecord::dataset::{MANIFEST_FILE, Manifest, ManifestStream, ShardContents};
use zrecord::{AnyStore, Dataset, OpenOptions};

use crate::remote::list_under;
use crate::stores::store_for_url;
use crate::transfer::HEADER;
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
    let bytes = read_object(&store, &manifest, &format!("{url}/{MANIFEST_FILE}"))?;
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

/// [`Dataset::join`] in object storage: checks the shard folders under the
/// folder `url` (each a store, or a folder of stores, as [`push`](crate::push)
/// uploads them) by reading their headers, and uploads the dataset's
/// `dataset.zr`, replacing an older one. How a job whose tasks each pushed
/// one shard commits them as one dataset: until this returns, the folder
/// does not open as a dataset.
///
/// Shards are the folders under `url` whose names do not start with `.`;
/// every rule of [`Dataset::join`] holds.
///
/// # Errors
/// The setting errors of [`Remote::open`], before any request;
/// [`Error::Dataset`] naming the shard that is missing or differs;
/// [`Error::Incomplete`] for a shard store whose upload did not finish;
/// [`Error::Upload`] when `dataset.zr` cannot be written; failed requests
/// as in [`Remote`].
pub fn join_dataset(url: &str, options: &RemoteOptions) -> Result<Manifest> {
    let url = url.trim_end_matches('/');
    let (store, prefix) = store_for_url(url, options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    // Each shard folder's objects, by their path below it.
    let mut shards: HashMap<String, Vec<(Vec<String>, ObjectMeta)>> = HashMap::new();
    for (mut parts, meta) in list_under(&store, &prefix, url)? {
        if parts.len() < 2 || parts[0].starts_with('.') {
            continue; // a file beside the shards (an older dataset.zr), or hidden
        }
        let folder = parts.remove(0);
        shards.entry(folder).or_default().push((parts, meta));
    }
    let folders: Vec<String> = shards.keys().cloned().collect();
    let mut contents = read_shards(&store, url, shards, options);
    let mut failed = None;
    let joined = Manifest::join(url.as_ref(), folders, |folder| {
        let found = contents
            .remove(folder)
            .unwrap_or_else(|| Ok(Default::default()));
        found.map_err(|e| {
            let message = e.to_string();
            failed = Some(e);
            zrecord::Error::InvalidArgument(message)
        })
    });
    let manifest = match (joined, failed) {
        (Ok(manifest), _) => manifest,
        (Err(_), Some(remote)) => return Err(remote),
        (Err(e), None) => return Err(Error::Dataset(e)),
    };
    let bytes = manifest.encode().map_err(Error::Dataset)?;
    let object = prefix.clone().join(MANIFEST_FILE);
    let object_url = format!("{url}/{MANIFEST_FILE}");
    runtime::run(async move {
        store
            .put(&object, PutPayload::from(bytes))
            .await
            .map(|_| ())
            .map_err(|source| Error::Upload {
                object: object_url,
                source,
            })
    })?;
    Ok(manifest)
}

/// The manifest of the dataset at `url` — its streams and shards — read
/// from its `dataset.zr` alone, no shard opened.
///
/// # Errors
/// The setting errors of [`Remote::open`], before any request;
/// [`Error::Fetch`] when `dataset.zr` cannot be read; [`Error::Dataset`]
/// for a damaged one.
pub fn read_manifest(url: &str, options: &RemoteOptions) -> Result<Manifest> {
    let url = url.trim_end_matches('/');
    let (store, prefix) = store_for_url(url, options)?;
    let object = ObjectPath::from(prefix.trim_matches('/')).join(MANIFEST_FILE);
    let bytes = read_object(&store, &object, &format!("{url}/{MANIFEST_FILE}"))?;
    Manifest::decode(url.as_ref(), &bytes).map_err(Error::Dataset)
}

/// Shard folders whose headers are read at once: each is a few requests,
/// so a join of thousands of shards waits on latency, not bandwidth.
const SHARDS_IN_FLIGHT: usize = 16;

/// What each shard folder (its objects by their paths below it) holds, read
/// by [`SHARDS_IN_FLIGHT`] threads.
fn read_shards(
    store: &Arc<dyn ObjectStore>,
    url: &str,
    shards: HashMap<String, Vec<(Vec<String>, ObjectMeta)>>,
    options: &RemoteOptions,
) -> HashMap<String, Result<ShardContents>> {
    let threads = shards.len().min(SHARDS_IN_FLIGHT);
    let shards = std::sync::Mutex::new(shards.into_iter());
    let read = std::sync::Mutex::new(HashMap::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let next = shards.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((folder, objects)) = next else { break };
                    let found = shard_contents(store, &format!("{url}/{folder}"), objects, options);
                    read.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(folder, found);
                }
            });
        }
    });
    read.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// What the shard folder `url` holds, from its `objects` (paths below it):
/// the folder's own store, else each subfolder's, opened for its header.
fn shard_contents(
    store: &Arc<dyn ObjectStore>,
    url: &str,
    mut objects: Vec<(Vec<String>, ObjectMeta)>,
    options: &RemoteOptions,
) -> Result<ShardContents> {
    let open = |store_url: &str, listing| -> Result<(zrecord::Schema, u64)> {
        let remote = Remote::from_listing(Arc::clone(store), store_url, listing, options.clone())?;
        let opened = OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(Arc::new(remote))
            .map_err(Error::Dataset)?;
        Ok((opened.schema(), opened.len()))
    };
    let is = |parts: &[String], name: &str| parts.len() == 1 && parts[0] == name;
    let classes = match objects.iter().find(|(p, _)| is(p, "classes.txt")) {
        Some((_, meta)) => {
            let url = format!("{url}/classes.txt");
            Some(read_object(store, &meta.location, &url)?)
        }
        None => None,
    };
    if objects.iter().any(|(p, _)| is(p, HEADER)) {
        objects.retain(|(p, _)| p.len() == 1);
        let (schema, len) = open(url, objects)?;
        return Ok((vec![(ManifestStream::whole_shard(schema), len)], classes));
    }
    let mut by_store: HashMap<String, Vec<(Vec<String>, ObjectMeta)>> = HashMap::new();
    for (mut parts, meta) in objects {
        if parts.len() == 2 && !parts[0].starts_with('.') {
            let name = parts.remove(0);
            by_store.entry(name).or_default().push((parts, meta));
        }
    }
    let mut found = Vec::new();
    for (name, listing) in by_store {
        if listing.iter().any(|(p, _)| is(p, HEADER)) {
            let (schema, len) = open(&format!("{url}/{name}"), listing)?;
            let stream = ManifestStream {
                path: name.clone(),
                name,
                schema,
            };
            found.push((stream, len));
        }
    }
    found.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok((found, classes))
}

/// The whole of one small object.
fn read_object(store: &Arc<dyn ObjectStore>, location: &ObjectPath, url: &str) -> Result<Vec<u8>> {
    let (store, location, url) = (Arc::clone(store), location.clone(), url.to_string());
    runtime::run(async move {
        let got = async { store.get(&location).await?.bytes().await };
        got.await
            .map(|b| b.to_vec())
            .map_err(|source| Error::Fetch {
                object: url,
                range: 0..0,
                attempts: 1,
                source: Box::new(source),
            })
    })
}
