//! The page cache's share of a store: how much of its files it holds, and
//! dropping them from it, so a benchmark can time cold reads honestly.

use std::fs::{self, File};
use std::path::Path;

use crate::{Error, Result};

/// How much of a store's files the page cache holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Residency {
    /// Bytes of the files in the page cache (whole pages).
    pub resident: u64,
    /// Bytes of the files.
    pub total: u64,
}

impl Residency {
    /// `resident / total` (0 for empty files).
    pub fn share(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.resident as f64 / self.total as f64
        }
    }
}

/// Writes back and drops from the page cache every file of the store
/// folder `dir`; reports what stayed resident (pages another process has
/// mapped and locked may stay).
///
/// # Errors
/// [`Error::Io`] when a file cannot be read or the system has no such
/// control (it needs Linux).
pub fn evict(dir: &Path) -> Result<Residency> {
    for (path, file) in files(dir)? {
        file.sync_data().map_err(Error::io("sync", &path))?;
        advise(&file, &path)?;
    }
    residency(dir)
}

/// How much of the files of the store folder `dir` the page cache holds.
///
/// # Errors
/// [`Error::Io`] when a file cannot be read or mapped.
pub fn residency(dir: &Path) -> Result<Residency> {
    let mut total = Residency::default();
    for (path, file) in files(dir)? {
        let one = resident(&file, &path)?;
        total.resident += one.resident;
        total.total += one.total;
    }
    Ok(total)
}

/// The regular files of `dir`, open for reading.
fn files(dir: &Path) -> Result<Vec<(std::path::PathBuf, File)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::io("list", dir))? {
        let entry = entry.map_err(Error::io("list", dir))?;
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            let file = File::open(&path).map_err(Error::io("open", &path))?;
            out.push((path, file));
        }
    }
    Ok(out)
}

#[cfg(target_os = "linux")]
fn advise(file: &File, path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise reads only its integer arguments; the
    // descriptor is open for as long as `file` lives.
    let code = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if code != 0 {
        return Err(Error::io("evict", path)(std::io::Error::from_raw_os_error(
            code,
        )));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn advise(_file: &File, path: &Path) -> Result<()> {
    Err(Error::io("evict", path)(
        std::io::ErrorKind::Unsupported.into(),
    ))
}

/// The resident share of one file, page by page (`mincore`).
fn resident(file: &File, path: &Path) -> Result<Residency> {
    let len = file.metadata().map_err(Error::io("stat", path))?.len();
    if len == 0 {
        return Ok(Residency::default());
    }
    // SAFETY: a read-only map that nothing reads through: it only names
    // the pages mincore asks about.
    let map = unsafe { memmap2::Mmap::map(file) }.map_err(Error::io("map", path))?;
    let page = page_size();
    let pages = (map.len() as u64).div_ceil(page) as usize;
    let mut vec = vec![0u8; pages];
    // SAFETY: `map` is a live mapping of `map.len()` bytes starting at a
    // page boundary, and `vec` has one byte per page of it, as mincore needs.
    let code = unsafe {
        libc::mincore(
            map.as_ptr() as *mut libc::c_void,
            map.len(),
            vec.as_mut_ptr().cast(),
        )
    };
    if code != 0 {
        return Err(Error::io("mincore", path)(std::io::Error::last_os_error()));
    }
    let resident_pages = vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
    Ok(Residency {
        resident: (resident_pages * page).min(len),
        total: len,
    })
}

fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the running system.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096).max(1)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn evicted_files_are_not_resident_and_read_files_are() {
        // tmpfs keeps every page resident: TMPDIR must be on a disk.
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a"), vec![7u8; 1 << 20]).unwrap();
        let _ = fs::read(dir.path().join("a")).unwrap();
        let warm = residency(dir.path()).unwrap();
        assert_eq!(warm.total, 1 << 20);
        let cold = evict(dir.path()).unwrap();
        assert_eq!(cold.total, 1 << 20);
        if cold.resident == warm.resident && warm.resident == warm.total {
            zrecord_testkit::skip(format!(
                "eviction: {} keeps every page resident (tmpfs?); set TMPDIR to a disk",
                dir.path().display()
            ));
            return;
        }
        // A few pages may be held for a moment (valgrind holds four).
        assert!(cold.share() < 0.05, "{cold:?}");
        let _ = fs::read(dir.path().join("a")).unwrap();
        assert!(residency(dir.path()).unwrap().share() > 0.99);
    }
}
