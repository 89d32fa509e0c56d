//! The journal files of the two operations that rewrite committed state, so
//! a kill in the middle of one is finished by the next `open` (FORMAT.md,
//! "Journals"; the byte layouts are in `format::journal`).
//!
//! A kill while an entry is written leaves a CRC that does not match, and
//! the operation had not started; an entry that checks out is redone whole,
//! which is idempotent. While either file may exist, `meta.zr` carries the
//! journal flag, so a reader that does not know journals refuses the store.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::regular::{self, Access};
use crate::format::RecordLoc;
use crate::format::journal::{
    JournalError, MOVE_HEADER_LEN, PendingDelete, PendingMove, encode_delete, encode_move_header,
    read_delete, read_move,
};
use crate::{Error, Result};

pub(crate) const JOURNAL_FILE: &str = "compact.journal";
pub(crate) const DELETE_JOURNAL_FILE: &str = "delete.journal";

/// Bytes copied per piece when a journaled record is redone.
const PIECE: u64 = 1 << 20;

/// The journal of a running compaction.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    entry: Vec<u8>,
}

impl Journal {
    /// Creates (or empties) the journal of the store at `dir`.
    pub(crate) fn create(dir: &Path) -> Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let file = regular::open(&path, Access::Replace)?;
        Ok(Journal {
            path,
            file,
            entry: Vec::new(),
        })
    }

    /// Records the move in one write; it counts once this returns. The file
    /// is emptied first, so at every moment it is a prefix of its entry
    /// (torn) or exactly its entry.
    pub(crate) fn record(&mut self, phys: u64, loc: RecordLoc, bytes: &[u8]) -> Result<()> {
        self.entry = encode_move_header(phys, loc, bytes);
        self.entry.extend_from_slice(bytes);
        self.file
            .set_len(0)
            .map_err(Error::io("truncate", &self.path))?;
        self.file
            .write_all_at(&self.entry, 0)
            .map_err(Error::io("write", &self.path))
    }

    /// Marks the recorded move done (its magic cleared), so no later open
    /// redoes it.
    pub(crate) fn clear(&mut self) -> Result<()> {
        self.file
            .write_all_at(&[0; 8], 0)
            .map_err(Error::io("write", &self.path))
    }

    /// Removes the journal file: the compaction is over.
    pub(crate) fn remove(self) -> Result<()> {
        regular::remove_if_present(&self.path)
    }
}

/// An open journal file found in a store.
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    file: File,
    len: u64,
}

impl Found {
    fn open(dir: &Path, name: &str) -> Result<Option<Found>> {
        let path = dir.join(name);
        let Some(file) = regular::open_if_present(&path, Access::Read)? else {
            return Ok(None);
        };
        let len = regular::len(&file, &path)?;
        Ok(Some(Found { path, file, len }))
    }

    fn map_err(&self, e: JournalError) -> Error {
        match e {
            JournalError::Io(e) => Error::io("read", &self.path)(e),
            JournalError::Corrupt(reason) => Error::corrupt(&self.path, reason),
        }
    }

    /// Copies the journaled record's bytes to `dst` at `offset`, a piece at a time.
    pub(crate) fn copy_record(&self, m: &PendingMove, dst: &File, dst_path: &Path) -> Result<()> {
        let mut piece = vec![0u8; PIECE.min(u64::from(m.loc.phys_len)) as usize];
        let mut done = 0u64;
        while done < u64::from(m.loc.phys_len) {
            let n = (u64::from(m.loc.phys_len) - done).min(PIECE) as usize;
            self.file
                .read_exact_at(&mut piece[..n], MOVE_HEADER_LEN as u64 + done)
                .map_err(Error::io("read", &self.path))?;
            dst.write_all_at(&piece[..n], u64::from(m.loc.offset) + done)
                .map_err(Error::io("write", dst_path))?;
            done += n as u64;
        }
        Ok(())
    }
}

/// The move a killed compaction left in `dir`'s journal: the journal, and
/// its move if one checks out. `exact`: the file must end where its entry
/// does (format version 2).
pub(crate) fn pending_move(
    dir: &Path,
    exact: bool,
) -> Result<Option<(Found, Option<PendingMove>)>> {
    let Some(found) = Found::open(dir, JOURNAL_FILE)? else {
        return Ok(None);
    };
    let file = &found.file;
    let parsed = read_move(found.len, &mut |at, buf| file.read_exact_at(buf, at), exact)
        .map_err(|e| found.map_err(e))?;
    Ok(Some((found, parsed)))
}

/// The delete a killed process left in `dir`'s journal, for a store of
/// `phys_len` committed physical records in groups of `group`.
pub(crate) fn pending_delete(
    dir: &Path,
    phys_len: u64,
    group: u64,
) -> Result<Option<(Found, Option<PendingDelete>)>> {
    let Some(found) = Found::open(dir, DELETE_JOURNAL_FILE)? else {
        return Ok(None);
    };
    let file = &found.file;
    let parsed = read_delete(
        found.len,
        &mut |at, buf| file.read_exact_at(buf, at),
        phys_len,
        group,
    )
    .map_err(|e| found.map_err(e))?;
    Ok(Some((found, parsed)))
}

/// Writes `dir`'s delete journal in one write; the delete may start once
/// this returns.
pub(crate) fn record_delete(dir: &Path, phys_len: u64, targets: &[u64]) -> Result<()> {
    let path = dir.join(DELETE_JOURNAL_FILE);
    regular::open(&path, Access::Replace)?
        .write_all_at(&encode_delete(phys_len, targets), 0)
        .map_err(Error::io("write", &path))
}

/// Removes `dir`'s delete journal, if there is one.
pub(crate) fn finish_delete(dir: &Path) -> Result<()> {
    regular::remove_if_present(&dir.join(DELETE_JOURNAL_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path()).unwrap();
        assert!(pending_move(dir.path(), true).unwrap().unwrap().1.is_none());
        journal.record(7, loc(), b"hello").unwrap();
        let (_, found) = pending_move(dir.path(), true).unwrap().unwrap();
        assert_eq!(
            found,
            Some(PendingMove {
                phys: 7,
                loc: loc()
            })
        );
        journal.clear().unwrap();
        assert_eq!(pending_move(dir.path(), true).unwrap().unwrap().1, None);
        let short = RecordLoc {
            phys_len: 2,
            logic_len: 2,
            ..loc()
        };
        journal.record(8, short, b"hi").unwrap();
        let (found, m) = pending_move(dir.path(), true).unwrap().unwrap();
        assert_eq!(found.len, MOVE_HEADER_LEN as u64 + 2);
        assert_eq!(
            m,
            Some(PendingMove {
                phys: 8,
                loc: short
            })
        );
        journal.remove().unwrap();
        assert!(pending_move(dir.path(), true).unwrap().is_none());
    }

    #[test]
    fn a_recorded_delete_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        assert!(pending_delete(dir.path(), 40, 1).unwrap().is_none());
        record_delete(dir.path(), 40, &[9, 4, 0]).unwrap();
        let (_, d) = pending_delete(dir.path(), 40, 1).unwrap().unwrap();
        assert_eq!(
            d,
            Some(PendingDelete {
                phys_len: 40,
                targets: vec![9, 4, 0]
            })
        );
        finish_delete(dir.path()).unwrap();
        assert!(pending_delete(dir.path(), 40, 1).unwrap().is_none());
    }
}
