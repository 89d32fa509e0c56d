//! Commits not yet synced. An append commits by rewriting `meta.zr` in
//! place without a sync; a file system may write that page back before the
//! appended bytes it commits (one file's overwrite is not ordered after
//! another file's data), so after a power cut the header can name records
//! that never reached the disk. Stores with the `synced_header` feature keep
//! the header of the last completed sync beside the current one: what lies
//! between the two — appends only, as every delete and compaction starts
//! and ends with a sync — is checked at open and kept only when whole; a
//! delete whose commit is newer than the synced header is redone from its
//! journal.

use super::open::{Parts, assemble, open_data_files};
use super::{Engine, journal};
use crate::codec::CodecRuntime;
use crate::format::{MetaFlags, MetaHeader};
use crate::storage::{Access, Storage};
use crate::{Error, OpenOptions, Result};

/// What an open found past the synced header.
#[derive(Clone, Copy, Debug)]
pub(super) enum Unsynced {
    /// Nothing to check: the headers agree, or a journal is pending.
    None,
    /// Appends since the synced header, all whole: kept.
    Kept,
    /// Appends since the synced header, not all whole: the store opened at
    /// the synced header.
    RolledBack,
}

/// Whether `current` commits appends past `synced` that a power cut may
/// have reordered: it differs from the synced header by records placed
/// after its frontier, with no journal pending. Anything else (equal, or
/// a delete or compaction under way) is trusted as written.
pub(super) fn suspect(current: &MetaHeader, synced: &MetaHeader) -> bool {
    !current.flags.contains(MetaFlags::JOURNAL)
        && !current.same_commit(synced)
        && synced.length <= current.length
        && (synced.tail_chunk, synced.tail_offset) <= (current.tail_chunk, current.tail_offset)
}

/// Whether a delete must be redone from the synced length: `current`
/// carries its commit (a shorter length, the journal flag still set) but
/// the synced header does not, so the entries it moved may have reached
/// the disk only in part, and its journal names the length it started
/// from. The entries past the shorter length are still those of the synced
/// state: nothing is appended before the delete's own closing sync.
pub(super) fn delete_redone(
    storage: &dyn Storage,
    current: &MetaHeader,
    synced: &MetaHeader,
    group: u64,
) -> bool {
    current.flags.contains(MetaFlags::JOURNAL)
        && synced.length > current.length
        && (synced.tail_chunk, synced.tail_offset) == (current.tail_chunk, current.tail_offset)
        // A damaged journal is left to the journal checks that follow.
        && matches!(
            journal::pending_delete(storage, synced.length, group),
            Ok(Some((_, Some(_))))
        )
}

/// Damage a power cut can leave, as opposed to a failing disk or a bug:
/// a missing or short file, an entry that points elsewhere, a bad checksum.
fn is_damage(e: &Error) -> bool {
    matches!(e, Error::Corrupt { .. } | Error::CorruptRecord { .. })
}

impl Engine {
    /// Whether the records `current` commits past `synced` are whole: every
    /// table entry there, each record placed right after the one before it
    /// (from `synced`'s frontier to `current`'s, as appends place them),
    /// and each one checking out as `verify` checks it. Reads those records
    /// once; I/O errors are errors, not damage.
    pub(super) fn unsynced_commits_hold(
        parts: &Parts,
        codec: &CodecRuntime,
        current: MetaHeader,
        synced: MetaHeader,
        options: OpenOptions,
    ) -> Result<bool> {
        if !current.length.is_multiple_of(parts.group) {
            return Ok(false);
        }
        let data = match open_data_files(&*parts.storage, &current, Access::Read) {
            Ok(data) => data,
            Err(e) if is_damage(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        let codec = CodecRuntime::new(codec.codec().clone(), None)?;
        let probe = assemble(
            parts.clone(),
            codec,
            current,
            Some(synced),
            data,
            options.read_only(true),
        )?;
        match probe.check_appended(&synced) {
            Ok(()) => Ok(true),
            Err(e) if is_damage(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Checks the records past `synced` as [`unsynced_commits_hold`](Self::unsynced_commits_hold) says.
    fn check_appended(&self, synced: &MetaHeader) -> Result<()> {
        let snap = self.snapshot();
        let capacity = self.geometry.chunk_capacity();
        let misplaced = |phys: u64| {
            Error::corrupt(
                &self.dir,
                format!("record-table entry {phys} is not where an append placed it"),
            )
        };
        let end = snap.len() * self.group;
        let (mut chunk, mut offset) = (synced.tail_chunk, u64::from(synced.tail_offset));
        for phys in synced.length..end {
            let loc = snap.phys_loc(phys)?;
            let len = u64::from(loc.phys_len);
            if offset + len > capacity {
                chunk = chunk.checked_add(1).ok_or_else(|| misplaced(phys))?;
                offset = 0;
            }
            if (loc.chunk, u64::from(loc.offset)) != (chunk, offset) {
                return Err(misplaced(phys));
            }
            offset += len;
        }
        let frontier = {
            let w = self.writer();
            (w.tail_chunk, w.tail_offset)
        };
        if (chunk, offset) != frontier {
            return Err(misplaced(end));
        }
        let mut checker = self
            .codec
            .frame_checker()
            .map_err(|reason| Error::corrupt(&self.dir, reason))?;
        for index in synced.length / self.group..snap.len() {
            self.verify_record(&snap, index, &mut checker)?;
        }
        Ok(())
    }

    /// The last step of a writable open, for what it found past the synced
    /// header. Appends it kept are left for the handle's next `sync` (or its
    /// close) to make durable; until then every open checks them again. A rollback is
    /// written at once, with the synced header as the current one: a later
    /// append writes past the synced frontier, and a header still naming
    /// the damaged records could then take a killed append's first records
    /// for them.
    pub(super) fn settle(&self, unsynced: Unsynced) -> Result<()> {
        match unsynced {
            Unsynced::None => Ok(()),
            Unsynced::Kept => {
                let Some(headers) = &self.headers else {
                    return Ok(());
                };
                let synced = headers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .synced;
                let segment = synced.length / self.geometry.segment_entries();
                self.writer().touch(Some(synced.tail_chunk), Some(segment));
                Ok(())
            }
            // The synced header is durable already: this writes it as the
            // current one too.
            Unsynced::RolledBack => self.sync_meta(),
        }
    }
}
