//! `zrecord export`: a dense store to an .npy file, a ragged u8 store to a
//! folder of files (named by the store's `paths.txt` when it has one).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use zrecord::{AnyStore, DType, DynDenseStore, DynRaggedStore};

use crate::progress;
use crate::staging::Staged;
use crate::transfer::chunk_records;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store.
    store: PathBuf,
    /// FILE.npy for a dense store, a folder for a ragged u8 store.
    output: PathBuf,
    /// Replace an existing output.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<AnyStore>(&args.store)
        .with_context(|| args.store.display().to_string())?;
    let staged = Staged::new(&args.output, args.force)?;
    match &store {
        AnyStore::Dense(s) => to_npy(s, staged.path(), quiet),
        AnyStore::Ragged(s) => to_folder(s, &args.store, staged.path(), quiet),
    }
    .with_context(|| args.output.display().to_string())?;
    staged.commit()
}

fn to_npy(store: &DynDenseStore, path: &Path, quiet: bool) -> Result<()> {
    let mut out = BufWriter::new(File::create(path).context("cannot create")?);
    let mut shape = vec![store.len() as usize];
    shape.extend_from_slice(store.item_shape());
    out.write_all(&zrecord::npy::header(store.dtype(), &shape)?)
        .context("cannot write")?;
    let bar = progress::records(quiet, store.len(), "export");
    let per_chunk = chunk_records(store.record_bytes()) as u64;
    let mut buf = Vec::new();
    for start in (0..store.len()).step_by(per_chunk as usize) {
        let indices: Vec<u64> = (start..(start + per_chunk).min(store.len())).collect();
        buf.resize(indices.len() * store.record_bytes(), 0);
        store.gather_bytes(&indices, &mut buf)?;
        out.write_all(&buf).context("cannot write")?;
        bar.inc(indices.len() as u64);
    }
    out.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .context("cannot write")?;
    bar.finish_and_clear();
    Ok(())
}

fn to_folder(store: &DynRaggedStore, store_path: &Path, dir: &Path, quiet: bool) -> Result<()> {
    if store.dtype() != DType::U8 {
        bail!(
            "a ragged {} store exports to a folder only as u8 records; this one is {}",
            store.dtype(),
            store.dtype()
        );
    }
    let names: Option<Vec<String>> = std::fs::read_to_string(store_path.join("paths.txt"))
        .ok()
        .map(|t| t.lines().map(str::to_string).collect())
        .filter(|n: &Vec<String>| n.len() as u64 == store.len());
    std::fs::create_dir(dir).context("cannot create")?;
    let bar = progress::records(quiet, store.len(), "export");
    for start in (0..store.len()).step_by(1024) {
        let indices: Vec<u64> = (start..(start + 1024).min(store.len())).collect();
        let batch = store.gather_dyn(&indices)?;
        let bytes = batch.values().as_bytes();
        for (k, &i) in indices.iter().enumerate() {
            let name = names
                .as_ref()
                .map_or_else(|| format!("{i:08}.bin"), |n| n[i as usize].clone());
            let path = safe_join(dir, &name)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            let range = batch.layout().range(k).context("batch layout")?;
            std::fs::write(&path, &bytes[range])
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        bar.inc(indices.len() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}

/// `dir/name`, refusing names that would leave `dir`.
fn safe_join(dir: &Path, name: &str) -> Result<PathBuf> {
    let relative = Path::new(name);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        bail!("paths.txt names {name:?}, which leaves the output folder");
    }
    Ok(dir.join(relative))
}
