//! Files: allocated bytes on disk, durable writes, read-only maps.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

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

/// A read-only memory map of a whole file.
pub fn map(path: &Path) -> std::io::Result<Arc<memmap2::Mmap>> {
    let file = File::open(path)?;
    // SAFETY: the file is private to this benchmark (written in its own
    // temporary folder) and nothing writes or truncates it while mapped.
    Ok(Arc::new(unsafe { memmap2::Mmap::map(&file) }?))
}

/// Part of a mapped file: an array a peer stores.
#[derive(Clone)]
pub struct Region {
    /// The map.
    pub map: Arc<memmap2::Mmap>,
    /// The array's bytes in it.
    pub range: Range<usize>,
}

impl Region {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
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
        assert_eq!(map(&dir.path().join("a")).unwrap().len(), 10_005);
        let a = allocated_bytes(&dir.path().join("a")).unwrap();
        assert!(a >= 10_005, "{a}");
        assert!(allocated_bytes(dir.path()).unwrap() > a);
    }
}
