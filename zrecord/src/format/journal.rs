//! The byte layouts of the two journals (FORMAT.md, "Journals"), decoded
//! from a file a piece at a time: a journal's size follows from its header,
//! so a damaged one is found without reading (or allocating) more than the
//! layout says, and a record in a compaction journal is checked in pieces.
//!
//! * `compact.journal`: magic, CRC-32 of what follows it, the physical
//!   index, the new table entry, the record's stored bytes.
//! * `delete.journal`: magic, CRC-32, the physical length before the delete,
//!   the number of targets, the targets.

use super::{LOC_ENTRY_LEN, RecordLoc};

pub(crate) const MOVE_MAGIC: [u8; 8] = *b"ZRJOURN1";
pub(crate) const DELETE_MAGIC: [u8; 8] = *b"ZRDELET1";
/// magic, CRC-32, physical index, table entry.
pub(crate) const MOVE_HEADER_LEN: usize = 8 + 4 + 8 + LOC_ENTRY_LEN;
/// magic, CRC-32, physical length before the delete, number of targets.
pub(crate) const DELETE_HEADER_LEN: usize = 8 + 4 + 8 + 8;
/// Bytes checked per read of a journaled record.
const PIECE: usize = 1 << 20;

/// Reads `buf.len()` bytes at an offset of the journal file.
pub(crate) type ReadAt<'a> = &'a mut dyn FnMut(u64, &mut [u8]) -> std::io::Result<()>;

/// Why a journal cannot be used: an I/O error, or a damaged layout.
#[derive(Debug)]
pub(crate) enum JournalError {
    Io(std::io::Error),
    Corrupt(String),
}

impl From<std::io::Error> for JournalError {
    fn from(e: std::io::Error) -> Self {
        JournalError::Io(e)
    }
}

fn corrupt<T>(reason: String) -> Result<T, JournalError> {
    Err(JournalError::Corrupt(reason))
}

/// A journaled move whose entry checked out: physical record `phys`'s
/// stored bytes (at [`MOVE_HEADER_LEN`] in the file, `loc.phys_len` long)
/// belong at `loc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingMove {
    pub(crate) phys: u64,
    pub(crate) loc: RecordLoc,
}

/// The header of a compaction journal entry, before its bytes are written.
pub(crate) fn encode_move_header(phys: u64, loc: RecordLoc, bytes: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(MOVE_HEADER_LEN + bytes.len());
    e.extend_from_slice(&MOVE_MAGIC);
    e.extend_from_slice(&[0; 4]);
    e.extend_from_slice(&phys.to_le_bytes());
    e.extend_from_slice(&loc.encode());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&e[12..]);
    crc.update(bytes);
    e[8..12].copy_from_slice(&crc.finalize().to_le_bytes());
    e
}

/// Decodes a compaction journal of `file_len` bytes. `Ok(None)`: no
/// pending move (cleared, or torn while it was written, before the move
/// began).
///
/// `exact` (format version 2): the writer empties the file before each
/// entry and writes it in one write, so the file is a prefix of its entry
/// (torn: shorter than the entry says) or exactly the entry, cleared or
/// not; anything else — longer, a wrong magic, a whole entry whose CRC does
/// not match — is a corruption error. A version-1 writer wrote entries over
/// longer old ones, so there a longer file or a bad CRC is a torn entry.
pub(crate) fn read_move(
    file_len: u64,
    read_at: ReadAt<'_>,
    exact: bool,
) -> Result<Option<PendingMove>, JournalError> {
    if file_len < MOVE_HEADER_LEN as u64 {
        return Ok(None);
    }
    let mut header = [0u8; MOVE_HEADER_LEN];
    read_at(0, &mut header)?;
    let cleared = header[..8] == [0; 8];
    if !cleared && header[..8] != MOVE_MAGIC {
        return if exact {
            corrupt(format!("its magic is {:02x?}, not ZRJOURN1", &header[..8]))
        } else {
            Ok(None)
        };
    }
    let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    let mut phys = [0u8; 8];
    phys.copy_from_slice(&header[12..20]);
    let mut entry = [0u8; LOC_ENTRY_LEN];
    entry.copy_from_slice(&header[20..]);
    let (phys, loc) = (u64::from_le_bytes(phys), RecordLoc::decode(&entry));
    let end = MOVE_HEADER_LEN as u64 + u64::from(loc.phys_len);
    if exact && (file_len > end || cleared && file_len != end) {
        return corrupt(format!(
            "{file_len} bytes, its entry of a {}-byte record ends at {end}",
            loc.phys_len
        ));
    }
    if cleared || file_len < end {
        return Ok(None); // done, or torn
    }
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&header[12..]);
    let mut piece = vec![0u8; PIECE.min(loc.phys_len as usize)];
    let mut at = MOVE_HEADER_LEN as u64;
    while at < end {
        let n = ((end - at) as usize).min(piece.len());
        read_at(at, &mut piece[..n])?;
        hasher.update(&piece[..n]);
        at += n as u64;
    }
    match (hasher.finalize() == crc, exact) {
        (true, _) => Ok(Some(PendingMove { phys, loc })),
        (false, true) => corrupt("its entry is whole but its CRC does not match".into()),
        (false, false) => Ok(None),
    }
}

/// A delete that may not have committed: the physical length before it and
/// its logical targets in descending order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PendingDelete {
    pub(crate) phys_len: u64,
    pub(crate) targets: Vec<u64>,
}

/// The bytes of a delete journal.
pub(crate) fn encode_delete(phys_len: u64, targets: &[u64]) -> Vec<u8> {
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
    e
}

/// Decodes a delete journal of `file_len` bytes for a store whose committed
/// physical length is `phys_len`, `group` physical records per logical one.
/// `Ok(None)`: nothing to redo (torn while written: shorter than its header
/// says; or the delete had committed: the length moved on). The file is
/// written whole in one write into an emptied file, so anything else — a
/// wrong magic, a longer file, a bad CRC, targets that are not distinct
/// indices below the length in descending order — is a corruption error.
pub(crate) fn read_delete(
    file_len: u64,
    read_at: ReadAt<'_>,
    phys_len: u64,
    group: u64,
) -> Result<Option<PendingDelete>, JournalError> {
    if file_len < DELETE_HEADER_LEN as u64 {
        return Ok(None);
    }
    let mut header = [0u8; DELETE_HEADER_LEN];
    read_at(0, &mut header)?;
    if header[..8] != DELETE_MAGIC {
        return corrupt(format!("its magic is {:02x?}, not ZRDELET1", &header[..8]));
    }
    let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&header[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let (before, n) = (word(12), word(20));
    let Some(end) = n
        .checked_mul(8)
        .and_then(|b| b.checked_add(DELETE_HEADER_LEN as u64))
    else {
        return corrupt(format!("it claims {n} targets"));
    };
    if file_len > end {
        return corrupt(format!("{file_len} bytes, its {n} targets end at {end}"));
    }
    if file_len < end {
        return Ok(None); // torn
    }
    if before != phys_len {
        return Ok(None); // the delete committed
    }
    let len = phys_len / group.max(1);
    if n == 0 || n > len {
        return corrupt(format!("{n} targets in a store of {len} records"));
    }
    let mut body = vec![0u8; (end - DELETE_HEADER_LEN as u64) as usize];
    read_at(DELETE_HEADER_LEN as u64, &mut body)?;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&header[12..]);
    hasher.update(&body);
    if hasher.finalize() != crc {
        return corrupt("its targets are whole but their CRC does not match".into());
    }
    let targets: Vec<u64> = body
        .chunks_exact(8)
        .map(|b| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        })
        .collect();
    let valid =
        targets.first().is_some_and(|&t| t < len) && targets.windows(2).all(|w| w[0] > w[1]);
    if !valid {
        return corrupt(format!(
            "its targets are not distinct indices below {len}, in descending order"
        ));
    }
    Ok(Some(PendingDelete {
        phys_len: before,
        targets,
    }))
}

/// A reader over bytes in memory (tests and fuzzing).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn slice_reader(bytes: &[u8]) -> impl FnMut(u64, &mut [u8]) -> std::io::Result<()> + '_ {
    move |at, buf| {
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        let src = at
            .checked_add(buf.len())
            .and_then(|end| bytes.get(at..end))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
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

    fn read_move_bytes(b: &[u8], exact: bool) -> Result<Option<PendingMove>, JournalError> {
        read_move(b.len() as u64, &mut slice_reader(b), exact)
    }

    fn read_delete_bytes(b: &[u8], len: u64) -> Result<Option<PendingDelete>, JournalError> {
        read_delete(b.len() as u64, &mut slice_reader(b), len, 1)
    }

    #[test]
    fn a_move_entry_matches_format_md_and_torn_ones_are_none() {
        let mut whole = encode_move_header(7, loc(), b"hello");
        whole.extend_from_slice(b"hello");
        assert_eq!(&whole[..8], b"ZRJOURN1");
        assert_eq!(whole[8..12], crc32fast::hash(&whole[12..]).to_le_bytes());
        assert_eq!(whole[12..20], 7u64.to_le_bytes());
        assert_eq!(whole[20..36], loc().encode());
        let want = PendingMove {
            phys: 7,
            loc: loc(),
        };
        assert_eq!(read_move_bytes(&whole, true).unwrap(), Some(want));
        for cut in 0..whole.len() {
            assert_eq!(
                read_move_bytes(&whole[..cut], true).unwrap(),
                None,
                "cut {cut}"
            );
        }
        for at in 0..whole.len() {
            let mut bad = whole.clone();
            bad[at] ^= 0x10;
            // A flip in the length makes the file longer or shorter than the entry.
            if let Ok(found) = read_move_bytes(&bad, true) {
                assert_eq!(found, None, "byte {at} flipped");
            }
        }
        let mut longer = whole.clone();
        longer.push(0);
        assert!(matches!(
            read_move_bytes(&longer, true),
            Err(JournalError::Corrupt(_))
        ));
        assert_eq!(read_move_bytes(&longer, false).unwrap(), Some(want));
        // Cleared: no move, and exactly as long as the entry was.
        let mut cleared = whole.clone();
        cleared[..8].fill(0);
        assert_eq!(read_move_bytes(&cleared, true).unwrap(), None);
        // A file of zeros (of any other size) is no journal zrecord wrote.
        assert!(matches!(
            read_move_bytes(&[0; 4096], true),
            Err(JournalError::Corrupt(_))
        ));
        assert_eq!(read_move_bytes(&[0; 4096], false).unwrap(), None);
    }

    #[test]
    fn a_delete_journal_matches_format_md_and_is_checked() {
        let whole = encode_delete(40, &[9, 4, 0]);
        assert_eq!(&whole[..8], b"ZRDELET1");
        assert_eq!(whole[8..12], crc32fast::hash(&whole[12..]).to_le_bytes());
        assert_eq!(whole[12..20], 40u64.to_le_bytes());
        assert_eq!(whole[20..28], 3u64.to_le_bytes());
        assert_eq!(whole[28..36], 9u64.to_le_bytes());
        let want = PendingDelete {
            phys_len: 40,
            targets: vec![9, 4, 0],
        };
        assert_eq!(read_delete_bytes(&whole, 40).unwrap(), Some(want));
        assert_eq!(read_delete_bytes(&whole, 37).unwrap(), None, "committed");
        for cut in 0..whole.len() {
            assert_eq!(
                read_delete_bytes(&whole[..cut], 40).unwrap(),
                None,
                "cut {cut}"
            );
        }
        for at in 0..whole.len() {
            let mut bad = whole.clone();
            bad[at] ^= 0x04;
            if let Ok(found) = read_delete_bytes(&bad, 40) {
                assert_eq!(found, None, "byte {at} flipped");
            }
        }
        let mut longer = whole.clone();
        longer.push(0);
        assert!(matches!(
            read_delete_bytes(&longer, 40),
            Err(JournalError::Corrupt(_))
        ));
        for targets in [&[4u64, 9][..], &[9, 9], &[40]] {
            assert!(matches!(
                read_delete_bytes(&encode_delete(40, targets), 40),
                Err(JournalError::Corrupt(_))
            ));
        }
        // A huge claimed count is found from the header alone.
        let mut huge = encode_delete(40, &[1]);
        huge[20..28].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            read_delete_bytes(&huge, 40),
            Err(JournalError::Corrupt(_))
        ));
    }
}
