//! The journal files of the two operations that rewrite committed state, so
//! a kill in the middle of one is finished by the next `open` (FORMAT.md,
//! "Journals"; the byte layouts are in `format::journal`).
//!
//! A kill while an entry is written leaves a CRC that does not match, and
//! the operation had not started; an entry that checks out is redone whole,
//! which is idempotent. While either file may exist, `meta.zr` carries the
//! journal flag, so a reader that does not know journals refuses the store.

use std::path::PathBuf;
use std::sync::Arc;

use crate::format::RecordLoc;
use crate::format::journal::{
    JournalError, MOVE_HEADER_LEN, PendingDelete, PendingMove, encode_delete, encode_move_header,
    read_delete, read_move,
};
use crate::storage::{Access, Storage, StorageFile};
use crate::{Error, Result};

pub(crate) const JOURNAL_FILE: &str = "compact.journal";
pub(crate) const DELETE_JOURNAL_FILE: &str = "delete.journal";

/// Bytes copied per piece when a journaled record is redone.
const PIECE: u64 = 1 << 20;

/// The journal of a running compaction.
pub(crate) struct Journal<'s> {
    storage: &'s dyn Storage,
    file: Arc<dyn StorageFile>,
    entry: Vec<u8>,
}

/// Opens `name` in `storage`, created and emptied.
fn replace(storage: &dyn Storage, name: &str) -> Result<Arc<dyn StorageFile>> {
    storage
        .open(name, Access::Replace)?
        .ok_or_else(|| Error::corrupt(storage.location().join(name), "not created"))
}

impl<'s> Journal<'s> {
    /// Creates (or empties) the journal of the store in `storage`.
    pub(crate) fn create(storage: &'s dyn Storage) -> Result<Journal<'s>> {
        Ok(Journal {
            storage,
            file: replace(storage, JOURNAL_FILE)?,
            entry: Vec::new(),
        })
    }

    /// Records the move in one write, made durable; it counts once this
    /// returns. The file is emptied first, so at every moment it is a prefix
    /// of its entry (torn) or exactly its entry.
    pub(crate) fn record(&mut self, phys: u64, loc: RecordLoc, bytes: &[u8]) -> Result<()> {
        self.entry = encode_move_header(phys, loc, bytes);
        self.entry.extend_from_slice(bytes);
        self.file.set_len(0)?;
        self.file.write_at(&self.entry, 0)?;
        self.file.sync()
    }

    /// Marks the recorded move done (its magic cleared), so no later open
    /// redoes it.
    pub(crate) fn clear(&mut self) -> Result<()> {
        self.file.write_at(&[0; 8], 0)
    }

    /// Removes the journal file: the compaction is over.
    pub(crate) fn remove(self) -> Result<()> {
        self.storage.remove(JOURNAL_FILE)
    }
}

/// An open journal file found in a store.
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    file: Arc<dyn StorageFile>,
    len: u64,
}

impl Found {
    fn open(storage: &dyn Storage, name: &str) -> Result<Option<Found>> {
        let Some(file) = storage.open(name, Access::Read)? else {
            return Ok(None);
        };
        let len = file.len()?;
        let path = file.path().to_path_buf();
        Ok(Some(Found { path, file, len }))
    }

    /// Reads `buf.len()` bytes at `at`, as the journal decoders ask.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.file.read_at(buf, at).map_err(|e| match e {
            Error::Io { source, .. } => source,
            e => std::io::Error::other(e.to_string()),
        })
    }

    fn map_err(&self, e: JournalError) -> Error {
        match e {
            JournalError::Io(e) => Error::io("read", &self.path)(e),
            JournalError::Corrupt(reason) => Error::corrupt(&self.path, reason),
        }
    }

    /// Copies the journaled record's bytes to `dst` at `offset`, a piece at a time.
    pub(crate) fn copy_record(&self, m: &PendingMove, dst: &dyn StorageFile) -> Result<()> {
        let mut piece = vec![0u8; PIECE.min(u64::from(m.loc.phys_len)) as usize];
        let mut done = 0u64;
        while done < u64::from(m.loc.phys_len) {
            let n = (u64::from(m.loc.phys_len) - done).min(PIECE) as usize;
            self.file
                .read_at(&mut piece[..n], MOVE_HEADER_LEN as u64 + done)?;
            dst.write_at(&piece[..n], u64::from(m.loc.offset) + done)?;
            done += n as u64;
        }
        Ok(())
    }
}

/// The move a killed compaction left in `dir`'s journal: the journal, and
/// its move if one checks out. `exact`: the file must end where its entry
/// does (format version 2).
pub(crate) fn pending_move(
    storage: &dyn Storage,
    exact: bool,
) -> Result<Option<(Found, Option<PendingMove>)>> {
    let Some(found) = Found::open(storage, JOURNAL_FILE)? else {
        return Ok(None);
    };
    let parsed = read_move(found.len, &mut |at, buf| found.read_at(at, buf), exact)
        .map_err(|e| found.map_err(e))?;
    Ok(Some((found, parsed)))
}

/// The delete a killed process left in `dir`'s journal, for a store of
/// `phys_len` committed physical records in groups of `group`.
pub(crate) fn pending_delete(
    storage: &dyn Storage,
    phys_len: u64,
    group: u64,
) -> Result<Option<(Found, Option<PendingDelete>)>> {
    let Some(found) = Found::open(storage, DELETE_JOURNAL_FILE)? else {
        return Ok(None);
    };
    let parsed = read_delete(
        found.len,
        &mut |at, buf| found.read_at(at, buf),
        phys_len,
        group,
    )
    .map_err(|e| found.map_err(e))?;
    Ok(Some((found, parsed)))
}

/// Writes `dir`'s delete journal in one write and makes it durable, with
/// its name: the delete may start once this returns. (A table entry the
/// delete moves may reach the disk before the commit does — a later sync of
/// the table flushes it — and then only the journal tells the next open
/// that the delete must be finished.)
pub(crate) fn record_delete(storage: &dyn Storage, phys_len: u64, targets: &[u64]) -> Result<()> {
    let file = replace(storage, DELETE_JOURNAL_FILE)?;
    file.write_at(&encode_delete(phys_len, targets), 0)?;
    file.sync()?;
    storage.sync()
}

/// Removes the delete journal, if there is one.
pub(crate) fn finish_delete(storage: &dyn Storage) -> Result<()> {
    storage.remove(DELETE_JOURNAL_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Memory;

    fn loc() -> RecordLoc {
        RecordLoc {
            offset: 40,
            phys_len: 5,
            logic_len: 5,
            chunk: 2,
        }
    }

    #[test]
    fn a_recorded_move_reads_back_until_cleared_and_shorter_entries_cut_the_file() {
        let dir = Memory::new("store");
        let dir = &dir;
        let mut journal = Journal::create(dir).unwrap();
        assert!(pending_move(dir, true).unwrap().unwrap().1.is_none());
        journal.record(7, loc(), b"hello").unwrap();
        let (_, found) = pending_move(dir, true).unwrap().unwrap();
        assert_eq!(
            found,
            Some(PendingMove {
                phys: 7,
                loc: loc()
            })
        );
        journal.clear().unwrap();
        assert_eq!(pending_move(dir, true).unwrap().unwrap().1, None);
        let short = RecordLoc {
            phys_len: 2,
            logic_len: 2,
            ..loc()
        };
        journal.record(8, short, b"hi").unwrap();
        let (found, m) = pending_move(dir, true).unwrap().unwrap();
        assert_eq!(found.len, MOVE_HEADER_LEN as u64 + 2);
        assert_eq!(
            m,
            Some(PendingMove {
                phys: 8,
                loc: short
            })
        );
        journal.remove().unwrap();
        assert!(pending_move(dir, true).unwrap().is_none());
    }

    #[test]
    fn a_recorded_delete_reads_back() {
        let dir = Memory::new("store");
        let dir = &dir;
        assert!(pending_delete(dir, 40, 1).unwrap().is_none());
        record_delete(dir, 40, &[9, 4, 0]).unwrap();
        let (_, d) = pending_delete(dir, 40, 1).unwrap().unwrap();
        assert_eq!(
            d,
            Some(PendingDelete {
                phys_len: 40,
                targets: vec![9, 4, 0]
            })
        );
        finish_delete(dir).unwrap();
        assert!(pending_delete(dir, 40, 1).unwrap().is_none());
    }
}
