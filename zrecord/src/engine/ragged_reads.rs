//! A ragged batch's records found (and, without maps, read) together:
//! payload and shape table entries, then both records of every index, so a
//! batch costs two rounds of reads on a storage without maps rather than
//! three reads per record. With maps, each record is found and checked once,
//! then the batch is copied or decoded, each record prefetched a few ahead.

use std::ops::Range;

use rayon::prelude::*;

use super::Snapshot;
use super::gather::{FIND_AHEAD, PREFETCH_LIMIT, min_len};
use super::prefetch::{BATCH_PREFETCH_BYTES, prefetch, prefetch_line};
use crate::Result;
use crate::format::RecordLoc;

/// Table entries the first pass prefetches ahead of the one it reads
/// (measured: 16 and 32 alike).
const ENTRY_AHEAD: usize = 16;

/// The records of a ragged batch, ready to decode.
pub(crate) struct RaggedReads<'s> {
    /// Table entries of each index's payload.
    pub(crate) payloads: Vec<RecordLoc>,
    /// Table entries of each index's shape record.
    shapes: Vec<RecordLoc>,
    /// With maps: the stored bytes of each index's payload.
    mapped: Vec<&'s [u8]>,
    /// Without maps: the stored bytes of payload `k` (at `spans[2k]`) and
    /// shape `k` (at `spans[2k + 1]`), read in one round.
    read: Option<(Vec<u8>, Vec<Range<usize>>)>,
}

impl Snapshot<'_> {
    /// Finds the records of `indices` (checked against the committed store)
    /// and, on a storage without maps, reads them.
    pub(crate) fn ragged_reads(&self, indices: &[u64]) -> Result<RaggedReads<'_>> {
        let raw = self.is_raw();
        let files = self.files();
        if files.mapped() {
            // Each entry is prefetched ENTRY_AHEAD records before it is
            // read, so the table's cache misses overlap; the records' bytes
            // are prefetched while the batch is copied. (Measured on token
            // sequences: prefetching every entry of the batch up front, then
            // every record's first lines, kept the miss buffers full and
            // stalled the loop: 0.98x of a memory-mapped array against
            // 1.04x this way.)
            for &index in indices.iter().take(ENTRY_AHEAD) {
                if let Some(entry) = files.loc_bytes(index * 2) {
                    prefetch_line(entry);
                }
            }
            let mut payloads = Vec::with_capacity(indices.len());
            let mut shapes = Vec::with_capacity(indices.len());
            let mut mapped = Vec::with_capacity(indices.len());
            for (k, &index) in indices.iter().enumerate() {
                if let Some(&ahead) = indices.get(k + ENTRY_AHEAD)
                    && let Some(entry) = files.loc_bytes(ahead * 2)
                {
                    prefetch_line(entry);
                }
                let loc = self.mapped_loc(index * 2)?;
                self.check_entry(index, loc, raw)?;
                let stored = self.stored_mapped(index, loc)?;
                let shape = self.mapped_loc(index * 2 + 1)?;
                if self.shape_implied(shape).is_none()
                    && let Ok(Some(bytes)) = files.stored_mapped(shape)
                {
                    prefetch(bytes, BATCH_PREFETCH_BYTES);
                }
                payloads.push(loc);
                shapes.push(shape);
                mapped.push(stored);
            }
            return Ok(RaggedReads {
                payloads,
                shapes,
                mapped,
                read: None,
            });
        }
        let both = self.locs_grouped(indices)?;
        for (k, &index) in indices.iter().enumerate() {
            let (payload, shape) = (both[2 * k], both[2 * k + 1]);
            self.check_entry(index, payload, raw)?;
            self.check_entry(index, shape, true)?;
            self.check_location(index, payload)?;
            self.check_location(index, shape)?;
        }
        let read = self.read_stored(&both)?;
        let (payloads, shapes) = both.chunks(2).map(|pair| (pair[0], pair[1])).unzip();
        Ok(RaggedReads {
            payloads,
            shapes,
            mapped: Vec::new(),
            read: Some(read),
        })
    }

    /// The rank of the `k`-th record of `reads` when its shape record's table
    /// entry alone decides its shape, so that record need not be read: a
    /// shape record holds `8 + 8·rank` bytes, and a record of rank 0 or 1 has
    /// the shape `[]` or `[payload elements]`. Token sequences, strings and
    /// files are rank 1, so their gathers read one record per index, as a
    /// flat file with an offsets array does. `None` for higher ranks, for a
    /// storage without maps (both records are read already), and when
    /// gathers check records (the shape record's checksum is checked then).
    #[inline]
    pub(crate) fn implied_rank(&self, reads: &RaggedReads<'_>, k: usize) -> Option<usize> {
        if reads.read.is_some() {
            return None;
        }
        self.shape_implied(reads.shapes[k])
    }

    /// The rank a shape record's entry `loc` implies (see
    /// [`implied_rank`](Self::implied_rank)), on a mapped store.
    #[inline]
    pub(crate) fn shape_implied(&self, loc: RecordLoc) -> Option<usize> {
        match loc.logic_len {
            8 | 16 if !self.checks_on_read() => Some((loc.logic_len / 8 - 1) as usize),
            _ => None,
        }
    }

    /// The shape record of the `k`-th record of `reads` (logical record
    /// `index`), without its trailer; its checksum checked when gathers check.
    #[inline]
    pub(crate) fn ragged_shape<'r>(
        &'r self,
        reads: &'r RaggedReads<'_>,
        k: usize,
        index: u64,
    ) -> Result<&'r [u8]> {
        let loc = reads.shapes[k];
        let stored = match &reads.read {
            Some((stored, spans)) => &stored[spans[2 * k + 1].clone()],
            None => {
                self.check_entry(index, loc, true)?;
                self.stored_mapped(index, loc)?
            }
        };
        let body = loc.logic_len as usize;
        if self.checks_on_read() {
            self.check_trailer(index, stored, body)?;
        }
        Ok(&stored[..body])
    }

    /// Fills `dst` with the payloads of `reads` (records `indices`) laid end
    /// to end.
    pub(crate) fn ragged_payloads(
        &self,
        reads: &RaggedReads<'_>,
        indices: &[u64],
        dst: &mut [u8],
    ) -> Result<()> {
        let Some((stored, spans)) = &reads.read else {
            return self.fill_mapped(reads, indices, dst);
        };
        let payload_spans = spans.iter().step_by(2).cloned();
        let jobs = self.split_packed(indices, &reads.payloads, dst, payload_spans)?;
        self.finish(jobs, stored)
    }

    /// [`ragged_payloads`](Self::ragged_payloads) from the maps: each payload
    /// found by [`ragged_reads`](Self::ragged_reads) copied (raw, its trailer
    /// checked when gathers check) or decoded into its place.
    fn fill_mapped(&self, reads: &RaggedReads<'_>, indices: &[u64], dst: &mut [u8]) -> Result<()> {
        let mut rest = dst;
        let mut jobs = Vec::with_capacity(indices.len());
        for ((&index, loc), &stored) in indices.iter().zip(&reads.payloads).zip(&reads.mapped) {
            let (out, tail) = rest
                .split_at_mut_checked(loc.logic_len as usize)
                .ok_or_else(|| {
                    self.corrupt(index, "the batch buffer is shorter than its records".into())
                })?;
            jobs.push((index, stored, out));
            rest = tail;
        }
        let (raw, check) = (self.is_raw(), self.checks_on_read());
        let one = |(index, stored, out): &mut (u64, &[u8], &mut [u8])| {
            if !raw {
                return self.decode(*index, stored, out);
            }
            if check {
                self.check_trailer(*index, stored, out.len())?;
            }
            out.copy_from_slice(&stored[..out.len()]);
            Ok(())
        };
        let bytes = jobs.iter().map(|j| j.2.len()).sum();
        if self.parallel(bytes, jobs.len()) {
            let min = min_len(jobs.len());
            return jobs.par_iter_mut().with_min_len(min).try_for_each(one);
        }
        // On one thread, the records `FIND_AHEAD` ahead are on their way
        // while this one is copied or decoded.
        for k in 0..jobs.len() {
            if let Some((_, ahead, _)) = jobs.get(k + FIND_AHEAD) {
                prefetch(ahead, PREFETCH_LIMIT);
            }
            one(&mut jobs[k])?;
        }
        Ok(())
    }
}
