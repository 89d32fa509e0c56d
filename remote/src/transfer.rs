//! [`push`] and [`pull`]: copying stores between a local folder and object
//! storage, the header last, sizes and checksums checked.

use std::fs::{self, File};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use zrecord::dataset::MANIFEST_FILE;

use crate::remote::list_under;
use crate::stores::store_for_url;
use crate::{Error, RemoteOptions, Result, runtime};

/// The header a store is opened by; uploaded last, so an interrupted push
/// leaves no object by this name and is never taken for a whole store.
pub(crate) const HEADER: &str = "store.zr";
/// Upload parts and download pieces: memory stays within a few of these.
const PIECE: usize = 8 << 20;
/// Parts of one upload in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// What [`push`] or [`pull`] copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferReport {
    /// Each store copied: its folder under the destination (`/`-separated;
    /// empty for a single store), its files and bytes.
    pub stores: Vec<(String, usize, u64)>,
    /// Bytes copied in all.
    pub bytes: u64,
}

/// Uploads the store at `local` — or every file of a folder of stores (an
/// import's `images/`, `labels/` and `classes.txt`), or of a sharded
/// dataset (its shard folders and `dataset.zr`) — to the folder `url` in
/// object storage.
///
/// Files are uploaded with bounded memory (parts of 8 MiB), each store's
/// `store.zr` after every other file and a dataset's `dataset.zr` last of
/// all: until they arrive, opening the remote store fails with
/// [`Error::Incomplete`], and so does [`open_dataset`](crate::open_dataset).
/// Each object's size is checked after upload, and its CRC-32C against the
/// local file's, read back, when `verify`.
/// `progress` is called with bytes done and bytes in all.
///
/// The local stores are opened read-only while they are copied, so no
/// writer changes them underway.
///
/// # Errors
/// The setting errors of [`Remote::open`](crate::Remote::open), before any
/// request, and [`Error::NoBucket`];
/// [`Error::Transfer`] for a local folder that holds no store, or a remote
/// folder that already holds objects (delete them first); [`Error::Upload`]
/// for a failed upload, [`Error::Fetch`] for a failed read-back; a local
/// store's open error as [`Error::Transfer`].
pub fn push(
    local: &Path,
    url: &str,
    options: &RemoteOptions,
    verify: bool,
    mut progress: impl FnMut(u64, u64),
) -> Result<TransferReport> {
    let (files, stores) = upload_plan(local)?;
    let (store, prefix) = store_for_url(url, options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    if let Some(existing) = first_object(&store, &prefix, url)? {
        return Err(transfer(
            url,
            format!("it already holds objects ({existing}); push into an empty folder"),
        ));
    }
    // Hold every store open read-only (a shared lock) while it is copied.
    let mut guards = Vec::new();
    for folder in &stores {
        let dir = local.join(folder);
        let guard = zrecord::OpenOptions::new()
            .read_only(true)
            .open::<zrecord::AnyStore>(&dir)
            .map_err(|e| transfer(&dir.display().to_string(), e.to_string()))?;
        guards.push(guard);
    }
    let total: u64 = files.iter().map(|(_, len)| len).sum();
    let mut report = TransferReport::default();
    let mut per_store = vec![(0usize, 0u64); stores.len()];
    for (file, len) in &files {
        let object = file.split('/').fold(prefix.clone(), |o, part| o.join(part));
        let crc = upload(&store, &local.join(file), &object, *len, url)?;
        check_size(&store, &object, *len, url)?;
        if verify {
            check_crc(&store, &object, *len, crc, url)?;
        }
        if let Some(s) = stores.iter().position(|f| parent(file) == f.as_str()) {
            per_store[s].0 += 1;
            per_store[s].1 += len;
        }
        report.bytes += len;
        progress(report.bytes, total);
    }
    report.stores = stores
        .into_iter()
        .zip(per_store)
        .map(|(folder, (n, bytes))| (folder, n, bytes))
        .collect();
    drop(guards);
    Ok(report)
}

/// Downloads the store (or the stores of a dataset) at `url` into the new
/// folder `local`: into a temporary folder beside it first, renamed into
/// place once every file's size has been checked, so `local` never holds a
/// partial copy.
///
/// # Errors
/// The setting errors of [`Remote::open`](crate::Remote::open), before any
/// request, and [`Error::NoBucket`];
/// [`Error::Transfer`] when `local` exists or the remote folder holds no
/// whole store; [`Error::Incomplete`] for a store whose upload did not
/// finish; failed requests as in [`Remote`](crate::Remote).
pub fn pull(
    url: &str,
    local: &Path,
    options: &RemoteOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<TransferReport> {
    if local.exists() {
        return Err(transfer(
            &local.display().to_string(),
            "it already exists".into(),
        ));
    }
    let (store, prefix) = store_for_url(url, options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    let listed = list_all(&store, &prefix, url)?;
    if listed.is_empty() {
        return Err(transfer(url, "no objects there".into()));
    }
    // Object names become local paths: none may leave the download folder.
    if let Some((bad, _, _)) = listed
        .iter()
        .find(|(r, _, _)| r.split('/').any(|part| matches!(part, "" | "." | "..")))
    {
        return Err(transfer(
            url,
            format!("the object name {bad:?} is not a plain path"),
        ));
    }
    check_complete(&listed, url)?;
    let beside = local.parent().filter(|p| !p.as_os_str().is_empty());
    let beside = beside.unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".zrecord-pull-")
        .tempdir_in(beside)
        .map_err(Error::cache("create a folder in", beside))?;
    let total: u64 = listed.iter().map(|(_, _, len)| len).sum();
    let mut report = TransferReport::default();
    let mut stores: std::collections::BTreeMap<&str, (usize, u64)> = Default::default();
    for (relative, object, len) in &listed {
        let path = staging.path().join(relative);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(Error::cache("create", dir))?;
        }
        download(&store, object, *len, &path, url)?;
        let entry = stores.entry(parent(relative)).or_default();
        entry.0 += 1;
        entry.1 += len;
        report.bytes += len;
        progress(report.bytes, total);
    }
    let folders = store_folders(listed.iter().map(|(r, _, _)| r.as_str()));
    report.stores = folders
        .into_iter()
        .map(|f| {
            let (n, bytes) = stores.get(f.as_str()).copied().unwrap_or_default();
            (f, n, bytes)
        })
        .collect();
    let staged = staging.keep();
    fs::rename(&staged, local).map_err(|e| {
        let _ = fs::remove_dir_all(&staged);
        Error::cache("move the download to", local)(e)
    })?;
    Ok(report)
}

/// A file to upload: its `/`-separated path below the folder, and size.
type LocalFile = (String, u64);

/// Every file under `local` (`/`-separated paths below it, and sizes) in
/// upload order — ordinary files, then each store's `store.zr`, then a
/// dataset's `dataset.zr` — and the store folders (`""` for `local` itself).
/// Names starting with `.` (staging leftovers) are left out.
fn upload_plan(local: &Path) -> Result<(Vec<LocalFile>, Vec<String>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<LocalFile>) -> Result<()> {
        for entry in fs::read_dir(dir).map_err(Error::cache("list", dir))? {
            let entry = entry.map_err(Error::cache("list", dir))?;
            let path = entry.path();
            let name = entry.file_name();
            if name.to_str().is_none_or(|n| n.starts_with('.')) {
                continue;
            }
            let kind = entry.file_type().map_err(Error::cache("read", &path))?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else if kind.is_file() {
                let len = entry.metadata().map_err(Error::cache("read", &path))?.len();
                let relative = path.strip_prefix(root).unwrap_or(&path);
                let parts: Vec<&str> = relative.iter().filter_map(|p| p.to_str()).collect();
                out.push((parts.join("/"), len));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(local, local, &mut files)?;
    let stores = store_folders(files.iter().map(|(f, _)| f.as_str()));
    if stores.is_empty() {
        return Err(transfer(
            &local.display().to_string(),
            "it is not a store and holds no stores".into(),
        ));
    }
    let rank = |file: &str| match file {
        MANIFEST_FILE => 2,
        _ if file == HEADER || file.ends_with(&format!("/{HEADER}")) => 1,
        _ => 0,
    };
    files.sort_by(|(a, _), (b, _)| (rank(a), a).cmp(&(rank(b), b)));
    Ok((files, stores))
}

/// The folder of a `/`-separated file path (`""` at the top).
fn parent(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// The folders holding a `store.zr` among `files`, sorted.
fn store_folders<'a>(files: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut folders: Vec<String> = files
        .filter(|f| f.rsplit('/').next() == Some(HEADER))
        .map(|f| parent(f).to_string())
        .collect();
    folders.sort();
    folders
}

/// A pull copies only finished uploads: every folder of files is a store
/// with its `store.zr` (sent last of its store) or lies above stores, and a
/// dataset — stores in shard folders — has its `dataset.zr` (sent last).
fn check_complete(listed: &[(String, ObjectPath, u64)], url: &str) -> Result<()> {
    let folder_url = |f: &str| {
        if f.is_empty() {
            url.to_string()
        } else {
            format!("{url}/{f}")
        }
    };
    let stores = store_folders(listed.iter().map(|(r, _, _)| r.as_str()));
    // A folder of files is a store only with its header; loose files (an
    // import's classes.txt) lie in a folder above stores.
    let above_a_store = |folder: &str| {
        stores
            .iter()
            .any(|s| folder.is_empty() || s.starts_with(&format!("{folder}/")))
    };
    for (relative, _, _) in listed {
        let folder = parent(relative);
        if !stores.iter().any(|s| s == folder) && !above_a_store(folder) {
            let objects = listed
                .iter()
                .filter(|(r, _, _)| parent(r) == folder)
                .count();
            return Err(Error::Incomplete {
                url: folder_url(folder),
                objects,
            });
        }
    }
    if stores.is_empty() {
        return Err(transfer(url, "it holds no whole store".into()));
    }
    let sharded = stores.iter().any(|s| s.contains('/'));
    if sharded && !listed.iter().any(|(r, _, _)| r == MANIFEST_FILE) {
        return Err(Error::Incomplete {
            url: url.into(),
            objects: listed.len(),
        });
    }
    Ok(())
}

/// Uploads one file; returns its CRC-32C.
fn upload(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
    object: &ObjectPath,
    len: u64,
    url: &str,
) -> Result<u32> {
    let mut file = File::open(path).map_err(Error::cache("open", path))?;
    let (store, object, path) = (Arc::clone(store), object.clone(), path.to_path_buf());
    let url = format!("{url}/{object}");
    runtime::run(async move {
        let failed = |source| Error::Upload {
            object: url.clone(),
            source,
        };
        let mut crc = 0u32;
        let mut piece = vec![0u8; PIECE.min(len as usize)];
        if len as usize <= PIECE {
            file.read_exact(&mut piece)
                .map_err(Error::cache("read", &path))?;
            crc = crc32c::crc32c_append(crc, &piece);
            store
                .put(&object, PutPayload::from(piece))
                .await
                .map_err(failed)?;
            return Ok(crc);
        }
        let upload = store.put_multipart(&object).await.map_err(failed)?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PIECE);
        let mut left = len;
        while left > 0 {
            let n = (left as usize).min(PIECE);
            file.read_exact(&mut piece[..n])
                .map_err(Error::cache("read", &path))?;
            crc = crc32c::crc32c_append(crc, &piece[..n]);
            writer
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(failed)?;
            writer.write(&piece[..n]);
            left -= n as u64;
        }
        writer.finish().await.map_err(failed)?;
        Ok(crc)
    })
}

fn check_size(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectPath,
    len: u64,
    url: &str,
) -> Result<()> {
    let (store, object_owned) = (Arc::clone(store), object.clone());
    let object_url = format!("{url}/{object}");
    let head = runtime::run(async move {
        store
            .head(&object_owned)
            .await
            .map_err(|source| Error::Upload {
                object: object_url,
                source,
            })
    })?;
    if head.size != len {
        return Err(transfer(
            &format!("{url}/{object}"),
            format!("{} bytes arrived, {len} were sent", head.size),
        ));
    }
    Ok(())
}

/// Reads the object back and compares its CRC-32C with `crc`.
fn check_crc(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectPath,
    len: u64,
    crc: u32,
    url: &str,
) -> Result<()> {
    let (store, object_owned) = (Arc::clone(store), object.clone());
    let object_url = format!("{url}/{object}");
    let read = runtime::run(async move {
        let mut crc = 0u32;
        let mut offset = 0;
        while offset < len {
            let end = (offset + PIECE as u64).min(len);
            let bytes = store
                .get_range(&object_owned, offset..end)
                .await
                .map_err(|e| Error::Fetch {
                    object: object_url.clone(),
                    range: offset..end,
                    attempts: 1,
                    source: Box::new(e),
                })?;
            crc = crc32c::crc32c_append(crc, &bytes);
            offset = end;
        }
        Ok(crc)
    })?;
    if read != crc {
        return Err(transfer(
            &format!("{url}/{object}"),
            format!("CRC-32C {read:#010x} read back, {crc:#010x} sent"),
        ));
    }
    Ok(())
}

/// Downloads one object into the new file `path`, piece by piece.
fn download(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectPath,
    len: u64,
    path: &Path,
    url: &str,
) -> Result<()> {
    use std::io::Write;
    let mut file = File::create(path).map_err(Error::cache("create", path))?;
    let mut offset = 0;
    while offset < len {
        let end = (offset + PIECE as u64).min(len);
        let (store, object_owned) = (Arc::clone(store), object.clone());
        let object_url = format!("{url}/{object}");
        let range = offset..end;
        let bytes = runtime::run(async move {
            store
                .get_range(&object_owned, range.clone())
                .await
                .map_err(|e| Error::Fetch {
                    object: object_url,
                    range,
                    attempts: 1,
                    source: Box::new(e),
                })
        })?;
        if bytes.len() as u64 != end - offset {
            return Err(transfer(
                &format!("{url}/{object}"),
                format!("{} bytes arrived for {offset}..{end}", bytes.len()),
            ));
        }
        file.write_all(&bytes)
            .map_err(Error::cache("write", path))?;
        offset = end;
    }
    file.sync_all().map_err(Error::cache("sync", path))?;
    Ok(())
}

/// One object under `prefix`, if any.
fn first_object(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectPath,
    url: &str,
) -> Result<Option<String>> {
    let (store, prefix, url) = (Arc::clone(store), prefix.clone(), url.to_string());
    runtime::run(async move {
        let mut objects = store.list(Some(&prefix));
        objects
            .try_next()
            .await
            .map(|meta| meta.map(|m| m.location.to_string()))
            .map_err(|source| Error::list(&url, source))
    })
}

/// Every object under the folder `url`: its `/`-separated path below the
/// folder and its size, in no particular order. One listing, nothing read:
/// how a caller tells a store (`store.zr` at the top) from a dataset
/// (`dataset.zr`) or a folder of stores before opening it.
///
/// # Errors
/// The setting errors of [`Remote::open`](crate::Remote::open), before any
/// request; [`Error::NoBucket`] and [`Error::List`].
pub fn list(url: &str, options: &RemoteOptions) -> Result<Vec<(String, u64)>> {
    let (store, prefix) = store_for_url(url, options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    let listed = list_all(&store, &prefix, url.trim_end_matches('/'))?;
    Ok(listed
        .into_iter()
        .map(|(relative, _, len)| (relative, len))
        .collect())
}

/// Deletes the object `url`, or every object under the folder `url` (a
/// failed job's shard, a store to replace), and returns how many there
/// were. A bucket's top is refused: name the folder to delete.
///
/// # Errors
/// The setting errors of [`Remote::open`](crate::Remote::open), before any
/// request; [`Error::Transfer`] for a URL naming no folder;
/// [`Error::NoBucket`], [`Error::List`]; [`Error::Delete`].
pub fn remove(url: &str, options: &RemoteOptions) -> Result<usize> {
    let url = url.trim_end_matches('/');
    let (store, prefix) = store_for_url(url, options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    if prefix.as_ref().is_empty() {
        return Err(transfer(
            url,
            "it names a whole bucket; name the folder to delete".into(),
        ));
    }
    let mut objects: Vec<ObjectPath> = list_all(&store, &prefix, url)?
        .into_iter()
        .map(|(_, object, _)| object)
        .collect();
    if objects.is_empty() && is_object(&store, &prefix, url)? {
        objects.push(prefix);
    }
    let count = objects.len();
    let url = url.to_string();
    runtime::run(async move {
        futures::stream::iter(objects)
            .map(|object| {
                let store = Arc::clone(&store);
                let url = &url;
                async move {
                    store.delete(&object).await.map_err(|source| Error::Delete {
                        object: format!("{url}/{object}"),
                        source,
                    })
                }
            })
            .buffer_unordered(PARTS_IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await
    })?;
    Ok(count)
}

/// Whether an object is named `object` (not a folder of objects).
fn is_object(store: &Arc<dyn ObjectStore>, object: &ObjectPath, url: &str) -> Result<bool> {
    let (store, object, url) = (Arc::clone(store), object.clone(), url.to_string());
    runtime::run(async move {
        match store.head(&object).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(source) => Err(Error::list(&url, source)),
        }
    })
}

fn list_all(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectPath,
    url: &str,
) -> Result<Vec<(String, ObjectPath, u64)>> {
    let listed = list_under(store, prefix, url)?;
    Ok(listed
        .into_iter()
        .map(|(parts, meta)| (parts.join("/"), meta.location, meta.size))
        .collect())
}

fn transfer(what: &str, reason: String) -> Error {
    Error::Transfer {
        what: what.into(),
        reason,
    }
}
