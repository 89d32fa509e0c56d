//! Reading: a consistent view of the committed records, and the drivers that
//! fill a caller's buffer — on the calling thread for small batches, where
//! fanning out costs more than the copy, across all cores otherwise.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use super::Engine;
use super::copy::{LARGE_RECORD, STREAMING_BATCH, copy_record};
use super::files::FileTable;
use super::prefetch::{BATCH_PREFETCH_BYTES, prefetch, prefetch_line};
use crate::format::{MAX_RECORD_BYTES, RecordLoc, checksum};
use crate::{Error, Result};

/// A raw gather smaller than this stays on the calling thread: copying
/// 1 MiB takes about as long as waking another core.
#[cfg_attr(
    not(feature = "internals"),
    expect(unreachable_pub, reason = "public with the internals feature only")
)]
pub const PARALLEL_COPY_BYTES: usize = 1 << 20;
/// A compressed gather smaller than this (logical bytes) stays on the calling thread.
const PARALLEL_DECODE_BYTES: usize = 64 << 10;
/// A parallel gather cuts its records into this many contiguous pieces per thread.
#[cfg_attr(
    not(feature = "internals"),
    expect(unreachable_pub, reason = "public with the internals feature only")
)]
pub const PIECES_PER_THREAD: usize = 4;
/// Records a raw gather on the calling thread finds ahead of the one it
/// copies; records in runs are prefetched twice as far (measured on
/// 784-byte records: 4 and 8 alike).
pub(crate) const FIND_AHEAD: usize = 4;
/// Bytes of each record a pipelined gather prefetches: small records
/// whole, the start of large ones (the hardware prefetcher follows on).
pub(crate) const PREFETCH_LIMIT: usize = 1024;

/// The committed store as one reader sees it: records appended after the
/// snapshot was taken are not part of it.
pub(crate) struct Snapshot<'a> {
    engine: &'a Engine,
    files: Arc<FileTable>,
    phys_len: u64,
}

impl Engine {
    pub(crate) fn snapshot(&self) -> Snapshot<'_> {
        // Files first, then the length: every file a committed record needs
        // was published before that length was.
        let files = self.files();
        let phys_len = self.len.load(Ordering::Acquire);
        Snapshot {
            engine: self,
            files,
            phys_len,
        }
    }
}

impl Snapshot<'_> {
    /// Logical records.
    pub(crate) fn len(&self) -> u64 {
        self.phys_len / self.engine.group
    }

    pub(crate) fn files(&self) -> &FileTable {
        &self.files
    }

    /// Fails on the first index past the end, or on a handle a failed
    /// write left unsure.
    pub(crate) fn check_indices(&self, indices: &[u64]) -> Result<()> {
        self.engine.check_not_failed()?;
        let len = self.len();
        match indices.iter().find(|&&i| i >= len) {
            Some(&index) => Err(Error::IndexOutOfRange { index, len }),
            None => Ok(()),
        }
    }

    pub(crate) fn corrupt(&self, index: u64, reason: String) -> Error {
        Error::CorruptRecord {
            path: self.engine.dir.clone(),
            index,
            reason,
        }
    }

    /// Table entry of physical record `phys` (below the committed length).
    pub(crate) fn phys_loc(&self, phys: u64) -> Result<RecordLoc> {
        self.files
            .loc(phys)?
            .ok_or_else(|| self.missing_entry(phys))
    }

    /// Table entry of physical record `phys` from the maps; only while
    /// every file is mapped (the hot path of a mapped gather).
    #[inline(always)]
    pub(crate) fn mapped_loc(&self, phys: u64) -> Result<RecordLoc> {
        match self.files.loc_bytes(phys) {
            Some(entry) => Ok(RecordLoc::decode(entry)),
            None => Err(self.missing_entry(phys)),
        }
    }

    fn missing_entry(&self, phys: u64) -> Error {
        self.corrupt(
            phys / self.engine.group,
            format!("its table entry {phys} is missing"),
        )
    }

    /// Table entries of every part of each of `indices` (index by index),
    /// read together.
    pub(crate) fn locs_grouped(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        let group = self.engine.group;
        let phys: Vec<u64> = indices
            .iter()
            .flat_map(|&i| (0..group).map(move |part| i * group + part))
            .collect();
        self.files
            .locs(&phys)?
            .into_iter()
            .zip(&phys)
            .map(|(loc, &p)| loc.ok_or_else(|| self.missing_entry(p)))
            .collect()
    }

    /// Table entries of part `part` of each of `indices`, read together.
    pub(crate) fn locs(&self, indices: &[u64], part: u64) -> Result<Vec<RecordLoc>> {
        let group = self.engine.group;
        let phys: Vec<u64> = indices.iter().map(|&i| i * group + part).collect();
        self.files
            .locs(&phys)?
            .into_iter()
            .zip(&phys)
            .map(|(loc, &p)| loc.ok_or_else(|| self.missing_entry(p)))
            .collect()
    }

    /// Table entry of part `part` (0 payload, 1 shape) of logical record `index`.
    #[inline]
    pub(crate) fn loc(&self, index: u64, part: u64) -> Result<RecordLoc> {
        self.phys_loc(index * self.engine.group + part)
    }

    /// The stored bytes of logical record `index` at `loc` (frame, or raw
    /// bytes and trailer).
    #[inline]
    pub(crate) fn stored(&self, index: u64, loc: RecordLoc) -> Result<Cow<'_, [u8]>> {
        self.files
            .stored(loc)?
            .map_err(|reason| self.corrupt(index, reason))
    }

    /// The mapped stored bytes of logical record `index` at `loc`; only
    /// while every file is mapped.
    #[inline(always)]
    pub(crate) fn stored_mapped(&self, index: u64, loc: RecordLoc) -> Result<&[u8]> {
        match self.files.stored_mapped(loc) {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(self.corrupt(index, "its chunk is not mapped".into())),
            Err(reason) => Err(self.corrupt(index, reason)),
        }
    }

    /// Fails unless `loc` lies in its chunk's committed bytes.
    pub(crate) fn check_location(&self, index: u64, loc: RecordLoc) -> Result<()> {
        self.files
            .chunk_of(loc)
            .map(|_| ())
            .map_err(|reason| self.corrupt(index, reason))
    }

    /// Checks an entry's sizes against the format: at most 2^31 logical
    /// bytes, and for a record stored raw, its stored size is its logical
    /// size plus the trailer.
    #[inline(always)]
    pub(crate) fn check_entry(&self, index: u64, loc: RecordLoc, raw: bool) -> Result<()> {
        if u64::from(loc.logic_len) > MAX_RECORD_BYTES {
            return Err(self.corrupt(
                index,
                format!(
                    "it claims {} bytes, more than the format's {MAX_RECORD_BYTES}-byte limit",
                    loc.logic_len
                ),
            ));
        }
        if raw && loc.phys_len as usize != loc.logic_len as usize + self.engine.trailer_len() {
            return Err(self.corrupt(
                index,
                format!(
                    "a raw record of {} bytes stored in {}",
                    loc.logic_len, loc.phys_len
                ),
            ));
        }
        Ok(())
    }

    /// The bytes of a record stored raw (a raw store's payload, or a shape
    /// record) at `loc`, without its trailer; its checksum is checked when
    /// `check` (and the store has checksums).
    #[inline]
    pub(crate) fn raw_record(
        &self,
        index: u64,
        loc: RecordLoc,
        check: bool,
    ) -> Result<Cow<'_, [u8]>> {
        self.check_entry(index, loc, true)?;
        let stored = self.stored(index, loc)?;
        let body_len = loc.logic_len as usize;
        let (body, trailer) = stored.split_at(body_len);
        if check && let Ok(want) = trailer.try_into() {
            checksum::check_body(body, want).map_err(|reason| self.corrupt(index, reason))?;
        }
        Ok(match stored {
            Cow::Borrowed(bytes) => Cow::Borrowed(&bytes[..body_len]),
            Cow::Owned(mut bytes) => {
                bytes.truncate(body_len);
                Cow::Owned(bytes)
            }
        })
    }

    /// Whether the store's payloads are stored raw.
    pub(crate) fn is_raw(&self) -> bool {
        self.engine.codec.is_raw()
    }

    /// Whether gathers check raw records' checksums.
    pub(crate) fn checks_on_read(&self) -> bool {
        self.engine.options.verify_on_read && self.engine.features.checksums
    }

    /// Decodes the frame `stored` of logical record `index` into `dst`.
    #[inline]
    pub(crate) fn decode(&self, index: u64, stored: &[u8], dst: &mut [u8]) -> Result<()> {
        self.engine
            .codec
            .decode(stored, dst)
            .map_err(|reason| self.corrupt(index, reason))
    }

    /// Checks the trailer of a raw record stored as `stored` (`body_len`
    /// bytes, then the trailer).
    #[inline]
    pub(crate) fn check_trailer(&self, index: u64, stored: &[u8], body_len: usize) -> Result<()> {
        let (body, trailer) = stored.split_at(body_len);
        match trailer.try_into() {
            Ok(want) => checksum::check_body(body, want),
            Err(_) => Err(format!("{} stored bytes hold no checksum", stored.len())),
        }
        .map_err(|reason| self.corrupt(index, reason))
    }

    pub(crate) fn parallel(&self, bytes: usize, records: usize) -> bool {
        let threshold = if self.engine.codec.is_raw() {
            PARALLEL_COPY_BYTES
        } else {
            PARALLEL_DECODE_BYTES
        };
        records > 1 && bytes >= threshold && rayon::current_num_threads() > 1
    }

    /// Fills `dst` with the payloads of `indices`, each `dst.len() / indices.len()` bytes.
    pub(crate) fn gather_fixed(&self, indices: &[u64], dst: &mut [u8]) -> Result<()> {
        self.check_indices(indices)?;
        let Some(width) = dst.len().checked_div(indices.len()) else {
            return Ok(());
        };
        if !self.files.mapped() {
            return self.gather_fixed_read(indices, dst, width);
        }
        let raw = self.engine.codec.is_raw();
        if raw && !self.checks_on_read() && !self.parallel(dst.len(), indices.len()) {
            return self.copy_fixed(indices, dst, width);
        }
        // Pass 1: find and check every record of the batch. The table loads
        // are independent, so the CPU overlaps their cache misses; pass 2 then
        // checks, copies or decodes without a lookup between records
        // (measured: 2.5x faster than one record at a time for 784-byte records).
        for &index in indices {
            self.prefetch_entry(index);
        }
        let mut sources: Vec<(u64, &[u8])> = Vec::with_capacity(indices.len());
        for &index in indices {
            let stored = self.find_fixed(index, width)?;
            prefetch(stored, BATCH_PREFETCH_BYTES);
            sources.push((index, stored));
        }
        if raw && self.checks_on_read() {
            self.check_raw(&sources, width)?;
        }
        // Pass 2.
        if raw {
            return self.copy_raw(&sources, dst, width);
        }
        let fill = |(out, &(index, stored)): (&mut [u8], &(u64, &[u8]))| -> Result<()> {
            self.engine
                .codec
                .decode(stored, out)
                .map_err(|reason| self.corrupt(index, reason))
        };
        if self.parallel(dst.len(), indices.len()) {
            dst.par_chunks_mut(width)
                .zip(sources.par_iter())
                .with_min_len(min_len(indices.len()))
                .try_for_each(fill)
        } else {
            dst.chunks_mut(width).zip(&sources).try_for_each(fill)
        }
    }

    /// A raw gather on the calling thread, as a pipeline that keeps the
    /// cache misses of a batch overlapping without outrunning the cache.
    /// `2 * FIND_AHEAD` records ahead of the copy, a record in a run is
    /// found and its first kilobyte prefetched, and the table entry of any
    /// other is prefetched; `FIND_AHEAD` ahead, such a record is found
    /// through its entry and prefetched likewise. A record that fails its
    /// checks ends the gather with the records before it copied.
    fn copy_fixed<'s>(&'s self, indices: &[u64], dst: &mut [u8], width: usize) -> Result<()> {
        const RING: usize = 2 * FIND_AHEAD;
        // Runs hold records of the store's own width: a gather of another
        // width finds every record through its entry, and fails its checks.
        let runs = self.files.run_width() == Some(width);
        // Stage 1: the record's bytes if in a run, else empty (no record
        // is: widths are at least one byte).
        let look = |index: u64| -> &[u8] {
            match runs.then(|| self.files.run_record(index, self.phys_len)) {
                Some(Some(stored)) => {
                    prefetch(stored, PREFETCH_LIMIT);
                    stored
                }
                _ => {
                    if let Some(entry) = self.files.loc_bytes(index) {
                        prefetch_line(entry);
                    }
                    &[]
                }
            }
        };
        // Stage 2: records stage 1 left, through their entries.
        let find = |index: u64, slot: &mut &'s [u8]| -> Result<()> {
            if slot.is_empty() {
                *slot = self.find_fixed(index, width)?;
                prefetch(slot, PREFETCH_LIMIT);
            }
            Ok(())
        };
        let mut ring: [&[u8]; RING] = [&[]; RING];
        for (slot, &index) in ring.iter_mut().zip(indices) {
            *slot = look(index);
        }
        for (slot, &index) in ring.iter_mut().zip(indices).take(FIND_AHEAD) {
            find(index, slot)?;
        }
        for (k, out) in dst.chunks_mut(width).enumerate() {
            if let Some(&index) = indices.get(k + FIND_AHEAD) {
                find(index, &mut ring[(k + FIND_AHEAD) % RING])?;
            }
            copy_record(out, &ring[k % RING][..width], false);
            if let Some(&index) = indices.get(k + RING) {
                ring[k % RING] = look(index);
            }
        }
        Ok(())
    }

    /// The stored bytes of dense record `index` (a dense store's physical
    /// record of the same number), checked to hold `width` logical bytes:
    /// its location from the run index, or its table entry.
    #[inline]
    fn find_fixed(&self, index: u64, width: usize) -> Result<&[u8]> {
        let loc = match self.files.run_loc(index, self.phys_len) {
            Some(loc) => loc,
            None => self.mapped_loc(index)?,
        };
        self.check_width(index, loc, width)?;
        self.stored_mapped(index, loc)
    }

    /// Starts loading the table entry of dense record `index`, unless the
    /// run index knows where the record is.
    #[inline(always)]
    fn prefetch_entry(&self, index: u64) {
        if !self.files.in_run(index)
            && let Some(entry) = self.files.loc_bytes(index)
        {
            prefetch_line(entry);
        }
    }

    /// Fails unless `loc` holds a record of `width` logical bytes, stored
    /// as the codec stores one.
    #[inline]
    fn check_width(&self, index: u64, loc: RecordLoc, width: usize) -> Result<()> {
        let stored_width = if self.engine.codec.is_raw() {
            width + self.engine.trailer_len()
        } else {
            loc.phys_len as usize
        };
        if loc.logic_len as usize != width || loc.phys_len as usize != stored_width {
            return Err(self.corrupt(
                index,
                format!(
                    "it is {} bytes ({} stored), expected {width}",
                    loc.logic_len, loc.phys_len
                ),
            ));
        }
        Ok(())
    }

    /// [`gather_fixed`](Self::gather_fixed) on a storage without maps: the
    /// batch's table entries in one round of reads, then its records in
    /// another — a raw record straight into `dst` — then checks and decodes.
    fn gather_fixed_read(&self, indices: &[u64], dst: &mut [u8], width: usize) -> Result<()> {
        let locs = self.locs(indices, 0)?;
        for (&index, &loc) in indices.iter().zip(&locs) {
            self.check_width(index, loc, width)?;
            self.check_location(index, loc)?;
        }
        if self.is_raw() && !self.checks_on_read() {
            let mut reads: Vec<(RecordLoc, &mut [u8])> =
                locs.iter().copied().zip(dst.chunks_mut(width)).collect();
            return self.read_batch(&mut reads);
        }
        let (stored, spans) = self.read_stored(&locs)?;
        let jobs = dst
            .chunks_mut(width)
            .zip(indices)
            .zip(spans)
            .map(|((out, &index), span)| ReadJob { out, index, span })
            .collect();
        self.finish(jobs, &stored)
    }

    /// Reads every record at `reads`'s locations (checked) into its buffer,
    /// each chunk's reads submitted together.
    fn read_batch(&self, reads: &mut [(RecordLoc, &mut [u8])]) -> Result<()> {
        let chunks = self.files.chunks.len();
        let mut by_chunk: Vec<Vec<(u64, &mut [u8])>> = (0..chunks).map(|_| Vec::new()).collect();
        for (loc, buf) in reads.iter_mut() {
            by_chunk[loc.chunk as usize].push((u64::from(loc.offset), &mut buf[..]));
        }
        for (chunk, mut reads) in self.files.chunks.iter().zip(by_chunk) {
            if !reads.is_empty() {
                chunk.file.read_batch(&mut reads)?;
            }
        }
        Ok(())
    }

    /// Reads the stored bytes of every record at `locs` (checked) end to
    /// end: the bytes, and where each record's lie.
    pub(crate) fn read_stored(
        &self,
        locs: &[RecordLoc],
    ) -> Result<(Vec<u8>, Vec<std::ops::Range<usize>>)> {
        let mut spans = Vec::with_capacity(locs.len());
        let mut end = 0;
        for loc in locs {
            spans.push(end..end + loc.phys_len as usize);
            end += loc.phys_len as usize;
        }
        let mut stored = vec![0; end];
        let mut rest = &mut stored[..];
        let mut reads = Vec::with_capacity(locs.len());
        for &loc in locs {
            let (buf, tail) = rest.split_at_mut(loc.phys_len as usize);
            reads.push((loc, buf));
            rest = tail;
        }
        self.read_batch(&mut reads)?;
        Ok((stored, spans))
    }

    /// Turns read records into logical bytes: each job's record, stored at
    /// `span` of `stored`, checked and copied (raw) or decoded into its buffer.
    pub(crate) fn finish(&self, mut jobs: Vec<ReadJob<'_>>, stored: &[u8]) -> Result<()> {
        let raw = self.is_raw();
        let check = self.checks_on_read();
        let one = |job: &mut ReadJob<'_>| {
            let bytes = &stored[job.span.clone()];
            if !raw {
                return self.decode(job.index, bytes, job.out);
            }
            if check {
                self.check_trailer(job.index, bytes, job.out.len())?;
            }
            job.out.copy_from_slice(&bytes[..job.out.len()]);
            Ok(())
        };
        let bytes = jobs.iter().map(|j| j.out.len()).sum();
        if self.parallel(bytes, jobs.len()) {
            let min = min_len(jobs.len());
            jobs.par_iter_mut().with_min_len(min).try_for_each(one)
        } else {
            jobs.iter_mut().try_for_each(one)
        }
    }

    /// Checks the trailers of raw records stored as `sources`, `width` bytes
    /// each (in parallel for large batches).
    fn check_raw(&self, sources: &[(u64, &[u8])], width: usize) -> Result<()> {
        let check = |&(index, stored): &(u64, &[u8])| self.check_trailer(index, stored, width);
        if self.parallel(width * sources.len(), sources.len()) {
            sources
                .par_iter()
                .with_min_len(min_len(sources.len()))
                .try_for_each(check)
        } else {
            sources.iter().try_for_each(check)
        }
    }

    /// Pass 2 of a raw gather: plain copies of `width` bytes (large records
    /// through [`copy_record`]), without the trailers.
    fn copy_raw(&self, sources: &[(u64, &[u8])], dst: &mut [u8], width: usize) -> Result<()> {
        let large = width >= LARGE_RECORD;
        let streaming = dst.len() >= STREAMING_BATCH;
        let fill = |(out, &(_, stored)): (&mut [u8], &(u64, &[u8]))| {
            let body = &stored[..width];
            if large {
                copy_record(out, body, streaming);
            } else {
                out.copy_from_slice(body);
            }
        };
        if self.parallel(dst.len(), sources.len()) {
            dst.par_chunks_mut(width)
                .zip(sources.par_iter())
                .with_min_len(min_len(sources.len()))
                .for_each(fill);
        } else {
            dst.chunks_mut(width).zip(sources).for_each(fill);
        }
        Ok(())
    }

    /// Cuts `dst` into the logical bytes of records `indices` at `locs`,
    /// end to end, each with where its stored bytes lie in a scratch buffer.
    pub(crate) fn split_packed<'d>(
        &self,
        indices: &[u64],
        locs: &[RecordLoc],
        dst: &'d mut [u8],
        spans: impl Iterator<Item = std::ops::Range<usize>>,
    ) -> Result<Vec<ReadJob<'d>>> {
        let mut rest = dst;
        let mut jobs = Vec::with_capacity(indices.len());
        for ((&index, &loc), span) in indices.iter().zip(locs).zip(spans) {
            let (out, tail) = rest
                .split_at_mut_checked(loc.logic_len as usize)
                .ok_or_else(|| {
                    self.corrupt(index, "the batch buffer is shorter than its records".into())
                })?;
            jobs.push(ReadJob { out, index, span });
            rest = tail;
        }
        Ok(jobs)
    }
}

/// A record read into a batch's scratch buffer, to check or decode into `out`.
pub(crate) struct ReadJob<'a> {
    out: &'a mut [u8],
    index: u64,
    /// Where its stored bytes lie in the scratch buffer.
    span: std::ops::Range<usize>,
}

/// Records per parallel piece: contiguous runs, a few per thread so a slow
/// piece does not hold up the batch.
pub(crate) fn min_len(records: usize) -> usize {
    records
        .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
        .max(1)
}
