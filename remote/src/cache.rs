//! The on-disk cache of remote blocks, shared by the processes of a node.
//!
//! Layout of the cache folder the user names:
//!
//! ```text
//! CACHE/zrecord-cache.lock         flock held while accounting and evicting
//! CACHE/zrecord-cache.usage        bytes the cache holds (u64, little-endian)
//! CACHE/<store>/fetch.lock         byte locks: "block X is being downloaded"
//! CACHE/<store>/pin.lock           shared locks of the processes pinning the store
//! CACHE/<store>/<object>.<n>.zrblock   block n of an object
//! ```
//!
//! `<store>` and `<object>` are 16 hex digits hashing the store's URL and an
//! object's name, size and entity tag, so a changed object never reads
//! blocks of its old version. A block is written to a temporary file and
//! renamed into place, so readers see whole blocks or none; a block whose
//! size is wrong (a power cut) is deleted and fetched again.
//!
//! Every lock is an OS lock that dies with its process. Eviction deletes
//! the least recently used blocks of unpinned stores, and only files named
//! as this module names them.

use std::collections::{BTreeSet, HashMap};
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use zrecord::storage::CacheWork;

use crate::lock::try_lock_byte;
use crate::stats::Stats;
use crate::{Error, Result};

const LOCK: &str = "zrecord-cache.lock";
const USAGE: &str = "zrecord-cache.usage";
const FETCH_LOCK: &str = "fetch.lock";
const PIN_LOCK: &str = "pin.lock";
const BLOCK_EXT: &str = ".zrblock";
const TEMP_MARK: &str = ".zrblock.tmp-";
/// Consecutive missing blocks fetched in one request, at most.
const RUN_BLOCKS: u64 = 8;
/// How often a reader looks whether another process's download finished.
const POLL: Duration = Duration::from_millis(2);

/// An object as the cache names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Object {
    /// Hash of the object's name, size and entity tag.
    pub(crate) key: u64,
    /// The object's size.
    pub(crate) len: u64,
}

/// Where a block's bytes are, once a read has them.
enum Source {
    File(File),
    Memory(Bytes),
}

/// One store's share of a cache folder.
#[derive(Debug)]
pub(crate) struct Cache {
    root: PathBuf,
    dir: PathBuf,
    limit: u64,
    block: u64,
    /// How long to wait for another process's download before reading through.
    wait: Duration,
    stats: Arc<Stats>,
    /// The shared lock that pins this store's blocks, while held.
    pin: Option<File>,
}

/// Fetches ranges of one object, answered in order.
pub(crate) type Fetch<'a> = dyn Fn(Vec<Range<u64>>) -> Result<Vec<Bytes>> + 'a;

impl Cache {
    /// Opens (creating) the cache folder `root` for the store at `url`.
    pub(crate) fn open(
        root: &Path,
        url: &str,
        limit: u64,
        block: u64,
        wait: Duration,
        stats: Arc<Stats>,
    ) -> Result<Cache> {
        if block == 0 {
            return Err(Error::Options("cache block size must be positive".into()));
        }
        let dir = root.join(format!("{:016x}", fnv1a(&[url.as_bytes()])));
        fs::create_dir_all(&dir).map_err(Error::cache("create", &dir))?;
        for name in [LOCK, USAGE] {
            open_rw(&root.join(name))?;
        }
        open_rw(&dir.join(FETCH_LOCK))?;
        Ok(Cache {
            root: root.into(),
            dir,
            limit,
            block,
            wait,
            stats,
            pin: None,
        })
    }

    /// Whether blocks are kept at all: a limit smaller than one block reads through.
    pub(crate) fn keeps_blocks(&self) -> bool {
        self.block <= self.limit
    }

    /// Pins this store: its blocks are not evicted while this handle lives.
    /// The caller then reads every block once.
    pub(crate) fn pin(&mut self, store_bytes: u64) -> Result<()> {
        if store_bytes > self.limit {
            return Err(Error::Options(format!(
                "cannot pin a store of {store_bytes} bytes in a cache limited to {} bytes",
                self.limit
            )));
        }
        let path = self.dir.join(PIN_LOCK);
        let file = open_rw(&path)?;
        file.lock_shared().map_err(Error::cache("lock", &path))?;
        self.pin = Some(file);
        Ok(())
    }

    /// Fills each read `(offset, buffer)` of `object` from cached blocks,
    /// fetching the missing ones with `fetch`.
    pub(crate) fn read(
        &self,
        object: Object,
        reads: &mut [(u64, &mut [u8])],
        fetch: &Fetch<'_>,
    ) -> Result<CacheWork> {
        let mut work = CacheWork::default();
        let mut blocks = BTreeSet::new();
        for (offset, buf) in reads.iter() {
            if !buf.is_empty() {
                let last = (offset + buf.len() as u64 - 1) / self.block;
                blocks.extend(offset / self.block..=last);
            }
        }
        let mut have: HashMap<u64, Source> = HashMap::with_capacity(blocks.len());
        let mut missing = Vec::new();
        for b in blocks {
            match self.open_block(object, b)? {
                Some(file) => {
                    have.insert(b, Source::File(file));
                }
                None => missing.push(b),
            }
        }
        if !missing.is_empty() {
            self.fill(object, missing, &mut have, fetch, &mut work)?;
        }
        work.hits = have
            .values()
            .filter(|s| matches!(s, Source::File(_)))
            .count() as u64;
        for (offset, buf) in reads.iter_mut() {
            let mut pos = *offset;
            let mut done = 0;
            while done < buf.len() {
                let b = pos / self.block;
                let within = pos % self.block;
                let n = ((self.block - within) as usize).min(buf.len() - done);
                let out = &mut buf[done..done + n];
                match have.get(&b) {
                    Some(Source::File(file)) => file
                        .read_exact_at(out, within)
                        .map_err(Error::cache("read", self.block_path(object, b)))?,
                    Some(Source::Memory(bytes)) => {
                        let piece = bytes.get(within as usize..within as usize + n);
                        out.copy_from_slice(piece.ok_or_else(|| short_block(b))?);
                    }
                    None => return Err(short_block(b)),
                }
                done += n;
                pos += n as u64;
            }
        }
        // Mark the blocks used for least-recently-used eviction.
        let now = SystemTime::now();
        for source in have.values() {
            if let Source::File(file) = source {
                let _ = file.set_modified(now);
            }
        }
        Ok(work)
    }

    /// Gets the `missing` blocks into `have`: fetched here (and cached)
    /// unless another process is fetching them, then read from its files.
    fn fill(
        &self,
        object: Object,
        missing: Vec<u64>,
        have: &mut HashMap<u64, Source>,
        fetch: &Fetch<'_>,
        work: &mut CacheWork,
    ) -> Result<()> {
        let mut theirs = Vec::new();
        {
            let locks = self.fetch_locks()?;
            let mut mine = Vec::new();
            for b in missing {
                if !self.try_lock(&locks, object, b)? {
                    theirs.push(b);
                } else if let Some(file) = self.open_block(object, b)? {
                    have.insert(b, Source::File(file));
                } else {
                    mine.push(b);
                }
            }
            self.fetch_blocks(object, &mine, true, have, fetch, work)?;
            // Dropping `locks` tells waiting processes the blocks are there.
        }
        let deadline = Instant::now() + self.wait;
        while !theirs.is_empty() {
            let locks = self.fetch_locks()?;
            let mut mine = Vec::new();
            let mut waiting = Vec::new();
            for b in theirs {
                if let Some(file) = self.open_block(object, b)? {
                    have.insert(b, Source::File(file));
                } else if self.try_lock(&locks, object, b)? {
                    // Its download ended without a block (it failed or read through).
                    mine.push(b);
                } else {
                    waiting.push(b);
                }
            }
            self.fetch_blocks(object, &mine, true, have, fetch, work)?;
            drop(locks);
            theirs = waiting;
            if !theirs.is_empty() {
                if Instant::now() >= deadline {
                    self.fetch_blocks(object, &theirs, false, have, fetch, work)?;
                    break;
                }
                std::thread::sleep(POLL);
            }
        }
        Ok(())
    }

    /// Fetches `blocks` (ascending), consecutive ones in one request, into
    /// `have`; with `keep`, also into the cache where it has room.
    fn fetch_blocks(
        &self,
        object: Object,
        blocks: &[u64],
        keep: bool,
        have: &mut HashMap<u64, Source>,
        fetch: &Fetch<'_>,
        work: &mut CacheWork,
    ) -> Result<()> {
        if blocks.is_empty() {
            return Ok(());
        }
        let mut runs: Vec<Range<u64>> = Vec::new();
        for &b in blocks {
            match runs.last_mut() {
                Some(run) if run.end == b && run.end - run.start < RUN_BLOCKS => run.end += 1,
                _ => runs.push(b..b + 1),
            }
        }
        let ranges = runs
            .iter()
            .map(|run| run.start * self.block..(run.end * self.block).min(object.len))
            .collect();
        let fetched = fetch(ranges)?;
        if fetched.len() != runs.len() {
            return Err(short_block(blocks[0]));
        }
        for (run, bytes) in runs.into_iter().zip(fetched) {
            for b in run.clone() {
                let from = ((b - run.start) * self.block) as usize;
                let to = (from + self.block as usize).min(bytes.len());
                let block = bytes.slice(from..to);
                work.misses += 1;
                if !(keep && self.keeps_blocks() && self.store_block(object, b, &block, work)) {
                    self.stats.add(&self.stats.read_through, 1);
                }
                have.insert(b, Source::Memory(block));
            }
        }
        Ok(())
    }

    /// Writes one block into the cache if room can be made; `false` when it
    /// was not kept (no room beside pinned stores, or the write failed —
    /// a cache that cannot write still serves reads).
    fn store_block(&self, object: Object, b: u64, bytes: &[u8], work: &mut CacheWork) -> bool {
        static TEMP: AtomicU64 = AtomicU64::new(0);
        let path = self.block_path(object, b);
        let temp = self.dir.join(format!(
            "{:016x}.{b}{TEMP_MARK}{}-{}",
            object.key,
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        // The room is claimed by a temporary file of the block's size,
        // made while the cache lock is held: another process's eviction
        // counts it from then on, as it counts every file in the cache.
        let len = bytes.len() as u64;
        let claim = || File::create(&temp).and_then(|f| f.set_len(len).map(|()| f));
        let mut file = match self.reserve(len, work, claim) {
            Ok(Some(file)) => file,
            Ok(None) | Err(_) => {
                let _ = fs::remove_file(&temp);
                return false;
            }
        };
        let written = file
            .write_all(bytes)
            .and_then(|()| fs::rename(&temp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written.is_ok()
    }

    /// Makes room for `bytes` more, evicting if the cache would exceed its
    /// limit, and claims it with `claim` before letting go of the cache
    /// lock; `None` when pinned blocks leave too little room or the claim
    /// fails.
    fn reserve(
        &self,
        bytes: u64,
        work: &mut CacheWork,
        claim: impl FnOnce() -> std::io::Result<File>,
    ) -> Result<Option<File>> {
        let lock_path = self.root.join(LOCK);
        let lock = open_rw(&lock_path)?;
        lock.lock().map_err(Error::cache("lock", &lock_path))?;
        let usage_path = self.root.join(USAGE);
        let usage_file = open_rw(&usage_path)?;
        let mut word = [0u8; 8];
        let mut usage = match usage_file.read_exact_at(&mut word, 0) {
            Ok(()) => u64::from_le_bytes(word),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(Error::cache("read", &usage_path)(e)),
        };
        if usage.saturating_add(bytes) > self.limit {
            // Evict to 90 % of the limit, so scans are rare.
            let target = (self.limit / 10 * 9).saturating_sub(bytes);
            usage = self.evict(target, work)?;
            if usage.saturating_add(bytes) > self.limit {
                usage_file
                    .write_all_at(&usage.to_le_bytes(), 0)
                    .map_err(Error::cache("write", &usage_path))?;
                return Ok(None);
            }
        }
        let Ok(claimed) = claim() else {
            return Ok(None);
        };
        usage_file
            .write_all_at(&(usage + bytes).to_le_bytes(), 0)
            .map_err(Error::cache("write", &usage_path))?;
        Ok(Some(claimed))
    }

    /// Deletes least recently used blocks of unpinned stores until the
    /// cache holds at most `target` bytes (or only pinned blocks are
    /// left), and temporary files a killed download left; returns what the
    /// cache holds then. The caller holds the cache lock.
    fn evict(&self, target: u64, work: &mut CacheWork) -> Result<u64> {
        let stale_after = (self.wait * 2).max(Duration::from_secs(60));
        let now = SystemTime::now();
        let mut total = 0u64;
        let mut candidates = Vec::new();
        for dir in store_dirs(&self.root)? {
            let pinned = is_pinned(&dir)?;
            for entry in fs::read_dir(&dir).map_err(Error::cache("list", &dir))? {
                let entry = entry.map_err(Error::cache("list", &dir))?;
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let Ok(meta) = entry.metadata() else { continue };
                if !meta.is_file() {
                    continue;
                }
                let modified = meta.modified().unwrap_or(now);
                if name.contains(TEMP_MARK) {
                    let age = now.duration_since(modified).unwrap_or_default();
                    if age > stale_after && fs::remove_file(entry.path()).is_ok() {
                        continue;
                    }
                    total += meta.len();
                } else if name.ends_with(BLOCK_EXT) {
                    total += meta.len();
                    if !pinned {
                        candidates.push((modified, meta.len(), entry.path()));
                    }
                }
            }
        }
        candidates.sort_unstable_by_key(|(modified, _, _)| *modified);
        for (_, len, path) in candidates {
            if total <= target {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total -= len;
                work.evicted_bytes += len;
            }
        }
        Ok(total)
    }

    fn block_path(&self, object: Object, b: u64) -> PathBuf {
        self.dir.join(format!("{:016x}.{b}{BLOCK_EXT}", object.key))
    }

    /// Block `b`'s file, open for reading, if the cache has it whole.
    fn open_block(&self, object: Object, b: u64) -> Result<Option<File>> {
        let path = self.block_path(object, b);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::cache("open", &path)(e)),
        };
        let want = self.block.min(object.len.saturating_sub(b * self.block));
        let len = file.metadata().map_err(Error::cache("read", &path))?.len();
        if len != want {
            // Only a power cut between write and rename leaves this.
            let _ = fs::remove_file(&path);
            return Ok(None);
        }
        Ok(Some(file))
    }

    /// A fresh open of the store's download lock file: locks taken through
    /// it are released when it is dropped.
    fn fetch_locks(&self) -> Result<File> {
        open_rw(&self.dir.join(FETCH_LOCK))
    }

    fn try_lock(&self, locks: &File, object: Object, b: u64) -> Result<bool> {
        let at = fnv1a(&[&object.key.to_le_bytes(), &b.to_le_bytes()]) >> 24;
        try_lock_byte(locks, at).map_err(Error::cache("lock", self.dir.join(FETCH_LOCK)))
    }
}

/// A block a read needs is not among those found or fetched: the fetch
/// answered fewer or shorter ranges than asked (it checks, so this is a bug).
fn short_block(b: u64) -> Error {
    Error::Internal(format!("block {b} was not fetched whole"))
}

/// The store folders of a cache: entries named by 16 hex digits.
fn store_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root).map_err(Error::cache("list", root))? {
        let entry = entry.map_err(Error::cache("list", root))?;
        let name = entry.file_name();
        let ours = name
            .to_str()
            .is_some_and(|n| n.len() == 16 && n.bytes().all(|c| c.is_ascii_hexdigit()));
        // `file_type` does not follow links: a link named like a store is skipped.
        if ours && entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    Ok(out)
}

/// Whether a process holds a pin on the store folder `dir`.
fn is_pinned(dir: &Path) -> Result<bool> {
    let path = dir.join(PIN_LOCK);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::cache("open", &path)(e)),
    };
    match file.try_lock() {
        Ok(()) => Ok(false),
        Err(fs::TryLockError::WouldBlock) => Ok(true),
        Err(fs::TryLockError::Error(e)) => Err(Error::cache("lock", &path)(e)),
    }
}

fn open_rw(path: &Path) -> Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(Error::cache("open", path))
}

/// FNV-1a over `parts`: a hash that stays the same across processes and builds.
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &byte in *part {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        // Separate the parts, so ("ab", "c") and ("a", "bc") differ.
        hash = (hash ^ 0xff).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}
