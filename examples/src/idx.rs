//! Reading IDX files (the MNIST format), gzipped or plain.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// An IDX file of unsigned bytes: its dimensions and its data, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxU8 {
    /// The dimensions, outermost first (`[60000, 28, 28]` for MNIST images).
    pub dims: Vec<usize>,
    /// The elements.
    pub data: Vec<u8>,
}

/// Finds `name` in `dir` as `name`, `name.gz`, or with the file name's
/// `-idx` spelled `.idx` (the two spellings in circulation).
pub fn find(dir: &Path, name: &str) -> Option<PathBuf> {
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

/// Reads an IDX file of unsigned bytes (type code 0x08), gzipped (by its
/// first two bytes, whatever its name) or plain.
///
/// # Errors
/// An I/O error, or `InvalidData` for a file that is not a well-formed
/// `u8` IDX file.
pub fn read_u8(path: &Path) -> std::io::Result<IdxU8> {
    let mut raw = Vec::new();
    BufReader::new(File::open(path)?).read_to_end(&mut raw)?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out)?;
        out
    } else {
        raw
    };
    parse_u8(&bytes).map_err(|reason| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {reason}", path.display()),
        )
    })
}

/// Parses the bytes of a `u8` IDX file.
///
/// # Errors
/// What is wrong with the header or the length.
pub fn parse_u8(bytes: &[u8]) -> Result<IdxU8, String> {
    let header = bytes.get(..4).ok_or("shorter than an IDX header")?;
    if header[0] != 0 || header[1] != 0 {
        return Err(format!("bad magic {header:02x?}"));
    }
    if header[2] != 0x08 {
        return Err(format!(
            "element type 0x{:02x} is not unsigned bytes (0x08)",
            header[2]
        ));
    }
    let rank = usize::from(header[3]);
    let mut dims = Vec::with_capacity(rank);
    for k in 0..rank {
        let at = 4 + 4 * k;
        let d = bytes
            .get(at..at + 4)
            .ok_or("truncated dimensions")?
            .try_into()
            .map_err(|_| "truncated dimensions")?;
        #[expect(
            clippy::big_endian_bytes,
            reason = "IDX dimensions are big-endian by definition"
        )]
        let d = u32::from_be_bytes(d);
        dims.push(d as usize);
    }
    let data = &bytes[(4 + 4 * rank).min(bytes.len())..];
    let expected: usize = dims.iter().product();
    if data.len() != expected {
        return Err(format!(
            "dimensions {dims:?} need {expected} bytes, the file has {}",
            data.len()
        ));
    }
    Ok(IdxU8 {
        dims,
        data: data.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_small_file_and_rejects_bad_ones() {
        let mut file = vec![0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3];
        file.extend(1..=6u8);
        let idx = parse_u8(&file).unwrap();
        assert_eq!(idx.dims, vec![2, 3]);
        assert_eq!(idx.data, vec![1, 2, 3, 4, 5, 6]);
        assert!(parse_u8(&file[..file.len() - 1]).is_err());
        assert!(parse_u8(&[0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0]).is_err());
        assert!(parse_u8(&[1, 2]).is_err());
    }
}
