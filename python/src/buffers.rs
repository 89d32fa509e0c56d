//! Moving records between Rust and Python: index arrays in, gathered
//! records out as `bytearray`s that numpy wraps without a copy.

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use zrecord::{DynRaggedBatch, RaggedLayout};

use crate::error;

/// Little-endian `u64`s (numpy's `uint64` bytes) as indices.
pub fn indices(bytes: &[u8]) -> PyResult<Vec<u64>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(error::value(format!(
            "indices: {} bytes is not a whole number of uint64s",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .collect())
}

/// A new `bytearray` of `len` bytes filled by `read` with the GIL released:
/// the records are decoded straight into the buffer numpy will wrap.
pub fn fill<'py, F>(py: Python<'py>, len: usize, read: F) -> PyResult<Bound<'py, PyByteArray>>
where
    F: FnOnce(&mut [u8]) -> zrecord::Result<()> + Send,
{
    // The bytearray is new and not yet visible to Python code, so no other
    // thread can resize it while the GIL is released.
    PyByteArray::new_with(py, len, |bytes| {
        py.detach(|| read(bytes)).map_err(error::store)
    })
}

/// A ragged batch as `(values, offsets, dims, ranks)`: the values' bytes,
/// `n + 1` element offsets, every record's dimensions end to end and each
/// record's number of dimensions, the last three as `uint64` bytes.
pub type RaggedParts<'py> = (
    Bound<'py, PyByteArray>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// The Python parts of a gathered ragged batch.
pub fn ragged_parts<'py>(py: Python<'py>, batch: &DynRaggedBatch) -> RaggedParts<'py> {
    let layout = batch.layout();
    let mut dims = Vec::new();
    let mut ranks = Vec::with_capacity(layout.len());
    for k in 0..layout.len() {
        let shape = layout.shape(k).unwrap_or(&[]);
        dims.extend(shape.iter().map(|&d| d as u64));
        ranks.push(shape.len() as u64);
    }
    let offsets: Vec<u64> = layout.offsets().iter().map(|&o| o as u64).collect();
    (
        PyByteArray::new(py, batch.values().as_bytes()),
        PyBytes::new(py, &u64_bytes(&offsets)),
        PyBytes::new(py, &u64_bytes(&dims)),
        PyBytes::new(py, &u64_bytes(&ranks)),
    )
}

/// A layout from every record's dimensions end to end and each record's
/// number of dimensions (`uint64` bytes, as [`ragged_parts`] gives them).
pub fn layout(dims: &[u8], ranks: &[u8]) -> PyResult<RaggedLayout> {
    let dims = indices(dims)?;
    let ranks = indices(ranks)?;
    let mut layout = RaggedLayout::new();
    let mut at = 0usize;
    for (k, &rank) in ranks.iter().enumerate() {
        let end = usize::try_from(rank)
            .ok()
            .and_then(|r| at.checked_add(r))
            .filter(|&end| end <= dims.len())
            .ok_or_else(|| error::value(format!("record {k}: its shape runs past the dims")))?;
        let shape: Vec<usize> = dims[at..end].iter().map(|&d| d as usize).collect();
        layout.push(&shape).map_err(error::store)?;
        at = end;
    }
    if at != dims.len() {
        return Err(error::value(format!(
            "{} dims left over after {} records' shapes",
            dims.len() - at,
            ranks.len()
        )));
    }
    Ok(layout)
}

fn u64_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
