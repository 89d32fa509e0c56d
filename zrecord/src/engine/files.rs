//! The store's data files and their memory maps: the one place that knows
//! where a record's bytes come from (the seam a remote backend would replace).
//!
//! Every `.chunk` and `.loc` file is mapped read-only over its whole address
//! space (4 GiB by default) once, when it is opened or created, so reads are
//! plain memory loads: no syscall per record, no remapping as files grow.
//! Writes go through `pwrite`; the maps see them through the page cache. A
//! read only ever touches bytes below the committed frontier, which exist in
//! the file, so no access can fall past its end.
//!
//! A table of open files is immutable once published: adding a file makes
//! a new table (sharing the open files), so readers never wait for a
//! writer that adds files, and a writer never waits for a long reader.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{Mmap, MmapOptions};

use super::regular::{self, Access};
use crate::format::{Geometry, LOC_ENTRY_LEN, RecordLoc, chunk_file, loc_file};
use crate::{Error, Result};

/// A store file and its read-only map.
pub(crate) struct MappedFile {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    map: Mmap,
}

impl MappedFile {
    /// Maps `capacity` bytes of address space over `file`, opened from `path`.
    pub(crate) fn map(path: PathBuf, file: File, capacity: u64) -> Result<MappedFile> {
        let len = usize::try_from(capacity).map_err(|_| {
            Error::InvalidArgument(format!("a {capacity}-byte file map needs a 64-bit target"))
        })?;
        // SAFETY: the map is read-only. The handle holds the store's lock:
        // exclusive for a writer, so no other zrecord handle writes or
        // truncates the file; shared for a reader, so no zrecord handle
        // writes at all. Reads are bounds-checked against the committed
        // frontier (see `FileTable::stored`), which never passes the file's
        // end; truncation happens only under `&mut` (compact, recovery) when
        // no read can be running. As with any mmap, a file shrunk behind the
        // lock's back by another program could fault: documented in FORMAT.md.
        let map =
            unsafe { MmapOptions::new().len(len).map(&file) }.map_err(Error::io("map", &path))?;
        Ok(MappedFile { path, file, map })
    }

    /// Current size of the file on disk.
    pub(crate) fn file_len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(Error::io("stat", &self.path))?
            .len())
    }
}

/// A data chunk: its file and how many of its bytes are committed.
pub(crate) struct Chunk {
    pub(crate) file: MappedFile,
    pub(crate) committed: AtomicU64,
}

/// The open `.chunk` and `.loc` files of a store.
#[derive(Clone)]
pub(crate) struct FileTable {
    dir: PathBuf,
    geometry: Geometry,
    pub(crate) chunks: Vec<Arc<Chunk>>,
    pub(crate) segments: Vec<Arc<MappedFile>>,
}

impl FileTable {
    pub(crate) fn new(dir: &Path, geometry: Geometry) -> FileTable {
        FileTable {
            dir: dir.to_path_buf(),
            geometry,
            chunks: Vec::new(),
            segments: Vec::new(),
        }
    }

    /// Adds the next chunk, `file` (opened from its canonical name), of
    /// which `committed` bytes hold records.
    pub(crate) fn push_chunk(&mut self, file: File, committed: u64) -> Result<()> {
        let path = self.dir.join(chunk_file(self.chunks.len() as u64));
        let file = MappedFile::map(path, file, 1 << self.geometry.chunk_bits)?;
        self.chunks.push(Arc::new(Chunk {
            file,
            committed: AtomicU64::new(committed),
        }));
        Ok(())
    }

    /// Adds the next record-table segment, `file`.
    pub(crate) fn push_segment(&mut self, file: File) -> Result<()> {
        let path = self.dir.join(loc_file(self.segments.len() as u64));
        let capacity = self.geometry.segment_entries() * LOC_ENTRY_LEN as u64;
        self.segments
            .push(Arc::new(MappedFile::map(path, file, capacity)?));
        Ok(())
    }

    /// Creates the next chunk's file (empty) and adds it.
    pub(crate) fn create_chunk(&mut self) -> Result<()> {
        let path = self.dir.join(chunk_file(self.chunks.len() as u64));
        self.push_chunk(regular::open(&path, Access::Create)?, 0)
    }

    /// Creates the next segment's file (empty) and adds it.
    pub(crate) fn create_segment(&mut self) -> Result<()> {
        let path = self.dir.join(loc_file(self.segments.len() as u64));
        self.push_segment(regular::open(&path, Access::Create)?)
    }

    /// The bytes of table entry `phys`, which must be below the committed length.
    #[inline]
    pub(crate) fn loc_bytes(&self, phys: u64) -> Option<&[u8; LOC_ENTRY_LEN]> {
        let segment = self
            .segments
            .get((phys >> self.geometry.loc_segment_bits) as usize)?;
        let at = (phys & (self.geometry.segment_entries() - 1)) as usize * LOC_ENTRY_LEN;
        segment.map.get(at..at + LOC_ENTRY_LEN)?.try_into().ok()
    }

    /// Table entry `phys`, which must be below the committed length.
    #[inline]
    pub(crate) fn loc(&self, phys: u64) -> Option<RecordLoc> {
        self.loc_bytes(phys).map(RecordLoc::decode)
    }

    /// The stored bytes of a record, or why its location is impossible.
    #[inline]
    pub(crate) fn stored(&self, loc: RecordLoc) -> std::result::Result<&[u8], String> {
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
        chunk
            .file
            .map
            .get(loc.offset as usize..loc.end() as usize)
            .ok_or_else(|| format!("its location passes the end of chunk {}'s map", loc.chunk))
    }

    /// Sum of committed chunk bytes.
    pub(crate) fn chunk_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .map(|c| c.committed.load(Ordering::Acquire))
            .sum()
    }
}
