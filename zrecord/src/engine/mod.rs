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
mod open;
mod prefetch;
mod ragged_reads;
mod runs;
mod unsynced;
mod verify;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

pub(crate) use gather::Snapshot;

#[cfg(feature = "internals")]
pub use gather::{PARALLEL_COPY_BYTES, PIECES_PER_THREAD};
pub use maintenance::CompactProgress;
pub use open::{DiscardedJournal, RepairReport};
pub use verify::VerifyReport;

use crate::codec::CodecRuntime;
use crate::format::{
    CodecTag, DICT_FILE, Geometry, META_FILE, MetaFlags, MetaHeader, STORE_FILE, StoreFeatures,
    StoreHeader, TypeIdentity, checksum, chunk_file, loc_file, meta,
};
use crate::storage::{Access, Disk, Io, Storage, StorageFile};
use crate::{Codec, Error, Location, OpenOptions, Result};
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
    /// The payload writer's buffer, kept between appends: a fresh one per
    /// batch cost a page fault per 4 KiB written.
    payload_buf: Vec<u8>,
    /// The encoded record-table entries of the last append, kept likewise.
    table_buf: Vec<u8>,
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

/// The two headers of `meta.zr` as last written.
#[derive(Clone, Copy, Debug)]
struct Headers {
    current: MetaHeader,
    synced: MetaHeader,
}

pub(crate) struct Engine {
    /// Where the store is, as errors name it.
    dir: PathBuf,
    /// The store's folder: every file is reached through it.
    storage: Arc<dyn Storage>,
    /// `meta.zr`, opened once and locked for the handle's lifetime
    /// (exclusively, or shared by read-only handles).
    meta: Arc<dyn StorageFile>,
    identity: TypeIdentity,
    codec: CodecRuntime,
    geometry: Geometry,
    /// The format version of the store's headers (1 or 2).
    version: u8,
    features: StoreFeatures,
    options: OpenOptions,
    /// Physical records per logical record: 1 (dense) or 2 (ragged payload + shape).
    group: u64,
    /// Committed physical records; published after the header is written.
    len: AtomicU64,
    /// `meta.zr`'s journal flag: set while a delete or compaction may leave
    /// a journal behind.
    journal_flag: AtomicBool,
    /// The headers `meta.zr` holds, in stores with the `synced_header`
    /// feature (the current one and the copy of the last synced one).
    headers: Option<Mutex<Headers>>,
    /// The open files. Readers clone the `Arc` and let go of the lock at
    /// once; a writer that adds files publishes a new table.
    files: RwLock<Arc<FileTable>>,
    writer: Mutex<Writer>,
    /// Set when a write failed part way and left this handle's view of the
    /// store unsure: every later call fails until the store is reopened.
    failed: AtomicBool,
}

impl Engine {
    /// Creates a store at `dir` and opens it.
    ///
    /// The store is built in a temporary folder beside `dir` and renamed into
    /// place when complete, so a failed or interrupted create leaves nothing
    /// at `dir`.
    fn create(
        dir: &Path,
        identity: TypeIdentity,
        codec: Codec,
        options: OpenOptions,
    ) -> Result<Engine> {
        let geometry = options.geometry;
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
        let built = fs::create_dir(&staging)
            .map_err(Error::io("create", &staging))
            .and_then(|()| {
                write_new_store(
                    &Disk::new(&staging, &OpenOptions::new().io(Io::Mapped)),
                    &identity,
                    &codec,
                    geometry,
                )
            })
            .and_then(|()| {
                if dir.exists() {
                    fs::remove_dir(dir).map_err(Error::io("replace the empty folder", dir))?;
                }
                fs::rename(&staging, dir).map_err(Error::io("rename into place", dir))?;
                crate::storage::sync_dir(&parent)
            });
        if let Err(e) = built {
            let _ = fs::remove_dir_all(&staging);
            return Err(e);
        }
        Engine::open(dir, options)
    }

    /// Creates a store at `place` and opens it.
    pub(crate) fn create_at(
        location: Location,
        identity: TypeIdentity,
        codec: Codec,
        options: OpenOptions,
    ) -> Result<Engine> {
        match location {
            Location::Path(dir) => Engine::create(&dir, identity, codec, options),
            Location::Storage(storage) => Engine::create_in(storage, identity, codec, options),
        }
    }

    /// Creates a store in `storage`, which must be empty, and opens it.
    /// The header files are written last, so an interrupted create leaves
    /// no store (but files the next create refuses to overwrite).
    fn create_in(
        storage: Arc<dyn Storage>,
        identity: TypeIdentity,
        codec: Codec,
        options: OpenOptions,
    ) -> Result<Engine> {
        let geometry = options.geometry;
        identity.check().map_err(Error::InvalidArgument)?;
        geometry.check().map_err(Error::InvalidArgument)?;
        if !storage.list()?.is_empty() {
            return Err(Error::AlreadyExists {
                path: storage.location().into(),
            });
        }
        if let Err(e) = write_new_store(&*storage, &identity, &codec, geometry) {
            // Leave the storage empty, as it was: a retry must not find a half-made store.
            for name in storage.list().unwrap_or_default() {
                let _ = storage.remove(&name);
            }
            let _ = storage.sync();
            return Err(e);
        }
        Engine::open_in(storage, options)
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

    /// The format version of the store (1 or 2).
    pub(crate) fn version(&self) -> u8 {
        self.version
    }

    /// How the data files are read: mapped, or with explicit reads.
    pub(crate) fn io(&self) -> Io {
        if self.files().mapped() {
            Io::Mapped
        } else {
            Io::Direct
        }
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.options.read_only
    }

    /// Fails on a read-only handle, or one a failed write left unsure:
    /// every write path calls it first.
    fn check_writable(&self) -> Result<()> {
        self.check_not_failed()?;
        if self.options.read_only {
            return Err(Error::ReadOnly {
                path: self.dir.clone(),
            });
        }
        Ok(())
    }

    /// Fails once a write on this handle failed part way.
    #[inline]
    pub(crate) fn check_not_failed(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::NeedsRecovery {
                path: self.dir.clone(),
                reason: "a write on this handle failed part way: reopen the store".into(),
            });
        }
        Ok(())
    }

    /// Runs a write that may leave this handle's view of the store unsure
    /// if it fails part way; on failure, the handle refuses every later call.
    fn guarded<T>(&self, write: impl FnOnce() -> Result<T>) -> Result<T> {
        let done = write();
        if done.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        done
    }

    /// Whether ragged records may have zero elements (format version 2).
    pub(crate) fn allows_empty_records(&self) -> bool {
        self.features.empty_records
    }

    /// Bytes a raw-stored record keeps after its own: its checksum (format
    /// version 2), or nothing.
    fn trailer_len(&self) -> usize {
        if self.features.checksums {
            checksum::TRAILER_LEN
        } else {
            0
        }
    }

    /// Committed logical records.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire) / self.group
    }

    /// Whether physical record `phys` is a ragged shape record (stored raw).
    fn is_shape_record(&self, phys: u64) -> bool {
        self.group == 2 && phys % 2 == 1
    }

    /// The current table of open files; the lock is held only to clone it.
    fn files(&self) -> Arc<FileTable> {
        Arc::clone(&self.files.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Publishes a new table of open files.
    fn publish_files(&self, table: FileTable) {
        *self.files.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(table);
    }

    /// The table of open files, to change under `&mut self` (no reader exists).
    fn files_exclusive(&mut self) -> &mut FileTable {
        Arc::make_mut(self.files.get_mut().unwrap_or_else(PoisonError::into_inner))
    }

    fn writer(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The header committing `length` records up to the given frontier.
    fn header(&self, tail_chunk: u32, tail_offset: u64, length: u64) -> Result<MetaHeader> {
        Ok(MetaHeader {
            version: self.version,
            codec: CodecTag::from(self.codec()),
            geometry: self.geometry,
            tail_chunk,
            tail_offset: u32::try_from(tail_offset)
                .map_err(|_| Error::corrupt(&self.dir, "tail offset overflow"))?,
            length,
            flags: MetaFlags::default().with(
                MetaFlags::JOURNAL,
                self.journal_flag.load(Ordering::Acquire),
            ),
        })
    }

    /// Writes the header: the commit point of every change. Not durable
    /// until a sync; the synced copy after it stays as it was.
    fn write_meta(&self, tail_chunk: u32, tail_offset: u64, length: u64) -> Result<()> {
        let header = self.header(tail_chunk, tail_offset, length)?;
        self.write_header(&header, false)
    }

    /// Writes the header and makes it durable, with the copy of the synced
    /// header naming it too: every byte it commits must be durable already.
    fn write_meta_durably(&self, tail_chunk: u32, tail_offset: u64, length: u64) -> Result<()> {
        let header = self.header(tail_chunk, tail_offset, length)?;
        self.write_header(&header, true)
    }

    /// Writes `meta.zr` with `header` as the current header; when `durable`,
    /// also as the synced copy, and syncs the file.
    fn write_header(&self, header: &MetaHeader, durable: bool) -> Result<()> {
        let Some(headers) = &self.headers else {
            self.meta.write_at(&header.encode(), 0)?;
            return if durable { self.meta.sync() } else { Ok(()) };
        };
        let mut headers = headers.lock().unwrap_or_else(PoisonError::into_inner);
        let synced = if durable { *header } else { headers.synced };
        self.meta
            .write_at(&meta::encode_file(header, Some(&synced)), 0)?;
        headers.current = *header;
        if durable {
            self.meta.sync()?;
            headers.synced = synced;
        }
        Ok(())
    }

    /// Makes the header last written durable, as the synced copy too.
    fn sync_meta(&self) -> Result<()> {
        let current = match &self.headers {
            None => return self.meta.sync(),
            Some(headers) => {
                headers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .current
            }
        };
        self.write_header(&current, true)
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

    /// Sets or clears `meta.zr`'s journal flag, rewriting the header with
    /// the committed state unchanged.
    fn set_journal_flag(&self, on: bool) -> Result<()> {
        self.journal_flag.store(on, Ordering::Release);
        let (tail_chunk, tail_offset) = {
            let w = self.writer();
            (w.tail_chunk, w.tail_offset)
        };
        self.write_meta(tail_chunk, tail_offset, self.len.load(Ordering::Acquire))?;
        self.writer().dirty_meta = true;
        Ok(())
    }

    /// Makes the committed state durable: data, then record table, then header.
    pub(crate) fn sync(&self) -> Result<()> {
        if self.options.read_only {
            return Ok(());
        }
        let mut w = self.writer();
        self.sync_data((w.dirty_chunks_from, w.dirty_segments_from))?;
        if w.dirty_meta {
            // New files' names first: the header may count them.
            self.storage.sync()?;
            self.sync_meta()?;
        }
        w.dirty_chunks_from = None;
        w.dirty_segments_from = None;
        w.dirty_meta = false;
        Ok(())
    }

    /// Flushes the data and record-table files written since the last
    /// [`sync`](Self::sync) without holding the writer, so appends go on
    /// meanwhile. The header is left alone: `sync` still commits.
    pub(crate) fn flush_written(&self) -> Result<()> {
        if self.options.read_only {
            return Ok(());
        }
        let dirty = {
            let w = self.writer();
            (w.dirty_chunks_from, w.dirty_segments_from)
        };
        self.sync_data(dirty)
    }

    /// Flushes the chunks and record-table segments from the given ones on.
    fn sync_data(&self, (chunks_from, segments_from): (Option<u32>, Option<u64>)) -> Result<()> {
        let files = self.files();
        if let Some(from) = chunks_from {
            for chunk in files.chunks.iter().skip(from as usize) {
                chunk.file.file.sync()?;
            }
        }
        if let Some(from) = segments_from {
            for segment in files.segments.iter().skip(from as usize) {
                segment.file.sync()?;
            }
        }
        Ok(())
    }
}

impl Drop for Engine {
    /// Closing a writable handle syncs what it committed and did not sync
    /// yet, so the next open need not check those appends (a failure here
    /// loses nothing: the next open checks them instead). A handle a failed
    /// write left unsure writes nothing more.
    fn drop(&mut self) {
        if self.options.read_only || self.failed.load(Ordering::Acquire) {
            return;
        }
        let dirty = {
            let w = self
                .writer
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            w.dirty_meta || w.dirty_chunks_from.is_some() || w.dirty_segments_from.is_some()
        };
        if dirty {
            let _ = self.sync();
        }
    }
}

/// Writes the files of an empty store into `storage`, durably; `store.zr` last.
fn write_new_store(
    storage: &dyn Storage,
    identity: &TypeIdentity,
    codec: &Codec,
    geometry: Geometry,
) -> Result<()> {
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let f = storage
            .open(name, Access::Replace)?
            .ok_or_else(|| Error::corrupt(storage.location().join(name), "not created"))?;
        f.write_at(bytes, 0)?;
        f.sync()
    };
    if let Codec::ZstdDict(dict) = codec {
        write(DICT_FILE, dict.as_bytes())?;
    }
    write(&loc_file(0), &[])?;
    write(&chunk_file(0), &[])?;
    let store = StoreHeader::new(identity.clone());
    let header = MetaHeader::new(codec, geometry);
    let synced = store.features.synced_header.then_some(&header);
    write(META_FILE, &meta::encode_file(&header, synced))?;
    storage.sync()?;
    write(STORE_FILE, &store.encode())?;
    storage.sync()
}
