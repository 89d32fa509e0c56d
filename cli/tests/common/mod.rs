//! Helpers shared by the command's tests.
#![allow(dead_code, unreachable_pub)]

pub mod run;

use std::path::Path;

/// The names in `dir`, sorted: to check what an operation left behind.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Reads `reader` (a child's stdout or stderr) line by line until a line
/// holds `marker`; what came before goes to `seen`. False if the stream
/// ended first: the child died.
pub fn wait_for(reader: &mut impl std::io::BufRead, marker: &str, seen: &mut String) -> bool {
    let mut line = String::new();
    loop {
        line.clear();
        if reader
            .read_line(&mut line)
            .expect("read the child's output")
            == 0
        {
            return false;
        }
        if line.contains(marker) {
            return true;
        }
        seen.push_str(&line);
    }
}
