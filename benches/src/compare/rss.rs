//! Resident memory from `/proc/self/status`: the kernel's own peak
//! (`VmHWM`) and a sampling monitor that splits it into anonymous memory
//! (what a program allocates) and file-backed pages (here: the stores' memory
//! maps, which are page cache the kernel can drop and other processes share).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Memory figures of this process, KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// Resident set now.
    pub vm_rss: u64,
    /// Peak resident set since the process started.
    pub vm_hwm: u64,
    /// Anonymous resident memory now.
    pub rss_anon: u64,
    /// File-backed resident memory now (mapped files).
    pub rss_file: u64,
}

/// Parses the text of `/proc/<pid>/status`.
pub fn parse(text: &str) -> Status {
    let mut s = Status::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kib = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        match key {
            "VmRSS" => s.vm_rss = kib,
            "VmHWM" => s.vm_hwm = kib,
            "RssAnon" => s.rss_anon = kib,
            "RssFile" => s.rss_file = kib,
            _ => {}
        }
    }
    s
}

/// This process's figures now (zeros where `/proc` is missing).
pub fn status() -> Status {
    std::fs::read_to_string("/proc/self/status")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// One file mapping of this process (from `/proc/self/smaps`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileMap {
    /// The mapped file.
    pub path: String,
    /// Resident KiB of the mapping.
    pub rss_kib: u64,
    /// KiB of it mapped with 2 MiB page-table entries (huge pages).
    pub pmd_kib: u64,
}

/// The mappings of files under `dir` with their resident and huge-page
/// mapped sizes, from the text of `/proc/self/smaps`.
pub fn parse_file_maps(smaps: &str, dir: &str) -> Vec<FileMap> {
    let mut maps: Vec<FileMap> = Vec::new();
    let mut current: Option<usize> = None;
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A mapping's header: address range, perms, offset, dev, inode, path.
            let path = line.split_whitespace().nth(5).unwrap_or("");
            current = path.starts_with(dir).then(|| {
                maps.push(FileMap {
                    path: path.to_string(),
                    ..FileMap::default()
                });
                maps.len() - 1
            });
            continue;
        }
        let (Some(k), Some(v)) = (current, words.next().and_then(|v| v.parse::<u64>().ok())) else {
            continue;
        };
        match first {
            "Rss:" => maps[k].rss_kib += v,
            "FilePmdMapped:" => maps[k].pmd_kib += v,
            _ => {}
        }
    }
    maps
}

/// [`parse_file_maps`] of this process for files under `dir`.
pub fn file_maps(dir: &std::path::Path) -> Vec<FileMap> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    parse_file_maps(&smaps, &dir.to_string_lossy())
}

/// Samples [`status`] every few milliseconds on a thread and keeps the
/// peaks of anonymous and file-backed memory.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    peak_anon: Arc<AtomicU64>,
    peak_file: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Monitor {
    /// Starts sampling every `every`.
    pub fn start(every: Duration) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let peak_anon = Arc::new(AtomicU64::new(0));
        let peak_file = Arc::new(AtomicU64::new(0));
        let (s, a, f) = (
            Arc::clone(&stop),
            Arc::clone(&peak_anon),
            Arc::clone(&peak_file),
        );
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let now = status();
                a.fetch_max(now.rss_anon, Ordering::Relaxed);
                f.fetch_max(now.rss_file, Ordering::Relaxed);
                std::thread::sleep(every);
            }
        });
        Monitor {
            stop,
            peak_anon,
            peak_file,
            thread: Some(thread),
        }
    }

    /// Stops sampling; returns the peaks (anonymous, file-backed), KiB.
    pub fn finish(mut self) -> (u64, u64) {
        self.halt();
        let now = status();
        (
            self.peak_anon.load(Ordering::Relaxed).max(now.rss_anon),
            self.peak_file.load(Ordering::Relaxed).max(now.rss_file),
        )
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_text() {
        let s = parse(
            "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t1024 kB\nRssAnon:\t 600 kB\nRssFile:\t400 kB\n",
        );
        assert_eq!(
            s,
            Status {
                vm_rss: 1024,
                vm_hwm: 2048,
                rss_anon: 600,
                rss_file: 400
            }
        );
    }

    #[test]
    fn parses_smaps() {
        let text = "7f00-7f10 r--s 00000000 fd:00 12 /tmp/x/a.npy\nRss:  400 kB\nFilePmdMapped: 2048 kB\n\
                    7f20-7f30 r--p 00000000 fd:00 13 /usr/lib/libc.so\nRss: 9 kB\n";
        let maps = parse_file_maps(text, "/tmp/x");
        assert_eq!(
            maps,
            vec![FileMap {
                path: "/tmp/x/a.npy".into(),
                rss_kib: 400,
                pmd_kib: 2048
            }]
        );
    }

    #[test]
    fn monitor_sees_an_allocation() {
        let m = Monitor::start(Duration::from_millis(1));
        let v = vec![1u8; 64 << 20];
        std::thread::sleep(Duration::from_millis(20));
        std::hint::black_box(&v);
        let (anon, _) = m.finish();
        if status().vm_rss > 0 {
            assert!(anon >= 60 << 10, "{anon} KiB");
        }
    }
}
