//! The closing table: the targets set for the store, the sampler and the
//! loader, each with the figure this run measured, reached or not.

use super::loader_table::Target;
use super::report::{Report, Table};

/// Targets read from the report's rows: (workload, system, metric, goal,
/// what, the goal in words, unit): `metric` of `system` must reach `goal`.
type RowTarget = (
    char,
    &'static str,
    &'static str,
    f64,
    &'static str,
    &'static str,
    &'static str,
);

#[rustfmt::skip]
const ROW_TARGETS: [RowTarget; 6] = [
    ('a', "zrecord raw", "vs_in_memory", 0.8,
     "(a) zrecord raw gather / in-memory gather (same threads)", "≥ 0.8×", "×"),
    ('b', "zrecord raw", "vs_mmap_npy", 0.8,
     "(b) zrecord raw gather / memory-mapped gather (.npy)", "≥ 0.8×", "×"),
    ('a', "zrecord zstd", "vs_limit", 0.9,
     "(a) zrecord zstd gather / the same frames decoded from memory, all cores", "≥ 0.9×", "×"),
    ('b', "zrecord zstd", "vs_limit", 0.9,
     "(b) zrecord zstd gather / the same frames decoded from memory, all cores", "≥ 0.9×", "×"),
    ('d', "zsampler iid", "g_indices_s", 1.0,
     "(d) zsampler iid, batch 1024, one core", "≥ 1 G indices/s", " G/s"),
    ('d', "zsampler cyclic", "g_indices_s", 0.2,
     "(d) zsampler cyclic, batch 1024 over 1M, one core", "≥ 0.2 G indices/s", " G/s"),
];

fn reached(yes: bool) -> String {
    if yes { "yes" } else { "**no**" }.into()
}

/// The targets table from the rows of `report` and the loader's targets.
pub fn targets(report: &Report, loader: &[Target]) -> Table {
    let mut table = Table::new(
        "Targets of the store, sampler and loader",
        &["target", "goal", "measured", "reached"],
    );
    for &(workload, system, metric, goal, what, goal_text, unit) in &ROW_TARGETS {
        let value = report.rows.iter().find(|r| {
            r.workload == workload.to_string() && r.system == system && r.metric == metric
        });
        if let Some(row) = value {
            let measured = format!("{:.2}{unit}", row.value);
            table.row(vec![
                what.into(),
                goal_text.into(),
                measured,
                reached(row.value >= goal),
            ]);
        }
    }
    for t in loader {
        let cells = vec![
            t.what.clone(),
            t.goal.clone(),
            t.measured.clone(),
            reached(t.reached),
        ];
        table.row(cells);
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
