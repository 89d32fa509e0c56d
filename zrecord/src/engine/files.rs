//! The store's data files: the one place that knows where a record's bytes
//! come from, through the storage seam.
//!
//! On a mapped storage every `.chunk` and `.loc` file is mapped read-only
//! over its whole address space (4 GiB by default) once, when it is opened
//! or created, so reads are plain memory loads: no call per record, no
//! remapping as files grow. Otherwise reads are positional reads through
//! [`StorageFile`], a batch's together. Writes go through the storage; maps
//! see them through the page cache. A read only ever touches bytes below
//! the committed frontier, which exist in the file, so no access can fall
//! past its end.
//!
//! A table of open files is immutable once published: adding a file makes
//! a new table (sharing the open files), so readers never wait for a
//! writer that adds files, and a writer never waits for a long reader.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::runs::{self, Page, RunIndex, RunShape};
use crate::format::{Geometry, LOC_ENTRY_LEN, RecordLoc, chunk_file, loc_file};
use crate::storage::{Access, Map, Storage, StorageFile, counted};
use crate::{Error, Result};

/// A store file and, on a mapped storage, its read-only map.
pub(crate) struct StoreFile {
    pub(crate) file: Arc<dyn StorageFile>,
    map: Option<Map>,
}

impl StoreFile {
    /// Wraps `file`, mapping `capacity` bytes of address space over it when `mapped`.
    pub(crate) fn new(
        file: Arc<dyn StorageFile>,
        capacity: u64,
        mapped: bool,
    ) -> Result<StoreFile> {
        let map = if mapped { file.map(capacity)? } else { None };
        Ok(StoreFile { file, map })
    }

    /// Fills each buffer from its offset (see [`StorageFile::read_batch`]),
    /// counted in the thread's [`IoStats`](crate::storage::IoStats).
    pub(crate) fn read_batch(&self, reads: &mut [(u64, &mut [u8])]) -> Result<()> {
        let bytes = reads.iter().map(|(_, buf)| buf.len()).sum();
        counted(reads.len(), bytes, || self.file.read_batch(reads))
    }

    /// Fills `buf` from `offset`, counted as [`read_batch`](Self::read_batch) is.
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        counted(1, buf.len(), || self.file.read_at(buf, offset))
    }
}

/// A data chunk: its file and how many of its bytes are committed.
pub(crate) struct Chunk {
    pub(crate) file: StoreFile,
    pub(crate) committed: AtomicU64,
}

/// The open `.chunk` and `.loc` files of a store.
#[derive(Clone)]
pub(crate) struct FileTable {
    storage: Arc<dyn Storage>,
    geometry: Geometry,
    /// Whether files are mapped (reads are memory loads).
    mapped: bool,
    pub(crate) chunks: Vec<Arc<Chunk>>,
    pub(crate) segments: Vec<Arc<StoreFile>>,
    /// The sizes of a run of records, for a store whose records are all
    /// stored alike (dense and raw); `None` keeps no run index.
    run_shape: Option<RunShape>,
    /// Each segment's run index (mapped storages with a run shape only).
    runs: Vec<Arc<RunIndex>>,
}

impl FileTable {
    /// An empty table. With `run_shape` (a store whose records are all
    /// stored alike), each mapped segment gets a run index.
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        geometry: Geometry,
        mapped: bool,
        run_shape: Option<RunShape>,
    ) -> FileTable {
        FileTable {
            storage,
            geometry,
            mapped,
            chunks: Vec::new(),
            segments: Vec::new(),
            run_shape,
            runs: Vec::new(),
        }
    }

    /// Whether every file is mapped.
    #[inline]
    pub(crate) fn mapped(&self) -> bool {
        self.mapped
    }

    /// Adds the next chunk, `file` (opened from its canonical name), of
    /// which `committed` bytes hold records.
    pub(crate) fn push_chunk(&mut self, file: Arc<dyn StorageFile>, committed: u64) -> Result<()> {
        let file = StoreFile::new(file, 1 << self.geometry.chunk_bits, self.mapped)?;
        self.mapped &= file.map.is_some();
        if file.map.is_none() {
            // Records are read one by one at random: readahead would read
            // their neighbours for nothing. (Table segments keep it: their
            // entries are small and a table is soon read whole.)
            file.file.advise_random();
        }
        self.chunks.push(Arc::new(Chunk {
            file,
            committed: AtomicU64::new(committed),
        }));
        Ok(())
    }

    /// Adds the next record-table segment, `file`.
    pub(crate) fn push_segment(&mut self, file: Arc<dyn StorageFile>) -> Result<()> {
        let capacity = self.geometry.segment_entries() * LOC_ENTRY_LEN as u64;
        let file = StoreFile::new(file, capacity, self.mapped)?;
        self.mapped &= file.map.is_some();
        self.segments.push(Arc::new(file));
        match self.run_shape {
            Some(shape) if self.mapped => {
                let index = RunIndex::new(self.geometry.segment_entries(), shape);
                self.runs.push(Arc::new(index));
            }
            _ => self.runs.clear(),
        }
        Ok(())
    }

    /// Drops the segments from `count` on (and their run indexes).
    pub(crate) fn truncate_segments(&mut self, count: usize) {
        self.segments.truncate(count);
        self.runs.truncate(count);
    }

    /// The location of physical record `phys` computed from its page of
    /// the run index, classifying the page on first use once all of it
    /// lies below `committed_len` entries; `None` when the record is not in
    /// a run (its entry must be loaded).
    #[inline(always)]
    pub(crate) fn run_loc(&self, phys: u64, committed_len: u64) -> Option<RecordLoc> {
        let (index, at) = self.run_index_at(phys)?;
        match index.page(at) {
            Page::Run { chunk, offset } => Some(index.loc(chunk, offset, at)),
            Page::Scattered => None,
            Page::Unknown => match self.classify(index, phys, committed_len) {
                Page::Run { chunk, offset } => Some(index.loc(chunk, offset, at)),
                _ => None,
            },
        }
    }

    /// The stored bytes of physical record `phys` when its page of the run
    /// index is a run (classified on first use, as [`run_loc`](Self::run_loc)
    /// does): the fast path of a raw gather, one load from the index.
    #[inline(always)]
    pub(crate) fn run_record(&self, phys: u64, committed_len: u64) -> Option<&[u8]> {
        let loc = self.run_loc(phys, committed_len)?;
        let map = self.chunks.get(loc.chunk as usize)?.file.map.as_ref()?;
        map.get(loc.offset as usize..loc.end() as usize)
    }

    /// Whether the run index knows physical record `phys` to be in a run
    /// (it classifies nothing).
    #[inline(always)]
    pub(crate) fn in_run(&self, phys: u64) -> bool {
        self.run_index_at(phys)
            .is_some_and(|(index, at)| matches!(index.page(at), Page::Run { .. }))
    }

    /// The logical size of the records the run index describes, if the
    /// table keeps one.
    pub(crate) fn run_width(&self) -> Option<usize> {
        match (self.runs.is_empty(), self.run_shape) {
            (false, Some(shape)) => Some(shape.logic_len as usize),
            _ => None,
        }
    }

    /// Classifies the page of `index` holding physical record `phys` and
    /// records it, once the page is wholly committed.
    #[cold]
    #[inline(never)]
    fn classify(&self, index: &RunIndex, phys: u64, committed_len: u64) -> Page {
        let at = phys & (self.geometry.segment_entries() - 1);
        let page = index.page_entries(at);
        let first = phys - at + page.start;
        let end = first + (page.end - page.start);
        if end > committed_len {
            return Page::Unknown;
        }
        // An entry outside the maps reads as all zeros, which no run has.
        let entries = (first..end).map(|phys| {
            self.loc_bytes(phys)
                .map_or(RecordLoc::default(), RecordLoc::decode)
        });
        let committed = |chunk: u32| {
            let chunk = self.chunks.get(chunk as usize)?;
            Some(chunk.committed.load(Ordering::Acquire))
        };
        let state = runs::classify(entries, index.shape(), committed);
        index.set(at, state);
        state
    }

    /// Forgets what the run index knows of the page of entry `phys`: its
    /// entry was rewritten.
    pub(crate) fn forget_run(&self, phys: u64) {
        if let Some((index, at)) = self.run_index_at(phys) {
            index.forget(at);
        }
    }

    /// Forgets every page of the run index from entry `phys` on: the table
    /// was cut there, and appends will write those entries anew.
    pub(crate) fn forget_runs_from(&self, phys: u64) {
        let bits = self.geometry.loc_segment_bits;
        for (s, index) in self.runs.iter().enumerate().skip((phys >> bits) as usize) {
            let from = phys.saturating_sub((s as u64) << bits);
            index.forget_from(from.min(self.geometry.segment_entries()));
        }
    }

    #[inline(always)]
    fn run_index_at(&self, phys: u64) -> Option<(&RunIndex, u64)> {
        let bits = self.geometry.loc_segment_bits;
        let index = self.runs.get((phys >> bits) as usize)?;
        Some((index, phys & (self.geometry.segment_entries() - 1)))
    }

    fn create(&self, name: &str) -> Result<Arc<dyn StorageFile>> {
        self.storage
            .open(name, Access::Create)?
            .ok_or_else(|| Error::corrupt(self.storage.location().join(name), "not created"))
    }

    /// Creates the next chunk's file (empty) and adds it.
    pub(crate) fn create_chunk(&mut self) -> Result<()> {
        let file = self.create(&chunk_file(self.chunks.len() as u64))?;
        self.push_chunk(file, 0)
    }

    /// Creates the next segment's file (empty) and adds it.
    pub(crate) fn create_segment(&mut self) -> Result<()> {
        let file = self.create(&loc_file(self.segments.len() as u64))?;
        self.push_segment(file)
    }

    /// The segment holding table entry `phys`, and the entry's offset in it.
    #[inline(always)]
    fn entry_at(&self, phys: u64) -> Option<(&StoreFile, u64)> {
        let segment = self
            .segments
            .get((phys >> self.geometry.loc_segment_bits) as usize)?;
        let at = (phys & (self.geometry.segment_entries() - 1)) * LOC_ENTRY_LEN as u64;
        Some((segment, at))
    }

    /// The mapped bytes of table entry `phys`, which must be below the
    /// committed length; `None` on a storage without maps.
    #[inline(always)]
    pub(crate) fn loc_bytes(&self, phys: u64) -> Option<&[u8; LOC_ENTRY_LEN]> {
        let (segment, at) = self.entry_at(phys)?;
        let at = at as usize;
        segment
            .map
            .as_ref()?
            .get(at..at + LOC_ENTRY_LEN)?
            .try_into()
            .ok()
    }

    /// Table entry `phys`, which must be below the committed length;
    /// `None` when no segment holds it.
    #[inline]
    pub(crate) fn loc(&self, phys: u64) -> Result<Option<RecordLoc>> {
        if self.mapped {
            return Ok(self.loc_bytes(phys).map(RecordLoc::decode));
        }
        let Some((segment, at)) = self.entry_at(phys) else {
            return Ok(None);
        };
        let mut entry = [0; LOC_ENTRY_LEN];
        segment.read_at(&mut entry, at)?;
        Ok(Some(RecordLoc::decode(&entry)))
    }

    /// Table entries `phys` (each below the committed length), read
    /// together; `None` for one no segment holds.
    pub(crate) fn locs(&self, phys: &[u64]) -> Result<Vec<Option<RecordLoc>>> {
        if self.mapped {
            return Ok(phys
                .iter()
                .map(|&p| self.loc_bytes(p).map(RecordLoc::decode))
                .collect());
        }
        let mut entries = vec![[0u8; LOC_ENTRY_LEN]; phys.len()];
        let mut by_segment: Vec<Vec<(u64, &mut [u8])>> =
            (0..self.segments.len()).map(|_| Vec::new()).collect();
        let mut found = vec![false; phys.len()];
        for ((&p, entry), found) in phys.iter().zip(&mut entries).zip(&mut found) {
            let s = (p >> self.geometry.loc_segment_bits) as usize;
            if let (Some(reads), Some((_, at))) = (by_segment.get_mut(s), self.entry_at(p)) {
                reads.push((at, &mut entry[..]));
                *found = true;
            }
        }
        for (segment, reads) in self.segments.iter().zip(&mut by_segment) {
            if !reads.is_empty() {
                segment.read_batch(reads)?;
            }
        }
        Ok(entries
            .iter()
            .zip(found)
            .map(|(e, f)| f.then(|| RecordLoc::decode(e)))
            .collect())
    }

    /// Where the stored bytes of a record lie: its chunk, checked against
    /// the chunk's committed bytes, or why its location is impossible.
    #[inline(always)]
    pub(crate) fn chunk_of(&self, loc: RecordLoc) -> std::result::Result<&Chunk, String> {
        let chunk = self.chunks.get(loc.chunk as usize).ok_or_else(|| {
            format!(
                "its location names chunk {}, the store has {}",
                loc.chunk,
                self.chunks.len()
            )
        })?;
        let committed = chunk.committed.load(Ordering::Acquire);
        if loc.end() > committed {
            return Err(format!(
                "its location {}..{} in chunk {} passes the chunk's {committed} committed bytes",
                loc.offset,
                loc.end(),
                loc.chunk
            ));
        }
        Ok(chunk)
    }

    /// The mapped stored bytes of a record, or why its location is
    /// impossible; `Ok(None)` on a storage without maps.
    #[inline(always)]
    pub(crate) fn stored_mapped(
        &self,
        loc: RecordLoc,
    ) -> std::result::Result<Option<&[u8]>, String> {
        let chunk = self.chunk_of(loc)?;
        match &chunk.file.map {
            Some(map) => match map.get(loc.offset as usize..loc.end() as usize) {
                Some(bytes) => Ok(Some(bytes)),
                None => Err(format!(
                    "its location passes the end of chunk {}'s map",
                    loc.chunk
                )),
            },
            None => Ok(None),
        }
    }

    /// The stored bytes of a record (borrowed from a map, or read), or why
    /// its location is impossible (the inner error).
    pub(crate) fn stored(
        &self,
        loc: RecordLoc,
    ) -> Result<std::result::Result<Cow<'_, [u8]>, String>> {
        match self.stored_mapped(loc) {
            Ok(Some(bytes)) => Ok(Ok(Cow::Borrowed(bytes))),
            Err(reason) => Ok(Err(reason)),
            Ok(None) => {
                let mut bytes = vec![0; loc.phys_len as usize];
                let chunk = &self.chunks[loc.chunk as usize];
                chunk.file.read_at(&mut bytes, loc.offset.into())?;
                Ok(Ok(Cow::Owned(bytes)))
            }
        }
    }

    /// Sum of committed chunk bytes.
    pub(crate) fn chunk_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .map(|c| c.committed.load(Ordering::Acquire))
            .sum()
    }
}
