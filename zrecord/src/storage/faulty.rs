//! [`Faulty`]: a storage whose k-th call fails, for tests of what the
//! engine does on an I/O error.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Access, Io, Map, Storage, StorageFile};
use crate::{Error, Result};

/// How the chosen call fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// `EIO`; the call does nothing.
    Io,
    /// `ENOSPC`; the call does nothing.
    NoSpace,
    /// A write stores only the whole 512-byte sectors before its last one,
    /// then fails with `ENOSPC`; any other call fails as [`Fault::NoSpace`].
    ShortWrite,
}

/// Wraps a storage and fails its call number `fail_at` (counting from 0,
/// every call of the storage and of the files it opened), once. Files
/// opened through it are never mapped, so every read is a counted call.
///
/// ```
/// use std::sync::Arc;
/// use zrecord::storage::{Fault, Faulty, Memory};
/// use zrecord::{Codec, DType, DynDenseStore, Error, OpenOptions, Schema};
///
/// let memory = Arc::new(Memory::new("in-memory"));
/// let faulty = Faulty::new(memory, Some(3), Fault::Io);
/// let schema = Schema::dense(DType::U8, &[2]);
/// let made = OpenOptions::new().create::<DynDenseStore>(Arc::new(faulty), &schema, Codec::Raw);
/// assert!(matches!(made, Err(Error::Io { .. })));
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Debug)]
pub struct Faulty {
    inner: Arc<dyn Storage>,
    plan: Arc<Plan>,
}

#[derive(Debug)]
struct Plan {
    calls: AtomicU64,
    fail_at: u64,
    fault: Fault,
}

impl Plan {
    /// Counts a call; the error it must fail with, if it is the chosen one.
    fn call(&self, op: &'static str, path: &Path) -> Result<()> {
        if self.calls.fetch_add(1, Ordering::Relaxed) != self.fail_at {
            return Ok(());
        }
        let code = match self.fault {
            Fault::Io => libc::EIO,
            Fault::NoSpace | Fault::ShortWrite => libc::ENOSPC,
        };
        Err(Error::io(op, path)(std::io::Error::from_raw_os_error(code)))
    }
}

impl Faulty {
    /// Wraps `inner`, failing call `fail_at` with `fault` (never, if `None`).
    pub fn new(inner: Arc<dyn Storage>, fail_at: Option<u64>, fault: Fault) -> Faulty {
        Faulty {
            inner,
            plan: Arc::new(Plan {
                calls: AtomicU64::new(0),
                fail_at: fail_at.unwrap_or(u64::MAX),
                fault,
            }),
        }
    }

    /// Calls made so far.
    pub fn calls(&self) -> u64 {
        self.plan.calls.load(Ordering::Relaxed)
    }
}

impl Storage for Faulty {
    fn location(&self) -> &Path {
        self.inner.location()
    }

    fn list(&self) -> Result<Vec<String>> {
        self.plan.call("list", self.location())?;
        self.inner.list()
    }

    fn exists(&self, name: &str) -> Result<bool> {
        self.plan.call("stat", &self.location().join(name))?;
        self.inner.exists(name)
    }

    fn open(&self, name: &str, access: Access) -> Result<Option<Arc<dyn StorageFile>>> {
        self.plan.call("open", &self.location().join(name))?;
        Ok(self.inner.open(name, access)?.map(|inner| {
            Arc::new(FaultyFile {
                inner,
                plan: Arc::clone(&self.plan),
            }) as Arc<dyn StorageFile>
        }))
    }

    fn remove(&self, name: &str) -> Result<()> {
        self.plan.call("remove", &self.location().join(name))?;
        self.inner.remove(name)
    }

    fn sync(&self) -> Result<()> {
        self.plan.call("sync", self.location())?;
        self.inner.sync()
    }

    fn io(&self, _data_bytes: u64) -> Io {
        Io::Direct
    }
}

struct FaultyFile {
    inner: Arc<dyn StorageFile>,
    plan: Arc<Plan>,
}

impl StorageFile for FaultyFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn len(&self) -> Result<u64> {
        self.plan.call("stat", self.path())?;
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.plan.call("truncate", self.path())?;
        self.inner.set_len(len)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.plan.call("read", self.path())?;
        self.inner.read_at(buf, offset)
    }

    fn read_batch(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        self.plan.call("read", self.path())?;
        self.inner.read_batch(reads)
    }

    fn advise_random(&self) {
        self.inner.advise_random();
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let failed = self.plan.call("write", self.path());
        if failed.is_err() && self.plan.fault == Fault::ShortWrite {
            let end = offset + buf.len() as u64;
            let whole = (end.saturating_sub(1) / 512 * 512).saturating_sub(offset);
            let whole = (whole as usize).min(buf.len());
            if whole > 0 {
                self.inner.write_at(&buf[..whole], offset)?;
            }
        }
        failed?;
        self.inner.write_at(buf, offset)
    }

    fn sync(&self) -> Result<()> {
        self.plan.call("sync", self.path())?;
        self.inner.sync()
    }

    fn try_lock(&self, exclusive: bool) -> Result<bool> {
        self.plan.call("lock", self.path())?;
        self.inner.try_lock(exclusive)
    }

    fn map(&self, _capacity: u64) -> Result<Option<Map>> {
        Ok(None)
    }
}
