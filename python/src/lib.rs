//! The native half of the `zrecord` Python package: stores, datasets and
//! the loader, with every read and write done with the GIL released. The
//! Python half (`zrecord/`) wraps these buffers as numpy arrays.

mod buffers;
mod dataset;
mod error;
mod images;
mod loader;
mod raw;
mod recycler;
mod remote;
mod store;

use pyo3::prelude::*;

#[pymodule]
fn _zrecord(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::Store>()?;
    m.add_class::<dataset::Dataset>()?;
    m.add_class::<loader::Loader>()?;
    m.add_class::<buffers::Array>()?;
    m.add_function(wrap_pyfunction!(dataset::join, m)?)?;
    m.add_function(wrap_pyfunction!(images::decode_images, m)?)?;
    m.add_function(wrap_pyfunction!(remote::open_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::push, m)?)?;
    m.add_function(wrap_pyfunction!(remote::list_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::remove_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::join_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::manifest_shards, m)?)?;
    m.add("ZrecordError", m.py().get_type::<error::ZrecordError>())?;
    m.add("FORMAT_VERSION", zrecord::FORMAT_VERSION)?;
    Ok(())
}
