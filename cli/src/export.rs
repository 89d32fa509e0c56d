//! `zrecord export`: a dense stream to an .npy file, a ragged u8 stream to
//! a folder of files (named by its stores' `paths.txt` when they have one).
//! A store or a dataset of one stream is written to OUTPUT itself; a
//! dataset of several streams or a folder of stores to the folder OUTPUT,
//! one `NAME.npy` or `NAME/` per stream.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use zrecord::storage::Io;
use zrecord::{DType, DenseShards, DynVec, RaggedShards};

use crate::progress;
use crate::source::{RemoteArgs, Source, Stream};
use crate::staging::Staged;
use crate::transfer::chunk_records;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A store, a dataset (a folder with dataset.zr), a folder of stores,
    /// or one of these in object storage (s3://…, gs://…, az://…, https://…).
    source: String,
    /// FILE.npy for a dense stream, a folder for a ragged u8 stream; a
    /// folder for a source of several streams.
    output: PathBuf,
    /// Replace an existing output.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let source = Source::open(&args.source, &args.remote, Io::Auto)?;
    let staged = Staged::new(&args.output, args.force)?;
    if let [stream] = source.streams.as_slice() {
        export(&source, stream, staged.path(), quiet)
            .with_context(|| args.output.display().to_string())?;
    } else {
        std::fs::create_dir(staged.path())
            .with_context(|| format!("cannot create {}", args.output.display()))?;
        for stream in &source.streams {
            let name = match &stream.shards {
                zrecord::Stream::Dense(_) => format!("{}.npy", stream.name),
                zrecord::Stream::Ragged(_) => stream.name.clone(),
            };
            export(&source, stream, &staged.path().join(&name), quiet)
                .with_context(|| args.output.join(&name).display().to_string())?;
        }
    }
    staged.commit()
}

fn export(source: &Source, stream: &Stream, path: &Path, quiet: bool) -> Result<()> {
    match &stream.shards {
        zrecord::Stream::Dense(s) => to_npy(s, path, quiet),
        zrecord::Stream::Ragged(s) => {
            to_folder(s, names(source, stream)?, &stream.name, path, quiet)
        }
    }
}

fn to_npy(shards: &DenseShards, path: &Path, quiet: bool) -> Result<()> {
    let mut out = BufWriter::new(File::create(path).context("cannot create")?);
    let mut shape = vec![shards.len() as usize];
    shape.extend_from_slice(shards.item_shape());
    out.write_all(&zrecord::npy::header(shards.dtype(), &shape)?)
        .context("cannot write")?;
    let bar = progress::records(quiet, shards.len(), "export");
    let per_chunk = chunk_records(shards.record_bytes()) as u64;
    let mut buf = DynVec::new(shards.dtype());
    for start in (0..shards.len()).step_by(per_chunk as usize) {
        let indices: Vec<u64> = (start..(start + per_chunk).min(shards.len())).collect();
        shards.gather_into(&indices, &mut buf)?;
        out.write_all(buf.as_bytes()).context("cannot write")?;
        bar.inc(indices.len() as u64);
    }
    out.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .context("cannot write")?;
    bar.finish_and_clear();
    Ok(())
}

/// The file names of a ragged stream's records: its stores' `paths.txt`
/// end to end, when every store has one with a line per record.
fn names(source: &Source, stream: &Stream) -> Result<Option<Vec<String>>> {
    let mut names = Vec::new();
    for (store, relative) in stream.shard_stores().into_iter().zip(&stream.stores) {
        let Some(bytes) = source.read_in_store(relative, "paths.txt")? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() as u64 != store.len() {
            return Ok(None);
        }
        names.extend(lines);
    }
    Ok(Some(names))
}

fn to_folder(
    shards: &RaggedShards,
    names: Option<Vec<String>>,
    stream: &str,
    dir: &Path,
    quiet: bool,
) -> Result<()> {
    if shards.dtype() != DType::U8 {
        bail!(
            "the ragged stream {stream:?} holds {} records; only u8 records export to a folder of files",
            shards.dtype()
        );
    }
    std::fs::create_dir(dir).context("cannot create")?;
    let bar = progress::records(quiet, shards.len(), "export");
    for start in (0..shards.len()).step_by(1024) {
        let indices: Vec<u64> = (start..(start + 1024).min(shards.len())).collect();
        let batch = shards.gather_dyn(&indices)?;
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
