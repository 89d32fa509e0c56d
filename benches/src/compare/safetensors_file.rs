//! safetensors files: one tensor per array, memory-mapped, sliced per record.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use super::Result;
use super::disk::{Region, map};
use super::peers::Array;

/// Writes `arrays` as the tensors of a safetensors file at `path`, durably.
///
/// # Errors
/// safetensors and I/O errors, or a dtype this module does not map.
pub fn write(path: &Path, arrays: &[Array<'_>]) -> Result<()> {
    let views = arrays
        .iter()
        .map(|a| {
            let dtype = match a.descr {
                "|u1" => Dtype::U8,
                "<i4" => Dtype::I32,
                "<i8" => Dtype::I64,
                other => return Err(format!("no safetensors dtype for {other}").into()),
            };
            Ok((a.name, TensorView::new(dtype, a.shape.clone(), a.bytes)?))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, None, path)?;
    File::open(path)?.sync_all()?;
    Ok(())
}

/// Maps `path` and reads its header: every tensor's bytes by name.
///
/// # Errors
/// I/O errors and invalid files.
pub fn open(path: &Path) -> Result<HashMap<String, Region>> {
    let map = map(path)?;
    let (header, metadata) = SafeTensors::read_metadata(&map)?;
    let start = 8 + header;
    Ok(metadata
        .tensors()
        .into_iter()
        .map(|(name, info)| {
            let (a, b) = info.data_offsets;
            let range = start + a..start + b;
            let map = std::sync::Arc::clone(&map);
            (name, Region { map, range })
        })
        .collect())
}
