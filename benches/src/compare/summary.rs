//! The closing table: the targets set for the store, the sampler and the
//! loader, each with the figure this run measured, reached or not.

use super::report::{Report, Table, yes_no};

/// Targets read from the report's rows: `metric` of `system` in workload
/// `letter` must reach `goal`; what it is, the goal in words, the unit.
#[rustfmt::skip]
const ROW_TARGETS: [(char, &str, &str, f64, &str, &str, &str); 6] = [
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

/// A row of the targets table.
pub fn target(what: String, goal: &str, measured: String, reached: bool) -> Vec<String> {
    vec![what, goal.into(), measured, yes_no(reached)]
}

/// The targets table from the rows of `report`, then the `loader`'s rows.
pub fn targets(report: &Report, loader: &[Vec<String>]) -> Table {
    let mut table = Table::new(
        "Targets of the store, sampler and loader",
        &["target", "goal", "measured", "reached"],
    );
    for &(letter, system, metric, goal, what, goal_text, unit) in &ROW_TARGETS {
        let workload = letter.to_string();
        let row = report
            .rows
            .iter()
            .find(|r| r.workload == workload && r.system == system && r.metric == metric);
        if let Some(row) = row {
            let measured = format!("{:.2}{unit}", row.value);
            let cells = target(what.into(), goal_text, measured, row.value >= goal);
            table.rows.push(cells);
        }
    }
    table.rows.extend_from_slice(loader);
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
        let t = targets(&r, &[target("x".into(), "y", "z".into(), true)]);
        assert_eq!(t.rows.len(), 3);
        assert_eq!(t.rows[0][3], "yes");
        assert_eq!(t.rows[1][3], "**no**");
    }
}
