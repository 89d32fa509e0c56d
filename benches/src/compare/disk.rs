//! Files: allocated bytes on disk, read-only maps, and `.npy` files (format
//! version 1.0) written as NumPy writes them.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

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

const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// The `.npy` header of a C-order array of `descr` (`|u1`, `<i4`, `<i8`,
/// ...) and `shape`, padded so the data starts on a 64-byte boundary.
fn npy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims = match shape {
        [_] => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = NPY_MAGIC.len() + 2 + 2 + dict.len() + 1;
    dict.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    dict.push('\n');
    let mut out = NPY_MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes an array (its little-endian bytes `data`) to a `.npy` file at
/// `path`, durably.
pub(crate) fn write_npy(path: &Path, descr: &str, shape: &[usize], data: &[u8]) -> io::Result<()> {
    let mut file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    file.write_all(&npy_header(descr, shape))?;
    file.write_all(data)?;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// Maps a file [`write_npy`] wrote; the region is its array's bytes (the
/// harness knows dtype and shape, so the header is only skipped).
pub(crate) fn open_npy(path: &Path) -> io::Result<Region> {
    let map = map(path)?;
    if map.len() < 10 || &map[..6] != NPY_MAGIC || map[6] != 1 {
        let why = format!("{} is not an .npy 1.0 file", path.display());
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    let start = 10 + usize::from(u16::from_le_bytes([map[8], map[9]]));
    let range = start.min(map.len())..map.len();
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
        write_npy(&path, "|u1", &[2, 3, 4], &data).unwrap();
        let h = npy_header("|u1", &[2, 3, 4]);
        assert_eq!(h.len() % 64, 0);
        assert!(String::from_utf8_lossy(&h).contains("'shape': (2, 3, 4), }"));
        assert!(String::from_utf8_lossy(&npy_header("<i8", &[3])).contains("'shape': (3,), }"));
        assert_eq!(open_npy(&path).unwrap().bytes(), &data[..]);
        let a = allocated_bytes(&path).unwrap();
        assert!(a >= 24 + 64, "{a}");
        assert!(allocated_bytes(dir.path()).unwrap() >= a);
        std::fs::write(&path, b"nope").unwrap();
        assert!(open_npy(&path).is_err());
    }
}
