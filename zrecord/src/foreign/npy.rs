//! NumPy's `.npy` format, versions 1.0 to 3.0: C-ordered arrays of the store
//! dtypes (everything but `bf16`, which NumPy lacks), either byte order.
//! <https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use super::{ArrayFile, invalid, read_header};
use crate::{DType, Error, Result};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
const FORMAT: &str = ".npy";
/// Headers larger than this are refused as implausible.
const MAX_HEADER: usize = 1 << 20;

/// Opens an `.npy` file and reads its header.
///
/// ```
/// use zrecord::{DType, npy};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("a.npy");
///
/// let mut file = npy::header(DType::U16, &[2, 3])?;          // a 2×3 u16 array
/// file.extend((1..=6u16).flat_map(u16::to_le_bytes));
/// std::fs::write(&path, file)?;
///
/// let array = npy::open(&path)?;
/// assert_eq!((array.dtype(), array.shape()), (DType::U16, &[2, 3][..]));
/// assert_eq!(array.read_all()?.as_slice::<u16>(), Some(&[1, 2, 3, 4, 5, 6][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::ForeignFile`] for a file that is not an `.npy` file, a dtype
/// zrecord does not store, a Fortran-ordered array, or data shorter than
/// the header promises; [`Error::Io`].
pub fn open(path: impl AsRef<Path>) -> Result<ArrayFile> {
    let path = path.as_ref();
    let file = File::open(path).map_err(Error::io("open", path))?;
    let size = file.metadata().map_err(Error::io("stat", path))?.len();
    let mut reader = BufReader::new(file);
    let mut start = [0u8; 8];
    read_header(&mut reader, &mut start, FORMAT, path)?;
    if &start[..6] != MAGIC {
        return Err(invalid(FORMAT, path, "not an .npy file (bad magic)"));
    }
    let (len, prefix) = match start[6] {
        1 => {
            let mut b = [0u8; 2];
            read_header(&mut reader, &mut b, FORMAT, path)?;
            (usize::from(u16::from_le_bytes(b)), 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            read_header(&mut reader, &mut b, FORMAT, path)?;
            (u32::from_le_bytes(b) as usize, 12)
        }
        v => {
            return Err(invalid(
                FORMAT,
                path,
                format!("unsupported .npy version {v}"),
            ));
        }
    };
    if len > MAX_HEADER {
        return Err(invalid(
            FORMAT,
            path,
            format!("an .npy header of {len} bytes is not plausible"),
        ));
    }
    let mut text = vec![0u8; len];
    read_header(&mut reader, &mut text, FORMAT, path)?;
    let text =
        String::from_utf8(text).map_err(|_| invalid(FORMAT, path, "the header is not text"))?;
    let (dtype, big_endian, shape) =
        parse_dict(&text).map_err(|reason| invalid(FORMAT, path, reason))?;
    let array = ArrayFile {
        format: FORMAT,
        path: path.to_path_buf(),
        dtype,
        shape,
        big_endian,
        data_offset: (prefix + len) as u64,
        reader: Box::new(reader),
    };
    let data = array
        .data_bytes()
        .ok_or_else(|| array.invalid(format!("shape {:?} overflows", array.shape)))?;
    if size.saturating_sub(array.data_offset) < data {
        return Err(array.invalid(format!(
            "truncated: the header promises {data} bytes of data, the file holds {}",
            size.saturating_sub(array.data_offset)
        )));
    }
    Ok(array)
}

/// The header of a C-ordered, little-endian `.npy` array of `dtype` and
/// `shape` (version 1.0, or 2.0 for a shape too long for it), padded so the
/// data starts on a 64-byte boundary: write it, then the data.
///
/// # Errors
/// [`Error::InvalidArgument`] for `bf16`, which `.npy` has no code for.
pub fn header(dtype: DType, shape: &[usize]) -> Result<Vec<u8>> {
    let descr =
        descr(dtype).ok_or_else(|| Error::InvalidArgument(format!(".npy has no {dtype} dtype")))?;
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let shape = match dims.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    for (version, prefix) in [(1u8, 10usize), (2, 12)] {
        // Pad with spaces so the data is aligned, ending with a newline.
        let unpadded = prefix + dict.len() + 1;
        let len = unpadded.next_multiple_of(64) - prefix;
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[version, 0]);
        if version == 1 {
            let Ok(len) = u16::try_from(len) else {
                continue;
            };
            out.extend_from_slice(&len.to_le_bytes());
        } else {
            let len = u32::try_from(len)
                .map_err(|_| Error::InvalidArgument("shape too long for .npy".into()))?;
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(prefix + len - 1, b' ');
        out.push(b'\n');
        return Ok(out);
    }
    Err(Error::InvalidArgument("shape too long for .npy".into()))
}

/// The dtype, byte order and shape a header dict describes.
fn parse_dict(text: &str) -> std::result::Result<(DType, bool, Vec<usize>), String> {
    let descr = field(text, "descr").ok_or("the header has no 'descr'")?;
    let descr = descr.trim().trim_matches(|c| c == '\'' || c == '"');
    if field(text, "fortran_order").is_some_and(|v| v.trim() == "True") {
        return Err(
            "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)".into(),
        );
    }
    let shape = field(text, "shape")
        .ok_or("the header has no 'shape'")?
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad shape entry {s:?}"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let (order, code) = descr.split_at(descr.len().min(1));
    let big_endian = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return Err(format!("unsupported dtype {descr:?}")),
    };
    let dtype = DType::ALL
        .into_iter()
        .find(|&d| descr_code(d) == Some(code))
        .ok_or_else(|| {
            format!(
                "unsupported dtype {descr:?} (zrecord stores bool, u8..u64, i8..i64, f16, f32, f64)"
            )
        })?;
    Ok((dtype, big_endian, shape))
}

/// The text of `key`'s value in a Python dict literal (up to the next key or the end).
fn field<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let at = dict.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = dict.get(at..)?.trim_start().strip_prefix(':')?;
    let end = if rest.trim_start().starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    rest.get(..end)
}

/// NumPy's type code for `dtype`, without the byte order.
fn descr_code(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "b1",
        DType::U8 => "u1",
        DType::I8 => "i1",
        DType::U16 => "u2",
        DType::I16 => "i2",
        DType::U32 => "u4",
        DType::I32 => "i4",
        DType::U64 => "u8",
        DType::I64 => "i8",
        DType::F16 => "f2",
        DType::F32 => "f4",
        DType::F64 => "f8",
        _ => return None,
    })
}

/// The little-endian `descr` of `dtype` (`|` for single bytes).
fn descr(dtype: DType) -> Option<String> {
    let order = if dtype.size() == 1 { '|' } else { '<' };
    Some(format!("{order}{}", descr_code(dtype)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join("a.npy");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn headers_round_trip_and_align_the_data() {
        let dir = tempfile::tempdir().unwrap();
        for (dtype, shape) in [
            (DType::F32, vec![3, 4]),
            (DType::U8, vec![5]),
            (DType::Bool, vec![2, 1, 1]),
        ] {
            let mut bytes = header(dtype, &shape).unwrap();
            assert_eq!(bytes.len() % 64, 0);
            let offset = bytes.len() as u64;
            bytes.resize(
                bytes.len() + shape.iter().product::<usize>() * dtype.size(),
                0,
            );
            let array = open(write(dir.path(), &bytes)).unwrap();
            assert_eq!(
                (array.dtype(), array.shape(), array.data_offset()),
                (dtype, &shape[..], offset)
            );
        }
        assert!(header(DType::BF16, &[1]).is_err());
    }

    #[test]
    fn big_endian_data_is_swapped() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n";
        let mut numpy = b"\x93NUMPY\x01\x00".to_vec();
        numpy.extend_from_slice(&(text.len() as u16).to_le_bytes());
        numpy.extend_from_slice(text.as_bytes());
        numpy.extend_from_slice(&[0, 0, 0, 7, 0, 0, 1, 0]);
        let array = open(write(dir.path(), &numpy)).unwrap();
        assert_eq!(
            array.read_all().unwrap().as_slice::<i32>(),
            Some(&[7, 256][..])
        );
    }

    #[test]
    fn malformed_files_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let good = header(DType::U16, &[4]).unwrap();
        for bad in [
            b"\x93NUMPX\x01\x00".to_vec(), // magic
            good[..20].to_vec(),           // cut in the header
            good.clone(),                  // no data
            good.iter()
                .map(|&b| if b == b'<' { b'!' } else { b })
                .collect(), // byte order
        ] {
            let r = open(write(dir.path(), &bad));
            assert!(matches!(r, Err(Error::ForeignFile { .. })), "{r:?}");
        }
    }
}
