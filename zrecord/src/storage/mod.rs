//! The storage seam: the only way the engine reaches a store's files.
//!
//! A [`Storage`] is one store's folder: it lists, opens and removes the
//! files in it by name and makes its entries durable. A [`StorageFile`] is
//! one open file: positional reads and writes, its length, `sync`, a lock,
//! and — where the backend keeps the file's bytes addressable — a read-only
//! [`Map`] that gathers copy from without a call per record.
//!
//! Backends:
//!
//! * [`Disk`] — files in a folder. With [`Io::Mapped`] every data file is
//!   memory-mapped (the fastest path while the data fits in memory); with
//!   [`Io::Direct`] nothing is mapped, readahead is turned off and a
//!   batch's reads are in flight together (through `io_uring` where the
//!   kernel allows it, else a pool of threads), so a store larger than
//!   memory reads at the disk's rate rather than one page fault at a time.
//!   [`Io::Auto`] picks by size: see its documentation.
//! * [`Memory`] — files in memory, with a power-loss model: every write is
//!   logged until a `sync` makes it durable, and [`Memory::crash`] gives the
//!   storage as it would be after a power cut.
//! * [`Faulty`] — wraps another storage and fails a chosen call, for tests.
//!
//! [`IoStats`] tells a thread what its gathers read and how long they waited.
//!
//! Stores on a storage of your own are created and opened by
//! [`OpenOptions::create`](crate::OpenOptions::create) and
//! [`OpenOptions::open`](crate::OpenOptions::open), given an `Arc` of it.

mod direct;
mod disk;
mod faulty;
mod io_stats;
mod memory;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod page_cache;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use disk::Disk;
pub(crate) use disk::sync_dir;
pub use faulty::{Fault, Faulty};
pub(crate) use io_stats::counted;
pub use io_stats::{CacheWork, IoStats};
pub use memory::{Crash, Memory};

use crate::Result;

/// How a store file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    ReadWrite,
    /// Read and write, created empty if missing.
    Create,
    /// Read and write, created if missing and emptied.
    Replace,
}

/// How a store on disk reads its data files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Io {
    /// Memory-map every data file: a gather is plain memory copies. The
    /// fastest while the store fits in memory; once it does not, every
    /// record read is a page fault on the gathering thread.
    Mapped,
    /// Explicit positional reads into the caller's buffers, up to 64 in
    /// flight at once, with the kernel's readahead off: for stores larger
    /// than memory, or read once (cold). Reads close together are merged.
    /// Small reads go through an `io_uring` per reading thread where the
    /// kernel allows it, large ones and the rest through a pool of threads
    /// blocked in `pread`; data files may be read around the page cache.
    /// See [`OpenOptions::o_direct`](crate::OpenOptions::o_direct) and
    /// [`OpenOptions::io_uring`](crate::OpenOptions::io_uring).
    Direct,
    /// [`Mapped`](Io::Mapped) when the store's data files fit in half the
    /// memory this process may use (the smaller of the machine's available
    /// memory and the control group's limit), else [`Direct`](Io::Direct).
    #[default]
    Auto,
}

/// One store's folder, as the engine sees it.
///
/// Names are plain file names (`meta.zr`, `0.chunk`), never paths. Every
/// method reports failures as [`Error`](crate::Error)s naming the file.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Where the store is, as error messages name it.
    fn location(&self) -> &Path;

    /// The names of the entries in the folder, in no particular order.
    fn list(&self) -> Result<Vec<String>>;

    /// Whether anything has the name `name`.
    fn exists(&self, name: &str) -> Result<bool>;

    /// Opens `name`; `None` when it is missing and `access` does not create it.
    fn open(&self, name: &str, access: Access) -> Result<Option<Arc<dyn StorageFile>>>;

    /// Removes `name`; nothing happens when it is missing.
    fn remove(&self, name: &str) -> Result<()>;

    /// Makes the folder's entries (files created or removed) durable.
    fn sync(&self) -> Result<()>;

    /// How data files are read ([`Io::Mapped`] only where [`StorageFile::map`]
    /// gives maps), once the store's size `data_bytes` is known.
    fn io(&self, data_bytes: u64) -> Io {
        let _ = data_bytes;
        Io::Direct
    }
}

/// One open file of a [`Storage`].
pub trait StorageFile: Send + Sync {
    /// The file's path, as error messages name it.
    fn path(&self) -> &Path;

    /// The file's size in bytes.
    fn len(&self) -> Result<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Cuts or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> Result<()>;

    /// Fills `buf` from `offset`; reading past the end is an error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;

    /// Fills each buffer from its offset. A backend that can keeps the
    /// reads in flight together; the default reads one after another.
    fn read_batch(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        reads
            .iter_mut()
            .try_for_each(|(offset, buf)| self.read_at(buf, *offset))
    }

    /// Says reads of this file will be random and small: no readahead
    /// around each (and, where the backend is asked to, no caching). A
    /// hint; the default ignores it.
    fn advise_random(&self) {}

    /// Writes all of `buf` at `offset`, extending the file as needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()>;

    /// Makes the file's data durable.
    fn sync(&self) -> Result<()>;

    /// Takes this handle's lock on the file, exclusive or shared, without
    /// waiting: `false` when another handle holds a conflicting one. The
    /// lock lasts as long as the handle.
    fn try_lock(&self, exclusive: bool) -> Result<bool>;

    /// A read-only map of the first `capacity` bytes of address space over
    /// the file, which later writes show through; `None` where the backend
    /// has no maps (then gathers use `read_batch`).
    fn map(&self, capacity: u64) -> Result<Option<Map>> {
        let _ = capacity;
        Ok(None)
    }
}

/// A read-only memory map of a file (see [`StorageFile::map`]). Only
/// [`Disk`] makes them.
pub struct Map(memmap2::Mmap);

impl std::ops::Deref for Map {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Map").field("len", &self.0.len()).finish()
    }
}

/// Reads the whole of `name`, refusing a file larger than `limit` before
/// reading it; `None` when it is missing.
pub(crate) fn read_small(storage: &dyn Storage, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    let Some(file) = storage.open(name, Access::Read)? else {
        return Ok(None);
    };
    let size = file.len()?;
    if size > limit {
        return Err(crate::Error::corrupt(
            file.path(),
            format!("{size} bytes, more than the {limit} this file may hold"),
        ));
    }
    let mut bytes = vec![0; size as usize];
    file.read_at(&mut bytes, 0)?;
    Ok(Some(bytes))
}
