//! The comparison harness end to end on shrunk workloads (`compare --quick`):
//! it checks every system's batches against the source itself and fails on
//! a mismatch. No assertion on speed: a smoke test of every table.

use std::process::Command;

#[test]
fn compare_runs_every_table_on_shrunk_workloads() {
    let out = Command::new(env!("CARGO_BIN_EXE_compare"))
        .arg("--quick")
        .output()
        .expect("the compare program runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "compare --quick failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
