//! The IDX format of MNIST and its relatives, plain or gzipped: two zero
//! bytes, an element-type byte, the number of dimensions, each dimension as
//! a big-endian `u32`, then the data, big-endian.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::{ArrayFile, invalid, read_header};
use crate::{DType, Error, Result};

const FORMAT: &str = "IDX";

/// Finds the IDX file `name` (`t10k-labels-idx1-ubyte`, say) in `dir`:
/// plain or gzipped (`.gz`), and with `-idx` or `.idx` in its name — both
/// spellings of MNIST's files are in circulation.
///
/// ```
/// use zrecord::idx;
/// # let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("t10k-labels.idx1-ubyte.gz"), b"")?;
/// let found = idx::find(dir.path(), "t10k-labels-idx1-ubyte");
/// assert_eq!(found, Some(dir.path().join("t10k-labels.idx1-ubyte.gz")));
/// assert_eq!(idx::find(dir.path(), "train-labels-idx1-ubyte"), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn find(dir: impl AsRef<Path>, name: &str) -> Option<PathBuf> {
    let dir = dir.as_ref();
    let dotted = name.replacen("-idx", ".idx", 1);
    [
        name.to_string(),
        format!("{name}.gz"),
        dotted.clone(),
        format!("{dotted}.gz"),
    ]
    .into_iter()
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

/// Opens an IDX file — gzipped or not, whatever its name says: gzip is
/// recognised by its first two bytes — and reads its header.
///
/// ```
/// use zrecord::{DType, idx};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("labels-idx1-ubyte");
///
/// // Three u8 labels: the header (type 0x08, one dimension of 3), then the data.
/// std::fs::write(&path, [0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1])?;
/// let labels = idx::open(&path)?;
/// assert_eq!((labels.dtype(), labels.shape()), (DType::U8, &[3][..]));
/// assert_eq!(labels.read_all()?.as_slice::<u8>(), Some(&[7, 2, 1][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::ForeignFile`] for a file that is not an IDX file or an element
/// type IDX does not define; [`Error::Io`].
pub fn open(path: impl AsRef<Path>) -> Result<ArrayFile> {
    let path = path.as_ref();
    let mut file = File::open(path).map_err(Error::io("open", path))?;
    let mut magic = [0u8; 2];
    let gzipped =
        file.read(&mut magic).map_err(Error::io("read", path))? == 2 && magic == [0x1f, 0x8b];
    let file = BufReader::new(File::open(path).map_err(Error::io("open", path))?);
    let mut reader: Box<dyn Read + Send> = if gzipped {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut start = [0u8; 4];
    read_header(&mut reader, &mut start, FORMAT, path)?;
    if start[..2] != [0, 0] {
        return Err(invalid(
            FORMAT,
            path,
            format!("not an IDX file (bad magic {start:02x?})"),
        ));
    }
    let dtype = match start[2] {
        0x08 => DType::U8,
        0x09 => DType::I8,
        0x0B => DType::I16,
        0x0C => DType::I32,
        0x0D => DType::F32,
        0x0E => DType::F64,
        t => {
            return Err(invalid(
                FORMAT,
                path,
                format!("unknown IDX element type 0x{t:02x}"),
            ));
        }
    };
    let mut shape = Vec::with_capacity(usize::from(start[3]));
    for _ in 0..start[3] {
        let mut d = [0u8; 4];
        read_header(&mut reader, &mut d, FORMAT, path)?;
        #[expect(
            clippy::big_endian_bytes,
            reason = "IDX dimensions are big-endian by definition"
        )]
        shape.push(u32::from_be_bytes(d) as usize);
    }
    Ok(ArrayFile {
        format: FORMAT,
        path: path.to_path_buf(),
        dtype,
        big_endian: true,
        data_offset: 4 + 4 * u64::from(start[3]),
        shape,
        reader,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn plain_and_gzipped_files_read_alike() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = vec![0, 0, 0x0B, 2, 0, 0, 0, 2, 0, 0, 0, 1];
        file.extend_from_slice(&[0x01, 0x02, 0xff, 0xfe]); // big-endian i16s
        let plain = dir.path().join("plain");
        std::fs::write(&plain, &file).unwrap();
        let gz = dir.path().join("plain.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&file).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        for path in [plain, gz] {
            let array = open(&path).unwrap();
            assert_eq!((array.dtype(), array.shape()), (DType::I16, &[2, 1][..]));
            assert_eq!(array.records().unwrap(), (2, &[1][..]));
            assert_eq!(
                array.read_all().unwrap().as_slice::<i16>(),
                Some(&[0x0102, -2][..])
            );
        }
    }

    #[test]
    fn malformed_files_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad");
        for bad in [
            &[1, 0, 8, 1, 0, 0, 0, 1, 5][..],    // magic
            &[0, 0, 0x0A, 1, 0, 0, 0, 1, 5][..], // element type
            &[0, 0, 8, 2, 0, 0, 0, 1][..],       // cut in the dimensions
        ] {
            std::fs::write(&path, bad).unwrap();
            let r = open(&path);
            assert!(matches!(r, Err(Error::ForeignFile { .. })), "{r:?}");
        }
        for bad in [
            &[0, 0, 8, 1, 0, 0, 0, 2, 5][..],
            &[0, 0, 8, 1, 0, 0, 0, 1, 5, 6][..],
        ] {
            std::fs::write(&path, bad).unwrap();
            let r = open(&path).unwrap().read_all();
            assert!(matches!(r, Err(Error::ForeignFile { .. })), "{r:?}");
        }
        std::fs::write(&path, [0, 0, 8, 0]).unwrap();
        assert!(open(&path).unwrap().records().is_err());
    }
}
