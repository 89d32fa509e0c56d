//! [`Memory`]: a store's files in memory, with a model of power loss.
//!
//! Every change (a file created, removed, written or resized) is logged
//! until a `sync` makes it durable: a file's `sync` its own writes and
//! resizes, the storage's `sync` the creations and removals. A power cut
//! ([`Memory::crash`]) keeps what is durable and, of what is not, a prefix
//! in the order it was issued — the last change kept possibly torn at a
//! 512-byte sector boundary (a sector is written whole or not at all).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Access, Storage, StorageFile};
use crate::{Error, Result};

/// Bytes a disk writes whole or not at all.
const SECTOR: u64 = 512;

/// A store's folder in memory. Clones share the same files.
///
/// ```
/// use std::sync::Arc;
/// use zrecord::storage::{Crash, Memory};
/// use zrecord::{Codec, DynDenseStore, DType, OpenOptions, Schema};
///
/// let memory = Memory::new("in-memory");
/// let schema = Schema::dense(DType::U8, &[2]);
/// let store: DynDenseStore = OpenOptions::new().create(Arc::new(memory.clone()), &schema, Codec::Raw)?;
/// store.append_bytes(DType::U8, &[1, 2])?;
/// store.sync()?;
/// store.append_bytes(DType::U8, &[3, 4])?;        // not synced
///
/// // The power fails before the store is closed (closing syncs): everything
/// // after the sync is lost.
/// let rebooted = memory.crash(Crash::default());
/// drop(store);
/// let store: DynDenseStore = OpenOptions::new().open(Arc::new(rebooted))?;
/// assert_eq!(store.len(), 1);
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Memory {
    shared: Arc<Shared>,
}

/// What a power cut keeps of the changes no `sync` made durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crash {
    /// How many of them survive, in the order they were issued (the rest
    /// are lost).
    pub kept: usize,
    /// If the last one kept is a write: how many of the sectors it touches
    /// reach the disk (the rest of it is lost). `None`: all of them.
    pub torn_sectors: Option<u64>,
}

#[derive(Debug)]
struct Shared {
    location: PathBuf,
    state: Mutex<State>,
}

type NodeId = u64;

/// A folder: names to files, and files' bytes.
#[derive(Clone, Debug, Default)]
struct Image {
    names: BTreeMap<String, NodeId>,
    nodes: HashMap<NodeId, Vec<u8>>,
}

#[derive(Clone, Debug)]
enum Change {
    Create {
        name: String,
        node: NodeId,
    },
    Remove {
        name: String,
    },
    Write {
        node: NodeId,
        offset: u64,
        bytes: Vec<u8>,
    },
    SetLen {
        node: NodeId,
        len: u64,
    },
}

#[derive(Debug, Default)]
struct State {
    /// What reads see.
    live: Image,
    /// What survives any power cut.
    durable: Image,
    /// Changes since the oldest one not yet durable, each with whether a
    /// sync has made it durable since.
    log: VecDeque<(Change, bool)>,
    next_node: NodeId,
    /// Locks held: (exclusive holders, shared holders) by file.
    locks: HashMap<NodeId, (usize, usize)>,
}

impl Image {
    fn apply(&mut self, change: &Change, torn_sectors: Option<u64>) {
        match change {
            Change::Create { name, node } => {
                self.nodes.entry(*node).or_default();
                self.names.insert(name.clone(), *node);
            }
            Change::Remove { name } => {
                self.names.remove(name);
            }
            Change::Write {
                node,
                offset,
                bytes,
            } => {
                let end = offset + bytes.len() as u64;
                let end = match torn_sectors {
                    Some(sectors) => (offset / SECTOR + sectors)
                        .saturating_mul(SECTOR)
                        .clamp(*offset, end),
                    None => end,
                };
                let data = self.nodes.entry(*node).or_default();
                write_into(data, *offset, &bytes[..(end - offset) as usize]);
            }
            Change::SetLen { node, len } => {
                self.nodes
                    .entry(*node)
                    .or_default()
                    .resize(*len as usize, 0);
            }
        }
    }
}

fn write_into(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(bytes);
}

impl State {
    fn log(&mut self, change: Change) {
        self.live.apply(&change, None);
        self.log.push_back((change, false));
    }

    /// Marks the changes `durable` picks as durable and folds the durable
    /// front of the log into the durable image.
    fn make_durable(&mut self, durable: impl Fn(&Change) -> bool) {
        for (change, done) in &mut self.log {
            *done |= durable(change);
        }
        while let Some((change, true)) = self.log.front() {
            self.durable.apply(change, None);
            self.log.pop_front();
        }
    }
}

impl Memory {
    /// An empty folder; `location` names it in error messages.
    pub fn new(location: impl Into<PathBuf>) -> Memory {
        Memory {
            shared: Arc::new(Shared {
                location: location.into(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state()
    }

    /// Changes no `sync` has made durable yet.
    pub fn pending(&self) -> usize {
        self.state()
            .log
            .iter()
            .filter(|(_, durable)| !durable)
            .count()
    }

    /// The folder as it would be after a power cut now, as a new storage
    /// (with no locks held). This one is unchanged.
    pub fn crash(&self, crash: Crash) -> Memory {
        let state = self.state();
        let mut image = state.durable.clone();
        let mut left = crash.kept;
        for (change, durable) in &state.log {
            if *durable {
                image.apply(change, None);
            } else if left > 0 {
                left -= 1;
                image.apply(change, if left == 0 { crash.torn_sectors } else { None });
            }
        }
        let next_node = state.next_node;
        let memory = Memory::new(self.shared.location.clone());
        *memory.state() = State {
            live: image.clone(),
            durable: image,
            next_node,
            ..State::default()
        };
        memory
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Storage for Memory {
    fn location(&self) -> &Path {
        &self.shared.location
    }

    fn list(&self) -> Result<Vec<String>> {
        Ok(self.state().live.names.keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.state().live.names.contains_key(name))
    }

    fn open(&self, name: &str, access: Access) -> Result<Option<Arc<dyn StorageFile>>> {
        let mut state = self.state();
        let node = match (state.live.names.get(name).copied(), access) {
            (None, Access::Read | Access::ReadWrite) => return Ok(None),
            (None, Access::Create | Access::Replace) => {
                let node = state.next_node;
                state.next_node += 1;
                state.log(Change::Create {
                    name: name.into(),
                    node,
                });
                node
            }
            (Some(node), Access::Replace) => {
                state.log(Change::SetLen { node, len: 0 });
                node
            }
            (Some(node), _) => node,
        };
        Ok(Some(Arc::new(MemoryFile {
            shared: Arc::clone(&self.shared),
            node,
            path: self.shared.location.join(name),
            writable: access != Access::Read,
            lock: Mutex::new(None),
        })))
    }

    fn remove(&self, name: &str) -> Result<()> {
        let mut state = self.state();
        if state.live.names.contains_key(name) {
            state.log(Change::Remove { name: name.into() });
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.state()
            .make_durable(|c| matches!(c, Change::Create { .. } | Change::Remove { .. }));
        Ok(())
    }
}

/// An open file of a [`Memory`].
struct MemoryFile {
    shared: Arc<Shared>,
    node: NodeId,
    path: PathBuf,
    writable: bool,
    /// The lock this handle holds: exclusive or not.
    lock: Mutex<Option<bool>>,
}

impl MemoryFile {
    fn check_writable(&self) -> Result<()> {
        if self.writable {
            return Ok(());
        }
        Err(Error::io("write", &self.path)(
            std::io::Error::from_raw_os_error(libc::EBADF),
        ))
    }
}

impl StorageFile for MemoryFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> Result<u64> {
        let state = self.shared.state();
        Ok(state
            .live
            .nodes
            .get(&self.node)
            .map_or(0, |d| d.len() as u64))
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.check_writable()?;
        self.shared.state().log(Change::SetLen {
            node: self.node,
            len,
        });
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let state = self.shared.state();
        let data = state.live.nodes.get(&self.node).map_or(&[][..], |d| d);
        let src = usize::try_from(offset)
            .ok()
            .and_then(|at| data.get(at..at.checked_add(buf.len())?))
            .ok_or_else(|| {
                Error::io("read", &self.path)(std::io::ErrorKind::UnexpectedEof.into())
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_writable()?;
        self.shared.state().log(Change::Write {
            node: self.node,
            offset,
            bytes: buf.to_vec(),
        });
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let node = self.node;
        self.shared.state().make_durable(|c| match c {
            Change::Write { node: n, .. } | Change::SetLen { node: n, .. } => *n == node,
            _ => false,
        });
        Ok(())
    }

    fn try_lock(&self, exclusive: bool) -> Result<bool> {
        let mut held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut state = self.shared.state();
        let (writers, readers) = state.locks.entry(self.node).or_default();
        if let Some(was) = held.take() {
            if was {
                *writers -= 1;
            } else {
                *readers -= 1;
            }
        }
        let free = if exclusive {
            *writers == 0 && *readers == 0
        } else {
            *writers == 0
        };
        if free {
            if exclusive {
                *writers += 1;
            } else {
                *readers += 1;
            }
            *held = Some(exclusive);
        }
        Ok(free)
    }
}

impl Drop for MemoryFile {
    fn drop(&mut self) {
        let held = self.lock.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(exclusive) = held.take() {
            let mut state = self.shared.state();
            if let Some((writers, readers)) = state.locks.get_mut(&self.node) {
                if exclusive {
                    *writers -= 1;
                } else {
                    *readers -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(m: &Memory, name: &str) -> Option<Vec<u8>> {
        let f = m.open(name, Access::Read).unwrap()?;
        let mut buf = vec![0; f.len().unwrap() as usize];
        f.read_at(&mut buf, 0).unwrap();
        Some(buf)
    }

    #[test]
    fn a_crash_keeps_what_was_synced_and_a_prefix_of_the_rest() {
        let m = Memory::new("mem");
        let a = m.open("a", Access::Create).unwrap().unwrap();
        a.write_at(b"hello", 0).unwrap();
        a.sync().unwrap();
        m.sync().unwrap();
        assert_eq!(m.pending(), 0);
        a.write_at(b"J", 0).unwrap();
        let b = m.open("b", Access::Create).unwrap().unwrap();
        b.write_at(&[7; 1500], 0).unwrap();
        assert_eq!(m.pending(), 3);

        let lost = m.crash(Crash::default());
        assert_eq!(read_all(&lost, "a").unwrap(), b"hello");
        assert!(read_all(&lost, "b").is_none());
        let one = m.crash(Crash {
            kept: 1,
            torn_sectors: None,
        });
        assert_eq!(read_all(&one, "a").unwrap(), b"Jello");
        let torn = m.crash(Crash {
            kept: 3,
            torn_sectors: Some(2),
        });
        assert_eq!(read_all(&torn, "b").unwrap(), vec![7; 1024]);
        // The live view is untouched.
        assert_eq!(read_all(&m, "b").unwrap().len(), 1500);
    }

    #[test]
    fn synced_data_in_a_file_whose_name_was_not_synced_is_lost() {
        let m = Memory::new("mem");
        let a = m.open("a", Access::Create).unwrap().unwrap();
        a.write_at(b"data", 0).unwrap();
        a.sync().unwrap();
        assert!(read_all(&m.crash(Crash::default()), "a").is_none());
        m.sync().unwrap();
        assert_eq!(read_all(&m.crash(Crash::default()), "a").unwrap(), b"data");
    }

    #[test]
    fn locks_exclude_as_flock_does() {
        let m = Memory::new("mem");
        let a = m.open("meta", Access::Create).unwrap().unwrap();
        let b = m.open("meta", Access::Read).unwrap().unwrap();
        let c = m.open("meta", Access::Read).unwrap().unwrap();
        assert!(b.try_lock(false).unwrap());
        assert!(c.try_lock(false).unwrap());
        assert!(!a.try_lock(true).unwrap());
        drop((b, c));
        assert!(a.try_lock(true).unwrap());
        let d = m.open("meta", Access::Read).unwrap().unwrap();
        assert!(!d.try_lock(false).unwrap());
    }
}
