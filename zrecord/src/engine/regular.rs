//! Opening store files: regular files only, never through a symbolic link,
//! never blocking on a FIFO. Everything the engine reads, writes, truncates
//! or maps goes through here, so recovery cannot reach a file outside the
//! store folder or hang on something that is not a file.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::{Error, Result};

/// How a store file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    ReadWrite,
    /// Read-write, created if missing.
    Create,
    /// Write, created if missing and emptied.
    Replace,
}

/// Opens `path`, which must be a regular file (not a symbolic link, folder,
/// FIFO, socket or device).
pub(crate) fn open(path: &Path, access: Access) -> Result<File> {
    let mut options = OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::ReadWrite => options.read(true).write(true),
        Access::Create => options.read(true).write(true).create(true),
        Access::Replace => options.write(true).create(true).truncate(true),
    };
    // O_NOFOLLOW: a symbolic link fails (ELOOP) instead of being followed;
    // O_NONBLOCK: opening a FIFO returns at once, and fstat refuses it.
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(path).map_err(|e| {
        match fs::symlink_metadata(path).map(|m| m.file_type()) {
            Ok(kind) if !kind.is_file() => not_regular(path, kind),
            _ => Error::io("open", path)(e),
        }
    })?;
    let kind = file
        .metadata()
        .map_err(Error::io("stat", path))?
        .file_type();
    if !kind.is_file() {
        return Err(not_regular(path, kind));
    }
    Ok(file)
}

/// [`open`], or `None` when nothing has that name.
pub(crate) fn open_if_present(path: &Path, access: Access) -> Result<Option<File>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        _ => open(path, access).map(Some),
    }
}

/// Whether anything (a file, link, folder, ...) has the name `path`.
pub(crate) fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// The size of an open file.
pub(crate) fn len(file: &File, path: &Path) -> Result<u64> {
    Ok(file.metadata().map_err(Error::io("stat", path))?.len())
}

/// Reads the whole of a file that should be small, refusing one larger
/// than `limit` before reading it.
pub(crate) fn read_small(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let file = open(path, Access::Read)?;
    let size = len(&file, path)?;
    if size > limit {
        return Err(Error::corrupt(
            path,
            format!("{size} bytes, more than the {limit} this file may hold"),
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io("read", path))?;
    if bytes.len() as u64 > limit {
        return Err(Error::corrupt(path, format!("larger than {limit} bytes")));
    }
    Ok(bytes)
}

/// Removes `path` if it exists (a link is removed, never what it points at).
pub(crate) fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io("remove", path)(e)),
        _ => Ok(()),
    }
}

fn not_regular(path: &Path, kind: fs::FileType) -> Error {
    let found = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Error::NotRegularFile {
        path: path.into(),
        found,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_folders_and_fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("target"), b"outside").unwrap();
        std::os::unix::fs::symlink(d.join("target"), d.join("link")).unwrap();
        fs::create_dir(d.join("folder")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(d.join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
        for (name, found) in [
            ("link", "a symbolic link"),
            ("folder", "a folder"),
            ("fifo", "a FIFO"),
        ] {
            for access in [Access::Read, Access::ReadWrite, Access::Create] {
                match open(&d.join(name), access) {
                    Err(Error::NotRegularFile { found: f, .. }) => assert_eq!(f, found, "{name}"),
                    other => panic!("{name} {access:?}: {other:?}"),
                }
            }
        }
        assert!(matches!(
            read_small(&d.join("fifo"), 10),
            Err(Error::NotRegularFile { .. })
        ));
        assert_eq!(fs::read(d.join("target")).unwrap(), b"outside");
        assert!(
            open_if_present(&d.join("nothing"), Access::Read)
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            read_small(&d.join("target"), 3),
            Err(Error::Corrupt { .. })
        ));
        assert_eq!(read_small(&d.join("target"), 7).unwrap(), b"outside");
    }
}
