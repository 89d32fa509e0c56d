//! One-byte locks in a shared lock file: "this process is downloading block
//! X" for every process of a node, with no file per block.
//!
//! On Linux these are open-file-description locks (`F_OFD_SETLK`): they
//! belong to one `open` of the file — two threads of one process exclude
//! each other when each opened the file itself — and the kernel drops them
//! when the holder closes the file or dies, so a killed process never
//! leaves a stale lock. Elsewhere the whole file is locked instead: one
//! download per store at a time, still released by the kernel.

use std::fs::File;
use std::io;

/// Takes an exclusive lock on byte `at` of `file` without waiting: `false`
/// when another open of the file holds it. The lock lasts until `file` is closed.
#[cfg(target_os = "linux")]
pub(crate) fn try_lock_byte(file: &File, at: u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let start = libc::off_t::try_from(at)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "lock offset too large"))?;
    // SAFETY: `flock` is a plain C struct; all-zero is a valid value of it.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = start;
    lock.l_len = 1;
    // SAFETY: the descriptor is open for as long as `file` lives, and
    // `lock` is a valid `flock` that fcntl only reads (l_pid must be 0 for
    // OFD locks, which zeroing gave it).
    let code = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
    if code == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
        _ => Err(error),
    }
}

/// Takes an exclusive lock on the whole of `file` without waiting (`at`
/// is ignored where byte locks that die with their holder do not exist).
#[cfg(not(target_os = "linux"))]
pub(crate) fn try_lock_byte(file: &File, _at: u64) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_opens_exclude_each_other_per_byte_until_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fetch.lock");
        let open = || {
            File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .unwrap()
        };
        let (a, b) = (open(), open());
        assert!(try_lock_byte(&a, 7).unwrap());
        assert!(!try_lock_byte(&b, 7).unwrap());
        if cfg!(target_os = "linux") {
            assert!(try_lock_byte(&b, 8).unwrap(), "another byte is free");
        }
        drop(a);
        assert!(try_lock_byte(&open(), 7).unwrap(), "closing released it");
        drop(b);
    }
}
