//! What a run ran on: CPU, cores, memory, kernel, compiler, commit, load.

use std::path::{Path, PathBuf};
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
    /// The workspace's git commit (read from `.git`, no git process), if any.
    pub git_commit: String,
    /// Load averages (1, 5, 15 min) when the run started.
    pub load_average_start: String,
    /// Load averages when the run ended (set by the caller).
    pub load_average_end: String,
}

impl Machine {
    /// Reads everything once.
    pub fn probe() -> Machine {
        Machine {
            cpu: cpu_model().unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            rayon_threads: rayon::current_num_threads(),
            memory_mib: mem_total_kib().map_or(0, |k| k / 1024),
            kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            rustc: rustc_version().unwrap_or_else(|| "unknown".into()),
            git_commit: git_commit(&workspace_root()).unwrap_or_else(|| "unknown".into()),
            load_average_start: load_average().unwrap_or_else(|| "unknown".into()),
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
            short(&self.git_commit),
            self.load_average_start
        )
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    Some(std::fs::read_to_string(path).ok()?.trim().to_string())
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn mem_total_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The three load averages from `/proc/loadavg`.
pub fn load_average() -> Option<String> {
    let text = read_trimmed("/proc/loadavg")?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The workspace root: the parent of this crate's folder.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The commit `HEAD` names, read from the `.git` folder's files.
pub fn git_commit(root: &Path) -> Option<String> {
    let git = root.join(".git");
    let head = read_trimmed(git.join("HEAD"))?;
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head); // detached
    };
    if let Some(commit) = read_trimmed(git.join(reference)) {
        return Some(commit);
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference).then(|| commit.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_without_failing() {
        let m = Machine::probe();
        assert!(m.cores >= 1);
        assert!(!m.summary().is_empty());
    }

    #[test]
    fn reads_loose_and_packed_refs() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            git.join("packed-refs"),
            "# pack-refs\nabc123 refs/heads/main\n",
        )
        .unwrap();
        assert_eq!(git_commit(dir.path()).as_deref(), Some("abc123"));
        std::fs::write(git.join("refs/heads/main"), "def456\n").unwrap();
        assert_eq!(git_commit(dir.path()).as_deref(), Some("def456"));
        std::fs::write(git.join("HEAD"), "0123abcd\n").unwrap();
        assert_eq!(git_commit(dir.path()).as_deref(), Some("0123abcd"));
    }
}
