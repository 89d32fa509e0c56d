//! `zrecord import files`: every file of a folder as one u8 record, in
//! sorted path order; `paths.txt` in the store maps record i to its file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use zrecord::{DType, RaggedBatch, Schema};

use super::{Summary, write_store, wrote};
use crate::Target;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The folder.
    dir: PathBuf,
    /// Only files whose path relative to the folder matches (e.g. '**/*.jpg').
    #[arg(long)]
    glob: Option<String>,
    #[command(flatten)]
    target: Target,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<Summary> {
    import(&args.dir, args.glob.as_deref(), args.target, quiet)
        .with_context(|| args.dir.display().to_string())
}

fn import(dir: &Path, pattern: Option<&str>, target: Target, quiet: bool) -> Result<Summary> {
    if !dir.is_dir() {
        bail!("not a folder");
    }
    let pattern = pattern
        .map(glob::Pattern::new)
        .transpose()
        .context("bad --glob pattern")?;
    let mut files = Vec::new();
    walk(dir, dir, pattern.as_ref(), &mut files)?;
    files.sort();
    let files = &files[target.share(files.len())];
    let target = target.into_shard();
    let mut paths = String::new();
    for (path, _) in files {
        let text = path
            .to_str()
            .with_context(|| format!("{} is not valid UTF-8", path.display()))?;
        if text.contains('\n') {
            bail!("{text:?} has a newline in its name");
        }
        paths.push_str(text);
        paths.push('\n');
    }
    let extra = [("paths.txt", paths.as_bytes())];
    let written = write_store(
        &target,
        Schema::Ragged { dtype: DType::U8 },
        files.len() as u64,
        quiet,
        &extra,
        |sink| {
            let mut batch = RaggedBatch::<u8>::new();
            let mut bytes = 0;
            for (path, _) in files {
                let content = std::fs::read(dir.join(path))
                    .with_context(|| format!("cannot read {}", path.display()))?;
                bytes += content.len();
                batch.push(&[content.len()], &content)?;
                if bytes >= 16 << 20 {
                    sink.ragged(&std::mem::take(&mut batch).into())?;
                    bytes = 0;
                }
            }
            sink.ragged(&batch.into())
        },
    )?;
    Ok(wrote(written, &target))
}

/// Collects (path relative to `root`, size) of the files under `dir` that match.
fn walk(
    root: &Path,
    dir: &Path,
    pattern: Option<&glob::Pattern>,
    out: &mut Vec<(PathBuf, u64)>,
) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let path = entry.path();
        let meta = entry
            .metadata()
            .with_context(|| format!("cannot stat {}", path.display()))?;
        if meta.is_dir() {
            walk(root, &path, pattern, out)?;
        } else if meta.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if pattern.is_none_or(|p| p.matches_path(&relative)) {
                out.push((relative, meta.len()));
            }
        }
    }
    Ok(())
}
