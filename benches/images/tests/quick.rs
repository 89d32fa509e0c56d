//! The image-loading benchmark end to end on a few photographs
//! (`images --quick --no-python`): decode, crop, flip and normalise through
//! the loader and the bare loops, each checked against the others. Without
//! the photographs (`ZRECORD_DATA`) it says why and exits cleanly.

use std::process::Command;

#[test]
fn the_image_benchmark_runs_on_a_few_photographs() {
    let out = Command::new(env!("CARGO_BIN_EXE_images"))
        .args(["--quick", "--no-python"])
        .output()
        .expect("the images program runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "images --quick failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(line) = stdout.lines().find(|l| l.starts_with("images: skipped")) {
        zrecord_testkit::skip(line.trim_start_matches("images: skipped, "));
    }
}
