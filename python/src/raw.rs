//! The one unsafe step of the package: writing into a numpy array's memory,
//! named by its address, so that a gather can reuse the caller's buffer
//! (no allocation, no page faults for a fresh one) — what keeps a batch of
//! 64 MiB as fast from Python as from Rust.

use pyo3::prelude::*;

use crate::error;

/// Runs `read` on the `len` bytes at `address` with the GIL released.
///
/// Only `zrecord`'s own Python code calls this (through the private
/// `_zrecord` module), passing `array.__array_interface__["data"][0]` and
/// `array.nbytes` of a numpy array it has checked to be C-contiguous,
/// writeable, aligned and of the batch's dtype and shape, and which it
/// holds a reference to for the whole call.
pub fn fill_at<F>(py: Python<'_>, address: usize, len: usize, read: F) -> PyResult<()>
where
    F: FnOnce(&mut [u8]) -> zrecord::Result<()> + Send,
{
    if address == 0 && len != 0 {
        return Err(error::value("the output array has no memory"));
    }
    let out: &mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: per the contract above, `address..address + len` is the
        // live, writeable, contiguous buffer of a numpy array the caller
        // keeps alive for this call; numpy refuses to resize or free an
        // array while another reference to it exists, so the memory stays
        // valid while the GIL is released. Other Python threads could
        // still write the array concurrently, as with any numpy function
        // that releases the GIL; the bytes are then unspecified, but no
        // memory outside the array is touched.
        unsafe { std::slice::from_raw_parts_mut(address as *mut u8, len) }
    };
    py.detach(|| read(out)).map_err(error::store)
}
