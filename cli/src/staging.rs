//! Never a half-written output: build beside the target, rename into place
//! when complete, remove the temporary on any failure — and, since a killed
//! process removes nothing, remove what killed runs left beside the target
//! the next time one starts.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// An output being built at a temporary path beside its target.
pub(crate) struct Staged {
    target: PathBuf,
    temp: PathBuf,
    force: bool,
    committed: bool,
}

impl Staged {
    /// Refuses an existing `target` unless `force`.
    pub(crate) fn new(target: &Path, force: bool) -> Result<Staged> {
        if target.exists() && !force {
            bail!(
                "{} already exists (use --force to replace it)",
                target.display()
            );
        }
        let name = target
            .file_name()
            .with_context(|| format!("{} does not name a file or folder", target.display()))?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let prefix = format!(".{}.zrecord-tmp-", name.to_string_lossy());
        remove_stale(&parent, &prefix)?;
        let temp = parent.join(format!("{prefix}{}", std::process::id()));
        remove(&temp)?;
        Ok(Staged {
            target: target.to_path_buf(),
            temp,
            force,
            committed: false,
        })
    }

    /// Where to build the output.
    pub(crate) fn path(&self) -> &Path {
        &self.temp
    }

    /// A second temporary path beside the output, `{path}.{suffix}`: removed
    /// like it by the next run if this process is killed.
    pub(crate) fn aside(&self, suffix: &str) -> PathBuf {
        let mut path = self.temp.clone().into_os_string();
        path.push(".");
        path.push(suffix);
        PathBuf::from(path)
    }

    /// Moves the finished output to the target, replacing what `--force` allows.
    pub(crate) fn commit(mut self) -> Result<()> {
        if self.force && self.target.exists() {
            if let Err(zrecord::Error::StoreBusy { .. }) = zrecord::AnyStore::open(&self.target) {
                bail!(
                    "{} is open in another process; not replacing it",
                    self.target.display()
                );
            }
            remove(&self.target)?;
        }
        fs::rename(&self.temp, &self.target).with_context(|| {
            format!(
                "cannot move {} to {}",
                self.temp.display(),
                self.target.display()
            )
        })?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = remove(&self.temp);
        }
    }
}

/// Removes a path when dropped: for intermediate outputs.
pub(crate) struct RemoveOnDrop(pub(crate) PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = remove(&self.0);
    }
}

/// Removes the staging paths (`{prefix}{pid}`, `{prefix}{pid}.{suffix}`) of
/// processes that are gone — runs killed before they could clean up — and
/// the folders the store's `create` stages beside them (`.` and their name).
fn remove_stale(parent: &Path, prefix: &str) -> Result<()> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let ours = name.strip_prefix('.').filter(|n| n.starts_with(prefix));
        let Some(rest) = ours.unwrap_or(name).strip_prefix(prefix) else {
            continue;
        };
        let pid = rest.split_once('.').map_or(rest, |(pid, _)| pid);
        if let Ok(pid) = pid.parse::<u32>()
            && pid != std::process::id()
            && !running(pid)
        {
            remove(&entry.path())?;
        }
    }
    Ok(())
}

/// Whether process `pid` runs. Where there is no `/proc` to tell, it is
/// assumed to: its leftovers stay for the user to remove.
fn running(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Removes a file or folder if it exists.
fn remove(path: &Path) -> Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => return Ok(()),
    };
    result.with_context(|| format!("cannot remove {}", path.display()))
}
