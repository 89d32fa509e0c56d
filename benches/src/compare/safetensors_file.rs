//! safetensors files: one tensor per stream, memory-mapped, sliced per record.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

/// Errors of this module, as boxed errors.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// One tensor to write: name, dtype, shape and little-endian bytes.
pub type Tensor<'a> = (&'a str, Dtype, Vec<usize>, &'a [u8]);

/// Writes `tensors` to a safetensors file at `path`, durably.
///
/// # Errors
/// safetensors and I/O errors.
pub fn write(path: &Path, tensors: Vec<Tensor<'_>>) -> Result<()> {
    let views = tensors
        .into_iter()
        .map(|(name, dtype, shape, data)| {
            Ok((name.to_string(), TensorView::new(dtype, shape, data)?))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, None, path)?;
    File::open(path)?.sync_all()?;
    Ok(())
}

/// A memory-mapped safetensors file.
pub struct SafetensorsMap {
    map: memmap2::Mmap,
    tensors: HashMap<String, Range<usize>>,
}

impl SafetensorsMap {
    /// Maps `path` and reads its header.
    ///
    /// # Errors
    /// I/O errors and invalid files.
    pub fn open(path: &Path) -> Result<SafetensorsMap> {
        let file = File::open(path)?;
        // SAFETY: the file is private to this benchmark (written in its own
        // temporary folder) and nothing writes or truncates it while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        let (header, metadata) = SafeTensors::read_metadata(&map)?;
        let start = 8 + header;
        let tensors = metadata
            .tensors()
            .into_iter()
            .map(|(name, info)| {
                let (a, b) = info.data_offsets;
                (name, start + a..start + b)
            })
            .collect();
        Ok(SafetensorsMap { map, tensors })
    }

    /// The bytes of tensor `name`.
    pub fn tensor(&self, name: &str) -> Option<&[u8]> {
        self.map.get(self.tensors.get(name)?.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_maps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.safetensors");
        let images: Vec<u8> = (0..24u8).collect();
        let offsets: Vec<u8> = [0i64, 5, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        write(
            &path,
            vec![
                ("images", Dtype::U8, vec![2, 3, 4], &images),
                ("offsets", Dtype::I64, vec![3], &offsets),
            ],
        )
        .unwrap();
        let m = SafetensorsMap::open(&path).unwrap();
        assert_eq!(m.tensor("images"), Some(&images[..]));
        assert_eq!(m.tensor("offsets"), Some(&offsets[..]));
        assert_eq!(m.tensor("nope"), None);
    }
}
