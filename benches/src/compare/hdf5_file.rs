//! HDF5 (feature `hdf5`, needs the system libhdf5): one contiguous `u8`
//! dataset `(N, *shape)`, read one record at a time with `read_slice` (one
//! `H5Dread` of a hyperslab per record) on the calling thread — what a Rust
//! user of `hdf5-metno` writes; the library serialises calls anyway.

use std::path::Path;

use hdf5_metno as hdf5;

use super::Result;
use super::systems::{Cuts, Packed, System};

/// An HDF5 file holding the records as dataset `records`.
pub(crate) struct Dense {
    _file: hdf5::File,
    dataset: hdf5::Dataset,
    width: usize,
    ndim: usize,
    out: Vec<u8>,
}

impl Dense {
    /// Writes `data` (records of `shape[1..]`, `shape[0]` of them) to a new
    /// HDF5 file at `path`, makes it durable, and opens it for reading.
    pub(crate) fn write(path: &Path, data: &[u8], shape: &[usize]) -> Result<Dense> {
        {
            let file = hdf5::File::create(path)?;
            let dataset = file
                .new_dataset::<u8>()
                .shape(shape.to_vec())
                .create("records")?;
            dataset.write_raw(data)?;
            file.flush()?;
        }
        std::fs::File::open(path)?.sync_all()?;
        let file = hdf5::File::open(path)?;
        let dataset = file.dataset("records")?;
        Ok(Dense {
            _file: file,
            dataset,
            width: shape[1..].iter().product(),
            ndim: shape.len(),
            out: Vec::new(),
        })
    }

    /// How the system reads, for the table's notes.
    pub(crate) fn describe(&self) -> String {
        let (a, b, c) = hdf5::library_version();
        format!(
            "libhdf5 {a}.{b}.{c}, a contiguous u8 dataset, one `read_slice` (H5Dread of a hyperslab) per record on the calling thread"
        )
    }
}

impl System for Dense {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        let width = self.width;
        self.out.resize(indices.len() * width, 0);
        for (dst, &i) in self.out.chunks_mut(width).zip(indices) {
            let i = i as usize;
            let mut slab: Vec<hdf5::SliceOrIndex> = vec![(i..i + 1).into()];
            slab.extend((1..self.ndim).map(|_| hdf5::SliceOrIndex::from(..)));
            let record = self
                .dataset
                .read_slice::<u8, _, ndarray::IxDyn>(hdf5::Hyperslab::from(slab))
                .unwrap_or_else(|e| panic!("hdf5 read: {e}"));
            dst.copy_from_slice(record.as_slice().unwrap_or(&[]));
        }
        Packed {
            bytes: &self.out,
            cuts: Cuts::Width(width),
        }
    }
}
