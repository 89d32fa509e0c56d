//! [`push`] and [`pull`]: copying stores between a local folder and object
//! storage, the header last, sizes and checksums checked.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use crate::remote::{list_under, store_for_url};
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
    /// Each store copied: its folder name under the destination (empty for
    /// a single store), files and bytes.
    pub stores: Vec<(String, usize, u64)>,
    /// Bytes copied in all.
    pub bytes: u64,
}

/// Uploads the store at `local` — or, when `local` holds stores in its
/// subfolders (a dataset: `images/`, `labels/`, …), each of them — to the
/// folder `url` in object storage.
///
/// Each store's files are uploaded with bounded memory (parts of 8 MiB),
/// `store.zr` last: until it arrives, opening the remote folder fails with
/// [`Error::Incomplete`]. Each object's size is checked after upload, and
/// its CRC-32C against the local file's, read back, when `verify`.
/// `progress` is called with bytes done and bytes in all.
///
/// The local stores are opened read-only while they are copied, so no
/// writer changes them underway.
///
/// # Errors
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
    let stores = local_stores(local)?;
    let (store, prefix) = store_for_url(url, &options.store_options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    if let Some(existing) = first_object(&store, &prefix, url)? {
        return Err(transfer(
            url,
            format!("it already holds objects ({existing}); push into an empty folder"),
        ));
    }
    // Hold every store open read-only (a shared lock) while it is copied.
    let mut guards = Vec::new();
    let mut plan = Vec::new();
    for (name, dir) in &stores {
        let guard = zrecord::AnyStore::open_read_only(dir)
            .map_err(|e| transfer(&dir.display().to_string(), e.to_string()))?;
        guards.push(guard);
        plan.push((name.clone(), dir.clone(), upload_order(dir)?));
    }
    let total: u64 = plan
        .iter()
        .flat_map(|(_, _, files)| files.iter().map(|(_, len)| len))
        .sum();
    let mut report = TransferReport::default();
    for (name, dir, files) in plan {
        let folder = if name.is_empty() {
            prefix.clone()
        } else {
            prefix.clone().join(name.as_str())
        };
        let mut bytes = 0;
        for (file, len) in &files {
            let path = dir.join(file);
            let object = folder.clone().join(file.as_str());
            let crc = upload(&store, &path, &object, *len, url)?;
            check_size(&store, &object, *len, url)?;
            if verify {
                check_crc(&store, &object, *len, crc, url)?;
            }
            bytes += len;
            report.bytes += len;
            progress(report.bytes, total);
        }
        report.stores.push((name, files.len(), bytes));
    }
    drop(guards);
    Ok(report)
}

/// Downloads the store (or the stores of a dataset) at `url` into the new
/// folder `local`: into a temporary folder beside it first, renamed into
/// place once every file's size has been checked, so `local` never holds a
/// partial copy.
///
/// # Errors
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
    let (store, prefix) = store_for_url(url, &options.store_options)?;
    let prefix = ObjectPath::from(prefix.trim_matches('/'));
    let listed = list_all(&store, &prefix, url)?;
    // Group the objects by store folder: "" for a single store.
    let mut stores: std::collections::BTreeMap<String, Vec<(String, ObjectPath, u64)>> =
        Default::default();
    for (relative, object, len) in listed {
        let (folder, file) = match relative.rsplit_once('/') {
            Some((folder, file)) if !folder.contains('/') => (folder.to_string(), file),
            None => (String::new(), relative.as_str()),
            Some(_) => continue, // deeper than a dataset's stores
        };
        let file = file.to_string();
        stores.entry(folder).or_default().push((file, object, len));
    }
    if stores.is_empty() {
        return Err(transfer(url, "no objects there".into()));
    }
    for (folder, files) in &stores {
        if !files.iter().any(|(file, _, _)| file == HEADER) {
            return Err(Error::Incomplete {
                url: if folder.is_empty() {
                    url.into()
                } else {
                    format!("{url}/{folder}")
                },
                objects: files.len(),
            });
        }
    }
    let parent = local.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".zrecord-pull-")
        .tempdir_in(parent)
        .map_err(Error::cache("create a folder in", parent))?;
    let total: u64 = stores.values().flatten().map(|(_, _, len)| len).sum();
    let mut report = TransferReport::default();
    for (folder, files) in &stores {
        let dir = staging.path().join(folder);
        fs::create_dir_all(&dir).map_err(Error::cache("create", &dir))?;
        let mut bytes = 0;
        for (file, object, len) in files {
            download(&store, object, *len, &dir.join(file), url)?;
            bytes += len;
            report.bytes += len;
            progress(report.bytes, total);
        }
        report.stores.push((folder.clone(), files.len(), bytes));
    }
    let staged = staging.keep();
    fs::rename(&staged, local).map_err(|e| {
        let _ = fs::remove_dir_all(&staged);
        Error::cache("move the download to", local)(e)
    })?;
    Ok(report)
}

/// The stores under `local`: itself (name "") or its subfolders that are stores.
fn local_stores(local: &Path) -> Result<Vec<(String, PathBuf)>> {
    if local.join(HEADER).is_file() {
        return Ok(vec![(String::new(), local.into())]);
    }
    let mut stores = Vec::new();
    let entries = fs::read_dir(local).map_err(Error::cache("list", local))?;
    for entry in entries {
        let entry = entry.map_err(Error::cache("list", local))?;
        let path = entry.path();
        let is_store = entry.file_type().is_ok_and(|t| t.is_dir()) && path.join(HEADER).is_file();
        if let (true, Some(name)) = (is_store, entry.file_name().to_str()) {
            stores.push((name.to_string(), path));
        }
    }
    if stores.is_empty() {
        return Err(transfer(
            &local.display().to_string(),
            "it is not a store and holds no stores".into(),
        ));
    }
    stores.sort();
    Ok(stores)
}

/// A store folder's regular files with their sizes, `store.zr` last.
fn upload_order(dir: &Path) -> Result<Vec<(String, u64)>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::cache("list", dir))? {
        let entry = entry.map_err(Error::cache("list", dir))?;
        let meta = entry
            .metadata()
            .map_err(Error::cache("read", entry.path()))?;
        let Some(name) = entry.file_name().to_str().map(String::from) else {
            continue;
        };
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            files.push((name, meta.len()));
        }
    }
    files.sort_by_key(|(name, _)| (name == HEADER, name.clone()));
    Ok(files)
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
            .map_err(|source| Error::List { url, source })
    })
}

/// Every object under `prefix`: its path below the prefix, path, size.
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
