//! Sharded datasets: many stores of the same streams, each written on its
//! own (by parallel import jobs), read as one index space.
//!
//! A dataset is a folder of shard folders and a manifest, `dataset.zr`:
//!
//! ```text
//! images/                      the dataset
//!   dataset.zr                 its manifest: streams, shards, record counts
//!   shard-00000-of-00004/      shard 0: an import's output
//!     image/  label/  classes.txt
//!   shard-00001-of-00004/
//!   …
//! ```
//!
//! A shard is a store (one stream, named `records`) or a folder of stores
//! (one stream each, named by their folders). [`Dataset::join`] checks that
//! every shard holds the same streams with the same types and writes the
//! manifest; [`Dataset::open`] reads it and opens every shard read-only. A
//! dataset's streams ([`DenseShards`], [`RaggedShards`]) read global index
//! `i` from the shard that holds it.
//!
//! ```
//! use zrecord::{Codec, Dataset, DenseStore};
//! # let dir = tempfile::tempdir()?;
//! # let dir = dir.path();
//!
//! // Two shards, written independently (say, by two jobs).
//! for (k, labels) in [vec![0i64, 1, 2], vec![3, 4]].into_iter().enumerate() {
//!     let shard = dir.join(zrecord::shard_folder(k as u64, 2));
//!     std::fs::create_dir_all(&shard)?;
//!     DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw)?.append(&labels)?;
//! }
//! Dataset::join(dir)?; // checks the shards, writes dataset.zr
//!
//! let dataset = Dataset::open(dir)?;
//! let labels = dataset.stream("label").and_then(|s| s.as_dense()).unwrap();
//! assert_eq!(dataset.len(), 5);
//! assert_eq!(labels.gather_dyn(&[4, 0])?.as_slice::<i64>(), Some(&[4, 0][..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod manifest;
mod shards;
mod stream;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use manifest::{
    MANIFEST_FILE, MANIFEST_VERSION, Manifest, ManifestShard, ManifestStream, ShardContents,
};
pub use shards::{DenseShards, RaggedShards, ShardStore, Shards};
pub use stream::Stream;

use crate::{AnyStore, Error, Result};

/// The header file that makes a folder a store.
const STORE_HEADER: &str = "store.zr";

/// The folder name of shard `k` of `n` (`shard-00003-of-00016`): what
/// `zrecord import … --shard K/N` writes. Any folder names work for
/// [`Dataset::join`]; these sort in index order.
pub fn shard_folder(k: u64, n: u64) -> String {
    format!("shard-{k:05}-of-{n:05}")
}

/// A sharded dataset, open for reading: see the [module](self) docs.
#[derive(Clone, Debug)]
pub struct Dataset {
    location: PathBuf,
    manifest: Manifest,
    streams: Vec<(String, Stream)>,
}

impl Dataset {
    /// Checks the shard folders of the dataset folder `dir` and writes its
    /// manifest, `dir/dataset.zr` (replacing an older one atomically).
    ///
    /// Shards are the subfolders of `dir` whose names do not start with `.`,
    /// in name order. Every shard must hold the same streams (names, kinds,
    /// dtypes, item shapes), each stream the same number of records within a
    /// shard, and a `classes.txt` beside its streams must be the same in
    /// every shard. When folders are named by [`shard_folder`], all `N` of
    /// `N` must be there.
    ///
    /// # Errors
    /// [`Error::Dataset`] naming the shard that is missing or differs;
    /// a shard store's open error.
    pub fn join(dir: impl AsRef<Path>) -> Result<Manifest> {
        let dir = dir.as_ref();
        let bad = |reason: String| Error::Dataset {
            path: dir.into(),
            reason,
        };
        let mut folders = Vec::new();
        for entry in fs::read_dir(dir).map_err(Error::io("list", dir))? {
            let entry = entry.map_err(Error::io("list", dir))?;
            let name = entry.file_name();
            let name = name
                .to_str()
                .ok_or_else(|| bad(format!("the shard folder {name:?} is not UTF-8")))?;
            if !name.starts_with('.') && entry.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(name.to_string());
            }
        }
        let manifest = Manifest::join(dir, folders, |folder| {
            let shard_dir = dir.join(folder);
            let classes = fs::read(shard_dir.join("classes.txt")).ok();
            Ok((shard_streams(&shard_dir)?, classes))
        })?;
        write_atomically(&dir.join(MANIFEST_FILE), &manifest.encode()?)?;
        Ok(manifest)
    }

    /// Opens the dataset folder `dir`: reads its manifest and opens every
    /// shard's stores read-only (shared with other readers).
    ///
    /// # Errors
    /// [`Error::Dataset`] for a missing or damaged manifest, or a shard that
    /// changed since it was written (another length or schema); a shard
    /// store's open error.
    pub fn open(dir: impl AsRef<Path>) -> Result<Dataset> {
        let dir = dir.as_ref();
        let path = dir.join(MANIFEST_FILE);
        let bytes = fs::read(&path).map_err(|e| Error::Dataset {
            path: dir.into(),
            reason: format!("cannot read {MANIFEST_FILE} ({e}); `zrecord dataset join` writes it"),
        })?;
        Self::open_with(dir, &bytes, |store| {
            crate::OpenOptions::new()
                .read_only(true)
                .open::<AnyStore>(dir.join(store))
        })
    }

    /// Opens a dataset from its manifest's bytes, opening each shard's store
    /// with `open` (given its `/`-separated path relative to the dataset):
    /// how a dataset in other storage (object storage, say) is opened.
    /// `location` names the dataset in errors.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(
        location: impl Into<PathBuf>,
        manifest: &[u8],
        mut open: impl FnMut(&str) -> Result<AnyStore>,
    ) -> Result<Dataset> {
        let location = location.into();
        let manifest = Manifest::decode(&location, manifest)?;
        let mut streams = Vec::with_capacity(manifest.streams.len());
        for stream in &manifest.streams {
            let mut dense = Vec::new();
            let mut ragged = Vec::new();
            for shard in &manifest.shards {
                let path = stream.store_path(&shard.folder);
                let store = open(&path)?;
                if store.schema() != stream.schema || store.len() != shard.records {
                    return Err(Error::Dataset {
                        path: location.clone(),
                        reason: format!(
                            "{path} holds {} records of {:?}, but the manifest says {} of {:?}: \
                             it changed since the dataset was joined",
                            store.len(),
                            store.schema(),
                            shard.records,
                            stream.schema
                        ),
                    });
                }
                match store {
                    AnyStore::Dense(s) => dense.push(Arc::new(s)),
                    AnyStore::Ragged(s) => ragged.push(Arc::new(s)),
                }
            }
            let path = location.join(&stream.name);
            let shards = if dense.is_empty() {
                Stream::Ragged(Arc::new(RaggedShards::new(path, ragged)?))
            } else {
                Stream::Dense(Arc::new(DenseShards::new(path, dense)?))
            };
            streams.push((stream.name.clone(), shards));
        }
        Ok(Dataset {
            location,
            manifest,
            streams,
        })
    }

    /// The dataset folder (or URL) it was opened from.
    pub fn location(&self) -> &Path {
        &self.location
    }

    /// Its manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Records in every stream.
    pub fn len(&self) -> u64 {
        self.manifest.len()
    }

    /// Whether the dataset holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records of every shard but the last, when they are all equal
    /// (and the last holds no more): the block size with which the
    /// sampler's block shuffle (`zsampler::Mode::Block`) makes each block a
    /// whole shard, so a window of `w` blocks reads `w` shards at a time.
    /// `zrecord import --shard K/N` writes shards this way.
    pub fn shard_block(&self) -> Option<u64> {
        let shards = &self.manifest.shards;
        let first = shards.first()?.records;
        let (last, rest) = shards.split_last()?;
        let equal = rest.iter().all(|s| s.records == first) && last.records <= first;
        (equal && first > 0).then_some(first)
    }

    /// The stream called `name`.
    pub fn stream(&self, name: &str) -> Option<&Stream> {
        self.streams.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The streams, in manifest order.
    pub fn streams(&self) -> impl Iterator<Item = (&str, &Stream)> {
        self.streams.iter().map(|(n, s)| (n.as_str(), s))
    }

    /// The streams, named, in manifest order.
    pub fn into_streams(self) -> Vec<(String, Stream)> {
        self.streams
    }
}

/// The streams of the shard folder `dir` with their record counts: the
/// folder itself if it is a store, else its subfolders that are stores.
fn shard_streams(dir: &Path) -> Result<Vec<(ManifestStream, u64)>> {
    let open = |path: &Path| {
        crate::OpenOptions::new()
            .read_only(true)
            .open::<AnyStore>(path)
    };
    if dir.join(STORE_HEADER).is_file() {
        let store = open(dir)?;
        return Ok(vec![(
            ManifestStream::whole_shard(store.schema()),
            store.len(),
        )]);
    }
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::io("list", dir))? {
        let entry = entry.map_err(Error::io("list", dir))?;
        let path = entry.path();
        if let Some(name) = entry.file_name().to_str()
            && !name.starts_with('.')
            && path.join(STORE_HEADER).is_file()
        {
            let store = open(&path)?;
            let stream = ManifestStream {
                name: name.into(),
                path: name.into(),
                schema: store.schema(),
            };
            found.push((stream, store.len()));
        }
    }
    found.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok(found)
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = fs::File::create(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.map_err(Error::io("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Codec, DenseStore, RaggedStore};

    /// Shard `k` of `n` with `records` labels and token lists.
    fn shard(dir: &Path, k: u64, n: u64, records: u64) -> PathBuf {
        let shard = dir.join(shard_folder(k, n));
        fs::create_dir_all(&shard).unwrap();
        let labels: Vec<i64> = (0..records as i64).map(|i| i + 100 * k as i64).collect();
        let label = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw).unwrap();
        label.append(&labels).unwrap();
        let tokens = RaggedStore::<u32>::create(shard.join("tokens"), Codec::Zstd).unwrap();
        let docs: Vec<Vec<u32>> = labels.iter().map(|&l| vec![l as u32; 2]).collect();
        tokens.append_slices(&docs).unwrap();
        shard
    }

    #[test]
    fn join_then_open_reads_one_index_space() {
        let dir = tempfile::tempdir().unwrap();
        for (k, n) in [(0, 3), (1, 0), (2, 2)] {
            shard(dir.path(), k, 3, n);
        }
        let manifest = Dataset::join(dir.path()).unwrap();
        assert_eq!(manifest.len(), 5);
        let dataset = Dataset::open(dir.path()).unwrap();
        let label = dataset.stream("label").unwrap().as_dense().unwrap();
        let labels = label.gather_dyn(&[3, 0, 4, 2]).unwrap();
        assert_eq!(labels.as_slice::<i64>(), Some(&[200, 0, 201, 2][..]));
        let tokens = dataset.stream("tokens").unwrap().as_ragged().unwrap();
        let batch = tokens.gather_dyn(&[4]).unwrap();
        assert_eq!(
            batch.get::<u32>(0).unwrap().as_slice(),
            Some(&[201, 201][..])
        );
    }

    #[test]
    fn a_missing_or_different_shard_is_named() {
        let dir = tempfile::tempdir().unwrap();
        shard(dir.path(), 0, 3, 2);
        shard(dir.path(), 2, 3, 2);
        let err = Dataset::join(dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("shard-00001-of-00003 is missing"),
            "{err}"
        );

        let other = shard(dir.path(), 1, 3, 2);
        fs::remove_dir_all(other.join("tokens")).unwrap();
        let err = Dataset::join(dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .contains("shard shard-00001-of-00003 holds label"),
            "{err}"
        );
        assert!(!dir.path().join(MANIFEST_FILE).exists());
    }

    #[test]
    fn a_shard_changed_after_join_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let first = shard(dir.path(), 0, 2, 2);
        shard(dir.path(), 1, 2, 2);
        Dataset::join(dir.path()).unwrap();
        DenseStore::<i64>::open(first.join("label"))
            .unwrap()
            .append(&[9])
            .unwrap();
        let err = Dataset::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("changed since"), "{err}");
    }

    #[test]
    fn classes_must_agree() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(shard(dir.path(), 0, 2, 1).join("classes.txt"), "cat\ndog\n").unwrap();
        fs::write(shard(dir.path(), 1, 2, 1).join("classes.txt"), "dog\n").unwrap();
        let err = Dataset::join(dir.path()).unwrap_err();
        assert!(err.to_string().contains("classes.txt differs"), "{err}");
    }
}
