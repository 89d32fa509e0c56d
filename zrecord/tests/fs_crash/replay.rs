//! The file system a crash leaves: which of a trace's events had reached
//! the disk, and the files they make.
//!
//! An event is **durable** at a crash once a later, completed `fsync` or
//! `fdatasync` covers it: a data event (write, truncate) by a sync of its
//! file, an entry event (create, rename, remove) by a sync of its folder —
//! POSIX's rule, weaker than ext4's (where any `fsync` commits the journal
//! and with it every earlier entry change). Of the events not yet durable a
//! crash keeps a subset, as the crash model allows:
//!
//! * [`Model::InOrder`]: a prefix in the order the calls completed, the last
//!   kept write possibly torn after any 512-byte sector — what a file system
//!   that writes back in order gives (ext4 with `data=journal`);
//! * [`Model::Reordered`]: entry events as a prefix (ext4 journals them in
//!   order) and any subset of the data events, each write torn into any
//!   subset of its sectors — what ext4's default `data=ordered` allows
//!   (overwrites and appends of different files reach the disk in any order).

use std::collections::{BTreeMap, HashMap};

use super::trace::{Event, Ino, under};

/// The sector size a write may tear at.
pub(crate) const SECTOR: u64 = 512;

/// What a crash may keep of the events that were not durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Model {
    InOrder,
    Reordered,
}

/// Which events each crash point has made durable.
pub(crate) struct Durability {
    /// For each event, the index of the first sync that covers it.
    covered_at: Vec<Option<usize>>,
}

impl Durability {
    /// Works out, for every event, the first later sync that makes it durable.
    pub(crate) fn of(events: &[Event]) -> Durability {
        let mut covered_at = vec![None; events.len()];
        // Events waiting for a sync of each inode: data by file, entries by folder.
        let mut waiting: HashMap<Ino, Vec<usize>> = HashMap::new();
        for (i, e) in events.iter().enumerate() {
            if let Some(ino) = e.data_ino().or_else(|| e.entry_parent()) {
                waiting.entry(ino).or_default().push(i);
            } else if let Event::Sync { ino } = e {
                for w in waiting.remove(ino).unwrap_or_default() {
                    covered_at[w] = Some(i);
                }
            }
        }
        Durability { covered_at }
    }

    /// Whether event `i` is durable at a crash after the first `p` events.
    pub(crate) fn durable(&self, i: usize, p: usize) -> bool {
        self.covered_at[i].is_some_and(|s| s < p)
    }

    /// Events before `p` that change files and are not durable there.
    pub(crate) fn pending(&self, events: &[Event], p: usize) -> Vec<usize> {
        (0..p)
            .filter(|&i| {
                (events[i].data_ino().is_some() || events[i].entry_parent().is_some())
                    && !self.durable(i, p)
            })
            .collect()
    }
}

/// How much of one event a crash keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    All,
    /// Of a write, only these sectors (indices into the sectors it touches).
    Sectors(Vec<usize>),
}

/// A crash: after the first `p` events, keeping the durable ones and `kept`.
#[derive(Clone, Debug)]
pub(crate) struct Crash {
    pub(crate) p: usize,
    pub(crate) kept: Vec<(usize, Kept)>,
}

/// The sectors a write touches.
pub(crate) fn sectors(offset: u64, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let end = offset + len as u64;
    ((end - 1) / SECTOR - offset / SECTOR + 1) as usize
}

/// Files and folders as a crash leaves them: entries by path, data by inode.
#[derive(Clone, Default)]
pub(crate) struct Image {
    entries: BTreeMap<Vec<u8>, (Ino, bool)>,
    data: HashMap<Ino, Vec<u8>>,
}

impl Image {
    /// Applies `kept` of event `e`.
    pub(crate) fn apply(&mut self, e: &Event, kept: &Kept) {
        match e {
            Event::Create { ino, path, dir, .. } => {
                self.entries.insert(path.clone(), (*ino, *dir));
            }
            Event::Rename { from, to, .. } => {
                let moved: Vec<_> = self
                    .entries
                    .range(from.clone()..)
                    .take_while(|(p, _)| p.starts_with(from))
                    .filter(|(p, _)| under(p, from))
                    .map(|(p, v)| (p.clone(), *v))
                    .collect();
                if moved.is_empty() {
                    return;
                }
                self.entries.retain(|p, _| !under(p, to) && !under(p, from));
                for (old, v) in moved {
                    let mut new = to.clone();
                    new.extend_from_slice(&old[from.len()..]);
                    self.entries.insert(new, v);
                }
            }
            Event::Remove { path, .. } => self.entries.retain(|p, _| !under(p, path)),
            Event::Write { ino, offset, bytes } => {
                let file = self.data.entry(*ino).or_default();
                match kept {
                    Kept::All => write(file, *offset, bytes),
                    Kept::Sectors(which) => {
                        for &s in which {
                            let start = (*offset / SECTOR + s as u64) * SECTOR;
                            let from = start.max(*offset);
                            let to = (start + SECTOR).min(*offset + bytes.len() as u64);
                            let piece = &bytes[(from - offset) as usize..(to - offset) as usize];
                            write(file, from, piece);
                        }
                    }
                }
            }
            Event::Truncate { ino, len } => {
                self.data.entry(*ino).or_default().resize(*len as usize, 0);
            }
            Event::Sync { .. } | Event::Marker(_) => {}
        }
    }

    /// The files under the folder `top`: path (relative to `top`) → bytes,
    /// or `None` when `top` does not exist.
    pub(crate) fn files(&self, top: &[u8]) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
        if !self.entries.get(top).is_some_and(|&(_, dir)| dir) {
            return None;
        }
        Some(
            self.entries
                .iter()
                .filter(|(p, (_, dir))| !dir && under(p, top))
                .map(|(p, (ino, _))| {
                    (
                        p[top.len()..].to_vec(),
                        self.data.get(ino).cloned().unwrap_or_default(),
                    )
                })
                .collect(),
        )
    }
}

/// The files a crash leaves under `top` (see [`Image::files`]).
pub(crate) fn files_after(
    events: &[Event],
    durability: &Durability,
    crash: &Crash,
    top: &[u8],
) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let extra: HashMap<usize, &Kept> = crash.kept.iter().map(|(i, k)| (*i, k)).collect();
    let mut image = Image::default();
    for (i, e) in events[..crash.p].iter().enumerate() {
        if durability.durable(i, crash.p) {
            image.apply(e, &Kept::All);
        } else if let Some(k) = extra.get(&i) {
            image.apply(e, k);
        }
    }
    image.files(top)
}

fn write(file: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    file[offset as usize..end].copy_from_slice(bytes);
}

/// A small deterministic generator (SplitMix64).
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A write cut after a random sector (not the last), if it spans several.
pub(crate) fn torn(e: &Event, rng: &mut Rng) -> Option<Kept> {
    match e {
        Event::Write { offset, bytes, .. } if sectors(*offset, bytes.len()) > 1 => {
            let s = sectors(*offset, bytes.len());
            Some(Kept::Sectors(
                (0..1 + rng.below(s as u64 - 1) as usize).collect(),
            ))
        }
        _ => None,
    }
}

/// Whether the crash points just after event `p - 1` need every prefix
/// tried: a sync has just made more durable (or nothing happened yet).
/// Elsewhere a prefix that leaves out more than the newest event was
/// already a crash state one event earlier.
pub(crate) fn after_sync(events: &[Event], p: usize) -> bool {
    p == 0 || matches!(events[p - 1], Event::Sync { .. })
}

/// The crashes to try after the first `p` events under `model`: every
/// prefix of the pending events when there are few (a sample of them when
/// there are many), torn variants of the last kept write, and, for
/// [`Model::Reordered`], random subsets.
pub(crate) fn crashes_at(
    events: &[Event],
    durability: &Durability,
    p: usize,
    model: Model,
    rng: &mut Rng,
) -> Vec<Crash> {
    let pending = durability.pending(events, p);
    let n = pending.len();
    let mut out = Vec::new();
    let torn = |i: usize, rng: &mut Rng| torn(&events[i], rng);
    match model {
        Model::InOrder => {
            let ks: Vec<usize> = if !after_sync(events, p) {
                vec![n.saturating_sub(1), n]
            } else if n <= 8 {
                (0..=n).collect()
            } else {
                let mut ks = vec![0, n];
                ks.extend((0..6).map(|_| rng.below(n as u64 + 1) as usize));
                ks
            };
            for k in ks {
                let whole: Vec<_> = pending[..k].iter().map(|&i| (i, Kept::All)).collect();
                for _ in 0..3 {
                    if k < n
                        && let Some(t) = torn(pending[k], rng)
                    {
                        let mut with = whole.clone();
                        with.push((pending[k], t));
                        out.push(Crash { p, kept: with });
                    }
                }
                out.push(Crash { p, kept: whole });
            }
        }
        Model::Reordered => {
            let entries: Vec<usize> = pending
                .iter()
                .copied()
                .filter(|&i| events[i].entry_parent().is_some())
                .collect();
            for _ in 0..2 {
                let k = rng.below(entries.len() as u64 + 1) as usize;
                let mut kept: Vec<(usize, Kept)> =
                    entries[..k].iter().map(|&i| (i, Kept::All)).collect();
                for &i in &pending {
                    if events[i].data_ino().is_none() || rng.below(2) == 0 {
                        continue;
                    }
                    let part = match &events[i] {
                        Event::Write { offset, bytes, .. } if rng.below(3) == 0 => {
                            let s = sectors(*offset, bytes.len());
                            Kept::Sectors((0..s).filter(|_| rng.below(2) == 0).collect())
                        }
                        _ => Kept::All,
                    };
                    kept.push((i, part));
                }
                out.push(Crash { p, kept });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events() -> Vec<Event> {
        vec![
            Event::Create {
                parent: 0,
                ino: 1,
                path: b"/r/s".to_vec(),
                dir: true,
            },
            Event::Create {
                parent: 1,
                ino: 2,
                path: b"/r/s/a".to_vec(),
                dir: false,
            },
            Event::Write {
                ino: 2,
                offset: 0,
                bytes: vec![7; 1024],
            },
            Event::Sync { ino: 2 },
            Event::Sync { ino: 0 },
            Event::Write {
                ino: 2,
                offset: 1024,
                bytes: vec![9; 1024],
            },
            Event::Sync { ino: 1 },
        ]
    }

    #[test]
    fn a_file_needs_its_folders_sync_and_its_own() {
        let ev = events();
        let d = Durability::of(&ev);
        // After the first two syncs the data is durable but the entry of
        // `a` is not (its folder `s` was not synced): only `s` survives.
        let nothing = Crash { p: 5, kept: vec![] };
        let files = files_after(&ev, &d, &nothing, b"/r/s").unwrap();
        assert!(files.is_empty());
        // After `s`'s sync, `a` is there with the synced kilobyte; the
        // second write was never synced, so a crash may drop it.
        let all = files_after(&ev, &d, &Crash { p: 7, kept: vec![] }, b"/r/s").unwrap();
        assert_eq!(all[b"/a".as_slice()], vec![7; 1024]);
        assert_eq!(d.pending(&ev, 7), vec![5]);
    }

    #[test]
    fn a_torn_write_keeps_whole_sectors_only() {
        let ev = events();
        let d = Durability::of(&ev);
        let crash = Crash {
            p: 7,
            kept: vec![(5, Kept::Sectors(vec![1]))],
        };
        let files = files_after(&ev, &d, &crash, b"/r/s").unwrap();
        let a = &files[b"/a".as_slice()];
        assert_eq!(a.len(), 2048);
        assert_eq!(&a[1024..1536], &[0; 512]);
        assert_eq!(&a[1536..], &[9; 512]);
        assert_eq!(sectors(100, 1000), 3);
    }

    #[test]
    fn a_missing_top_folder_is_no_files() {
        let ev = events();
        let d = Durability::of(&ev);
        assert!(files_after(&ev, &d, &Crash { p: 0, kept: vec![] }, b"/r/s").is_none());
    }
}
