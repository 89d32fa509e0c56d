//! `.npy` files (format version 1.0): written as NumPy writes them and
//! memory-mapped for reading.

use std::fs::File;
use std::io;
use std::path::Path;

use super::disk::write_durable;

const MAGIC: &[u8] = b"\x93NUMPY";

/// The header of a C-order array of `descr` (`|u1`, `<i4`, `<i8`, ...) and
/// `shape`, padded so the data starts on a 64-byte boundary.
pub fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
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

/// A memory-mapped `.npy` file.
pub struct NpyMap {
    map: memmap2::Mmap,
    data_start: usize,
    descr: String,
    shape: Vec<usize>,
}

fn invalid(reason: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, reason.into())
}

/// The quoted value of `key` in a header dict.
fn quoted<'h>(dict: &'h str, key: &str) -> Option<&'h str> {
    let rest = &dict[dict.find(&format!("'{key}':"))? + key.len() + 3..];
    let rest = &rest[rest.find('\'')? + 1..];
    Some(&rest[..rest.find('\'')?])
}

impl NpyMap {
    /// Maps `path` and parses its header (versions 1 to 3).
    ///
    /// # Errors
    /// I/O errors, or a file that is not a C-order `.npy` array.
    pub fn open(path: &Path) -> io::Result<NpyMap> {
        let file = File::open(path)?;
        // SAFETY: the file is private to this benchmark (written in its own
        // temporary folder) and nothing writes or truncates it while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        if map.len() < 10 || &map[..6] != MAGIC {
            return Err(invalid("not an .npy file"));
        }
        let (len, start) = match map[6] {
            1 => (u16::from_le_bytes([map[8], map[9]]) as usize, 10),
            2 | 3 if map.len() >= 12 => (
                u32::from_le_bytes([map[8], map[9], map[10], map[11]]) as usize,
                12,
            ),
            v => return Err(invalid(format!(".npy version {v}"))),
        };
        let dict = std::str::from_utf8(
            map.get(start..start + len)
                .ok_or_else(|| invalid("short header"))?,
        )
        .map_err(|_| invalid("header is not text"))?;
        if !dict.contains("'fortran_order': False") {
            return Err(invalid("only C-order arrays"));
        }
        let descr = quoted(dict, "descr")
            .ok_or_else(|| invalid("no descr"))?
            .to_string();
        let dims = &dict[dict.find("'shape':").ok_or_else(|| invalid("no shape"))?..];
        let dims = &dims[dims.find('(').ok_or_else(|| invalid("bad shape"))? + 1
            ..dims.find(')').ok_or_else(|| invalid("bad shape"))?];
        let shape = dims
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| d.parse().map_err(|_| invalid(format!("bad dimension {d}"))))
            .collect::<io::Result<Vec<usize>>>()?;
        Ok(NpyMap {
            map,
            data_start: start + len,
            descr,
            shape,
        })
    }

    /// The array's bytes.
    pub fn data(&self) -> &[u8] {
        &self.map[self.data_start..]
    }

    /// The dtype string (`|u1`, `<i4`, ...).
    pub fn descr(&self) -> &str {
        &self.descr
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
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
        assert_eq!(*h.last().unwrap(), b'\n');
        let m = NpyMap::open(&path).unwrap();
        assert_eq!(
            (m.descr(), m.shape(), m.data()),
            ("|u1", &[2, 3, 4][..], &data[..])
        );
        write(&path, "<i8", &[3], &[0u8; 24]).unwrap();
        let m = NpyMap::open(&path).unwrap();
        assert_eq!((m.descr(), m.shape()), ("<i8", &[3][..]));
        std::fs::write(&path, b"nope").unwrap();
        assert!(NpyMap::open(&path).is_err());
    }
}
