//! `.npy` files (format version 1.0): written as NumPy writes them and
//! memory-mapped for reading.

use std::io;
use std::path::Path;

use super::disk::{Region, map, write_durable};

const MAGIC: &[u8] = b"\x93NUMPY";

/// The header of a C-order array of `descr` (`|u1`, `<i4`, `<i8`, ...) and
/// `shape`, padded so the data starts on a 64-byte boundary.
pub fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims = match shape {
        [_] => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    dict.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    dict.push('\n');
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes an array (its little-endian bytes `data`) to `path`, durably.
///
/// # Errors
/// Any I/O error.
pub fn write(path: &Path, descr: &str, shape: &[usize], data: &[u8]) -> io::Result<()> {
    write_durable(path, &[&header(descr, shape), data])
}

/// Maps a version-1.0 file this module wrote; the region is its array's
/// bytes (the harness knows dtype and shape, so the header is only skipped).
///
/// # Errors
/// I/O errors, or a file that is not `.npy` version 1.0.
pub fn open(path: &Path) -> io::Result<Region> {
    let map = map(path)?;
    if map.len() < 10 || &map[..6] != MAGIC || map[6] != 1 {
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
    fn writes_and_maps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let data: Vec<u8> = (0..24u8).collect();
        write(&path, "|u1", &[2, 3, 4], &data).unwrap();
        let h = header("|u1", &[2, 3, 4]);
        assert_eq!(h.len() % 64, 0);
        assert!(String::from_utf8_lossy(&h).contains("'shape': (2, 3, 4), }"));
        assert!(String::from_utf8_lossy(&header("<i8", &[3])).contains("'shape': (3,), }"));
        assert_eq!(open(&path).unwrap().bytes(), &data[..]);
        std::fs::write(&path, b"nope").unwrap();
        assert!(open(&path).is_err());
    }
}
