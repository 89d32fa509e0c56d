//! A ragged batch's records found (and, without maps, read) together:
//! payload and shape table entries, then both records of every index, so a
//! batch costs two rounds of reads on a storage without maps rather than
//! three reads per record.

use std::ops::Range;

use super::Snapshot;
use crate::Result;
use crate::format::RecordLoc;

/// The records of a ragged batch, ready to decode.
pub(crate) struct RaggedReads {
    /// Table entries of each index's payload.
    pub(crate) payloads: Vec<RecordLoc>,
    /// Table entries of each index's shape record.
    shapes: Vec<RecordLoc>,
    /// Without maps: the stored bytes of payload `k` (at `spans[2k]`) and
    /// shape `k` (at `spans[2k + 1]`), read in one round.
    read: Option<(Vec<u8>, Vec<Range<usize>>)>,
}

impl Snapshot<'_> {
    /// Finds the records of `indices` (checked against the committed store)
    /// and, on a storage without maps, reads them.
    pub(crate) fn ragged_reads(&self, indices: &[u64]) -> Result<RaggedReads> {
        let raw = self.is_raw();
        if self.files().mapped() {
            let mut payloads = Vec::with_capacity(indices.len());
            let mut shapes = Vec::with_capacity(indices.len());
            for &index in indices {
                let loc = self.mapped_loc(index * 2)?;
                self.check_entry(index, loc, raw)?;
                payloads.push(loc);
                shapes.push(self.mapped_loc(index * 2 + 1)?);
            }
            return Ok(RaggedReads {
                payloads,
                shapes,
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
    pub(crate) fn implied_rank(&self, reads: &RaggedReads, k: usize) -> Option<usize> {
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
        reads: &'r RaggedReads,
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
        reads: &RaggedReads,
        indices: &[u64],
        dst: &mut [u8],
    ) -> Result<()> {
        let Some((stored, spans)) = &reads.read else {
            return self.gather_packed(indices, &reads.payloads, dst);
        };
        let payload_spans = spans.iter().step_by(2).cloned();
        let jobs = self.split_packed(indices, &reads.payloads, dst, payload_spans)?;
        self.finish(jobs, stored)
    }
}
