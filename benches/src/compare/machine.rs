//! What a run ran on: CPU, cores, memory, kernel, compiler, commit, load.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

/// The machine and build a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// CPU model (`/proc/cpuinfo`).
    pub cpu: String,
    /// Cores this process may use.
    pub cores: usize,
    /// Threads in rayon's pool (zrecord's gather threads).
    pub rayon_threads: usize,
    /// Total memory, MiB (`/proc/meminfo`).
    pub memory_mib: u64,
    /// Kernel release.
    pub kernel: String,
    /// `rustc --version`.
    pub rustc: String,
    /// The checkout's git commit, if git is there to say.
    pub git_commit: String,
    /// Load averages (1, 5, 15 min) when the run started.
    pub load_average_start: String,
    /// Load averages when the run ended (set by the caller).
    pub load_average_end: String,
}

impl Machine {
    /// Reads everything once.
    pub fn probe() -> Machine {
        let unknown = || "unknown".to_string();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let rustc = std::env::var_os("RUSTC").unwrap_or("rustc".into());
        Machine {
            cpu: proc_field("/proc/cpuinfo", "model name").unwrap_or_else(unknown),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            rayon_threads: rayon::current_num_threads(),
            memory_mib: super::rss::kib(&meminfo, "MemTotal") / 1024,
            kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(unknown),
            rustc: output(rustc, &["--version"]).unwrap_or_else(unknown),
            git_commit: output("git", &["rev-parse", "HEAD"]).unwrap_or_else(unknown),
            load_average_start: load_average().unwrap_or_else(unknown),
            load_average_end: String::new(),
        }
    }

    /// One line for the top of the output.
    pub fn summary(&self) -> String {
        format!(
            "{}, {} cores (rayon {}), {} MiB, Linux {}, {}, commit {}, load average {}",
            self.cpu,
            self.cores,
            self.rayon_threads,
            self.memory_mib,
            self.kernel,
            self.rustc,
            self.git_commit.get(..12).unwrap_or(&self.git_commit),
            self.load_average_start
        )
    }
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    Some(std::fs::read_to_string(path).ok()?.trim().to_string())
}

/// What follows the `:` on the first line of `file` that starts with `key`.
fn proc_field(file: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// The three load averages from `/proc/loadavg`.
pub fn load_average() -> Option<String> {
    let text = read_trimmed("/proc/loadavg")?;
    let three: Vec<&str> = text.split_whitespace().take(3).collect();
    Some(three.join(" "))
}

/// The first line `program args` prints, if it runs and succeeds.
fn output(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    out.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_without_failing() {
        let m = Machine::probe();
        assert!(m.cores >= 1);
        assert!(m.summary().contains(" cores (rayon "));
        assert_eq!(output("true", &[]).as_deref(), Some(""));
        assert_eq!(output("false", &[]), None);
    }
}
