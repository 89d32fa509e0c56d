//! [`Remote`]: a store folder in object storage, as zrecord's storage seam
//! sees it — read-only, its objects listed once when it is opened.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore};
use zrecord::storage::{Access, CacheWork, Io, IoStats, Storage, StorageFile};

use crate::cache::{self, Cache, Object};
use crate::fetch::Fetcher;
use crate::ranges::merge;
use crate::stats::Stats;
use crate::stores::store_for_url;
use crate::transfer::HEADER;
use crate::{CacheStats, Error, RemoteOptions, Result, runtime};

/// A zrecord store folder in object storage, read through an optional
/// local cache.
///
/// Open stores in it with [`zrecord::OpenOptions::open`], read-only, given
/// an `Arc` of it:
///
/// ```no_run
/// use std::sync::Arc;
/// use zrecord::{DenseStore, OpenOptions};
/// use zrecord_remote::{Remote, RemoteOptions};
///
/// let options = RemoteOptions::new().cache("/tmp/zrecord-cache", 20 << 30);
/// let remote = Arc::new(Remote::open("s3://my-bucket/mnist/images", options)?);
/// let images = OpenOptions::new().read_only(true).open::<DenseStore<u8>>(remote.clone())?;
/// let batch = images.gather(&[0, 7, 42])?;
/// println!("{:?}", remote.stats());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Remote {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    url: String,
    location: PathBuf,
    objects: HashMap<String, Arc<ObjectInfo>>,
    fetcher: Fetcher,
    cache: Option<Cache>,
    merge_gap: u64,
    max_request: u64,
}

#[derive(Debug)]
struct ObjectInfo {
    path: ObjectPath,
    url: String,
    location: PathBuf,
    object: Object,
}

impl Remote {
    /// Opens the store folder at `url` — `s3://bucket/prefix`, `gs://…`,
    /// `az://…`, `https://…` or `file:///…` as the crate's features allow —
    /// with credentials, region and endpoint from the environment as
    /// `object_store`'s builders read them (`AWS_ACCESS_KEY_ID`,
    /// `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`,
    /// `GOOGLE_APPLICATION_CREDENTIALS`, `AZURE_STORAGE_ACCOUNT_NAME`, …),
    /// then [`RemoteOptions::store_option`]s. The crate's README lists them
    /// ("Credentials and endpoints"). Retries are this crate's (see
    /// [`RemoteOptions::retries`]).
    ///
    /// What a URL needs is checked before any request: credentials come
    /// from a source a setting names, and the cloud's instance metadata
    /// service is asked only when [`RemoteOptions::instance_metadata`] (or
    /// the variable `ZRECORD_INSTANCE_METADATA=true`) says so.
    ///
    /// # Errors
    /// Before any request: [`Error::Url`] for a URL no enabled backend
    /// opens or a setting its builder refuses; [`Error::NoCredentials`],
    /// [`Error::MissingSetting`] (a region for AWS itself, an Azure
    /// account) and [`Error::HttpNotAllowed`] (a plain `http://` endpoint),
    /// each naming the variable to set. Then [`Error::NoBucket`] when the
    /// bucket does not exist, [`Error::List`] when the folder cannot be
    /// listed otherwise, [`Error::Cache`] when the cache folder cannot be
    /// used.
    pub fn open(url: &str, options: RemoteOptions) -> Result<Remote> {
        let (store, prefix) = store_for_url(url, &options)?;
        Self::with_store(store, &prefix, url, options)
    }

    /// Opens the store folder `prefix` of an object store configured by
    /// the caller (credentials, endpoint, its own retry settings); `url`
    /// names the folder in messages and keys its cache. Nothing of the
    /// store's settings is checked; a client built with rustls and no
    /// crypto provider needs one installed first (see the README's "TLS").
    ///
    /// # Errors
    /// As [`open`](Self::open), from the listing on.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        url: &str,
        options: RemoteOptions,
    ) -> Result<Remote> {
        let url = url.trim_end_matches('/').to_string();
        let prefix = ObjectPath::from(prefix.trim_matches('/'));
        let listing = list_under(&store, &prefix, &url)?;
        Self::from_listing(store, &url, listing, options)
    }

    /// The store folder `url` whose objects `listing` holds (their paths
    /// below the folder, and metadata): how a dataset's stores are opened
    /// from one listing of the dataset.
    pub(crate) fn from_listing(
        store: Arc<dyn ObjectStore>,
        url: &str,
        listing: Vec<(Vec<String>, ObjectMeta)>,
        options: RemoteOptions,
    ) -> Result<Remote> {
        let url = url.trim_end_matches('/').to_string();
        let stats = Arc::new(Stats::default());
        let fetcher = Fetcher {
            store: Arc::clone(&store),
            policy: options.policy,
            stats: Arc::clone(&stats),
        };
        let objects = objects(listing, &url);
        if objects.contains_key(zrecord::dataset::MANIFEST_FILE) && !objects.contains_key(HEADER) {
            return Err(Error::Url {
                url,
                reason: "it holds a sharded dataset (dataset.zr): open it with open_dataset".into(),
            });
        }
        if !objects.is_empty() && !objects.contains_key(HEADER) {
            return Err(Error::Incomplete {
                url,
                objects: objects.len(),
            });
        }
        let mut cache = match &options.cache {
            Some(dir) => Some(Cache::open(
                dir,
                &url,
                options.cache_limit,
                options.block_bytes,
                options.policy.deadline,
                Arc::clone(&stats),
            )?),
            None => None,
        };
        if options.pin {
            let Some(cache) = cache.as_mut() else {
                return Err(Error::Options("pin needs a cache folder".into()));
            };
            cache.pin(objects.values().map(|o| o.object.len).sum())?;
        }
        let remote = Remote {
            inner: Arc::new(Inner {
                location: PathBuf::from(&url),
                url,
                objects,
                fetcher,
                cache,
                merge_gap: options.merge_gap,
                max_request: options.max_request,
            }),
        };
        if options.pin {
            remote.read_all()?;
        }
        Ok(remote)
    }

    /// The folder's URL.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// What this store's reads did so far.
    pub fn stats(&self) -> CacheStats {
        self.inner.fetcher.stats.snapshot()
    }

    /// Reads every object once, so a pinned cache holds all of them.
    fn read_all(&self) -> Result<()> {
        const PIECE: u64 = 64 << 20;
        let mut buf = Vec::new();
        for info in self.inner.objects.values() {
            let mut offset = 0;
            while offset < info.object.len {
                let n = PIECE.min(info.object.len - offset);
                buf.resize(n as usize, 0);
                self.inner.read(info, &mut [(offset, &mut buf[..])])?;
                offset += n;
            }
        }
        Ok(())
    }
}

impl Inner {
    /// Fills each read `(offset, buffer)` of one object.
    fn read(&self, info: &ObjectInfo, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        for (offset, buf) in reads.iter() {
            let end = offset.checked_add(buf.len() as u64);
            if end.is_none_or(|end| end > info.object.len) {
                return Err(Error::OutOfRange {
                    object: info.url.clone(),
                    range: *offset..offset.saturating_add(buf.len() as u64),
                    len: info.object.len,
                });
            }
        }
        let fetched = Cell::new(0u64);
        let fetch = |ranges| {
            let answers = self.fetcher.fetch(&info.path, &info.url, ranges)?;
            fetched.set(fetched.get() + answers.iter().map(|b| b.len() as u64).sum::<u64>());
            Ok(answers)
        };
        let mut work = match &self.cache {
            Some(cache) if cache.keeps_blocks() => cache.read(info.object, reads, &fetch)?,
            _ => {
                self.read_direct(reads, &fetch)?;
                CacheWork::default()
            }
        };
        work.fetched_bytes = fetched.get();
        self.fetcher.stats.record(&work);
        IoStats::add_cache_work(work);
        Ok(())
    }

    /// Fetches the reads themselves, near ones merged into one request.
    fn read_direct(&self, reads: &mut [(u64, &mut [u8])], fetch: &cache::Fetch<'_>) -> Result<()> {
        let spans: Vec<(u64, u64)> = reads.iter().map(|(o, b)| (*o, b.len() as u64)).collect();
        let merged = merge(&spans, self.merge_gap, self.max_request);
        let fetched = fetch(merged.iter().map(|m| m.range.clone()).collect())?;
        if fetched.len() != merged.len() {
            return Err(Error::Internal("a request went unanswered".into()));
        }
        for (request, bytes) in merged.iter().zip(&fetched) {
            for &i in &request.reads {
                let (offset, buf) = &mut reads[i];
                let from = (*offset - request.range.start) as usize;
                // The fetcher checked each answer's length; the read lies in its request.
                let piece = bytes.get(from..from + buf.len());
                let piece = piece
                    .ok_or_else(|| Error::Internal("an answer shorter than its request".into()))?;
                buf.copy_from_slice(piece);
            }
        }
        Ok(())
    }
}

/// Every object under `prefix`, with the parts of its path below the prefix.
pub(crate) fn list_under(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectPath,
    url: &str,
) -> Result<Vec<(Vec<String>, ObjectMeta)>> {
    let (store, prefix_owned, url) = (Arc::clone(store), prefix.clone(), url.to_string());
    let metas = runtime::run(async move {
        store
            .list(Some(&prefix_owned))
            .try_collect::<Vec<_>>()
            .await
            .map_err(|source| Error::list(&url, source))
    })?;
    Ok(metas
        .into_iter()
        .filter_map(|meta| {
            let parts = meta.location.prefix_match(prefix)?;
            let parts = parts.map(|p| p.as_ref().to_string()).collect();
            Some((parts, meta))
        })
        .collect())
}

/// The objects of `listing` directly in the folder `url`, by name.
fn objects(listing: Vec<(Vec<String>, ObjectMeta)>, url: &str) -> HashMap<String, Arc<ObjectInfo>> {
    let mut objects = HashMap::new();
    for (parts, meta) in listing {
        let Ok([name]) = <[String; 1]>::try_from(parts) else {
            continue; // deeper than the folder: not one of its files
        };
        let tag = meta.e_tag.as_deref().unwrap_or_default();
        let key = cache::fnv1a(&[
            name.as_bytes(),
            &meta.size.to_le_bytes(),
            tag.as_bytes(),
            meta.last_modified.to_rfc3339().as_bytes(),
        ]);
        let object_url = format!("{url}/{name}");
        objects.insert(
            name,
            Arc::new(ObjectInfo {
                path: meta.location,
                location: PathBuf::from(&object_url),
                url: object_url,
                object: Object {
                    key,
                    len: meta.size,
                },
            }),
        );
    }
    objects
}

impl Storage for Remote {
    fn location(&self) -> &Path {
        &self.inner.location
    }

    fn list(&self) -> zrecord::Result<Vec<String>> {
        Ok(self.inner.objects.keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> zrecord::Result<bool> {
        Ok(self.inner.objects.contains_key(name))
    }

    fn open(&self, name: &str, access: Access) -> zrecord::Result<Option<Arc<dyn StorageFile>>> {
        if access != Access::Read {
            return Err(self.read_only());
        }
        Ok(self.inner.objects.get(name).map(|info| {
            Arc::new(RemoteFile {
                inner: Arc::clone(&self.inner),
                info: Arc::clone(info),
            }) as Arc<dyn StorageFile>
        }))
    }

    fn remove(&self, _name: &str) -> zrecord::Result<()> {
        Err(self.read_only())
    }

    fn sync(&self) -> zrecord::Result<()> {
        Ok(())
    }

    fn io(&self, _data_bytes: u64) -> Io {
        Io::Direct
    }
}

impl Remote {
    fn read_only(&self) -> zrecord::Error {
        zrecord::Error::ReadOnly {
            path: self.inner.location.clone(),
        }
    }
}

/// One object of a [`Remote`] folder.
struct RemoteFile {
    inner: Arc<Inner>,
    info: Arc<ObjectInfo>,
}

impl RemoteFile {
    fn read_only(&self) -> zrecord::Error {
        zrecord::Error::ReadOnly {
            path: self.info.location.clone(),
        }
    }
}

impl StorageFile for RemoteFile {
    fn path(&self) -> &Path {
        &self.info.location
    }

    fn len(&self) -> zrecord::Result<u64> {
        Ok(self.info.object.len)
    }

    fn set_len(&self, _len: u64) -> zrecord::Result<()> {
        Err(self.read_only())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> zrecord::Result<()> {
        self.read_batch(&mut [(offset, buf)])
    }

    fn read_batch(&self, reads: &mut [(u64, &mut [u8])]) -> zrecord::Result<()> {
        self.inner
            .read(&self.info, reads)
            .map_err(|e| e.into_store_error("read", self.info.location.clone()))
    }

    fn write_at(&self, _buf: &[u8], _offset: u64) -> zrecord::Result<()> {
        Err(self.read_only())
    }

    fn sync(&self) -> zrecord::Result<()> {
        Ok(())
    }

    /// Shared locks are granted (nothing can write an object store through
    /// this backend); an exclusive one is refused as a write.
    fn try_lock(&self, exclusive: bool) -> zrecord::Result<bool> {
        if exclusive {
            Err(self.read_only())
        } else {
            Ok(true)
        }
    }
}
