//! [`Disk`]: a store's files in a folder. Regular files only — never
//! through a symbolic link, never blocking on a FIFO — so recovery cannot
//! reach a file outside the store folder or hang on something that is not
//! a file.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{Access, Io, Map, Storage, StorageFile, direct};
use crate::{Error, Result};

/// A store's folder on a local file system.
#[derive(Clone, Debug)]
pub struct Disk {
    dir: PathBuf,
    io: Io,
    o_direct: bool,
    io_uring: bool,
}

impl Disk {
    /// The store folder `dir`, whose data files are read as `options`'
    /// [`io`](crate::OpenOptions::io), [`o_direct`](crate::OpenOptions::o_direct)
    /// and [`io_uring`](crate::OpenOptions::io_uring) say.
    pub fn new(dir: impl Into<PathBuf>, options: &crate::OpenOptions) -> Disk {
        Disk {
            dir: dir.into(),
            io: options.io,
            o_direct: options.o_direct,
            io_uring: options.io_uring,
        }
    }
}

impl Storage for Disk {
    fn location(&self) -> &Path {
        &self.dir
    }

    fn list(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(Error::io("list", &self.dir))? {
            let name = entry.map_err(Error::io("list", &self.dir))?.file_name();
            if let Ok(name) = name.into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(fs::symlink_metadata(self.dir.join(name)).is_ok())
    }

    fn open(&self, name: &str, access: Access) -> Result<Option<Arc<dyn StorageFile>>> {
        let path = self.dir.join(name);
        let missing_ok = matches!(access, Access::Read | Access::ReadWrite);
        if missing_ok
            && let Err(e) = fs::symlink_metadata(&path)
            && e.kind() == ErrorKind::NotFound
        {
            return Ok(None);
        }
        let file = open_regular(&path, access)?;
        Ok(Some(Arc::new(DiskFile {
            path,
            file,
            uncached: OnceLock::new(),
            o_direct: self.o_direct,
            io_uring: self.io_uring,
        })))
    }

    fn remove(&self, name: &str) -> Result<()> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io("remove", path)(e)),
            _ => Ok(()),
        }
    }

    fn sync(&self) -> Result<()> {
        sync_dir(&self.dir)
    }

    fn io(&self, data_bytes: u64) -> Io {
        choose_io(self.io, data_bytes, memory_budget())
    }
}

/// [`Io::Auto`]'s rule: map `data_bytes` when they fit in half of `budget`
/// (or when the budget is unknown).
fn choose_io(io: Io, data_bytes: u64, budget: Option<u64>) -> Io {
    match (io, budget) {
        (Io::Auto, Some(budget)) if data_bytes > budget / 2 => Io::Direct,
        (Io::Auto, _) => Io::Mapped,
        (io, _) => io,
    }
}

/// Makes a folder's entries (new, renamed or removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("sync", dir))
}

/// An open file of a [`Disk`].
struct DiskFile {
    path: PathBuf,
    file: File,
    /// The same file opened with `O_DIRECT`, once reads are said to be
    /// random (and where the file system allows it).
    uncached: OnceLock<File>,
    /// Whether random reads go around the page cache.
    o_direct: bool,
    /// Whether batches may use `io_uring`.
    io_uring: bool,
}

impl StorageFile for DiskFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(Error::io("stat", &self.path))?
            .len())
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.file
            .set_len(len)
            .map_err(Error::io("truncate", &self.path))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(Error::io("read", &self.path))
    }

    fn read_batch(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        let source = direct::Source {
            file: &self.file,
            uncached: self.uncached.get(),
            path: &self.path,
            io_uring: self.io_uring,
        };
        direct::read_batch(&source, reads)
    }

    fn advise_random(&self) {
        advise_random(&self.file);
        if let Some(uncached) = self
            .o_direct
            .then(|| open_uncached(&self.path, &self.file))
            .flatten()
        {
            let _ = self.uncached.set(uncached);
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(buf, offset)
            .map_err(Error::io("write", &self.path))
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(Error::io("sync", &self.path))
    }

    fn try_lock(&self, exclusive: bool) -> Result<bool> {
        let locked = if exclusive {
            self.file.try_lock()
        } else {
            self.file.try_lock_shared()
        };
        match locked {
            Ok(()) => Ok(true),
            Err(TryLockError::WouldBlock) => Ok(false),
            Err(TryLockError::Error(e)) => Err(Error::io("lock", &self.path)(e)),
        }
    }

    fn map(&self, capacity: u64) -> Result<Option<Map>> {
        let len = usize::try_from(capacity).map_err(|_| {
            Error::InvalidArgument(format!("a {capacity}-byte file map needs a 64-bit target"))
        })?;
        // SAFETY: the map is read-only. The handle holds the store's lock:
        // exclusive for a writer, so no other zrecord handle writes or
        // truncates the file; shared for a reader, so no zrecord handle
        // writes at all. Reads are bounds-checked against the committed
        // frontier, which never passes the file's end; truncation happens
        // only under `&mut` (compact, recovery) when no read can be running.
        // As with any mmap, a file shrunk behind the lock's back by another
        // program could fault: documented in FORMAT.md.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(&self.file) }
            .map_err(Error::io("map", &self.path))?;
        Ok(Some(Map(map)))
    }
}

/// Tells the kernel reads of `file` are random: no readahead around each.
fn advise_random(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: posix_fadvise only reads its integer arguments; the
        // descriptor is open for as long as `file` lives. It is a hint: a
        // failure changes nothing but speed.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// `file` (at `path`) opened again with `O_DIRECT`, so its reads skip the
/// page cache: `None` where the file system refuses (tmpfs), where `path`
/// no longer names the same file, or off Linux.
pub(crate) fn open_uncached(path: &Path, file: &File) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let uncached = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let (a, b) = (file.metadata().ok()?, uncached.metadata().ok()?);
        (a.dev() == b.dev() && a.ino() == b.ino()).then_some(uncached)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (path, file);
        None
    }
}

/// Bytes this process may keep in memory: the smaller of the machine's
/// available memory and its memory control group's limit (v2 or v1).
/// `None` where neither can be read.
pub(crate) fn memory_budget() -> Option<u64> {
    let available = fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    let limit = cgroup_limit();
    match (available, limit) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// The memory limit of this process's control group, if it has one.
fn cgroup_limit() -> Option<u64> {
    let groups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut limits = Vec::new();
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            continue;
        };
        if let Some(limit) = fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            limits.push(limit);
        }
    }
    limits.into_iter().min()
}

/// Opens `path`, which must be a regular file (not a symbolic link, folder,
/// FIFO, socket or device).
fn open_regular(path: &Path, access: Access) -> Result<File> {
    let mut options = OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::ReadWrite => options.read(true).write(true),
        Access::Create => options.read(true).write(true).create(true),
        Access::Replace => options.read(true).write(true).create(true).truncate(true),
    };
    // O_NOFOLLOW: a symbolic link fails (ELOOP) instead of being followed;
    // O_NONBLOCK: opening a FIFO returns at once, and fstat refuses it.
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(path).map_err(|e| {
        match fs::symlink_metadata(path).map(|m| m.file_type()) {
            Ok(kind) if !kind.is_file() => not_regular(path, kind),
            _ => Error::io("open", path)(e),
        }
    })?;
    let kind = file
        .metadata()
        .map_err(Error::io("stat", path))?
        .file_type();
    if !kind.is_file() {
        return Err(not_regular(path, kind));
    }
    Ok(file)
}

fn not_regular(path: &Path, kind: fs::FileType) -> Error {
    let found = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Error::NotRegularFile {
        path: path.into(),
        found,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::read_small;

    #[test]
    fn links_folders_and_fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let disk = Disk::new(d, &crate::OpenOptions::new().io(Io::Mapped));
        fs::write(d.join("target"), b"outside").unwrap();
        std::os::unix::fs::symlink(d.join("target"), d.join("link")).unwrap();
        fs::create_dir(d.join("folder")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(d.join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
        for (name, found) in [
            ("link", "a symbolic link"),
            ("folder", "a folder"),
            ("fifo", "a FIFO"),
        ] {
            for access in [Access::Read, Access::ReadWrite, Access::Create] {
                match disk.open(name, access) {
                    Err(Error::NotRegularFile { found: f, .. }) => assert_eq!(f, found, "{name}"),
                    Err(e) => panic!("{name} {access:?}: {e}"),
                    Ok(_) => panic!("{name} {access:?} opened"),
                }
            }
        }
        assert!(matches!(
            read_small(&disk, "fifo", 10),
            Err(Error::NotRegularFile { .. })
        ));
        assert_eq!(fs::read(d.join("target")).unwrap(), b"outside");
        assert!(disk.open("nothing", Access::Read).unwrap().is_none());
        assert!(matches!(
            read_small(&disk, "target", 3),
            Err(Error::Corrupt { .. })
        ));
        assert_eq!(read_small(&disk, "target", 7).unwrap().unwrap(), b"outside");
    }

    #[test]
    fn auto_maps_what_fits_in_half_the_memory_and_reads_the_rest_directly() {
        let gib = 1u64 << 30;
        assert_eq!(choose_io(Io::Auto, 0, Some(gib)), Io::Mapped);
        assert_eq!(choose_io(Io::Auto, gib / 2, Some(gib)), Io::Mapped);
        assert_eq!(choose_io(Io::Auto, gib / 2 + 1, Some(gib)), Io::Direct);
        assert_eq!(choose_io(Io::Auto, u64::MAX, None), Io::Mapped);
        for io in [Io::Mapped, Io::Direct] {
            assert_eq!(choose_io(io, u64::MAX, Some(gib)), io);
            assert_eq!(
                Disk::new("/nowhere", &crate::OpenOptions::new().io(io)).io(u64::MAX),
                io
            );
        }
        // This machine's budget is known, and no store fits in half of it
        // that claims every byte there is.
        assert!(memory_budget().is_some_and(|b| b > 0));
        assert_eq!(
            Disk::new("/nowhere", &crate::OpenOptions::new()).io(u64::MAX),
            Io::Direct
        );
    }

    #[test]
    fn a_batch_of_reads_fills_every_buffer_merged_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let disk = Disk::new(dir.path(), &crate::OpenOptions::new().io(Io::Direct));
        let file = disk.open("data", Access::Create).unwrap().unwrap();
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        file.write_at(&bytes, 0).unwrap();
        let spans = [
            (5u64, 10usize),
            (20, 7),
            (250_000, 3000),
            (0, 1),
            (100_000, 64),
            (27, 0),
        ];
        let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, n)| vec![0; n]).collect();
        let mut reads: Vec<(u64, &mut [u8])> = spans
            .iter()
            .zip(&mut bufs)
            .map(|(&(at, _), b)| (at, &mut b[..]))
            .collect();
        file.read_batch(&mut reads).unwrap();
        for (&(at, n), buf) in spans.iter().zip(&bufs) {
            assert_eq!(&buf[..], &bytes[at as usize..at as usize + n]);
        }
        let mut past = [0; 10];
        assert!(file.read_batch(&mut [(299_995, &mut past[..])]).is_err());
    }
}
