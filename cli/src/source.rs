//! What the user pointed at: a store, a sharded dataset (`dataset.zr`), a
//! folder of stores (an import's `images/`, `labels/`, `classes.txt`), or
//! any of these in object storage by URL. `info`, `verify`, `export` and
//! `bench` open every one of them alike, as named streams of shards: a
//! store is one stream of one shard, a folder of stores one stream per
//! store, a dataset its manifest's streams.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use zrecord::dataset::{MANIFEST_FILE, Manifest};
use zrecord::storage::{Access, Io};
use zrecord::{AnyStore, Dataset, DynDenseStore, DynRaggedStore, OpenOptions};

use crate::remote::Settings;

/// The header file that makes a folder a store.
pub(crate) const STORE_HEADER: &str = "store.zr";

/// Cache size when `--cache` is given without `--cache-limit`: 16 GiB.
const DEFAULT_CACHE_LIMIT: u64 = 16 << 30;

/// How a URL is read: object-store settings and the local cache.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct RemoteArgs {
    #[command(flatten)]
    settings: Settings,
    /// Keep what is read from a URL in this folder (shared by the
    /// processes of a node), for reading it again.
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// The most bytes `--cache` may hold (e.g. 500M, 20G; default 16G).
    #[arg(long, value_name = "BYTES", requires = "cache", value_parser = parse_bytes)]
    cache_limit: Option<u64>,
}

impl RemoteArgs {
    fn options(&self) -> Result<zrecord_remote::RemoteOptions> {
        let mut options = self.settings.remote_options()?;
        if let Some(dir) = &self.cache {
            options = options.cache(dir, self.cache_limit.unwrap_or(DEFAULT_CACHE_LIMIT));
        }
        Ok(options)
    }
}

/// `123`, `500K`, `20M`, `1G`, `2T` (powers of 1024; `KiB`, `GB` … alike).
fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_uppercase().trim_end_matches("IB") {
        "" | "B" => 0,
        "K" | "KB" => 10,
        "M" | "MB" => 20,
        "G" | "GB" => 30,
        "T" | "TB" => 40,
        _ => return Err(format!("{text:?} is not a byte count such as 500M or 20G")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{text:?} is not a byte count such as 500M or 20G"))
}

/// Whether `text` is a URL rather than a local path.
pub(crate) fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// Fails, naming the cargo feature to build with, when this build cannot
/// open `url`'s kind of object storage.
pub(crate) fn check_backend(url: &str) -> Result<()> {
    let scheme = url
        .split_once("://")
        .map_or("", |(s, _)| s)
        .to_ascii_lowercase();
    let host = url
        .split_once("://")
        .map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
    let (feature, built, what) = match scheme.as_str() {
        "file" => return Ok(()),
        "s3" | "s3a" => ("s3", cfg!(feature = "s3"), "s3:// URLs"),
        "gs" => ("gcs", cfg!(feature = "gcs"), "gs:// URLs"),
        "az" | "adl" | "azure" | "abfs" | "abfss" => {
            ("azure", cfg!(feature = "azure"), "Azure URLs")
        }
        "http" | "https" if host.ends_with("amazonaws.com") => {
            ("s3", cfg!(feature = "s3"), "S3 https:// URLs")
        }
        "http" | "https" if host.ends_with(".windows.net") => {
            ("azure", cfg!(feature = "azure"), "Azure https:// URLs")
        }
        "http" | "https" => ("http", cfg!(feature = "http"), "http(s):// URLs"),
        _ => bail!(
            "{url}: unknown URL scheme {scheme:?} (s3://, gs://, az://, http(s):// and file:// are known)"
        ),
    };
    if !built {
        bail!(
            "{url}: this zrecord was built without {what}; build it with the `{feature}` feature \
             (cargo install --path cli --features {feature}, or --features full)"
        );
    }
    Ok(())
}

/// What a source is.
pub(crate) enum Kind {
    /// One store.
    Store,
    /// A sharded dataset, with its manifest.
    Dataset(Manifest),
    /// A folder of stores.
    Stores,
}

/// One stream of a source: its name, its shards, and where each shard's
/// store lies relative to the source (`""` for the source itself).
pub(crate) struct Stream {
    pub(crate) name: String,
    pub(crate) shards: zrecord::Stream,
    pub(crate) stores: Vec<String>,
}

impl Stream {
    /// The stores of its shards, in order.
    pub(crate) fn shard_stores(&self) -> Vec<StoreRef<'_>> {
        match &self.shards {
            zrecord::Stream::Dense(s) => s.shards().iter().map(|s| StoreRef::Dense(s)).collect(),
            zrecord::Stream::Ragged(s) => s.shards().iter().map(|s| StoreRef::Ragged(s)).collect(),
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.shards.len()
    }
}

/// One store of a stream, dense or ragged.
#[derive(Clone, Copy)]
pub(crate) enum StoreRef<'a> {
    Dense(&'a DynDenseStore),
    Ragged(&'a DynRaggedStore),
}

/// The same call on either kind of store.
macro_rules! either {
    ($self:expr, $s:ident => $call:expr) => {
        match $self {
            StoreRef::Dense($s) => $call,
            StoreRef::Ragged($s) => $call,
        }
    };
}

impl StoreRef<'_> {
    pub(crate) fn len(self) -> u64 {
        either!(self, s => s.len())
    }
    pub(crate) fn stats(self) -> zrecord::Result<zrecord::Stats> {
        either!(self, s => s.stats())
    }
    pub(crate) fn codec(self) -> &'static str {
        either!(self, s => s.codec().name())
    }
    pub(crate) fn dictionary_bytes(self) -> usize {
        either!(self, s => s.codec().dictionary().map_or(0, |d| d.len()))
    }
    pub(crate) fn codec_shown(self) -> String {
        either!(self, s => s.codec().to_string())
    }
    pub(crate) fn format_version(self) -> u8 {
        either!(self, s => s.format_version())
    }
    pub(crate) fn io(self) -> Io {
        either!(self, s => s.io())
    }
    pub(crate) fn verify_with(
        self,
        progress: impl FnMut(u64, u64),
    ) -> zrecord::Result<zrecord::VerifyReport> {
        either!(self, s => s.verify_with(progress))
    }
    /// Record lengths, for a ragged store.
    pub(crate) fn lengths(self) -> zrecord::Result<Option<zrecord::LengthStats>> {
        match self {
            StoreRef::Dense(_) => Ok(None),
            StoreRef::Ragged(s) => s.length_stats().map(Some),
        }
    }
}

/// Where a source lies.
enum Origin {
    Local(PathBuf),
    Url {
        url: String,
        /// Every object under the URL and its size.
        listing: Vec<(String, u64)>,
        options: zrecord_remote::RemoteOptions,
    },
}

/// An opened store, dataset or folder of stores, local or remote; read-only.
pub(crate) struct Source {
    /// The path or URL as given.
    pub(crate) shown: String,
    pub(crate) kind: Kind,
    pub(crate) streams: Vec<Stream>,
    origin: Origin,
}

impl Source {
    /// Opens `location` (a path or URL) read-only; local stores with `io`.
    pub(crate) fn open(location: &str, remote: &RemoteArgs, io: Io) -> Result<Source> {
        if is_url(location) {
            check_backend(location)?;
            open_url(location.trim_end_matches('/'), remote.options()?)
                .with_context(|| location.to_string())
        } else {
            open_local(Path::new(location), io)
        }
    }

    /// The local folder, if it is one.
    pub(crate) fn local_path(&self) -> Option<&Path> {
        match &self.origin {
            Origin::Local(path) => Some(path),
            Origin::Url { .. } => None,
        }
    }

    /// Records in all streams' shards, counted once per store.
    pub(crate) fn total_records(&self) -> u64 {
        self.streams.iter().map(Stream::len).sum()
    }

    /// Where the store at `relative` lies, for messages.
    pub(crate) fn store_shown(&self, relative: &str) -> String {
        if relative.is_empty() {
            self.shown.clone()
        } else {
            format!("{}/{relative}", self.shown.trim_end_matches('/'))
        }
    }

    /// Bytes of the files of the store folder at `relative` (the sizes of
    /// its objects in object storage).
    pub(crate) fn store_bytes(&self, relative: &str) -> Result<u64> {
        match &self.origin {
            Origin::Local(root) => {
                let dir = root.join(relative);
                let mut total = 0;
                for entry in std::fs::read_dir(&dir)
                    .with_context(|| format!("cannot list {}", dir.display()))?
                {
                    let meta = entry
                        .and_then(|e| e.metadata())
                        .with_context(|| format!("cannot list {}", dir.display()))?;
                    if meta.is_file() {
                        total += meta.len();
                    }
                }
                Ok(total)
            }
            Origin::Url { listing, .. } => Ok(listing
                .iter()
                .filter(|(name, _)| parent(name) == relative)
                .map(|(_, len)| len)
                .sum()),
        }
    }

    /// The small file `name` inside the store folder at `relative`, if it
    /// is there.
    pub(crate) fn read_in_store(&self, relative: &str, name: &str) -> Result<Option<Vec<u8>>> {
        match &self.origin {
            Origin::Local(root) => {
                let path = root.join(relative).join(name);
                match std::fs::read(&path) {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
                }
            }
            Origin::Url {
                url,
                listing,
                options,
            } => {
                let wanted = join(relative, name);
                if !listing.iter().any(|(n, _)| *n == wanted) {
                    return Ok(None);
                }
                let folder = url_join(url, relative);
                let remote = zrecord_remote::Remote::open(&folder, options.clone())?;
                let file = zrecord::storage::Storage::open(&remote, name, Access::Read)?;
                let Some(file) = file else { return Ok(None) };
                let mut bytes = vec![0; file.len()? as usize];
                file.read_at(&mut bytes, 0)?;
                Ok(Some(bytes))
            }
        }
    }
}

/// `a/b`, or `b` when `a` is empty.
fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}/{b}")
    }
}

fn url_join(url: &str, relative: &str) -> String {
    if relative.is_empty() {
        url.to_string()
    } else {
        format!("{url}/{relative}")
    }
}

/// The folder of a `/`-separated path (`""` at the top).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// A stream made of one store.
fn single(name: &str, relative: &str, store: AnyStore) -> Stream {
    let shards = zrecord::Stream::from(store);
    Stream {
        name: name.to_string(),
        shards,
        stores: vec![relative.to_string()],
    }
}

/// A dataset's streams, each with its stores' paths from the manifest.
fn dataset_streams(dataset: Dataset) -> (Manifest, Vec<Stream>) {
    let manifest = dataset.manifest().clone();
    let streams = dataset
        .into_streams()
        .into_iter()
        .map(|(name, shards)| {
            let stores = manifest
                .streams
                .iter()
                .find(|s| s.name == name)
                .map(|s| {
                    manifest
                        .shards
                        .iter()
                        .map(|shard| s.store_path(&shard.folder))
                        .collect()
                })
                .unwrap_or_default();
            Stream {
                name,
                shards,
                stores,
            }
        })
        .collect();
    (manifest, streams)
}

fn open_local(path: &Path, io: Io) -> Result<Source> {
    let shown = path.display().to_string();
    let options = OpenOptions::new().read_only(true).io(io);
    let open_store = |dir: &Path| {
        options
            .open::<AnyStore>(dir)
            .with_context(|| dir.display().to_string())
    };
    let manifest = path.join(MANIFEST_FILE);
    let (kind, streams) = if manifest.is_file() {
        let bytes = std::fs::read(&manifest)
            .with_context(|| format!("cannot read {}", manifest.display()))?;
        let dataset = Dataset::open_with(path, &bytes, |store| {
            options.open::<AnyStore>(path.join(store))
        })
        .with_context(|| shown.clone())?;
        let (manifest, streams) = dataset_streams(dataset);
        (Kind::Dataset(manifest), streams)
    } else if path.join(STORE_HEADER).exists() || !path.is_dir() {
        // Not a folder, or a store: the store's own open says what is wrong.
        (Kind::Store, vec![single("records", "", open_store(path)?)])
    } else {
        let (stores, deeper) = store_subfolders(path)?;
        if stores.is_empty() {
            if deeper {
                bail!(
                    "{shown} holds shards but no {MANIFEST_FILE}: run `zrecord dataset join {shown}` first"
                );
            }
            bail!(
                "{shown} is not a zrecord store (no {STORE_HEADER}), a dataset (no {MANIFEST_FILE}) or a folder of stores"
            );
        }
        let mut streams = Vec::new();
        for name in stores {
            streams.push(single(&name, &name, open_store(&path.join(&name))?));
        }
        (Kind::Stores, streams)
    };
    Ok(Source {
        shown,
        kind,
        streams,
        origin: Origin::Local(path.to_path_buf()),
    })
}

/// The subfolders of `dir` that are stores, sorted; and whether a
/// subfolder holds stores a level further down (unjoined shards).
fn store_subfolders(dir: &Path) -> Result<(Vec<String>, bool)> {
    let mut stores = Vec::new();
    let mut deeper = false;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let sub = entry.path();
        if name.starts_with('.') || !sub.is_dir() {
            continue;
        }
        if sub.join(STORE_HEADER).exists() {
            stores.push(name);
        } else if !deeper {
            deeper = store_subfolders(&sub).is_ok_and(|(s, _)| !s.is_empty());
        }
    }
    stores.sort();
    Ok((stores, deeper))
}

fn open_url(url: &str, options: zrecord_remote::RemoteOptions) -> Result<Source> {
    let listing = zrecord_remote::list(url, &options)?;
    if listing.is_empty() {
        bail!("no objects there");
    }
    let has = |name: &str| listing.iter().any(|(n, _)| n == name);
    let open_store = |relative: &str| -> Result<AnyStore> {
        let at = url_join(url, relative);
        let remote = zrecord_remote::Remote::open(&at, options.clone())?;
        OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(Arc::new(remote))
            .with_context(|| at.clone())
    };
    let (kind, streams) = if has(MANIFEST_FILE) {
        let dataset = zrecord_remote::open_dataset(url, options.clone())?;
        let (manifest, streams) = dataset_streams(dataset);
        (Kind::Dataset(manifest), streams)
    } else if has(STORE_HEADER) {
        (Kind::Store, vec![single("records", "", open_store("")?)])
    } else {
        let mut stores: Vec<&str> = listing
            .iter()
            .filter_map(|(n, _)| n.strip_suffix(&format!("/{STORE_HEADER}")))
            .filter(|folder| !folder.contains('/'))
            .collect();
        stores.sort_unstable();
        if stores.is_empty() {
            if listing
                .iter()
                .any(|(n, _)| n.ends_with(&format!("/{STORE_HEADER}")))
            {
                bail!(
                    "it holds shards but no {MANIFEST_FILE} (an unfinished push, or shards pushed before `zrecord dataset join`)"
                );
            }
            bail!(
                "not a zrecord store (no {STORE_HEADER}), a dataset (no {MANIFEST_FILE}) or a folder of stores, or an unfinished push"
            );
        }
        let mut streams = Vec::new();
        for name in stores {
            streams.push(single(name, name, open_store(name)?));
        }
        (Kind::Stores, streams)
    };
    Ok(Source {
        shown: url.to_string(),
        kind,
        streams,
        origin: Origin::Url {
            url: url.to_string(),
            listing,
            options,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_with_units() {
        assert_eq!(parse_bytes("123"), Ok(123));
        assert_eq!(parse_bytes("500M"), Ok(500 << 20));
        assert_eq!(parse_bytes("20GiB"), Ok(20 << 30));
        assert_eq!(parse_bytes("2tb"), Ok(2 << 40));
        assert!(parse_bytes("x").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }

    #[test]
    fn a_url_of_a_backend_not_built_names_the_feature() {
        for (url, feature, built) in [
            ("s3://b/p", "s3", cfg!(feature = "s3")),
            ("gs://b/p", "gcs", cfg!(feature = "gcs")),
            ("az://b/p", "azure", cfg!(feature = "azure")),
            ("https://example.org/p", "http", cfg!(feature = "http")),
        ] {
            match check_backend(url) {
                Ok(()) => assert!(built, "{url}"),
                Err(e) => {
                    assert!(!built, "{url}: {e}");
                    let message = e.to_string();
                    assert!(
                        message.contains(url) && message.contains(&format!("--features {feature}")),
                        "{message}"
                    );
                }
            }
        }
        assert!(check_backend("file:///tmp/x").is_ok());
        assert!(check_backend("ftp://h/x").is_err());
    }

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://b/p"));
        assert!(is_url("file:///tmp/x"));
        assert!(!is_url("data/store"));
        assert!(!is_url("./a://b"));
    }
}
