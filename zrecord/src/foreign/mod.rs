//! Arrays in other formats — `.npy` and IDX — read record by record into
//! store-ready little-endian bytes, so every importer shares one reader.

#[cfg(feature = "idx")]
pub mod idx;
#[cfg(feature = "npy")]
pub mod npy;

use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use crate::{DType, DynVec, Element, Error, Result};

/// A dense array being read from a file in another format — a `.npy` file
/// ([`npy::open`]) or an IDX file ([`idx::open`]) — its header parsed, its
/// data streamed.
///
/// Axis 0 indexes records. Data comes out as little-endian bytes whatever
/// the file's byte order, ready for
/// [`DynDenseStore::append_bytes`](crate::DynDenseStore::append_bytes), in
/// chunks as small as one record, so files larger than memory import.
pub struct ArrayFile {
    format: &'static str,
    path: PathBuf,
    dtype: DType,
    shape: Vec<usize>,
    /// Elements are stored big-endian and are swapped as they are read.
    big_endian: bool,
    data_offset: u64,
    reader: Box<dyn Read + Send>,
}

impl std::fmt::Debug for ArrayFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayFile")
            .field("format", &self.format)
            .field("path", &self.path)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl ArrayFile {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The array's shape, outermost axis first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the data starts: a byte offset into the file (for IDX files,
    /// into the decompressed stream when the file is gzipped).
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// The records (the extent of axis 0) and the shape of each.
    ///
    /// # Errors
    /// [`Error::ForeignFile`] for a 0-dimensional array (it has no records)
    /// or records with no elements.
    pub fn records(&self) -> Result<(usize, &[usize])> {
        let Some((&records, item_shape)) = self.shape.split_first() else {
            return Err(self.invalid("a 0-dimensional array has no records"));
        };
        if item_shape.contains(&0) {
            return Err(self.invalid(format!("records of shape {item_shape:?} are empty")));
        }
        Ok((records, item_shape))
    }

    /// Bytes of data the header promises.
    pub fn data_bytes(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(self.dtype.size() as u64, |acc, &d| {
                acc.checked_mul(d as u64)
            })
    }

    /// Fills `out` with the next `out.len()` bytes of data, as little-endian
    /// elements. Read whole elements at a time (`out.len()` a multiple of
    /// the dtype's size) so each call converts whole elements.
    ///
    /// # Errors
    /// [`Error::ForeignFile`] when the data ends early; [`Error::Io`].
    pub fn read_exact(&mut self, out: &mut [u8]) -> Result<()> {
        self.reader.read_exact(out).map_err(|e| {
            if e.kind() == ErrorKind::UnexpectedEof {
                self.invalid("truncated: the data is shorter than its header says")
            } else {
                Error::io("read", &self.path)(e)
            }
        })?;
        if self.big_endian && self.dtype.size() > 1 {
            out.chunks_exact_mut(self.dtype.size())
                .for_each(<[u8]>::reverse);
        }
        Ok(())
    }

    /// Passes over the next `bytes` bytes of data (reading through them: the
    /// data may be a gzip stream), to start at a later record.
    ///
    /// # Errors
    /// As [`read_exact`](Self::read_exact).
    pub fn skip(&mut self, bytes: u64) -> Result<()> {
        let skipped = std::io::copy(&mut (&mut self.reader).take(bytes), &mut std::io::sink())
            .map_err(Error::io("read", &self.path))?;
        if skipped < bytes {
            return Err(self.invalid("truncated: the data is shorter than its header says"));
        }
        Ok(())
    }

    /// Reads the whole array into memory.
    ///
    /// # Errors
    /// [`Error::ForeignFile`] when the data is shorter or longer than the
    /// header says, or holds an invalid `bool`; [`Error::Io`].
    pub fn read_all(mut self) -> Result<DynVec> {
        let elements = self
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| self.invalid(format!("shape {:?} overflows", self.shape)))?;
        let mut values = DynVec::new(self.dtype);
        values
            .fill_bytes(
                elements,
                self.shape.first().copied().unwrap_or(1),
                |bytes| self.read_exact(bytes),
            )
            .map_err(|e| match e {
                Error::InvalidBool { offset, value } => {
                    self.invalid(format!("byte {offset} is {value}, not a bool"))
                }
                e => e,
            })?;
        let mut rest = [0u8; 1];
        match self.reader.read(&mut rest) {
            Ok(0) => Ok(values),
            Ok(_) => Err(self.invalid("the data is longer than its header says")),
            Err(e) => Err(Error::io("read", &self.path)(e)),
        }
    }

    /// Reads the whole array as elements of `T`: its shape and its values.
    ///
    /// ```
    /// # #[cfg(feature = "idx")] {
    /// use zrecord::idx;
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("labels-idx1-ubyte");
    /// std::fs::write(&path, [0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1]).unwrap();
    /// assert_eq!(idx::open(&path)?.read_as::<u8>()?, (vec![3], vec![7, 2, 1]));
    /// assert!(idx::open(&path)?.read_as::<f32>().is_err()); // u8 elements
    /// # }
    /// # Ok::<(), zrecord::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ForeignFile`] when the file's elements are not `T`'s dtype,
    /// and as [`read_all`](Self::read_all).
    pub fn read_as<T: Element>(self) -> Result<(Vec<usize>, Vec<T>)> {
        if self.dtype != T::DTYPE {
            return Err(self.invalid(format!("its elements are {}, not {}", self.dtype, T::DTYPE)));
        }
        let shape = self.shape.clone();
        let values = self
            .read_all()?
            .into_vec::<T>()
            .map_err(|v| Error::DTypeMismatch {
                store: v.dtype(),
                got: T::DTYPE,
            })?;
        Ok((shape, values))
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::ForeignFile {
            path: self.path.clone(),
            format: self.format,
            reason: reason.into(),
        }
    }
}

/// An error about `path` in `format`.
fn invalid(format: &'static str, path: &Path, reason: impl Into<String>) -> Error {
    Error::ForeignFile {
        path: path.to_path_buf(),
        format,
        reason: reason.into(),
    }
}

/// Reads exactly `out.len()` header bytes; a short file is a malformed one.
fn read_header(
    reader: &mut impl Read,
    out: &mut [u8],
    format: &'static str,
    path: &Path,
) -> Result<()> {
    reader.read_exact(out).map_err(|e| {
        if e.kind() == ErrorKind::UnexpectedEof {
            invalid(
                format,
                path,
                format!("truncated: the file ends inside its {format} header"),
            )
        } else {
            Error::io("read", path)(e)
        }
    })
}
