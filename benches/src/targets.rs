//! The store targets of issue 2, each zrecord against its reference on the
//! same records, with the same index plan, in the same run:
//!
//! | target | zrecord | reference | goal |
//! |---|---|---|---|
//! | (a) raw, 256 KiB records | raw `gather_into` | in-memory gather, same threads | ≥ 0.8× |
//! | (b) raw, 784 B records | raw `gather_into` | mmap gather, one thread | ≥ 0.8× |
//! | (a), (b) zstd | zstd `gather_into` | the same frames decoded from memory, all cores | ≥ 0.9× |

use crate::plans::{BATCH, plan};
use crate::systems::{DenseSuite, Gather};
use crate::workloads::{DENSE_A, DENSE_B, DenseWorkload};

/// A system of a [`DenseSuite`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemKind {
    /// [`crate::systems::InMemory`].
    InMemory,
    /// [`crate::systems::Mmap`].
    Mmap,
    /// [`crate::systems::Frames`].
    Frames,
    /// zrecord, `Codec::Raw`.
    ZrecordRaw,
    /// zrecord, `Codec::Zstd`.
    ZrecordZstd,
}

impl SystemKind {
    /// Identifier without spaces (criterion benchmark ids).
    pub const fn id(self) -> &'static str {
        match self {
            SystemKind::InMemory => "in_memory",
            SystemKind::Mmap => "mmap",
            SystemKind::Frames => "zstd_frames_from_memory",
            SystemKind::ZrecordRaw => "zrecord_raw",
            SystemKind::ZrecordZstd => "zrecord_zstd",
        }
    }

    /// The system in `suite`.
    pub fn of(self, suite: &DenseSuite) -> &dyn Gather {
        match self {
            SystemKind::InMemory => &suite.in_memory,
            SystemKind::Mmap => &suite.mmap,
            SystemKind::Frames => &suite.frames,
            SystemKind::ZrecordRaw => &suite.zrecord_raw,
            SystemKind::ZrecordZstd => &suite.zrecord_zstd,
        }
    }
}

/// One target: zrecord against a reference on a workload.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Identifier without spaces (criterion group names).
    pub id: &'static str,
    /// Table label.
    pub label: &'static str,
    /// The workload.
    pub workload: DenseWorkload,
    /// The zrecord system measured.
    pub zrecord: SystemKind,
    /// The reference the goal is a ratio to.
    pub reference: SystemKind,
    /// Further systems shown for context, not judged.
    pub context: &'static [SystemKind],
    /// The goal: zrecord throughput ≥ `goal` × the reference's.
    pub goal: f64,
}

/// Issue 2's targets, in table order.
pub const TARGETS: [Target; 4] = [
    Target {
        id: "a_raw_256KiB",
        label: "(a) raw, 256 KiB records",
        workload: DENSE_A,
        zrecord: SystemKind::ZrecordRaw,
        reference: SystemKind::InMemory,
        context: &[],
        goal: 0.8,
    },
    Target {
        id: "b_raw_784B",
        label: "(b) raw, 784 B records",
        workload: DENSE_B,
        zrecord: SystemKind::ZrecordRaw,
        reference: SystemKind::Mmap,
        context: &[SystemKind::InMemory],
        goal: 0.8,
    },
    Target {
        id: "a_zstd_256KiB",
        label: "(a) zstd, 256 KiB records",
        workload: DENSE_A,
        zrecord: SystemKind::ZrecordZstd,
        reference: SystemKind::Frames,
        context: &[],
        goal: 0.9,
    },
    Target {
        id: "b_zstd_784B",
        label: "(b) zstd, 784 B records",
        workload: DENSE_B,
        zrecord: SystemKind::ZrecordZstd,
        reference: SystemKind::Frames,
        context: &[],
        goal: 0.9,
    },
];

impl Target {
    /// The systems of the target: zrecord, its reference, then the context.
    pub fn systems(&self) -> Vec<SystemKind> {
        let mut all = vec![self.zrecord, self.reference];
        all.extend_from_slice(self.context);
        all
    }

    /// Bytes of one batch.
    pub const fn batch_bytes(&self) -> usize {
        BATCH * self.workload.record_bytes()
    }
}

/// How much of each workload a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The full workloads of BENCH-DATA.md (checksummed).
    Full,
    /// Prefixes of the workloads, for smoke tests (not checksummed).
    Quick,
}

impl Scale {
    /// Records of `workload` at this scale.
    pub fn records(self, workload: &DenseWorkload) -> usize {
        match self {
            Scale::Full => workload.records,
            Scale::Quick => (workload.records / 20).clamp(1, 10_000),
        }
    }

    /// The index plan of `workload` at this scale: enough batches to visit
    /// every record about four times in a full run.
    pub fn plan(self, workload: &DenseWorkload) -> Vec<Vec<u64>> {
        let records = self.records(workload);
        let nb = (4 * records).div_ceil(BATCH).clamp(8, 256);
        plan(workload.plan_seed, nb, BATCH, records as u64)
    }
}

/// The distinct workloads of [`TARGETS`], in first-use order.
pub fn workloads() -> Vec<DenseWorkload> {
    let mut seen: Vec<DenseWorkload> = Vec::new();
    for t in TARGETS {
        if !seen.iter().any(|w| w.name == t.workload.name) {
            seen.push(t.workload);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_cover_both_workloads() {
        let names: Vec<_> = workloads().iter().map(|w| w.name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(Scale::Quick.records(&DENSE_A), 125);
        assert_eq!(Scale::Quick.records(&DENSE_B), 10_000);
        let p = Scale::Full.plan(&DENSE_A);
        assert_eq!((p.len(), p[0].len()), (40, BATCH));
        assert_eq!(Scale::Full.plan(&DENSE_B).len(), 256);
    }
}
