//! Delete (swap-last) and compact (repack live records in physical order).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Engine;
use super::journal::{self, Journal};
use crate::format::{LOC_ENTRY_LEN, RecordLoc, chunk_file, loc_file};
use crate::{Error, Result};

/// How far a compaction has come; passed to the callback of
/// [`DenseStore::compact_with`](crate::DenseStore::compact_with) after every record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactProgress {
    /// Physical records visited, in physical order.
    pub visited: u64,
    /// Physical records in the store.
    pub total: u64,
    /// Records moved so far.
    pub moved: u64,
    /// Bytes moved so far.
    pub moved_bytes: u64,
}

impl CompactProgress {
    /// Whether every record was visited (the compaction ran to the end).
    pub fn is_complete(&self) -> bool {
        self.visited == self.total
    }
}

impl Engine {
    /// Fails when a delete or compaction on this handle stopped on an error
    /// with its journal flag still set: its journal may hold a move that
    /// only a reopen redoes, and a new journal would overwrite it.
    fn check_no_failed_maintenance(&self) -> Result<()> {
        if self.journal_flag.load(Ordering::Acquire) {
            return Err(Error::NeedsRecovery {
                path: self.dir.clone(),
                reason: "a delete or compaction on this handle stopped on an error".into(),
            });
        }
        Ok(())
    }

    /// Writes table entry `phys`.
    pub(super) fn write_loc(&self, phys: u64, loc: RecordLoc) -> Result<()> {
        let entries = self.geometry.segment_entries();
        let files = self.files();
        let segment = files
            .segments
            .get((phys / entries) as usize)
            .ok_or_else(|| {
                Error::corrupt(&self.dir, format!("no table segment for entry {phys}"))
            })?;
        segment
            .file
            .write_at(&loc.encode(), (phys % entries) * LOC_ENTRY_LEN as u64)?;
        files.forget_run(phys);
        Ok(())
    }

    /// Deletes the logical records `indices` (of the store before the call;
    /// repeats count once) by moving the last record into each hole.
    /// Returns how many records were deleted.
    pub(crate) fn delete(&mut self, indices: &[u64]) -> Result<u64> {
        self.check_writable()?;
        self.check_no_failed_maintenance()?;
        let group = self.group;
        let len = self.len();
        if let Some(&index) = indices.iter().find(|&&i| i >= len) {
            return Err(Error::IndexOutOfRange { index, len });
        }
        let mut targets = indices.to_vec();
        targets.sort_unstable_by(|a, b| b.cmp(a));
        targets.dedup();
        if targets.is_empty() {
            return Ok(0);
        }
        // Journaled, so a kill between the entry moves and the commit is
        // finished by the next open instead of leaving duplicates behind;
        // flagged in meta.zr first, so no reader that ignores journals opens
        // the store until the journal is gone.
        self.guarded(|| {
            self.set_journal_flag(true)?;
            journal::record_delete(&*self.storage, len * group, &targets)?;
            crate::hooks::hold("delete:journaled");
            self.apply_delete(&targets)?;
            crate::hooks::hold("delete:committed");
            journal::finish_delete(&*self.storage)?;
            self.set_journal_flag(false)
        })?;
        Ok(targets.len() as u64)
    }

    /// Moves the last record into each of `targets` (logical indices,
    /// descending, distinct, below the length) and commits the shorter length.
    /// Running it again after a kill part way gives the same result: an entry
    /// it reads is one no earlier step of the same call wrote, or wrote with
    /// the value it writes again.
    pub(super) fn apply_delete(&self, targets: &[u64]) -> Result<()> {
        let group = self.group;
        let len = self.len();
        let mut live = len;
        // Descending order: every record a swap pulls from the end is one no
        // later target names.
        for &target in targets {
            let last = live - 1;
            if target != last {
                for part in 0..group {
                    let loc = self.snapshot().phys_loc(last * group + part)?;
                    self.write_loc(target * group + part, loc)?;
                }
            }
            crate::hooks::hold("delete:entry");
            live -= 1;
        }
        let (tail_chunk, tail_offset) = {
            let w = self.writer();
            (w.tail_chunk, w.tail_offset)
        };
        self.write_meta(tail_chunk, tail_offset, live * group)?;
        self.len.store(live * group, Ordering::Release);
        self.files().forget_runs_from(live * group);
        let first_segment = targets
            .last()
            .map(|&t| t * group / self.geometry.segment_entries());
        self.writer().touch(None, first_segment);
        Ok(())
    }

    /// Repacks the live records densely in physical order, then truncates
    /// and removes what lies past the new frontier. `on_progress` sees every
    /// record and may stop the run between records; the store is consistent
    /// at every such point and a later run finishes the job.
    pub(crate) fn compact(
        &mut self,
        mut on_progress: impl FnMut(&CompactProgress) -> ControlFlow<()>,
    ) -> Result<CompactProgress> {
        self.check_writable()?;
        self.check_no_failed_maintenance()?;
        let phys_len = self.len.load(Ordering::Acquire);
        let mut order = Vec::with_capacity(phys_len as usize);
        {
            // Every location must lie in its chunk's committed bytes before
            // anything moves: the frontier below steps over records that stay
            // in place without reading them, so one past its chunk's bytes
            // (a crafted table) would carry the frontier, and with it the
            // committed length a later record publishes, past the file's end.
            let snap = self.snapshot();
            for phys in 0..phys_len {
                let loc = snap.phys_loc(phys)?;
                snap.check_location(phys / self.group, loc)?;
                order.push((loc, phys));
            }
        }
        order.sort_unstable_by_key(|(loc, _)| (loc.chunk, loc.offset));

        self.compact_ordered(&order, phys_len, &mut on_progress)
    }

    /// Compaction once every record is found and checked: moves the
    /// records of `order` (sorted by location) down, then releases the rest.
    fn compact_ordered(
        &mut self,
        order: &[(RecordLoc, u64)],
        phys_len: u64,
        on_progress: &mut impl FnMut(&CompactProgress) -> ControlFlow<()>,
    ) -> Result<CompactProgress> {
        let capacity = self.geometry.chunk_capacity();
        let mut progress = CompactProgress {
            total: phys_len,
            ..CompactProgress::default()
        };
        let mut fills: Vec<u64> = Vec::new(); // final size of each chunk before the frontier
        let (mut chunk, mut offset) = (0u32, 0u64);
        let mut buf = Vec::new();
        self.set_journal_flag(true)?;
        let mut journal = Journal::create(&*self.storage)?;
        for &(loc, phys) in order {
            let len = u64::from(loc.phys_len);
            if offset + len > capacity {
                fills.push(offset);
                chunk += 1;
                offset = 0;
            }
            if (loc.chunk, u64::from(loc.offset)) != (chunk, offset) {
                // A record only ever moves down, onto garbage or its own old
                // bytes, never onto a record not yet visited. Onto its own
                // old bytes, a kill mid-move would damage it: journal it.
                let new_loc = RecordLoc {
                    offset: offset as u32,
                    chunk,
                    ..loc
                };
                let overlaps = loc.chunk == chunk && offset + len > u64::from(loc.offset);
                {
                    let snap = self.snapshot();
                    buf.clear();
                    buf.extend_from_slice(&snap.stored(phys / self.group, loc)?);
                    if overlaps {
                        journal.record(phys, new_loc, &buf)?;
                        crate::hooks::hold("compact:journaled");
                    }
                    let dst = snap.files().chunks.get(chunk as usize).ok_or_else(|| {
                        Error::corrupt(
                            &self.dir,
                            format!("compaction frontier reached missing chunk {chunk}"),
                        )
                    })?;
                    dst.file.file.write_at(&buf, offset)?;
                    // A record moved into an earlier chunk may land past the
                    // bytes that chunk held: they hold a record now (and a
                    // reopen counts them, as the file's length). An empty
                    // record wrote nothing, so it commits nothing.
                    if len > 0 {
                        dst.committed.fetch_max(offset + len, Ordering::AcqRel);
                    }
                }
                crate::hooks::hold("compact:moved");
                self.write_loc(phys, new_loc)?;
                if overlaps {
                    crate::hooks::hold("compact:entry");
                    journal.clear()?;
                }
                progress.moved += 1;
                progress.moved_bytes += len;
            }
            offset += len;
            progress.visited += 1;
            if on_progress(&progress).is_break() {
                self.writer().touch(Some(0), Some(0));
                journal.remove()?;
                self.set_journal_flag(false)?;
                return Ok(progress);
            }
        }
        fills.push(offset);
        journal.remove()?;

        // Commit the new frontier (and clear the journal flag), then release
        // what lies past it.
        let segments = self.geometry.segments_for(phys_len);
        let entries = self.geometry.segment_entries();
        self.journal_flag.store(false, Ordering::Release);
        self.write_meta(chunk, offset, phys_len)?;
        let storage = Arc::clone(&self.storage);
        let files = self.files_exclusive();
        for (c, &fill) in fills.iter().enumerate() {
            let file = &files.chunks[c];
            if file.file.file.len()? != fill {
                file.file.file.set_len(fill)?;
            }
            file.committed.store(fill, Ordering::Release);
        }
        let stale_chunks = files.chunks.len() as u64;
        files.chunks.truncate(fills.len());
        let stale_segments = files.segments.len() as u64;
        files.truncate_segments(segments as usize);
        for c in fills.len() as u64..stale_chunks {
            storage.remove(&chunk_file(c))?;
        }
        for s in segments..stale_segments {
            storage.remove(&loc_file(s))?;
        }
        files.segments[segments as usize - 1]
            .file
            .set_len((phys_len - (segments - 1) * entries) * LOC_ENTRY_LEN as u64)?;

        let w = self
            .writer
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        w.tail_chunk = chunk;
        w.tail_offset = offset;
        w.touch(Some(0), Some(0));
        self.sync()?;
        Ok(progress)
    }
}
