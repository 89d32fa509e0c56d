//! Moving records between Rust and Python: index arrays in; gathered
//! records out as `Array`s, Rust buffers that numpy wraps without a copy.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use zrecord::{DType, DynRaggedBatch, DynVec, RaggedLayout};

use crate::recycler::{Recycled, Recycler, Reusable};
use zrecord_loader::Batch;

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

/// What keeps the memory an [`Array`] lends alive. It is never read or
/// written by Rust again: only dropped, when the last array is gone.
#[allow(dead_code, reason = "held only to be dropped")]
enum Owner {
    /// Dense records gathered into a buffer of their store's recycler.
    Values(Recycled<DynVec>),
    /// Ragged records gathered into a batch of their store's recycler.
    Ragged(Recycled<DynRaggedBatch>),
    /// A loader's batch: its buffers go back to the loader's pool.
    Batch(Batch),
}

/// A Rust buffer lent to numpy: `numpy.asarray(array)` reads its
/// `__array_interface__` and keeps the `Array` (and the buffer's owner)
/// alive as the new array's base.
#[pyclass(module = "zrecord._zrecord", frozen)]
pub struct Array {
    _owner: Arc<Owner>,
    address: usize,
    shape: Vec<usize>,
    typestr: &'static str,
}

#[pymethods]
impl Array {
    /// numpy's array interface (version 3): shape, element type, and the
    /// buffer's address, writeable.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        interface.set_item("typestr", self.typestr)?;
        interface.set_item("data", (self.address, false))?;
        Ok(interface)
    }
}

/// numpy's type string of `dtype`. bf16 (and any dtype added later) goes
/// as raw elements of its size, which the Python side views as its numpy
/// dtype (ml_dtypes' bfloat16 where it is installed).
fn typestr(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::U64 => "<u8",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        other => match other.size() {
            1 => "|V1",
            2 => "|V2",
            4 => "|V4",
            _ => "|V8",
        },
    }
}

/// Dense records `indices` (`uint64` bytes) of a stream of `dtype` and
/// records of `item_shape`, read by `gather` with the GIL released into a
/// buffer of `home`'s `slot`, lent as one array.
pub fn gather_dense<F>(
    py: Python<'_>,
    home: &Arc<Recycler>,
    slot: usize,
    (dtype, item_shape): (DType, &[usize]),
    indices: &[u8],
    gather: F,
) -> PyResult<Array>
where
    F: FnOnce(&[u64], &mut DynVec) -> zrecord::Result<()> + Send,
{
    let (indices, values) = gathered(py, home, slot, dtype, indices, gather)?;
    let shape = std::iter::once(indices.len())
        .chain(item_shape.iter().copied())
        .collect();
    Ok(dense(values, shape, home, slot))
}

/// Ragged records `indices` (`uint64` bytes) of a stream of `dtype`, read
/// by `gather` with the GIL released into a batch of `home`'s `slot`.
pub fn gather_ragged<'py, F>(
    py: Python<'py>,
    home: &Arc<Recycler>,
    slot: usize,
    dtype: DType,
    indices: &[u8],
    gather: F,
) -> PyResult<RaggedParts<'py>>
where
    F: FnOnce(&[u64], &mut DynRaggedBatch) -> zrecord::Result<()> + Send,
{
    let (_, batch) = gathered(py, home, slot, dtype, indices, gather)?;
    ragged(py, batch, home, slot)
}

/// Records `indices` (`uint64` bytes) read by `gather` with the GIL
/// released into a buffer of `home`'s `slot`; the indices too.
fn gathered<T, F>(
    py: Python<'_>,
    home: &Arc<Recycler>,
    slot: usize,
    dtype: DType,
    indices: &[u8],
    gather: F,
) -> PyResult<(Vec<u64>, T)>
where
    T: Reusable,
    F: FnOnce(&[u64], &mut T) -> zrecord::Result<()> + Send,
{
    let indices = self::indices(indices)?;
    let mut buffer = home.take(slot, dtype);
    py.detach(|| gather(&indices, &mut buffer))
        .map_err(error::store)?;
    Ok((indices, buffer))
}

/// Dense records gathered into `values` (taken from `home` for `slot`),
/// of `shape`.
fn dense(mut values: DynVec, shape: Vec<usize>, home: &Arc<Recycler>, slot: usize) -> Array {
    // The pointer is taken from the vector while it is owned here; moving
    // the vector into its owner does not move its heap buffer.
    let address = values.as_mut_ptr() as usize;
    let typestr = typestr(values.dtype());
    let owner = Recycled::new(values, slot, home);
    Array {
        _owner: Arc::new(Owner::Values(owner)),
        address,
        shape,
        typestr,
    }
}

/// A ragged batch as `(values, offsets, dims, ranks)`: the values as an
/// [`Array`], `n + 1` element offsets, every record's dimensions end to end
/// and each record's number of dimensions, the last three as `uint64`
/// bytes — dims and ranks `None` when every record is 1-D.
pub type RaggedParts<'py> = (
    Array,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
);

/// The Python parts of a gathered ragged batch (taken from `home` for
/// `slot`), lending its values.
fn ragged<'py>(
    py: Python<'py>,
    mut batch: DynRaggedBatch,
    home: &Arc<Recycler>,
    slot: usize,
) -> PyResult<RaggedParts<'py>> {
    let (offsets, dims, ranks) = layout_bytes(py, batch.layout())?;
    let address = batch.values_mut_ptr() as usize;
    let shape = vec![batch.layout().total()];
    let typestr = typestr(batch.dtype());
    let owner = Recycled::new(batch, slot, home);
    let values = Array {
        _owner: Arc::new(Owner::Ragged(owner)),
        address,
        shape,
        typestr,
    };
    Ok((values, offsets, dims, ranks))
}

/// A loader's batch lent column by column: `(name, kind, dtype, parts)`
/// per stream, a dense column's parts `(Array,)`, a ragged one's
/// [`RaggedParts`]. The batch returns to the loader's pool when the last
/// of its arrays is gone.
pub fn batch(py: Python<'_>, mut batch: Batch) -> PyResult<Vec<(String, Py<PyAny>)>> {
    // What each column lends, found while the batch is still ours alone: a
    // dense column's shape, a ragged one's element count and layout parts.
    let names: Vec<String> = batch.names().map(str::to_string).collect();
    let mut lent = Vec::with_capacity(names.len());
    for name in names {
        let column = batch.column_mut(&name).map_err(error::loader)?;
        let address = column.values_mut_ptr() as usize;
        let dtype = column.dtype();
        let shape = match &*column {
            zrecord_loader::Column::Dense(dense) => Ok(dense.shape().to_vec()),
            zrecord_loader::Column::Ragged(ragged) => {
                let layout = ragged.layout();
                Err((layout.total(), layout_bytes(py, layout)?))
            }
        };
        lent.push((name, address, dtype, shape));
    }
    let owner = Arc::new(Owner::Batch(batch));
    let mut columns = Vec::with_capacity(lent.len());
    for (name, address, dtype, shape) in lent {
        let array = |shape: Vec<usize>| Array {
            _owner: Arc::clone(&owner),
            address,
            shape,
            typestr: typestr(dtype),
        };
        let parts = match shape {
            Ok(shape) => ("dense", dtype.name(), (array(shape),)).into_pyobject(py)?,
            Err((total, (offsets, dims, ranks))) => {
                let values = array(vec![total]);
                ("ragged", dtype.name(), (values, offsets, dims, ranks)).into_pyobject(py)?
            }
        };
        columns.push((name, parts.into_any().unbind()));
    }
    Ok(columns)
}

/// A layout's offsets, dims and ranks as `uint64` bytes; dims and ranks
/// are `None` when every record is 1-D (the usual case: its lengths are
/// its shapes, and the Python side builds nothing more per batch).
fn layout_bytes<'py>(py: Python<'py>, layout: &RaggedLayout) -> PyResult<LayoutParts<'py>> {
    let offsets = u64_pybytes(py, layout.offsets().iter().map(|&o| o as u64))?;
    if (0..layout.len()).all(|k| layout.shape(k).is_some_and(|s| s.len() == 1)) {
        return Ok((offsets, None, None));
    }
    let shapes = (0..layout.len()).map(|k| layout.shape(k).unwrap_or(&[]));
    let dims: Vec<u64> = shapes.clone().flatten().map(|&d| d as u64).collect();
    let dims = u64_pybytes(py, dims.into_iter())?;
    let ranks = u64_pybytes(py, shapes.map(|s| s.len() as u64))?;
    Ok((offsets, Some(dims), Some(ranks)))
}

/// Offsets, and dims and ranks unless every record is 1-D.
type LayoutParts<'py> = (
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
);

/// `values` as little-endian `u64` bytes, written straight into a new
/// `bytes` object.
fn u64_pybytes<'py>(
    py: Python<'py>,
    mut values: impl ExactSizeIterator<Item = u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * 8, |out| {
        for (chunk, v) in out.chunks_exact_mut(8).zip(&mut values) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    })
}

/// A layout from every record's dimensions end to end and each record's
/// number of dimensions (`uint64` bytes, as [`ragged`] gives them).
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
