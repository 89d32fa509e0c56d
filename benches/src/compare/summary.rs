//! The closing table: the targets of the store, sampler and loader issues,
//! each with the figure this run measured, reached or not.

use super::loader_table::Target;
use super::report::{Report, Table};

/// A target read from the report's rows: `metric` of `system` in `workload`
/// must reach `goal`.
struct RowTarget {
    workload: char,
    system: &'static str,
    metric: &'static str,
    goal: f64,
    what: &'static str,
    goal_text: &'static str,
    unit: &'static str,
}

const ROW_TARGETS: [RowTarget; 6] = [
    RowTarget {
        workload: 'a',
        system: "zrecord raw",
        metric: "vs_in_memory",
        goal: 0.8,
        what: "(a) zrecord raw gather / in-memory gather (same threads)",
        goal_text: "≥ 0.8×",
        unit: "×",
    },
    RowTarget {
        workload: 'b',
        system: "zrecord raw",
        metric: "vs_mmap_npy",
        goal: 0.8,
        what: "(b) zrecord raw gather / memory-mapped gather (.npy)",
        goal_text: "≥ 0.8×",
        unit: "×",
    },
    RowTarget {
        workload: 'a',
        system: "zrecord zstd",
        metric: "vs_limit",
        goal: 0.9,
        what: "(a) zrecord zstd gather / the same frames decoded from memory, all cores",
        goal_text: "≥ 0.9×",
        unit: "×",
    },
    RowTarget {
        workload: 'b',
        system: "zrecord zstd",
        metric: "vs_limit",
        goal: 0.9,
        what: "(b) zrecord zstd gather / the same frames decoded from memory, all cores",
        goal_text: "≥ 0.9×",
        unit: "×",
    },
    RowTarget {
        workload: 'd',
        system: "zsampler iid",
        metric: "g_indices_s",
        goal: 1.0,
        what: "(d) zsampler iid, batch 1024, one core",
        goal_text: "≥ 1 G indices/s",
        unit: " G/s",
    },
    RowTarget {
        workload: 'd',
        system: "zsampler cyclic",
        metric: "g_indices_s",
        goal: 0.2,
        what: "(d) zsampler cyclic, batch 1024 over 1M, one core",
        goal_text: "≥ 0.2 G indices/s",
        unit: " G/s",
    },
];

/// The targets table from the rows of `report` and the loader's targets.
pub fn targets(report: &Report, loader: &[Target]) -> Table {
    let mut table = Table::new(
        "Targets of the store, sampler and loader issues",
        &["target", "goal", "measured", "reached"],
    );
    for t in &ROW_TARGETS {
        let value = report.rows.iter().find(|r| {
            r.workload == t.workload.to_string() && r.system == t.system && r.metric == t.metric
        });
        if let Some(row) = value {
            let reached = row.value >= t.goal;
            table.row(vec![
                t.what.into(),
                t.goal_text.into(),
                format!("{:.2}{}", row.value, t.unit),
                if reached {
                    "yes".into()
                } else {
                    "**no**".into()
                },
            ]);
        }
    }
    for t in loader {
        table.row(vec![
            t.what.clone(),
            t.goal.clone(),
            t.measured.clone(),
            if t.reached {
                "yes".into()
            } else {
                "**no**".into()
            },
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::machine::Machine;

    #[test]
    fn targets_read_the_rows() {
        let mut r = Report::new(Machine::probe());
        r.push('a', "zrecord raw", "vs_in_memory", 0.95, "x");
        r.push('d', "zsampler iid", "g_indices_s", 0.5, "G/s");
        let t = targets(&r, &[]);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][3], "yes");
        assert_eq!(t.rows[1][3], "**no**");
    }
}
