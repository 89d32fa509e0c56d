//! Delete (swap-last) and compact (repack live records in physical order).

use std::collections::BTreeSet;
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
            // The journal names the committed length it deletes from: that
            // state is durable first, so a power cut leaves it or the result.
            self.sync()?;
            self.set_journal_flag(true)?;
            journal::record_delete(&*self.storage, len * group, &targets)?;
            crate::hooks::hold("delete:journaled");
            self.apply_delete(&targets)?;
            crate::hooks::hold("delete:committed");
            // The moved entries and the commit are durable before the
            // journal's removal can be: a delete survives power loss once
            // it returns.
            self.sync()?;
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
        // What is durable now is what the moves below may not overwrite
        // until a barrier has made the records' new places durable.
        self.sync()?;
        self.set_journal_flag(true)?;
        let mut journal = Journal::create(&*self.storage)?;
        let mut journal_named = false;
        let mut batch = Batch::default();
        // Records copied past the frontier (see `relocate`) are visited
        // again at the end, from their new places.
        let mut order = order.to_vec();
        let first_pass = order.len();
        let relocate_bytes = RELOCATE_BYTES.min(capacity / 4);
        // Cleared once the tail chunk has no room for a record: it gains none.
        let mut may_relocate = !crate::hooks::relocation_off();
        let mut i = 0;
        while i < order.len() {
            let (loc, phys) = order[i];
            let len = u64::from(loc.phys_len);
            let frontier = (chunk, offset, fills.len());
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
                // Bytes a durable table entry still names (a record of this
                // batch's old place, or this record's own) are overwritten
                // only after a barrier.
                let forced = overlaps || batch.names(chunk, offset, offset + len);
                if forced && batch.bytes < relocate_bytes / 4 && may_relocate && i < first_pass {
                    let moved = self.relocate(&order[i..first_pass], relocate_bytes, &mut batch)?;
                    may_relocate = moved.is_some();
                    if let Some(moved) = moved {
                        // The gap before the frontier grew by what moved
                        // away; the next record finds the frontier where
                        // this one did.
                        (chunk, offset) = (frontier.0, frontier.1);
                        fills.truncate(frontier.2);
                        i += moved.len();
                        order.extend(moved);
                        continue;
                    }
                }
                if forced || batch.bytes >= BATCH_BYTES {
                    self.barrier(&mut batch)?;
                }
                {
                    let snap = self.snapshot();
                    buf.clear();
                    buf.extend_from_slice(&snap.stored(phys / self.group, loc)?);
                    if overlaps {
                        if !journal_named {
                            self.storage.sync()?;
                            journal_named = true;
                        }
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
                batch.push(phys, loc, new_loc);
                if overlaps {
                    self.barrier(&mut batch)?;
                    crate::hooks::hold("compact:entry");
                    journal.clear()?;
                }
                progress.moved += 1;
                progress.moved_bytes += len;
            }
            offset += len;
            progress.visited += 1;
            i += 1;
            if on_progress(&progress).is_break() {
                self.barrier(&mut batch)?;
                self.writer().touch(Some(0), Some(0));
                journal.remove()?;
                self.set_journal_flag(false)?;
                return Ok(progress);
            }
        }
        self.barrier(&mut batch)?;
        fills.push(offset);
        journal.remove()?;

        // Commit the new frontier (and clear the journal flag), then release
        // what lies past it.
        let segments = self.geometry.segments_for(phys_len);
        let entries = self.geometry.segment_entries();
        self.journal_flag.store(false, Ordering::Release);
        // The new frontier is durable before the bytes past it are cut.
        self.write_meta_durably(chunk, offset, phys_len)?;
        {
            let w = self
                .writer
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (w.tail_chunk, w.tail_offset) = (chunk, offset);
        }
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

        self.writer
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .touch(Some(0), Some(0));
        self.sync()?;
        Ok(progress)
    }
}

/// Moves are made durable in batches: up to this many bytes between barriers.
const BATCH_BYTES: u64 = 64 << 20;

/// Bytes of records copied past the frontier when the gap before the
/// compaction frontier is too small for batches (a quarter of a chunk at
/// most): the gap grows by as much, for the rest of the run.
const RELOCATE_BYTES: u64 = 16 << 20;

/// Records moved since the last barrier: their bytes are written, their
/// table entries wait for the barrier.
#[derive(Default)]
struct Batch {
    /// Table entries to write: physical index and new place.
    moves: Vec<(u64, RecordLoc)>,
    /// The records' old places as (chunk, start, end), ascending: the
    /// durable table still names them.
    old: Vec<(u32, u64, u64)>,
    /// The chunks written.
    chunks: BTreeSet<u32>,
    /// Bytes moved.
    bytes: u64,
}

impl Batch {
    fn push(&mut self, phys: u64, old: RecordLoc, new: RecordLoc) {
        let start = u64::from(old.offset);
        self.moves.push((phys, new));
        self.old
            .push((old.chunk, start, start + u64::from(old.phys_len)));
        self.chunks.insert(new.chunk);
        self.bytes += u64::from(old.phys_len);
    }

    /// Whether bytes `start..end` of `chunk` hold a record of the batch.
    fn names(&self, chunk: u32, start: u64, end: u64) -> bool {
        let i = self
            .old
            .partition_point(|&(c, _, e)| (c, e) <= (chunk, start));
        self.old
            .get(i)
            .is_some_and(|&(c, s, _)| c == chunk && s < end)
    }
}

impl Engine {
    /// Copies the first records of `rest` (up to `bytes`) past the committed
    /// frontier of the tail chunk and points their table entries there, so
    /// their old places become garbage: a compaction whose gap is smaller
    /// than a record would otherwise need a barrier per record. Durable in
    /// order — the copies, the header that commits the longer tail chunk,
    /// then the entries. Returns the records' new places, or `None` when the
    /// tail chunk has no room for the first of them.
    fn relocate(
        &self,
        rest: &[(RecordLoc, u64)],
        bytes: u64,
        batch: &mut Batch,
    ) -> Result<Option<Vec<(RecordLoc, u64)>>> {
        let (tail_chunk, tail_offset) = {
            let w = self.writer();
            (w.tail_chunk, w.tail_offset)
        };
        // As many records as fit both `bytes` and the tail chunk's room.
        let room = self.geometry.chunk_capacity().saturating_sub(tail_offset);
        let mut take = 0;
        let mut total = 0u64;
        while let Some((loc, _)) = rest.get(take)
            && total < bytes
            && total + u64::from(loc.phys_len) <= room
        {
            total += u64::from(loc.phys_len);
            take += 1;
        }
        if total == 0 {
            return Ok(None);
        }
        self.barrier(batch)?;
        let snap = self.snapshot();
        let tail = snap
            .files()
            .chunks
            .get(tail_chunk as usize)
            .ok_or_else(|| {
                Error::corrupt(&self.dir, format!("the tail chunk {tail_chunk} is missing"))
            })?;
        let mut moved = Vec::with_capacity(take);
        let mut at = tail_offset;
        for &(loc, phys) in &rest[..take] {
            let stored = snap.stored(phys / self.group, loc)?;
            tail.file.file.write_at(&stored, at)?;
            moved.push((
                RecordLoc {
                    offset: at as u32,
                    chunk: tail_chunk,
                    ..loc
                },
                phys,
            ));
            at += u64::from(loc.phys_len);
        }
        tail.file.file.sync()?;
        tail.committed.fetch_max(at, Ordering::AcqRel);
        self.write_meta_durably(tail_chunk, at, self.len.load(Ordering::Acquire))?;
        self.writer().tail_offset = at;
        self.write_locs_durably(moved.iter().map(|&(loc, phys)| (phys, loc)))?;
        crate::hooks::hold("compact:relocated");
        Ok(Some(moved))
    }

    /// Makes a batch of moves durable, in an order that holds whatever the
    /// disk keeps of a power cut: the moved bytes, then the table entries
    /// naming them. Until it returns the durable table names the old places,
    /// which no move of the batch overwrote.
    fn barrier(&self, batch: &mut Batch) -> Result<()> {
        if batch.moves.is_empty() {
            return Ok(());
        }
        let files = self.files();
        for &c in &batch.chunks {
            files.chunks[c as usize].file.file.sync()?;
        }
        self.write_locs_durably(batch.moves.iter().copied())?;
        batch.moves.clear();
        batch.old.clear();
        batch.chunks.clear();
        batch.bytes = 0;
        Ok(())
    }

    /// Writes table entries (physical index, place) and flushes the
    /// segments they lie in.
    fn write_locs_durably(&self, entries: impl Iterator<Item = (u64, RecordLoc)>) -> Result<()> {
        let per_segment = self.geometry.segment_entries();
        let mut segments = BTreeSet::new();
        for (phys, loc) in entries {
            self.write_loc(phys, loc)?;
            segments.insert(phys / per_segment);
        }
        let files = self.files();
        for s in segments {
            files.segments[s as usize].file.sync()?;
        }
        Ok(())
    }
}
