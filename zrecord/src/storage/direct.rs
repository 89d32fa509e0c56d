//! A batch of positional reads of one file, as [`Io::Direct`](super::Io::Direct)
//! does them: reads close together merged into one, then all of them in
//! flight at once — submitted to an `io_uring` where the kernel allows it
//! (one ring per reading thread, no thread switches), else spread over a
//! pool of threads blocked in `pread`. Where the file also has a handle
//! opened with `O_DIRECT`, reads go around the page cache: each widened to
//! whole [`ALIGN`] blocks, into an aligned buffer, and copied out.
//!
//! [`OpenOptions::io_uring`](crate::OpenOptions::io_uring) turned off uses
//! the pool even where `io_uring` works.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::{Error, Result};

/// Reads kept in flight at once: a ring's depth, or the pool's threads.
/// 64 measured faster than 32 on cold 784-byte records (the queue drains
/// less at the end of each batch).
const READS_IN_FLIGHT: usize = 64;

/// Two reads of a batch closer than this are merged into one.
const MERGE_GAP: u64 = 4 << 10;

/// A merged read is at most this long.
const MERGE_MAX: u64 = 1 << 20;

/// Batches whose reads average this many bytes or more go to the pool.
const LARGE_READ: u64 = 64 << 10;

/// Offsets, lengths and buffers of `O_DIRECT` reads are multiples of this:
/// the largest logical block size of common devices.
pub(super) const ALIGN: usize = 4096;

/// The file a batch reads.
pub(super) struct Source<'f> {
    /// Its ordinary handle.
    pub(super) file: &'f File,
    /// A handle opened with `O_DIRECT`, where the file system allows one.
    pub(super) uncached: Option<&'f File>,
    /// Its path, for errors.
    pub(super) path: &'f Path,
    /// Whether an `io_uring` may read it.
    pub(super) io_uring: bool,
}

impl Source<'_> {
    fn eof(&self) -> Error {
        Error::io("read", self.path)(ErrorKind::UnexpectedEof.into())
    }
}

/// Fills each buffer of `reads` from its offset in `source`; reading past
/// the end is an error.
pub(super) fn read_batch(source: &Source<'_>, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
    let mut runs = merge(reads, source.uncached.is_some());
    if let [run] = &mut runs[..] {
        return run.read(source);
    }
    // Large reads are few and limited by bandwidth; the ring measured
    // slower on them than the pool (its kernel workers), faster on small ones.
    let bytes: u64 = runs.iter().map(|r| r.stop - r.start).sum();
    #[cfg(target_os = "linux")]
    if bytes / (runs.len() as u64) < LARGE_READ
        && let Some(done) = uring::read_runs(source, &mut runs)
    {
        return done;
    }
    read_pooled(source, &mut runs)
}

/// The pool's way: each run a `pread` on one of [`READS_IN_FLIGHT`] threads.
fn read_pooled(source: &Source<'_>, runs: &mut [Run<'_, '_>]) -> Result<()> {
    io_pool().install(|| runs.par_iter_mut().try_for_each(|run| run.read(source)))
}

/// Reads of a batch that lie close together in a file, done as one.
struct Run<'r, 'b> {
    /// Where the read starts: the first part's offset, or the block holding it.
    start: u64,
    /// The end of the last part: the read must reach it.
    end: u64,
    /// Where the read stops: `end`, or the end of the block holding it.
    stop: u64,
    /// Whether the read goes through the `O_DIRECT` handle.
    aligned: bool,
    parts: Vec<&'r mut (u64, &'b mut [u8])>,
    /// Where the run is read before its parts are copied out, when it is
    /// not a single part's own buffer; aligned runs start at `scratch_at`.
    scratch: Vec<u8>,
    scratch_at: usize,
}

impl Run<'_, '_> {
    /// Bytes from `start` that must be read.
    fn need(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// The buffer the run is read into (`stop - start` bytes): its one
    /// part's own, or scratch (aligned to [`ALIGN`] for an aligned run).
    fn target(&mut self) -> &mut [u8] {
        let len = (self.stop - self.start) as usize;
        if !self.aligned
            && let [(_, buf)] = &mut self.parts[..]
        {
            return buf;
        }
        if self.scratch.len() < len {
            let slack = if self.aligned { ALIGN } else { 0 };
            self.scratch = vec![0; len + slack];
            self.scratch_at = self.scratch.as_ptr().align_offset(slack.max(1));
        }
        &mut self.scratch[self.scratch_at..self.scratch_at + len]
    }

    /// Copies the read scratch buffer out into the parts.
    fn scatter(&mut self) {
        if self.aligned || self.parts.len() > 1 {
            let scratch = &self.scratch[self.scratch_at..];
            for (offset, buf) in self.parts.iter_mut() {
                let at = (*offset - self.start) as usize;
                buf.copy_from_slice(&scratch[at..at + buf.len()]);
            }
        }
    }

    /// Reads the run with one blocking call (more where it comes back short).
    fn read(&mut self, source: &Source<'_>) -> Result<()> {
        let (start, need, aligned) = (self.start, self.need(), self.aligned);
        let buf = self.target();
        let (mut done, mut uncached) = (0, source.uncached.filter(|_| aligned));
        while done < need {
            // Whole blocks through the uncached handle; the ordinary one for
            // a run never aligned, or the rest of a short read off the grid.
            let (file, until) = match uncached {
                Some(uncached) if done.is_multiple_of(ALIGN) => (uncached, buf.len()),
                _ => (source.file, need),
            };
            match file.read_at(&mut buf[done..until], start + done as u64) {
                Ok(0) => return Err(source.eof()),
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // A device whose blocks are larger than ALIGN refuses the read.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && uncached.is_some() => {
                    uncached = None;
                }
                Err(e) => return Err(Error::io("read", source.path)(e)),
            }
        }
        self.scatter();
        Ok(())
    }
}

/// Sorts `reads` into runs: reads less than [`MERGE_GAP`] apart (and
/// together at most [`MERGE_MAX`]) become one; `aligned` runs widened to
/// whole [`ALIGN`] blocks.
fn merge<'r, 'b>(reads: &'r mut [(u64, &'b mut [u8])], aligned: bool) -> Vec<Run<'r, 'b>> {
    let align = if aligned { ALIGN as u64 } else { 1 };
    let mut order: Vec<&'r mut (u64, &'b mut [u8])> = reads.iter_mut().collect();
    order.sort_unstable_by_key(|r| r.0);
    let mut runs: Vec<Run<'r, 'b>> = Vec::new();
    for read in order {
        let (offset, end) = (read.0, read.0 + read.1.len() as u64);
        let (start, stop) = (offset / align * align, end.div_ceil(align) * align);
        match runs.last_mut() {
            Some(run)
                if start <= run.stop + MERGE_GAP && stop.max(run.stop) - run.start <= MERGE_MAX =>
            {
                run.end = run.end.max(end);
                run.stop = run.stop.max(stop);
                run.parts.push(read);
            }
            _ => runs.push(Run {
                start,
                end,
                stop,
                aligned,
                parts: vec![read],
                scratch: Vec::new(),
                scratch_at: 0,
            }),
        }
    }
    runs
}

/// The threads that block in `pread` where `io_uring` is not available, so
/// many reads are in flight however few cores the gather runs on.
fn io_pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(READS_IN_FLIGHT)
            .thread_name(|i| format!("zrecord-io-{i}"))
            .build()
            .unwrap_or_else(|_| {
                // Without threads to spare, reads run one at a time.
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("a one-thread pool")
            })
    })
}

#[cfg(target_os = "linux")]
mod uring {
    //! The `io_uring` way: every run's read submitted to the calling
    //! thread's ring, completions reaped as they come.

    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicU8, Ordering};

    use io_uring::{IoUring, Probe, opcode, types};

    use super::{ALIGN, READS_IN_FLIGHT, Run, Source};
    use crate::{Error, Result};

    /// Whether rings can be made here: unknown yet, yes, or no.
    static AVAILABLE: AtomicU8 = AtomicU8::new(UNKNOWN);
    const UNKNOWN: u8 = 0;
    const YES: u8 = 1;
    const NO: u8 = 2;

    thread_local! {
        /// This thread's ring, made at its first batch.
        static RING: RefCell<Option<IoUring>> = const { RefCell::new(None) };
    }

    /// Whether rings work here: not where the kernel or a sandbox (Docker's
    /// default seccomp profile) refuses rings or their read operation.
    pub(crate) fn available() -> bool {
        match AVAILABLE.load(Ordering::Relaxed) {
            YES => true,
            NO => false,
            _ => {
                let yes = new_ring().is_some();
                AVAILABLE.store(if yes { YES } else { NO }, Ordering::Relaxed);
                yes
            }
        }
    }

    /// A ring that can read, or `None`.
    fn new_ring() -> Option<IoUring> {
        let ring = IoUring::new(READS_IN_FLIGHT as u32).ok()?;
        // A read that misses the page cache blocks one of the kernel's
        // workers, of which a ring gets 4 per core by default: allow one per
        // read in flight, as the thread pool would (an older kernel keeps
        // its default).
        let _ = ring
            .submitter()
            .register_iowq_max_workers(&mut [READS_IN_FLIGHT as u32, 0]);
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe).ok()?;
        probe.is_supported(opcode::Read::CODE).then_some(ring)
    }

    /// Reads every run of `runs` through the calling thread's ring; `None`
    /// where `io_uring` is not to be used (the caller reads another way).
    pub(super) fn read_runs(source: &Source<'_>, runs: &mut [Run<'_, '_>]) -> Option<Result<()>> {
        if !source.io_uring || !available() {
            return None;
        }
        RING.with(|cell| {
            let mut ring = cell.try_borrow_mut().ok()?;
            if ring.is_none() {
                *ring = Some(new_ring()?);
            }
            let ring = ring.as_mut()?;
            let result = read_all(ring, source, runs);
            Some(result.map(|()| runs.iter_mut().for_each(Run::scatter)))
        })
    }

    /// One run's read: where its bytes go, and how many have come.
    struct Target {
        ptr: *mut u8,
        /// The buffer's length: what is asked of an aligned read.
        len: usize,
        /// What must come.
        need: usize,
        offset: u64,
        done: usize,
    }

    /// Keeps up to a ring's worth of reads in flight until every run is
    /// read or one failed; returns only when none is in flight any more.
    fn read_all(ring: &mut IoUring, source: &Source<'_>, runs: &mut [Run<'_, '_>]) -> Result<()> {
        let mut targets: Vec<Target> = runs
            .iter_mut()
            .map(|run| {
                let (offset, need) = (run.start, run.need());
                let buf = run.target();
                Target {
                    ptr: buf.as_mut_ptr(),
                    len: buf.len(),
                    need,
                    offset,
                    done: 0,
                }
            })
            .collect();
        let depth = ring.params().sq_entries() as usize;
        // Every run of a batch is aligned, or none is.
        let fd = types::Fd(source.uncached.unwrap_or(source.file).as_raw_fd());
        // An empty read would complete with 0 bytes, which means the end of the file.
        let mut queue: VecDeque<usize> = (0..targets.len())
            .filter(|&k| targets[k].need > 0)
            .collect();
        // Runs an uncached read left off the block grid (or refused):
        // finished afterwards through the ordinary handle.
        let mut off_grid = Vec::new();
        let (mut in_flight, mut failed) = (0usize, None);
        loop {
            while failed.is_none() && in_flight < depth {
                let Some(k) = queue.pop_front() else { break };
                let t = &targets[k];
                let left = u32::try_from(t.len - t.done).unwrap_or(u32::MAX);
                // SAFETY: the entry points at the unread rest of run `k`'s
                // buffer, which `runs` borrows mutably for this whole call
                // (scratch is sized before `targets` is built and not
                // touched again until every read has completed). The
                // function returns only once every submitted read has
                // completed (`in_flight == 0` below), so the kernel never
                // writes to the buffer after the borrow ends. The file
                // handles outlive the call.
                let read = opcode::Read::new(fd, unsafe { t.ptr.add(t.done) }, left)
                    .offset(t.offset + t.done as u64)
                    .build()
                    .user_data(k as u64);
                // SAFETY: as above; the queue has room (`in_flight < depth`
                // and every completion is reaped before more are pushed).
                if unsafe { ring.submission().push(&read) }.is_err() {
                    queue.push_front(k);
                    break;
                }
                in_flight += 1;
            }
            if in_flight == 0 {
                break;
            }
            if let Err(e) = ring.submit_and_wait(1) {
                match e.raw_os_error() {
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY) => {}
                    // The submitted reads still complete into the buffers:
                    // wait for them as usual, but submit no more.
                    _ => {
                        failed.get_or_insert_with(|| Error::io("read", source.path)(e));
                        std::thread::yield_now();
                    }
                }
            }
            for done in ring.completion() {
                in_flight -= 1;
                let k = done.user_data() as usize;
                let t = &mut targets[k];
                match done.result() {
                    n if n > 0 => {
                        t.done += n as usize;
                        if t.done < t.need {
                            if source.uncached.is_some() && !t.done.is_multiple_of(ALIGN) {
                                off_grid.push(k);
                            } else {
                                queue.push_back(k); // a short read: ask for the rest
                            }
                        }
                    }
                    0 => {
                        failed.get_or_insert_with(|| source.eof());
                    }
                    n if n == -libc::EINTR || n == -libc::EAGAIN => queue.push_back(k),
                    // A device whose blocks are larger than ALIGN refuses the read.
                    n if n == -libc::EINVAL && source.uncached.is_some() => off_grid.push(k),
                    n => {
                        failed.get_or_insert_with(|| {
                            Error::io("read", source.path)(io::Error::from_raw_os_error(-n))
                        });
                    }
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        // The ring is idle: finish through the ordinary handle what an
        // uncached read left off the block grid or was refused.
        for k in off_grid {
            let (t, run) = (&targets[k], &mut runs[k]);
            source
                .file
                .read_exact_at(&mut run.target()[t.done..t.need], t.offset + t.done as u64)
                .map_err(Error::io("read", source.path))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of 1,000,000 known bytes, and spans of it: near (merged) and far.
    fn fixture() -> (tempfile::NamedTempFile, Vec<u8>, Vec<(u64, usize)>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let bytes: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let mut spans = vec![(5u64, 10usize), (20, 7), (0, 1), (27, 0), (250_000, 3000)];
        spans.extend((0..40).map(|k| (k * 27_919 % 990_000, 1 + k as usize % 2000)));
        (file, bytes, spans)
    }

    /// Reads `spans` of the fixture with `read`, through the ordinary handle
    /// and (where the file system allows it) an `O_DIRECT` one, and checks
    /// every buffer.
    fn check(read: impl Fn(&Source<'_>, &mut [Run<'_, '_>]) -> Result<()>) {
        let (file, bytes, spans) = fixture();
        let uncached = crate::storage::disk::open_uncached(file.path(), file.as_file());
        if uncached.is_none() {
            zrecord_testkit::skip(format!(
                "O_DIRECT reads: refused in {} (tmpfs?); set TMPDIR to a disk",
                std::env::temp_dir().display()
            ));
        }
        for uncached in [None, uncached.as_ref()] {
            let source = Source {
                file: file.as_file(),
                uncached,
                path: file.path(),
                io_uring: true,
            };
            let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, n)| vec![0; n]).collect();
            let mut reads: Vec<(u64, &mut [u8])> = spans
                .iter()
                .zip(&mut bufs)
                .map(|(&(at, _), b)| (at, &mut b[..]))
                .collect();
            let mut runs = merge(&mut reads, uncached.is_some());
            assert!(runs.len() > 10 && runs.iter().any(|r| r.parts.len() > 1));
            read(&source, &mut runs).unwrap();
            drop(runs);
            for (&(at, n), buf) in spans.iter().zip(&bufs) {
                assert_eq!(&buf[..], &bytes[at as usize..at as usize + n], "{at}+{n}");
            }
            // The file's last bytes, then past its end.
            let mut last = [0; 10];
            let mut reads = [(1u64, &mut [0; 10][..]), (999_990, &mut last[..])];
            read(&source, &mut merge(&mut reads, uncached.is_some())).unwrap();
            assert_eq!(&last[..], &bytes[999_990..]);
            let mut reads = [(1u64, &mut [0; 10][..]), (999_995, &mut [0; 10][..])];
            let mut runs = merge(&mut reads, uncached.is_some());
            assert!(read(&source, &mut runs).is_err());
        }
    }

    #[test]
    fn the_thread_pool_fills_every_buffer_merged_or_not() {
        check(read_pooled);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn io_uring_fills_every_buffer_merged_or_not() {
        if !uring::available() {
            zrecord_testkit::skip(
                "io_uring is refused here (kernel, seccomp or io_uring_disabled)",
            );
            return;
        }
        check(|source, runs| uring::read_runs(source, runs).unwrap());
    }
}
