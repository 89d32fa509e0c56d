//! The physical record engine beneath [`DenseStore`](crate::DenseStore) and
//! [`RaggedStore`](crate::RaggedStore): numbered byte records in chunk files,
//! addressed by a record table, committed through a 32-byte header, owned
//! through an OS lock. It knows nothing of shapes; the typed stores do.

mod append;
pub(crate) mod copy;
mod files;
mod gather;
mod journal;
mod maintenance;
mod prefetch;
mod verify;

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub(crate) use gather::Snapshot;
pub use gather::{PARALLEL_COPY_BYTES, PIECES_PER_THREAD};
pub use maintenance::CompactProgress;
pub use verify::VerifyReport;

use crate::codec::CodecRuntime;
use crate::format::{
    DICT_FILE, Geometry, LOC_ENTRY_LEN, META_FILE, META_LEN, MetaHeader, STORE_FILE, StoreHeader,
    TypeIdentity, chunk_file, loc_file,
};
use crate::{Codec, Dictionary, Error, Result, StoreKind};
use files::FileTable;

/// What a store holds and where its bytes go — from [`DenseStore::stats`](crate::DenseStore::stats)
/// and [`RaggedStore::stats`](crate::RaggedStore::stats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Live records.
    pub records: u64,
    /// Payload bytes of the live records before compression.
    pub logical_bytes: u64,
    /// Stored bytes of the live records (frames, and for ragged stores
    /// their shape records).
    pub live_bytes: u64,
    /// Bytes in the chunk files, live or not.
    pub chunk_bytes: u64,
    /// `chunk_bytes - live_bytes`: what [`compact`](crate::DenseStore::compact) can reclaim.
    pub reclaimable_bytes: u64,
}

/// The writer's view: where the next record goes, and what `sync` must flush.
struct Writer {
    tail_chunk: u32,
    tail_offset: u64,
    /// Lowest chunk written since the last sync.
    dirty_chunks_from: Option<u32>,
    /// Lowest record-table segment written since the last sync.
    dirty_segments_from: Option<u64>,
    /// `meta.zr` (and possibly new files) written since the last sync.
    dirty_meta: bool,
}

impl Writer {
    fn touch(&mut self, chunk: Option<u32>, segment: Option<u64>) {
        if let Some(c) = chunk {
            self.dirty_chunks_from = Some(self.dirty_chunks_from.map_or(c, |d| d.min(c)));
        }
        if let Some(s) = segment {
            self.dirty_segments_from = Some(self.dirty_segments_from.map_or(s, |d| d.min(s)));
        }
        self.dirty_meta = true;
    }
}

pub(crate) struct Engine {
    dir: PathBuf,
    /// `meta.zr`, opened once and locked for the handle's lifetime.
    meta: File,
    identity: TypeIdentity,
    codec: CodecRuntime,
    geometry: Geometry,
    /// Physical records per logical record: 1 (dense) or 2 (ragged payload + shape).
    group: u64,
    /// Committed physical records; published after the header is written.
    len: AtomicU64,
    files: RwLock<FileTable>,
    writer: Mutex<Writer>,
}

impl Engine {
    /// Creates a store at `dir` and opens it.
    ///
    /// The store is built in a temporary folder beside `dir` and renamed into
    /// place when complete, so a failed or interrupted create leaves nothing
    /// at `dir`.
    pub(crate) fn create(
        dir: &Path,
        identity: TypeIdentity,
        codec: Codec,
        geometry: Geometry,
    ) -> Result<Engine> {
        identity.check().map_err(Error::InvalidArgument)?;
        geometry.check().map_err(Error::InvalidArgument)?;
        match fs::read_dir(dir) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(Error::AlreadyExists { path: dir.into() });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Err(Error::AlreadyExists { path: dir.into() }),
        }
        let name = dir.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} does not name a folder to create",
                dir.display()
            ))
        })?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(Error::io("create", &parent))?;
        let staging = parent.join(format!(
            ".{}.zrecord-create-{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let built = write_new_store(&staging, &identity, &codec, geometry).and_then(|()| {
            if dir.exists() {
                fs::remove_dir(dir).map_err(Error::io("replace the empty folder", dir))?;
            }
            fs::rename(&staging, dir).map_err(Error::io("rename into place", dir))?;
            sync_dir(&parent)
        });
        if let Err(e) = built {
            let _ = fs::remove_dir_all(&staging);
            return Err(e);
        }
        Engine::open(dir)
    }

    /// Opens the store at `dir`, checking every header, and takes its lock.
    pub(crate) fn open(dir: &Path) -> Result<Engine> {
        let not_a_store = |reason: &str| Error::NotAStore {
            path: dir.into(),
            reason: reason.into(),
        };
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(not_a_store("it is not a folder")),
            Err(_) => return Err(not_a_store("no such folder")),
        }
        let store_path = dir.join(STORE_FILE);
        let meta_path = dir.join(META_FILE);
        if !store_path.is_file() || !meta_path.is_file() {
            return Err(not_a_store("it has no store.zr and meta.zr"));
        }
        let meta = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&meta_path)
            .map_err(Error::io("open", &meta_path))?;
        match meta.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(Error::StoreBusy { path: dir.into() }),
            Err(TryLockError::Error(e)) => return Err(Error::io("lock", &meta_path)(e)),
        }

        let header = StoreHeader::decode(&store_path, &read_small(&store_path, 1 << 20)?)?;
        let mut meta_bytes = Vec::with_capacity(META_LEN + 1);
        (&meta)
            .take(META_LEN as u64 + 1)
            .read_to_end(&mut meta_bytes)
            .map_err(Error::io("read", &meta_path))?;
        let m = MetaHeader::decode(&meta_path, &meta_bytes)?;
        let dict_path = dir.join(DICT_FILE);
        let dict = match (m.wants_dictionary(), dict_path.exists()) {
            (true, false) => return Err(Error::MissingDictionary { path: dir.into() }),
            (true, true) => Some(
                Dictionary::from_bytes(read_small(&dict_path, 1 << 30)?)
                    .map_err(|e| Error::corrupt(&dict_path, e.to_string()))?,
            ),
            (false, true) => {
                return Err(Error::corrupt(
                    &dict_path,
                    "a dictionary in a store whose codec needs none",
                ));
            }
            (false, false) => None,
        };
        let codec = CodecRuntime::new(m.codec(dict))?;
        let group = match header.identity.kind() {
            StoreKind::Dense => 1,
            StoreKind::Ragged => 2,
        };
        if m.length % group != 0 {
            return Err(Error::corrupt(
                &meta_path,
                format!("a ragged store with an odd physical length {}", m.length),
            ));
        }

        let files = check_and_recover(dir, &m)?;
        let engine = Engine {
            dir: dir.into(),
            meta,
            identity: header.identity,
            codec,
            geometry: m.geometry,
            group,
            len: AtomicU64::new(m.length),
            files: RwLock::new(files),
            writer: Mutex::new(Writer {
                tail_chunk: m.tail_chunk,
                tail_offset: m.tail_offset.into(),
                dirty_chunks_from: None,
                dirty_segments_from: None,
                dirty_meta: false,
            }),
        };
        engine.redo_compaction_journal()?;
        engine.redo_delete_journal()?;
        Ok(engine)
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn identity(&self) -> &TypeIdentity {
        &self.identity
    }

    pub(crate) fn codec(&self) -> &Codec {
        self.codec.codec()
    }

    /// Committed logical records.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire) / self.group
    }

    /// Whether physical record `phys` is a ragged shape record (stored raw).
    fn is_shape_record(&self, phys: u64) -> bool {
        self.group == 2 && phys % 2 == 1
    }

    fn files(&self) -> RwLockReadGuard<'_, FileTable> {
        self.files.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn files_mut(&self) -> RwLockWriteGuard<'_, FileTable> {
        self.files.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn writer(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the header: the commit point of every change.
    fn write_meta(&self, tail_chunk: u32, tail_offset: u64, length: u64) -> Result<()> {
        let header = MetaHeader {
            codec_tag: MetaHeader::codec_tag(self.codec()),
            geometry: self.geometry,
            tail_chunk,
            tail_offset: u32::try_from(tail_offset)
                .map_err(|_| Error::corrupt(&self.dir, "tail offset overflow"))?,
            length,
        };
        let path = self.dir.join(META_FILE);
        self.meta
            .write_all_at(&header.encode(), 0)
            .map_err(Error::io("write", path))
    }

    /// Space accounting; reads the whole record table.
    pub(crate) fn stats(&self) -> Result<Stats> {
        let snap = self.snapshot();
        let mut logical_bytes = 0;
        let mut live_bytes = 0;
        for phys in 0..snap.len() * self.group {
            let loc = snap.phys_loc(phys)?;
            live_bytes += u64::from(loc.phys_len);
            if !self.is_shape_record(phys) {
                logical_bytes += u64::from(loc.logic_len);
            }
        }
        let chunk_bytes = snap.files().chunk_bytes();
        Ok(Stats {
            records: snap.len(),
            logical_bytes,
            live_bytes,
            chunk_bytes,
            reclaimable_bytes: chunk_bytes.saturating_sub(live_bytes),
        })
    }

    /// Makes the committed state durable: data, then record table, then header.
    pub(crate) fn sync(&self) -> Result<()> {
        let mut w = self.writer();
        let files = self.files();
        if let Some(from) = w.dirty_chunks_from {
            for chunk in files.chunks.iter().skip(from as usize) {
                chunk
                    .file
                    .file
                    .sync_data()
                    .map_err(Error::io("sync", &chunk.file.path))?;
            }
        }
        if let Some(from) = w.dirty_segments_from {
            for segment in files.segments.iter().skip(from as usize) {
                segment
                    .file
                    .sync_data()
                    .map_err(Error::io("sync", &segment.path))?;
            }
        }
        if w.dirty_meta {
            self.meta
                .sync_data()
                .map_err(Error::io("sync", self.dir.join(META_FILE)))?;
            sync_dir(&self.dir)?;
        }
        w.dirty_chunks_from = None;
        w.dirty_segments_from = None;
        w.dirty_meta = false;
        Ok(())
    }
}

/// Writes the files of an empty store into `staging`, durably; `store.zr` last.
fn write_new_store(
    staging: &Path,
    identity: &TypeIdentity,
    codec: &Codec,
    geometry: Geometry,
) -> Result<()> {
    fs::create_dir(staging).map_err(Error::io("create", staging))?;
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let path = staging.join(name);
        let f = File::create_new(&path).map_err(Error::io("create", &path))?;
        f.write_all_at(bytes, 0)
            .map_err(Error::io("write", &path))?;
        f.sync_all().map_err(Error::io("sync", &path))
    };
    if let Codec::ZstdDict(dict) = codec {
        write(DICT_FILE, dict.as_bytes())?;
    }
    write(&loc_file(0), &[])?;
    write(&chunk_file(0), &[])?;
    write(META_FILE, &MetaHeader::new(codec, geometry).encode())?;
    write(
        STORE_FILE,
        &StoreHeader {
            identity: identity.clone(),
        }
        .encode(),
    )?;
    sync_dir(staging)
}

/// Checks the record table and chunks against the header, then removes what
/// an interrupted append left past the committed frontier, and opens the files.
fn check_and_recover(dir: &Path, m: &MetaHeader) -> Result<FileTable> {
    let g = m.geometry;
    let segments = g.segments_for(m.length);
    let file_len = |path: &Path| -> Result<u64> {
        fs::metadata(path)
            .map(|md| md.len())
            .map_err(|_| Error::corrupt(path, "missing (the header needs it)"))
    };
    // Validate everything before touching anything.
    for s in 0..segments {
        let path = dir.join(loc_file(s));
        let need =
            (m.length - s * g.segment_entries()).min(g.segment_entries()) * LOC_ENTRY_LEN as u64;
        let have = file_len(&path)?;
        if have < need {
            return Err(Error::corrupt(
                &path,
                format!(
                    "{} record-table entries, the header needs {}",
                    have / LOC_ENTRY_LEN as u64,
                    need / LOC_ENTRY_LEN as u64
                ),
            ));
        }
    }
    let mut chunk_lens = Vec::with_capacity(m.tail_chunk as usize + 1);
    for c in 0..=u64::from(m.tail_chunk) {
        let path = dir.join(chunk_file(c));
        let have = file_len(&path)?;
        if have > g.chunk_capacity() {
            return Err(Error::corrupt(
                &path,
                format!("{have} bytes, more than a chunk holds"),
            ));
        }
        if c == u64::from(m.tail_chunk) && have < u64::from(m.tail_offset) {
            return Err(Error::corrupt(
                &path,
                format!("{have} bytes, the header has committed {}", m.tail_offset),
            ));
        }
        chunk_lens.push(have);
    }

    // Recovery: drop uncommitted bytes and files an interrupted append left.
    let tail_path = dir.join(chunk_file(m.tail_chunk.into()));
    if chunk_lens.last().copied() != Some(u64::from(m.tail_offset)) {
        truncate(&tail_path, m.tail_offset.into())?;
    }
    let last_segment = dir.join(loc_file(segments - 1));
    let last_need = (m.length - (segments - 1) * g.segment_entries()) * LOC_ENTRY_LEN as u64;
    if file_len(&last_segment)? > last_need {
        truncate(&last_segment, last_need)?;
    }
    for entry in fs::read_dir(dir).map_err(Error::io("list", dir))? {
        let name = entry.map_err(Error::io("list", dir))?.file_name();
        let name = name.to_string_lossy();
        let stale = match name.split_once('.') {
            Some((n, "chunk")) => n.parse::<u64>().is_ok_and(|n| n > m.tail_chunk.into()),
            Some((n, "loc")) => n.parse::<u64>().is_ok_and(|n| n >= segments),
            _ => false,
        };
        if stale {
            let path = dir.join(&*name);
            fs::remove_file(&path).map_err(Error::io("remove", &path))?;
        }
    }

    let mut files = FileTable::new(dir, g);
    for _ in 0..segments {
        files.push_segment(false)?;
    }
    for (c, len) in chunk_lens.iter().enumerate() {
        let committed = if c == m.tail_chunk as usize {
            m.tail_offset.into()
        } else {
            *len
        };
        files.push_chunk(false, committed)?;
    }
    Ok(files)
}

fn truncate(path: &Path, len: u64) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len))
        .map_err(Error::io("truncate", path))
}

/// Reads a whole file that should be small, refusing one larger than `limit`.
fn read_small(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let f = File::open(path).map_err(Error::io("open", path))?;
    let mut bytes = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io("read", path))?;
    if bytes.len() as u64 > limit {
        return Err(Error::corrupt(path, format!("larger than {limit} bytes")));
    }
    Ok(bytes)
}

/// Makes a folder's entries (new, renamed or removed files) durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("sync", dir))
}
