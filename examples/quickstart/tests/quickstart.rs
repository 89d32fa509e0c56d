//! The README's first command, run as a test: the quickstart program trains
//! on the digits it ships and reports its test accuracy. (The README builds it
//! with the `quickstart` profile; this runs the test build of the same code.)

use std::process::Command;

#[test]
fn the_quickstart_trains_to_a_useful_accuracy() {
    let out = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .output()
        .expect("the quickstart program runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the quickstart failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let accuracy: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test accuracy: "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no `test accuracy: …` line in:\n{stdout}"));
    // It reaches about 97 % on the 297 held-out digits; chance is 10 %.
    assert!(accuracy > 90.0, "test accuracy {accuracy} %:\n{stdout}");
}
