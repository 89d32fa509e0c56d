//! Opening a store: every header, file and journal is checked before
//! anything is touched; then a writable open recovers what a killed writer
//! left, and a read-only open reads the last committed state as it is.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};

use super::journal::{self, Found};
use super::runs::RunShape;
use super::unsynced::{self, Unsynced};
use super::{Engine, FileTable, Headers, Writer};
use crate::codec::CodecRuntime;
use crate::format::journal::{PendingDelete, PendingMove};
use crate::format::{
    CodecTag, DICT_FILE, LOC_ENTRY_LEN, MAX_DICT_BYTES, MAX_STORE_FILE_BYTES, META_FILE, META_LEN,
    MetaFlags, MetaHeader, STORE_FILE, StoreHeader, checksum, chunk_file, loc_file, numbered_file,
};
use crate::storage::{self, Access, Disk, Io, Storage, StorageFile};
use crate::{Codec, Dictionary, Error, OpenOptions, Result, StoreKind};

/// What [`repair`](crate::repair) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// Damaged journals it removed (journals that check out are finished,
    /// as every writable open does).
    pub discarded: Vec<DiscardedJournal>,
    /// Records appended after the last sync that did not check out (a power
    /// cut kept the header that commits them but not all of their bytes):
    /// the store was rolled back to its last sync, as every open does.
    pub rolled_back: u64,
}

/// A damaged journal that [`repair`](crate::repair) removed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiscardedJournal {
    /// The journal file.
    pub path: PathBuf,
    /// Why it could not be used.
    pub reason: String,
    /// What may be lost with it.
    pub risk: String,
}

/// A store's data files, opened and sized, nothing written yet.
pub(super) struct DataFiles {
    /// Each segment's file and size.
    segments: Vec<(Arc<dyn StorageFile>, u64)>,
    /// Each chunk's file and size.
    chunks: Vec<(Arc<dyn StorageFile>, u64)>,
}

/// The journals' pending work, checked against the store.
#[derive(Default)]
struct Pending {
    /// The journal files found (removed by a writable open).
    found: Vec<PathBuf>,
    moved: Option<(Found, PendingMove)>,
    delete: Option<(Found, PendingDelete)>,
    discarded: Vec<DiscardedJournal>,
}

impl Pending {
    /// Handles a journal that cannot be used: when `repair`, notes it for
    /// removal with the `risk` of removing it; otherwise, the error.
    fn discard(&mut self, e: Error, risk: &str, repair: bool) -> Result<()> {
        let (path, reason) = match e {
            Error::Corrupt { path, reason } if repair => (path, reason),
            Error::NotRegularFile { path, found } if repair => (path, format!("it is {found}")),
            e => return Err(e),
        };
        self.found.push(path.clone());
        self.discarded.push(DiscardedJournal {
            path,
            reason,
            risk: risk.into(),
        });
        Ok(())
    }
}

impl Engine {
    /// Opens the store at `dir` as `options` say, checking every header, and
    /// takes its lock.
    pub(crate) fn open(dir: &Path, options: OpenOptions) -> Result<Engine> {
        check_folder(dir)?;
        Self::open_in(Arc::new(Disk::new(dir, &options)), options)
    }

    /// Opens the store in `storage` as `options` say (their `io` aside).
    pub(crate) fn open_in(storage: Arc<dyn Storage>, options: OpenOptions) -> Result<Engine> {
        Self::open_inner(storage, options, false).map(|(engine, _)| engine)
    }

    /// A writable open that removes damaged journals instead of failing on
    /// them, reporting what it removed.
    pub(crate) fn repair(dir: &Path) -> Result<RepairReport> {
        check_folder(dir)?;
        let storage = Arc::new(Disk::new(dir, &OpenOptions::new()));
        Self::open_inner(storage, OpenOptions::new(), true).map(|(_, report)| report)
    }

    fn open_inner(
        storage: Arc<dyn Storage>,
        options: OpenOptions,
        repair: bool,
    ) -> Result<(Engine, RepairReport)> {
        let dir = storage.location().to_path_buf();
        let dir = &dir;
        let store_path = dir.join(STORE_FILE);
        let meta_path = dir.join(META_FILE);
        if !storage.exists(STORE_FILE)? || !storage.exists(META_FILE)? {
            return Err(Error::NotAStore {
                path: dir.into(),
                reason: "it has no store.zr and meta.zr".into(),
            });
        }
        let write = !options.read_only;
        let access = if write {
            Access::ReadWrite
        } else {
            Access::Read
        };
        let meta = storage
            .open(META_FILE, access)?
            .ok_or_else(|| Error::corrupt(&meta_path, "missing"))?;
        if !meta.try_lock(write)? {
            return Err(Error::StoreBusy { path: dir.into() });
        }

        let store_bytes = storage::read_small(&*storage, STORE_FILE, MAX_STORE_FILE_BYTES)?
            .ok_or_else(|| Error::corrupt(&store_path, "missing"))?;
        let header = StoreHeader::decode(&store_path, &store_bytes)?;
        let meta_len = meta.len()?.min(2 * META_LEN as u64 + 1);
        let mut meta_bytes = vec![0; meta_len as usize];
        meta.read_at(&mut meta_bytes, 0)?;
        let (current, synced) =
            MetaHeader::decode_file(&meta_path, &meta_bytes, header.features.synced_header)?;
        if current.version != header.version {
            return Err(Error::corrupt(
                &meta_path,
                format!(
                    "format version {}, but store.zr has version {}",
                    current.version, header.version
                ),
            ));
        }
        let codec = CodecRuntime::new(read_codec(&*storage, current.codec)?, options.zstd_level)?;
        let group = match header.identity.kind() {
            StoreKind::Dense => 1,
            StoreKind::Ragged => 2,
        };
        let parts = Parts {
            dir: dir.clone(),
            storage: Arc::clone(&storage),
            meta,
            header,
            group,
        };
        // Appends since the last sync that a power cut may have written back
        // out of order are kept only when they check out.
        let (m, unsynced) = match synced {
            Some(s) if unsynced::suspect(&current, &s) => {
                if Engine::unsynced_commits_hold(&parts, &codec, current, s, options)? {
                    (current, Unsynced::Kept)
                } else {
                    let s = MetaHeader {
                        flags: current.flags,
                        ..s
                    };
                    (s, Unsynced::RolledBack)
                }
            }
            _ => (current, Unsynced::None),
        };
        let rolled_back = match unsynced {
            Unsynced::RolledBack => (current.length - m.length) / group,
            _ => 0,
        };
        let m = match synced {
            Some(s) if unsynced::delete_redone(&*storage, &current, &s, group) => MetaHeader {
                length: s.length,
                ..m
            },
            _ => m,
        };
        if m.length % group != 0 {
            return Err(Error::corrupt(
                &meta_path,
                format!("a ragged store with an odd physical length {}", m.length),
            ));
        }

        let data = open_data_files(&*storage, &m, access)?;
        let pending = read_journals(&*storage, &m, group, parts.header.version, &data, repair)?;
        if !write {
            if let Some((found, m)) = &pending.moved {
                return Err(Error::NeedsRecovery {
                    path: found.path.clone(),
                    reason: format!(
                        "a compaction was stopped while it moved record {}",
                        m.phys / group
                    ),
                });
            }
            if let Some((found, d)) = &pending.delete {
                return Err(Error::NeedsRecovery {
                    path: found.path.clone(),
                    reason: format!(
                        "a delete of {} records was stopped part way",
                        d.targets.len()
                    ),
                });
            }
        } else {
            remove_uncommitted(&*storage, &m, &data)?;
        }

        let engine = assemble(parts, codec, m, synced, data, options)?;
        if write {
            engine.finish_journals(pending.moved, pending.delete, &pending.found)?;
            engine.settle(unsynced)?;
        }
        Ok((
            engine,
            RepairReport {
                discarded: pending.discarded,
                rolled_back,
            },
        ))
    }

    /// Redoes a journaled move and a journaled delete, removes the journal
    /// files and clears `meta.zr`'s journal flag.
    fn finish_journals(
        &self,
        moved: Option<(Found, PendingMove)>,
        delete: Option<(Found, PendingDelete)>,
        found: &[PathBuf],
    ) -> Result<()> {
        let redone = moved.is_some() || delete.is_some();
        if let Some((journal, m)) = moved {
            let files = self.files();
            let chunk = &files.chunks[m.loc.chunk as usize];
            journal.copy_record(&m, &*chunk.file.file)?;
            self.write_loc(m.phys, m.loc)?;
            let segment = m.phys / self.geometry.segment_entries();
            self.writer().touch(Some(m.loc.chunk), Some(segment));
        }
        if let Some((_, d)) = delete {
            self.apply_delete(&d.targets)?;
        }
        if redone {
            // What was redone is durable before its journal's removal can
            // be, as in the operation itself.
            self.sync()?;
        }
        for path in found {
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                self.storage.remove(name)?;
            }
        }
        if self.journal_flag.load(std::sync::atomic::Ordering::Acquire) {
            self.set_journal_flag(false)?;
        }
        Ok(())
    }
}

/// What an open has read and checked before it settles on a header.
#[derive(Clone)]
pub(super) struct Parts {
    pub(super) dir: PathBuf,
    pub(super) storage: Arc<dyn Storage>,
    /// `meta.zr`, locked.
    pub(super) meta: Arc<dyn StorageFile>,
    pub(super) header: StoreHeader,
    /// Physical records per logical record.
    pub(super) group: u64,
}

/// Builds the handle on the store `m` commits, from its opened data files.
/// `synced` is `meta.zr`'s copy of the synced header, where it keeps one.
pub(super) fn assemble(
    parts: Parts,
    codec: CodecRuntime,
    m: MetaHeader,
    synced: Option<MetaHeader>,
    data: DataFiles,
    options: OpenOptions,
) -> Result<Engine> {
    let Parts {
        dir,
        storage,
        meta,
        header,
        group,
    } = parts;
    let data_bytes = data.chunks.iter().map(|(_, len)| len).sum();
    let mapped = storage.io(data_bytes) == Io::Mapped;
    let run_shape = run_shape(&header, &codec);
    let mut files = FileTable::new(Arc::clone(&storage), m.geometry, mapped, run_shape);
    for (file, _) in data.segments {
        files.push_segment(file)?;
    }
    let chunks = data.chunks.len();
    for (c, (file, len)) in data.chunks.into_iter().enumerate() {
        let committed = if c + 1 == chunks {
            m.tail_offset.into()
        } else {
            len
        };
        files.push_chunk(file, committed)?;
    }
    Ok(Engine {
        dir,
        storage,
        meta,
        identity: header.identity,
        codec,
        geometry: m.geometry,
        version: header.version,
        features: header.features,
        options,
        group,
        len: AtomicU64::new(m.length),
        journal_flag: AtomicBool::new(m.flags.contains(MetaFlags::JOURNAL)),
        headers: synced.map(|synced| Mutex::new(Headers { current: m, synced })),
        files: RwLock::new(Arc::new(files)),
        writer: Mutex::new(Writer {
            tail_chunk: m.tail_chunk,
            tail_offset: m.tail_offset.into(),
            dirty_chunks_from: None,
            dirty_segments_from: None,
            dirty_meta: false,
            payload_buf: Vec::new(),
            table_buf: Vec::new(),
        }),
        failed: AtomicBool::new(false),
    })
}

/// Fails unless `dir` is a folder.
fn check_folder(dir: &Path) -> Result<()> {
    let not_a_store = |reason: &str| Error::NotAStore {
        path: dir.into(),
        reason: reason.into(),
    };
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(not_a_store("it is not a folder")),
        Err(_) => Err(not_a_store("no such folder")),
    }
}

/// The codec `meta.zr` names, with `dict.zr` read (and bounded) for `zstd_dict`.
fn read_codec(storage: &dyn Storage, tag: CodecTag) -> Result<Codec> {
    let dir = storage.location();
    let dict_path = dir.join(DICT_FILE);
    match (tag, storage.exists(DICT_FILE)?) {
        (CodecTag::ZstdDict, false) => Err(Error::MissingDictionary { path: dir.into() }),
        (CodecTag::ZstdDict, true) => Ok(Codec::ZstdDict(
            Dictionary::from_bytes(
                storage::read_small(storage, DICT_FILE, MAX_DICT_BYTES)?
                    .ok_or_else(|| Error::MissingDictionary { path: dir.into() })?,
            )
            .map_err(|e| Error::corrupt(&dict_path, e.to_string()))?,
        )),
        (_, true) => Err(Error::corrupt(
            &dict_path,
            "a dictionary in a store whose codec needs none",
        )),
        (CodecTag::Raw, false) => Ok(Codec::Raw),
        (CodecTag::Zstd, false) => Ok(Codec::Zstd),
    }
}

/// Opens the table segments and chunks `meta.zr` needs and checks their
/// sizes. Stops at the first missing file, so a crafted count costs
/// nothing; writes nothing.
pub(super) fn open_data_files(
    storage: &dyn Storage,
    m: &MetaHeader,
    access: Access,
) -> Result<DataFiles> {
    let g = m.geometry;
    let mut data = DataFiles {
        segments: Vec::new(),
        chunks: Vec::new(),
    };
    let open = |name: &str| -> Result<(Arc<dyn StorageFile>, u64)> {
        let file = storage.open(name, access)?.ok_or_else(|| {
            Error::corrupt(
                storage.location().join(name),
                "missing (the header needs it)",
            )
        })?;
        let len = file.len()?;
        Ok((file, len))
    };
    for s in 0..g.segments_for(m.length) {
        let name = loc_file(s);
        let path = storage.location().join(&name);
        let need = (m.length - s * g.segment_entries()).min(g.segment_entries());
        let (file, have) = open(&name)?;
        if have < need * LOC_ENTRY_LEN as u64 {
            return Err(Error::corrupt(
                &path,
                format!(
                    "{} record-table entries, the header needs {need}",
                    have / LOC_ENTRY_LEN as u64
                ),
            ));
        }
        data.segments.push((file, have));
    }
    for c in 0..=u64::from(m.tail_chunk) {
        let name = chunk_file(c);
        let path = storage.location().join(&name);
        let (file, have) = open(&name)?;
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
        data.chunks.push((file, have));
    }
    Ok(data)
}

/// Finds and checks both journals. A damaged one is a corruption error
/// naming it, or, when `repair`, is reported and left for removal.
fn read_journals(
    storage: &dyn Storage,
    m: &MetaHeader,
    group: u64,
    version: u8,
    data: &DataFiles,
    repair: bool,
) -> Result<Pending> {
    let mut pending = Pending::default();
    let move_risk = "if a compaction was stopped while it moved a record, that record may be \
                     damaged: verify finds it";
    match journal::pending_move(storage, version >= 2) {
        Ok(None) => {}
        Ok(Some((found, parsed))) => {
            pending.found.push(found.path.clone());
            if let Some(mv) = parsed {
                let end = u64::from(mv.loc.offset) + u64::from(mv.loc.phys_len);
                let committed = data.chunks.get(mv.loc.chunk as usize).map(|(_, len)| {
                    if mv.loc.chunk == m.tail_chunk {
                        u64::from(m.tail_offset)
                    } else {
                        *len
                    }
                });
                if committed.is_some_and(|c| end <= c) && mv.phys < m.length {
                    pending.moved = Some((found, mv));
                } else {
                    let e = Error::corrupt(
                        &found.path,
                        format!(
                            "it moves record {} to bytes {}..{end} of chunk {}, outside the committed store",
                            mv.phys, mv.loc.offset, mv.loc.chunk
                        ),
                    );
                    pending.found.pop();
                    pending.discard(e, move_risk, repair)?;
                }
            }
        }
        Err(e) => pending.discard(e, move_risk, repair)?,
    }
    let delete_risk = "if a delete was stopped part way, some records may appear twice or \
                       deleted ones remain: verify cannot tell";
    match journal::pending_delete(storage, m.length, group) {
        Ok(None) => {}
        Ok(Some((found, parsed))) => {
            pending.found.push(found.path.clone());
            pending.delete = parsed.map(|d| (found, d));
        }
        Err(e) => pending.discard(e, delete_risk, repair)?,
    }
    Ok(pending)
}

/// Recovery of a writable open: drops the bytes and files an interrupted
/// append left past the committed frontier. Only files with the exact names
/// the format writes are touched (through the handles checked above).
fn remove_uncommitted(storage: &dyn Storage, m: &MetaHeader, data: &DataFiles) -> Result<()> {
    let g = m.geometry;
    if let Some((tail, len)) = data.chunks.last()
        && *len != u64::from(m.tail_offset)
    {
        tail.set_len(m.tail_offset.into())?;
    }
    let segments = data.segments.len() as u64;
    let last_need = (m.length - (segments - 1) * g.segment_entries()) * LOC_ENTRY_LEN as u64;
    if let Some((last, len)) = data.segments.last()
        && *len > last_need
    {
        last.set_len(last_need)?;
    }
    for name in storage.list()? {
        let stale = numbered_file(&name, "chunk").is_some_and(|n| n > m.tail_chunk.into())
            || numbered_file(&name, "loc").is_some_and(|n| n >= segments);
        if stale {
            storage.remove(&name)?;
        }
    }
    Ok(())
}

/// The sizes every record of a dense raw store is stored with: such a
/// store keeps a run index (see `runs.rs`). Others store records of
/// different sizes, and keep none.
fn run_shape(header: &StoreHeader, codec: &CodecRuntime) -> Option<RunShape> {
    if !codec.is_raw() {
        return None;
    }
    let logic_len = u32::try_from(header.identity.record_width()?).ok()?;
    let trailer = if header.features.checksums {
        checksum::TRAILER_LEN as u32
    } else {
        0
    };
    Some(RunShape {
        logic_len,
        phys_len: logic_len.checked_add(trailer)?,
    })
}
