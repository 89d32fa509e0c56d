//! Verify: read and decode every record, check every location, length, frame
//! checksum and shape, and that no two records share bytes.

use rayon::prelude::*;

use super::{Engine, Snapshot};
use crate::dtype::validate_bytes;
use crate::format::{TypeIdentity, decode_shape};
use crate::{Codec, Error, Result};

/// What [`verify`](crate::DenseStore::verify) checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Records read and decoded.
    pub records: u64,
    /// Their payload bytes before compression.
    pub logical_bytes: u64,
    /// Their stored bytes, shape records included.
    pub stored_bytes: u64,
}

/// Records decoded per parallel block; errors are reported in index order.
const BLOCK: u64 = 4096;

impl Engine {
    pub(crate) fn verify(&self, mut progress: impl FnMut(u64, u64)) -> Result<VerifyReport> {
        let snap = self.snapshot();
        let len = snap.len();
        let mut report = VerifyReport::default();
        for start in (0..len).step_by(BLOCK as usize) {
            let end = (start + BLOCK).min(len);
            let results: Vec<Result<(u64, u64)>> = (start..end)
                .into_par_iter()
                .map_init(Vec::new, |scratch, index| {
                    self.verify_record(&snap, index, scratch)
                })
                .collect();
            for result in results {
                let (logical, stored) = result?;
                report.records += 1;
                report.logical_bytes += logical;
                report.stored_bytes += stored;
            }
            progress(end, len);
        }
        self.verify_disjoint(&snap)?;
        Ok(report)
    }

    /// Checks one logical record; returns its logical and stored sizes.
    fn verify_record(
        &self,
        snap: &Snapshot<'_>,
        index: u64,
        scratch: &mut Vec<u8>,
    ) -> Result<(u64, u64)> {
        let corrupt = |reason: String| Error::CorruptRecord {
            path: self.dir.clone(),
            index,
            reason,
        };
        let loc = snap.loc(index, 0)?;
        let mut stored = u64::from(loc.phys_len);
        match &self.identity {
            TypeIdentity::Dense { .. } => {
                let width = self.identity.record_width().unwrap_or(0);
                if u64::from(loc.logic_len) != width {
                    return Err(corrupt(format!(
                        "it is {} bytes, the store's records are {width}",
                        loc.logic_len
                    )));
                }
            }
            TypeIdentity::Ragged { dtype } => {
                let shape_loc = snap.loc(index, 1)?;
                if shape_loc.phys_len != shape_loc.logic_len {
                    return Err(corrupt(
                        "its shape record is compressed; shape records are stored raw".into(),
                    ));
                }
                let mut dims = Vec::new();
                decode_shape(snap.stored(index, shape_loc)?, &mut dims).map_err(corrupt)?;
                let elements = dims
                    .iter()
                    .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
                if elements.and_then(|e| e.checked_mul(dtype.size() as u64))
                    != Some(u64::from(loc.logic_len))
                {
                    return Err(corrupt(format!(
                        "its shape {dims:?} of {dtype} does not match its {} payload bytes",
                        loc.logic_len
                    )));
                }
                stored += u64::from(shape_loc.phys_len);
            }
        }
        if *self.codec() == Codec::Raw && loc.phys_len != loc.logic_len {
            return Err(corrupt(format!(
                "a raw record of {} bytes stored in {}",
                loc.logic_len, loc.phys_len
            )));
        }
        scratch.resize(loc.logic_len as usize, 0);
        snap.read_into(index, loc, scratch)?;
        validate_bytes(self.identity.dtype(), scratch).map_err(|e| corrupt(e.to_string()))?;
        Ok((loc.logic_len.into(), stored))
    }

    /// Checks that no two physical records overlap.
    fn verify_disjoint(&self, snap: &Snapshot<'_>) -> Result<()> {
        let mut spans = Vec::with_capacity((snap.len() * self.group) as usize);
        for phys in 0..snap.len() * self.group {
            let loc = snap.phys_loc(phys)?;
            spans.push((loc.chunk, loc.offset, loc.end(), phys));
        }
        spans.sort_unstable();
        for pair in spans.windows(2) {
            let [(c1, _, end1, p1), (c2, start2, _, p2)] = [pair[0], pair[1]];
            if c1 == c2 && end1 > u64::from(start2) {
                return Err(Error::CorruptRecord {
                    path: self.dir.clone(),
                    index: p2.max(p1) / self.group,
                    reason: format!(
                        "its bytes in chunk {c2} overlap record {}'s",
                        p2.min(p1) / self.group
                    ),
                });
            }
        }
        Ok(())
    }
}
