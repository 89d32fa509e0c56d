//! Bytes on disk and durable writes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Allocated bytes (`st_blocks × 512`) of a file, or of every file under a
/// folder: what the data really occupies, sparse holes excluded and
/// preallocation included.
///
/// # Errors
/// When a path cannot be read.
pub fn allocated_bytes(path: &Path) -> std::io::Result<u64> {
    let meta = std::fs::symlink_metadata(path)?;
    let mut total = meta.blocks() * 512;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            total += allocated_bytes(&entry?.path())?;
        }
    }
    Ok(total)
}

/// Writes `pieces` one after another to a new file at `path` and makes it
/// durable (`fsync`).
///
/// # Errors
/// Any I/O error.
pub fn write_durable(path: &Path, pieces: &[&[u8]]) -> std::io::Result<()> {
    let mut file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    for piece in pieces {
        file.write_all(piece)?;
    }
    let file = file.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_blocks_of_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        write_durable(&dir.path().join("a"), &[&[1u8; 10_000], &[2u8; 5]]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        write_durable(&dir.path().join("sub/b"), &[&[3u8; 100]]).unwrap();
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap().len(), 10_005);
        let a = allocated_bytes(&dir.path().join("a")).unwrap();
        assert!(a >= 10_005, "{a}");
        assert!(allocated_bytes(dir.path()).unwrap() > a);
    }
}
