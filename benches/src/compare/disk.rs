//! Files: allocated bytes on disk, read-only maps, and `.npy` files.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use zrecord::DType;

use super::Result;

/// Allocated bytes (`st_blocks × 512`) of a file, or of every file under a
/// folder: what the data really occupies, sparse holes excluded and
/// preallocation included.
pub(crate) fn allocated_bytes(path: &Path) -> io::Result<u64> {
    let meta = std::fs::symlink_metadata(path)?;
    let mut total = meta.blocks() * 512;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            total += allocated_bytes(&entry?.path())?;
        }
    }
    Ok(total)
}

/// A read-only memory map of a whole file.
pub(crate) fn map(path: &Path) -> io::Result<Arc<memmap2::Mmap>> {
    let file = File::open(path)?;
    // SAFETY: the file is private to this benchmark (written in its own
    // temporary folder) and nothing writes or truncates it while mapped.
    Ok(Arc::new(unsafe { memmap2::Mmap::map(&file) }?))
}

/// Part of a mapped file: an array a peer stores.
#[derive(Clone)]
pub(crate) struct Region {
    pub(crate) map: Arc<memmap2::Mmap>,
    pub(crate) range: Range<usize>,
}

impl Region {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// Writes an array (its little-endian bytes `data`) to a `.npy` file at
/// `path` with zrecord's header (format 1.0, as NumPy writes it), durably.
pub(crate) fn write_npy(path: &Path, dtype: DType, shape: &[usize], data: &[u8]) -> Result<()> {
    let mut file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    file.write_all(&zrecord::npy::header(dtype, shape)?)?;
    file.write_all(data)?;
    Ok(file.into_inner().map_err(|e| e.into_error())?.sync_all()?)
}

/// Maps a file [`write_npy`] wrote; the region is its array's bytes (the
/// harness knows dtype and shape, so the header is only checked and skipped).
pub(crate) fn open_npy(path: &Path) -> Result<Region> {
    let start = zrecord::npy::open(path)?.data_offset() as usize;
    let map = map(path)?;
    let range = start..map.len();
    Ok(Region { map, range })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_files_and_their_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let data: Vec<u8> = (0..24u8).collect();
        write_npy(&path, DType::U8, &[2, 3, 4], &data).unwrap();
        let array = zrecord::npy::open(&path).unwrap();
        assert_eq!(array.shape(), [2, 3, 4]);
        assert_eq!(array.data_offset() % 64, 0);
        assert_eq!(open_npy(&path).unwrap().bytes(), &data[..]);
        let a = allocated_bytes(&path).unwrap();
        assert!(a >= 24 + 64, "{a}");
        assert!(allocated_bytes(dir.path()).unwrap() >= a);
        std::fs::write(&path, b"nope").unwrap();
        assert!(open_npy(&path).is_err());
    }
}
