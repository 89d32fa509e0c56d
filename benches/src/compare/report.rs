//! Results: rows for the JSON file, markdown tables for people.

use std::path::Path;

use serde::Serialize;

use super::machine::Machine;

/// One measured value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Workload letter (`a`..`e`).
    pub workload: String,
    /// The system measured.
    pub system: String,
    /// What was measured (`gather_mib_s`, `p95_batch_ms`, ...).
    pub metric: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// Everything a run measured, as written by `--json`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The machine and build.
    pub machine: Machine,
    /// Every measured value.
    pub rows: Vec<Row>,
}

impl Report {
    /// An empty report for `machine`.
    pub fn new(machine: Machine) -> Report {
        Report {
            machine,
            rows: Vec::new(),
        }
    }

    /// Adds one value.
    pub fn push(&mut self, workload: char, system: &str, metric: &str, value: f64, unit: &str) {
        if value.is_finite() {
            self.rows.push(Row {
                workload: workload.to_string(),
                system: system.to_string(),
                metric: metric.to_string(),
                value,
                unit: unit.to_string(),
            });
        }
    }

    /// Writes the report as pretty JSON.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}

/// A markdown table with a title and notes under it.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Heading line (printed as `### title`).
    pub title: String,
    /// Column names; a name ending in `>` is right-aligned (the `>` is dropped).
    pub columns: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table.
    pub notes: Vec<String>,
}

impl Table {
    /// A table with these columns.
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Table {
        Table {
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            ..Table::default()
        }
    }

    /// Adds a note.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The table as markdown.
    pub fn to_markdown(&self) -> String {
        let columns = self.columns.iter();
        let names: Vec<&str> = columns
            .clone()
            .map(|c| c.strip_suffix('>').unwrap_or(c))
            .collect();
        let rule: Vec<&str> = columns
            .map(|c| if c.ends_with('>') { "---:" } else { "---" })
            .collect();
        let mut out = format!("### {}\n\n| {} |\n", self.title, names.join(" | "));
        out += &format!("|{}|\n", rule.join("|"));
        for row in &self.rows {
            out += &format!("| {} |\n", row.join(" | "));
        }
        if !self.notes.is_empty() {
            out += &format!("\n{}\n", self.notes.join("\n"));
        }
        out
    }
}

/// A duration in seconds as `12.3 µs`, `4.56 ms` or `1.23 s`.
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        "—".into()
    } else if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Bytes as MiB (`123.4 MiB`), or KiB below 1 MiB.
pub fn fmt_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= MIB {
        format!("{:.1} MiB", b / MIB)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

/// A number with a precision that suits its size (`—` when not finite).
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `text`, in bold when `bold`.
pub fn bold(text: &str, bold: bool) -> String {
    if bold {
        format!("**{text}**")
    } else {
        text.to_string()
    }
}

/// A verdict: `yes`, or a bold `no`.
pub fn yes_no(yes: bool) -> String {
    bold(if yes { "yes" } else { "no" }, !yes)
}

/// A ratio as `0.93×` (`—` when not finite).
pub fn fmt_ratio(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}×")
    } else {
        "—".into()
    }
}

/// Mebibytes.
pub const MIB: f64 = (1u64 << 20) as f64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_formats() {
        let mut t = Table::new("x", &["system", "MiB/s>"]);
        t.rows.push(vec!["a".into(), "1".into()]);
        t.note("n");
        let md = t.to_markdown();
        assert!(md.contains("| system | MiB/s |\n|---|---:|\n| a | 1 |\n\nn\n"));
        assert_eq!(fmt_seconds(2e-5), "20.0 µs");
        assert_eq!(fmt_seconds(0.0042), "4.20 ms");
        assert_eq!(fmt_bytes(3 << 20), "3.0 MiB");
        assert_eq!(fmt_num(1234.4), "1234");
        assert_eq!(fmt_ratio(f64::NAN), "—");
    }

    #[test]
    fn json_has_machine_and_rows() {
        let mut r = Report::new(Machine::probe());
        r.push('a', "zrecord raw", "gather_mib_s", 1.5, "MiB/s");
        r.push('a', "x", "y", f64::NAN, "z"); // dropped
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        r.write_json(&path).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
        assert_eq!(v["rows"].as_array().unwrap().len(), 1);
        assert_eq!(v["rows"][0]["workload"], "a");
        assert_eq!(v["rows"][0]["unit"], "MiB/s");
    }
}
