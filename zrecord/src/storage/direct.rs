//! A batch of positional reads of one file, as [`Io::Direct`](super::Io::Direct)
//! does them: reads close together merged into one, then all of them in
//! flight at once — submitted to an `io_uring` where the kernel allows it
//! (one ring per reading thread, no thread switches), else spread over a
//! pool of threads blocked in `pread`.
//!
//! Set the environment variable `ZRECORD_IO_URING=0` to use the pool even
//! where `io_uring` works.

use std::fs::File;
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

/// Fills each buffer of `reads` from its offset in `file` (named `path` in
/// errors); reading past the end is an error.
pub(super) fn read_batch(file: &File, path: &Path, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
    let mut runs = merge(reads);
    if let [run] = &mut runs[..] {
        return run.read(file, path);
    }
    // Large reads are few and limited by bandwidth; the ring measured
    // slower on them than the pool (its kernel workers), faster on small ones.
    let bytes: u64 = runs.iter().map(|r| r.end - r.offset).sum();
    #[cfg(target_os = "linux")]
    if bytes / (runs.len() as u64) < LARGE_READ
        && let Some(done) = uring::read_runs(file, path, &mut runs)
    {
        return done;
    }
    read_pooled(file, path, &mut runs)
}

/// The pool's way: each run a `pread` on one of [`READS_IN_FLIGHT`] threads.
fn read_pooled(file: &File, path: &Path, runs: &mut [Run<'_, '_>]) -> Result<()> {
    io_pool().install(|| runs.par_iter_mut().try_for_each(|run| run.read(file, path)))
}

/// Reads of a batch that lie close together in a file, done as one.
struct Run<'r, 'b> {
    offset: u64,
    end: u64,
    parts: Vec<&'r mut (u64, &'b mut [u8])>,
    /// Where a run of several parts is read before they are copied out.
    scratch: Vec<u8>,
}

impl Run<'_, '_> {
    /// The buffer the run's bytes are read into: its one part's own, or scratch.
    fn target(&mut self) -> &mut [u8] {
        if let [(_, buf)] = &mut self.parts[..] {
            return buf;
        }
        self.scratch.resize((self.end - self.offset) as usize, 0);
        &mut self.scratch
    }

    /// Copies a read scratch buffer out into the parts.
    fn scatter(&mut self) {
        if self.parts.len() > 1 {
            for (offset, buf) in self.parts.iter_mut() {
                let at = (*offset - self.offset) as usize;
                buf.copy_from_slice(&self.scratch[at..at + buf.len()]);
            }
        }
    }

    fn read(&mut self, file: &File, path: &Path) -> Result<()> {
        let offset = self.offset;
        file.read_exact_at(self.target(), offset)
            .map_err(Error::io("read", path))?;
        self.scatter();
        Ok(())
    }
}

/// Sorts `reads` into runs: reads less than [`MERGE_GAP`] apart (and
/// together at most [`MERGE_MAX`]) become one.
fn merge<'r, 'b>(reads: &'r mut [(u64, &'b mut [u8])]) -> Vec<Run<'r, 'b>> {
    let mut order: Vec<&'r mut (u64, &'b mut [u8])> = reads.iter_mut().collect();
    order.sort_unstable_by_key(|r| r.0);
    let mut runs: Vec<Run<'r, 'b>> = Vec::new();
    for read in order {
        let (offset, end) = (read.0, read.0 + read.1.len() as u64);
        match runs.last_mut() {
            Some(run)
                if offset <= run.end + MERGE_GAP && end.max(run.end) - run.offset <= MERGE_MAX =>
            {
                run.end = run.end.max(end);
                run.parts.push(read);
            }
            _ => runs.push(Run {
                offset,
                end,
                parts: vec![read],
                scratch: Vec::new(),
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
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::path::Path;
    use std::sync::atomic::{AtomicU8, Ordering};

    use io_uring::{IoUring, Probe, opcode, types};

    use super::{READS_IN_FLIGHT, Run};
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

    /// Whether batches use `io_uring`: not where `ZRECORD_IO_URING=0`, nor
    /// where the kernel or a sandbox (Docker's default seccomp profile)
    /// refuses rings or their read operation.
    pub(crate) fn enabled() -> bool {
        match AVAILABLE.load(Ordering::Relaxed) {
            YES => true,
            NO => false,
            _ => {
                let yes = std::env::var_os("ZRECORD_IO_URING").is_none_or(|v| v != "0")
                    && new_ring().is_some();
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
    pub(super) fn read_runs(
        file: &File,
        path: &Path,
        runs: &mut [Run<'_, '_>],
    ) -> Option<Result<()>> {
        if !enabled() {
            return None;
        }
        RING.with(|cell| {
            let mut ring = cell.try_borrow_mut().ok()?;
            if ring.is_none() {
                *ring = Some(new_ring()?);
            }
            let ring = ring.as_mut()?;
            let result = read_all(ring, file, path, runs);
            Some(result.map(|()| runs.iter_mut().for_each(Run::scatter)))
        })
    }

    /// One run's read: where its bytes go, and how many have come.
    struct Target {
        ptr: *mut u8,
        len: usize,
        offset: u64,
        done: usize,
    }

    /// Keeps up to a ring's worth of reads in flight until every run is
    /// read or one failed; returns only when none is in flight any more.
    fn read_all(
        ring: &mut IoUring,
        file: &File,
        path: &Path,
        runs: &mut [Run<'_, '_>],
    ) -> Result<()> {
        let mut targets: Vec<Target> = runs
            .iter_mut()
            .map(|run| {
                let offset = run.offset;
                let buf = run.target();
                Target {
                    ptr: buf.as_mut_ptr(),
                    len: buf.len(),
                    offset,
                    done: 0,
                }
            })
            .collect();
        let depth = ring.params().sq_entries() as usize;
        let fd = types::Fd(file.as_raw_fd());
        // An empty read would complete with 0 bytes, which means the end of the file.
        let mut queue: VecDeque<usize> =
            (0..targets.len()).filter(|&k| targets[k].len > 0).collect();
        let (mut in_flight, mut failed) = (0usize, None);
        loop {
            while failed.is_none() && in_flight < depth {
                let Some(k) = queue.pop_front() else { break };
                let t = &targets[k];
                let left = u32::try_from(t.len - t.done).unwrap_or(u32::MAX);
                // SAFETY: the entry points at the unread rest of run `k`'s
                // buffer, which `runs` borrows mutably for this whole call
                // (scratch is sized before `targets` is built and not
                // touched again until this function returns). The function
                // returns only once every submitted read has completed
                // (`in_flight == 0` below), so the kernel never writes to
                // the buffer after the borrow ends. `file` outlives the call.
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
                        failed.get_or_insert_with(|| Error::io("read", path)(e));
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
                        if t.done < t.len {
                            queue.push_back(k); // a short read: ask for the rest
                        }
                    }
                    0 => {
                        failed.get_or_insert_with(|| {
                            Error::io("read", path)(io::ErrorKind::UnexpectedEof.into())
                        });
                    }
                    n if n == -libc::EINTR || n == -libc::EAGAIN => queue.push_back(k),
                    n => {
                        failed.get_or_insert_with(|| {
                            Error::io("read", path)(io::Error::from_raw_os_error(-n))
                        });
                    }
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of 300,000 known bytes, and spans of it: near (merged) and far.
    fn fixture() -> (tempfile::NamedTempFile, Vec<u8>, Vec<(u64, usize)>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let mut spans = vec![(5u64, 10usize), (20, 7), (0, 1), (27, 0), (250_000, 3000)];
        spans.extend((0..40).map(|k| (k * 7919 % 290_000, 1 + k as usize % 2000)));
        (file, bytes, spans)
    }

    /// Reads `spans` of `file` with `read` and checks every buffer.
    fn check(read: impl Fn(&File, &mut [Run<'_, '_>]) -> Result<()>) {
        let (file, bytes, spans) = fixture();
        let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, n)| vec![0; n]).collect();
        let mut reads: Vec<(u64, &mut [u8])> = spans
            .iter()
            .zip(&mut bufs)
            .map(|(&(at, _), b)| (at, &mut b[..]))
            .collect();
        let mut runs = merge(&mut reads);
        assert!(runs.len() > 10 && runs.iter().any(|r| r.parts.len() > 1));
        read(file.as_file(), &mut runs).unwrap();
        drop(runs);
        for (&(at, n), buf) in spans.iter().zip(&bufs) {
            assert_eq!(&buf[..], &bytes[at as usize..at as usize + n], "{at}+{n}");
        }
        let mut past = [0; 10];
        let mut reads = [(1u64, &mut past[..]), (299_995, &mut [0; 10][..])];
        let mut runs = merge(&mut reads);
        assert!(read(file.as_file(), &mut runs).is_err());
    }

    #[test]
    fn the_thread_pool_fills_every_buffer_merged_or_not() {
        check(|file, runs| read_pooled(file, Path::new("f"), runs));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn io_uring_fills_every_buffer_merged_or_not() {
        if !uring::enabled() {
            eprintln!("skipped: io_uring is refused here or turned off (ZRECORD_IO_URING=0)");
            return;
        }
        check(|file, runs| uring::read_runs(file, Path::new("f"), runs).unwrap());
    }
}
