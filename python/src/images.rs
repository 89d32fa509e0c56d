//! Encoded images (JPEG, PNG) decoded into fixed-size RGB records, as
//! `zrecord import images --resize` decodes them, for the engine sinks.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use zrecord_vision::Transform;

use crate::{buffers, error};

/// Decodes the images laid end to end in `values`, record `k` `lengths[k]`
/// bytes (little-endian `uint64`s), each scaled so its shorter side is
/// `size` and cropped to the centre `size × size`: `n · size · size · 3`
/// RGB bytes, decoded in parallel with the GIL released. A record that does
/// not decode is a `ValueError` naming it.
#[pyfunction]
pub fn decode_images<'py>(
    py: Python<'py>,
    values: &[u8],
    lengths: &[u8],
    size: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let lengths = buffers::indices(lengths)?;
    let transform = Transform::center_crop(size, size);
    transform
        .check()
        .map_err(|e| error::value(format!("images of size {size}: {e}")))?;
    let mut starts = Vec::with_capacity(lengths.len() + 1);
    starts.push(0usize);
    for &len in &lengths {
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| starts[starts.len() - 1].checked_add(len))
            .filter(|&end| end <= values.len())
            .ok_or_else(|| error::value("image lengths run past the bytes given"))?;
        starts.push(end);
    }
    let width = transform.image_len();
    let mut out = vec![0u8; lengths.len() * width];
    py.detach(|| {
        out.par_chunks_mut(width.max(1))
            .enumerate()
            .try_for_each(|(k, pixels)| {
                let encoded = &values[starts[k]..starts[k + 1]];
                transform.apply_u8(encoded, (0, 0, 0), pixels).map_err(|e| {
                    format!("image {k} ({} bytes) does not decode: {e}", encoded.len())
                })
            })
    })
    .map_err(error::value)?;
    Ok(PyBytes::new(py, &out))
}
