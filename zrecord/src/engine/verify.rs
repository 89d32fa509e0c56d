//! Verify: read and decode every record, check every location, length, frame
//! checksum and shape, and that no two records share bytes.

use rayon::prelude::*;

use super::{Engine, Snapshot};
use crate::codec::FrameChecker;
use crate::dtype::validate_bytes;
use crate::format::{RecordLoc, TypeIdentity, decode_shape};
use crate::{Error, Result};

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
        let checker = || {
            self.codec.frame_checker().map_err(|reason| Error::Corrupt {
                path: self.dir.clone(),
                reason,
            })
        };
        for start in (0..len).step_by(BLOCK as usize) {
            let end = (start + BLOCK).min(len);
            let results: Vec<Result<(u64, u64)>> = (start..end)
                .into_par_iter()
                .map_init(checker, |checker, index| {
                    let checker = checker.as_mut().map_err(|e| Error::Corrupt {
                        path: self.dir.clone(),
                        reason: e.to_string(),
                    })?;
                    self.verify_record(&snap, index, checker)
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
    /// Memory stays bounded: raw records are checked where they lie, frames
    /// are decoded a piece at a time.
    pub(super) fn verify_record(
        &self,
        snap: &Snapshot<'_>,
        index: u64,
        checker: &mut FrameChecker<'_>,
    ) -> Result<(u64, u64)> {
        let corrupt = |reason: String| Error::CorruptRecord {
            path: self.dir.clone(),
            index,
            reason,
        };
        let loc = snap.loc(index, 0)?;
        snap.check_entry(index, loc, self.codec.is_raw())?;
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
                let mut dims = Vec::new();
                decode_shape(&snap.raw_record(index, shape_loc, true)?, &mut dims)
                    .map_err(corrupt)?;
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
                if loc.logic_len == 0 && !self.allows_empty_records() {
                    return Err(corrupt(
                        "it has zero elements, which a format-1 store cannot hold".into(),
                    ));
                }
                stored += u64::from(shape_loc.phys_len);
            }
        }
        let dtype = self.identity.dtype();
        let valid = |bytes: &[u8]| validate_bytes(dtype, bytes).map_err(|e| e.to_string());
        if self.codec.is_raw() {
            valid(&snap.raw_record(index, loc, true)?).map_err(corrupt)?;
        } else {
            checker
                .check(&snap.stored(index, loc)?, loc.logic_len as usize, valid)
                .map_err(corrupt)?;
        }
        Ok((loc.logic_len.into(), stored))
    }

    /// Checks that no two physical records overlap. Holds one 16-byte span
    /// per record (as much as the table), looking the records up again only
    /// to name an overlap.
    fn verify_disjoint(&self, snap: &Snapshot<'_>) -> Result<()> {
        let phys_len = snap.len() * self.group;
        let span = |loc: RecordLoc| {
            u128::from(loc.chunk) << 96 | u128::from(loc.offset) << 64 | u128::from(loc.end())
        };
        let mut spans = Vec::with_capacity(phys_len as usize);
        for phys in 0..phys_len {
            spans.push(span(snap.phys_loc(phys)?));
        }
        spans.sort_unstable();
        let overlap = spans.windows(2).find(|pair| {
            let [a, b] = [pair[0], pair[1]];
            a >> 96 == b >> 96 && a as u64 > (b >> 64) as u32 as u64
        });
        let Some(&[a, b]) = overlap else {
            return Ok(());
        };
        drop(spans);
        // Name the two records (two spans may be equal: two entries, one place).
        let owner = |want: u128, not: Option<u64>| -> Result<u64> {
            for phys in 0..phys_len {
                if Some(phys) != not && span(snap.phys_loc(phys)?) == want {
                    return Ok(phys);
                }
            }
            Ok(0)
        };
        let first = owner(a, None)?;
        let second = owner(b, Some(first))?;
        let (first, second) = (first / self.group, second / self.group);
        Err(Error::CorruptRecord {
            path: self.dir.clone(),
            index: first.max(second),
            reason: format!(
                "its bytes in chunk {} overlap record {}'s",
                b >> 96,
                first.min(second)
            ),
        })
    }
}
