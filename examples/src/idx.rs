//! MNIST's IDX files, gzipped or plain, read with [`zrecord::idx`]: finding
//! them under either spelling, and reading a `u8` one whole.

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
/// [`zrecord::Error::ForeignFile`] for a file that is not a well-formed
/// `u8` IDX file (naming it); [`zrecord::Error::Io`].
pub fn read_u8(path: &Path) -> zrecord::Result<IdxU8> {
    let file = zrecord::idx::open(path)?;
    let dims = file.shape().to_vec();
    let data = file
        .read_all()?
        .into_vec::<u8>()
        .map_err(|values| zrecord::Error::ForeignFile {
            path: path.to_path_buf(),
            format: "IDX",
            reason: format!("its elements are {}, not unsigned bytes", values.dtype()),
        })?;
    Ok(IdxU8 { dims, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_file_and_refuses_other_element_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t10k-labels-idx1-ubyte");
        let mut file = vec![0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3];
        file.extend(1..=6u8);
        std::fs::write(&path, &file).unwrap();
        let idx = read_u8(&find(dir.path(), "t10k-labels-idx1-ubyte").unwrap()).unwrap();
        assert_eq!((idx.dims, idx.data), (vec![2, 3], vec![1, 2, 3, 4, 5, 6]));
        std::fs::write(&path, [0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0]).unwrap();
        assert!(read_u8(&path).is_err());
    }
}
