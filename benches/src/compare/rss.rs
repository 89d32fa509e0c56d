//! Resident memory from `/proc/self`: the kernel's own peak (`VmHWM`), a
//! sampling thread that splits it into anonymous memory (what a program
//! allocates) and file-backed pages (here: the stores' memory maps, page
//! cache the kernel can drop and other processes share), and the huge pages
//! of mapped files.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The KiB that `key` gives in the text of `/proc/<pid>/status` (`VmRSS`,
/// `VmHWM`, `RssAnon`, `RssFile`) or `/proc/meminfo` (`MemTotal`); 0 if missing.
pub(crate) fn kib(status: &str, key: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'));
    let kib = line.and_then(|rest| rest.split_whitespace().next()?.parse().ok());
    kib.unwrap_or(0)
}

/// The text of this process's `/proc/self/status` (empty where it is missing).
pub(crate) fn status() -> String {
    std::fs::read_to_string("/proc/self/status").unwrap_or_default()
}

/// Runs `f` while a thread samples [`status`] every `every`; returns its
/// value and the peaks of anonymous and file-backed memory, KiB.
pub(crate) fn peaks<T>(every: Duration, f: impl FnOnce() -> T) -> (T, (u64, u64)) {
    let stop = AtomicBool::new(false);
    let max = |(anon, file): (u64, u64), now: String| {
        (
            anon.max(kib(&now, "RssAnon")),
            file.max(kib(&now, "RssFile")),
        )
    };
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peak = (0, 0);
            while !stop.load(Ordering::Relaxed) {
                peak = max(peak, status());
                std::thread::sleep(every);
            }
            peak
        });
        let value = f();
        stop.store(true, Ordering::Relaxed);
        let peak = sampler.join().unwrap_or_default();
        (value, max(peak, status()))
    })
}

/// A file under a folder mapped by this process (from `/proc/self/smaps`).
#[derive(Clone, Debug, Default)]
pub(crate) struct FileMap {
    /// Its path inside the folder.
    pub(crate) name: String,
    pub(crate) rss_kib: u64,
    /// Of `rss_kib`, mapped with 2 MiB page-table entries (huge pages).
    pub(crate) pmd_kib: u64,
}

/// Every file under `dir` mapped in the text of `/proc/self/smaps`, in the
/// order of its first mapping, with its resident and huge-page mapped sizes.
pub(crate) fn parse_file_maps(smaps: &str, dir: &str) -> Vec<FileMap> {
    let mut maps: Vec<FileMap> = Vec::new();
    let mut current: Option<usize> = None;
    for line in smaps.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let kib = words.get(1).and_then(|v| v.parse().ok()).unwrap_or(0);
        match (words.first(), current) {
            (Some(&"Rss:"), Some(k)) => maps[k].rss_kib += kib,
            (Some(&"FilePmdMapped:"), Some(k)) => maps[k].pmd_kib += kib,
            (Some(first), _) if first.contains('-') && !first.ends_with(':') => {
                // A mapping's header: address range, perms, offset, dev, inode, path.
                let name = words.get(5).and_then(|path| path.strip_prefix(dir));
                current = name.map(|name| {
                    let name = name.trim_start_matches('/');
                    maps.iter().position(|m| m.name == name).unwrap_or_else(|| {
                        let name = name.to_string();
                        maps.push(FileMap {
                            name,
                            ..FileMap::default()
                        });
                        maps.len() - 1
                    })
                });
            }
            _ => {}
        }
    }
    maps
}

/// [`parse_file_maps`] of this process for files under `dir`.
pub(crate) fn file_maps(dir: &std::path::Path) -> Vec<FileMap> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    parse_file_maps(&smaps, &dir.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_smaps() {
        let s =
            "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t1024 kB\nRssAnon:\t 600 kB\nRssFile:\t400 kB\n";
        let figures = ["VmRSS", "VmHWM", "RssAnon", "RssFile", "Nope"].map(|k| kib(s, k));
        assert_eq!(figures, [1024, 2048, 600, 400, 0]);
        let text = "7f00-7f10 r--s 00000000 fd:00 12 /tmp/x/a.npy\nRss:  400 kB\nFilePmdMapped: 2048 kB\n\
                    7f20-7f30 r--p 00000000 fd:00 13 /usr/lib/libc.so\nRss: 9 kB\n\
                    7f40-7f50 r--s 00000000 fd:00 12 /tmp/x/a.npy\nRss:  100 kB\n";
        let maps = parse_file_maps(text, "/tmp/x");
        let map = maps.iter().map(|m| (m.name.as_str(), m.rss_kib, m.pmd_kib));
        assert_eq!(map.collect::<Vec<_>>(), [("a.npy", 500, 2048)]);
    }

    #[test]
    fn peaks_see_an_allocation() {
        let (_, (anon, _)) = peaks(Duration::from_millis(1), || {
            let v = vec![1u8; 64 << 20];
            std::thread::sleep(Duration::from_millis(20));
            std::hint::black_box(&v);
        });
        if kib(&status(), "VmRSS") > 0 {
            assert!(anon >= 60 << 10, "{anon} KiB");
        }
    }
}
