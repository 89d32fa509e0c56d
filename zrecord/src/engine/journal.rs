//! Redo journals for the two operations that rewrite committed state, so a
//! kill in the middle of one is finished by the next `open` (FORMAT.md,
//! "Journals").
//!
//! * `compact.journal`: a record whose new place overlaps its old bytes is
//!   written here before it moves. One entry at offset 0: magic, CRC-32 of
//!   what follows it, the physical index, the new table entry, the record's
//!   stored bytes.
//! * `delete.journal`: the length before a delete and its target indices,
//!   written before the first table entry moves.
//!
//! A kill while an entry is written leaves a CRC that does not match, and
//! the operation had not started; an entry that checks out is redone whole,
//! which is idempotent.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::format::{LOC_ENTRY_LEN, RecordLoc};
use crate::{Error, Result};

pub(crate) const JOURNAL_FILE: &str = "compact.journal";
pub(crate) const DELETE_JOURNAL_FILE: &str = "delete.journal";
const MAGIC: [u8; 8] = *b"ZRJOURN1";
const DELETE_MAGIC: [u8; 8] = *b"ZRDELET1";
/// magic, CRC-32, physical index, table entry.
const HEADER_LEN: usize = 8 + 4 + 8 + LOC_ENTRY_LEN;
/// magic, CRC-32, physical length before the delete, number of targets.
const DELETE_HEADER_LEN: usize = 8 + 4 + 8 + 8;

/// One journaled move: physical record `phys`'s `bytes` belong at `loc`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) phys: u64,
    pub(crate) loc: RecordLoc,
    pub(crate) bytes: Vec<u8>,
}

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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(Error::io("create", &path))?;
        Ok(Journal {
            path,
            file,
            entry: Vec::new(),
        })
    }

    /// Records the move in one write; it counts once this returns.
    pub(crate) fn record(&mut self, phys: u64, loc: RecordLoc, bytes: &[u8]) -> Result<()> {
        let e = &mut self.entry;
        e.clear();
        e.extend_from_slice(&MAGIC);
        e.extend_from_slice(&[0; 4]);
        e.extend_from_slice(&phys.to_le_bytes());
        e.extend_from_slice(&loc.encode());
        e.extend_from_slice(bytes);
        let crc = crc32fast::hash(&e[12..]);
        e[8..12].copy_from_slice(&crc.to_le_bytes());
        self.file
            .write_all_at(e, 0)
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
        remove_if_present(&self.path)
    }
}

/// The move a killed compaction left in `dir`'s journal, if any. A missing,
/// cleared or torn journal holds none.
pub(crate) fn pending(dir: &Path) -> Result<Option<Move>> {
    Ok(read_if_present(&dir.join(JOURNAL_FILE))?.and_then(|b| parse(&b)))
}

/// Removes `dir`'s journal once its move is redone (or there was none).
pub(crate) fn finish(dir: &Path) -> Result<()> {
    remove_if_present(&dir.join(JOURNAL_FILE))
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", path)(e)),
        _ => Ok(()),
    }
}

fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", path)(e)),
    }
}

/// A delete that may not have committed: the physical length before it and
/// its logical targets in descending order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Delete {
    pub(crate) phys_len: u64,
    pub(crate) targets: Vec<u64>,
}

/// Writes `dir`'s delete journal in one write; the delete may start once
/// this returns.
pub(crate) fn record_delete(dir: &Path, phys_len: u64, targets: &[u64]) -> Result<()> {
    let mut e = Vec::with_capacity(DELETE_HEADER_LEN + 8 * targets.len());
    e.extend_from_slice(&DELETE_MAGIC);
    e.extend_from_slice(&[0; 4]);
    e.extend_from_slice(&phys_len.to_le_bytes());
    e.extend_from_slice(&(targets.len() as u64).to_le_bytes());
    for t in targets {
        e.extend_from_slice(&t.to_le_bytes());
    }
    let crc = crc32fast::hash(&e[12..]);
    e[8..12].copy_from_slice(&crc.to_le_bytes());
    let path = dir.join(DELETE_JOURNAL_FILE);
    fs::write(&path, &e).map_err(Error::io("write", &path))
}

/// The delete a killed process left in `dir`'s journal, if any (a missing
/// or torn journal holds none).
pub(crate) fn pending_delete(dir: &Path) -> Result<Option<Delete>> {
    Ok(read_if_present(&dir.join(DELETE_JOURNAL_FILE))?.and_then(|b| parse_delete(&b)))
}

/// Removes `dir`'s delete journal, if there is one.
pub(crate) fn finish_delete(dir: &Path) -> Result<()> {
    remove_if_present(&dir.join(DELETE_JOURNAL_FILE))
}

fn parse_delete(bytes: &[u8]) -> Option<Delete> {
    if bytes.len() < DELETE_HEADER_LEN || bytes[..8] != DELETE_MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
    let phys_len = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let n = usize::try_from(u64::from_le_bytes(bytes[20..28].try_into().ok()?)).ok()?;
    let end = n.checked_mul(8)?.checked_add(DELETE_HEADER_LEN)?;
    let body = bytes.get(12..end)?;
    if crc32fast::hash(body) != crc {
        return None;
    }
    let targets = bytes[DELETE_HEADER_LEN..end]
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .collect();
    Some(Delete { phys_len, targets })
}

/// An entry whose magic and CRC check out and whose length matches its
/// table entry; anything else is no entry (a torn or cleared write).
fn parse(bytes: &[u8]) -> Option<Move> {
    if bytes.len() < HEADER_LEN || bytes[..8] != MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
    let phys = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let loc = RecordLoc::decode(bytes[20..HEADER_LEN].try_into().ok()?);
    let len = usize::try_from(loc.phys_len).ok()?;
    let payload = bytes.get(HEADER_LEN..HEADER_LEN + len)?;
    (crc32fast::hash(&bytes[12..HEADER_LEN + len]) == crc).then(|| Move {
        phys,
        loc,
        bytes: payload.to_vec(),
    })
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
    fn a_recorded_move_reads_back_until_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path()).unwrap();
        assert_eq!(pending(dir.path()).unwrap(), None);
        journal.record(7, loc(), b"hello").unwrap();
        let want = Move {
            phys: 7,
            loc: loc(),
            bytes: b"hello".to_vec(),
        };
        assert_eq!(pending(dir.path()).unwrap(), Some(want));
        // The layout of FORMAT.md's "Compaction journal" table.
        let bytes = fs::read(dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(&bytes[..8], b"ZRJOURN1");
        assert_eq!(bytes[8..12], crc32fast::hash(&bytes[12..]).to_le_bytes());
        assert_eq!(bytes[12..20], 7u64.to_le_bytes());
        assert_eq!(bytes[20..36], loc().encode());
        assert_eq!(&bytes[36..], b"hello");
        journal.clear().unwrap();
        assert_eq!(pending(dir.path()).unwrap(), None);
        journal.remove().unwrap();
        assert!(!dir.path().join(JOURNAL_FILE).exists());
        finish(dir.path()).unwrap(); // nothing to remove is fine
    }

    #[test]
    fn a_recorded_delete_reads_back_and_a_torn_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(pending_delete(dir.path()).unwrap(), None);
        record_delete(dir.path(), 40, &[9, 4, 0]).unwrap();
        let want = Delete {
            phys_len: 40,
            targets: vec![9, 4, 0],
        };
        assert_eq!(pending_delete(dir.path()).unwrap(), Some(want));
        let whole = fs::read(dir.path().join(DELETE_JOURNAL_FILE)).unwrap();
        // The layout of FORMAT.md's delete journal table.
        assert_eq!(&whole[..8], b"ZRDELET1");
        assert_eq!(whole[8..12], crc32fast::hash(&whole[12..]).to_le_bytes());
        assert_eq!(whole[12..20], 40u64.to_le_bytes());
        assert_eq!(whole[20..28], 3u64.to_le_bytes());
        assert_eq!(whole[28..36], 9u64.to_le_bytes());
        for cut in 0..whole.len() {
            assert_eq!(parse_delete(&whole[..cut]), None, "cut at {cut}");
        }
        for at in 0..whole.len() {
            let mut bad = whole.clone();
            bad[at] ^= 0x04;
            assert_eq!(parse_delete(&bad), None, "byte {at} flipped");
        }
        finish_delete(dir.path()).unwrap();
        assert_eq!(pending_delete(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_torn_or_damaged_entry_is_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path()).unwrap();
        journal.record(7, loc(), b"hello").unwrap();
        let whole = fs::read(dir.path().join(JOURNAL_FILE)).unwrap();
        assert!(parse(&whole).is_some());
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut]), None, "cut at {cut}");
        }
        for at in 0..whole.len() {
            let mut bad = whole.clone();
            bad[at] ^= 0x10;
            assert_eq!(parse(&bad), None, "byte {at} flipped");
        }
    }
}
