//! `zrecord recode`: copy a store into a new one with another codec, in
//! index order (which keeps multi-stream alignment).

use std::path::PathBuf;

use anyhow::{Context, Result};
use zrecord::{AnyStore, Dictionary};

use crate::import::{Shape, chunk_records, create};
use crate::staging::Staged;
use crate::{CodecArg, TierArg, progress};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store to copy.
    source: PathBuf,
    /// The new store.
    destination: PathBuf,
    /// The new codec.
    #[arg(long, value_enum)]
    codec: CodecArg,
    /// For zstd-dict: the dictionary tier to train on the source...
    #[arg(long, value_enum, default_value = "balanced")]
    tier: TierArg,
    /// ... or a dictionary file to use instead.
    #[arg(long)]
    dict: Option<PathBuf>,
    /// Replace an existing destination.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let source = AnyStore::open_read_only(&args.source)
        .with_context(|| args.source.display().to_string())?;
    let dict = match (&args.codec, &args.dict) {
        (CodecArg::ZstdDict, Some(path)) => Some(
            Dictionary::from_bytes(
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
            )
            .with_context(|| path.display().to_string())?,
        ),
        (CodecArg::ZstdDict, None) => Some(match &source {
            AnyStore::Dense(s) => s.train_dict(args.tier.into())?,
            AnyStore::Ragged(s) => s.train_dict(args.tier.into())?,
        }),
        _ => None,
    };
    let shape = match &source {
        AnyStore::Dense(s) => Shape::Dense {
            dtype: s.dtype(),
            item_shape: s.item_shape().to_vec(),
        },
        AnyStore::Ragged(s) => Shape::Ragged { dtype: s.dtype() },
    };
    let staged = Staged::new(&args.destination, args.force)?;
    let out = create(staged.path(), &shape, crate::codec(args.codec, dict)?)?;
    copy(&source, &out, quiet)?;
    match &out {
        AnyStore::Dense(s) => s.sync()?,
        AnyStore::Ragged(s) => s.sync()?,
    }
    drop(out);
    if let Ok(paths) = std::fs::read(args.source.join("paths.txt")) {
        std::fs::write(staged.path().join("paths.txt"), paths).context("cannot copy paths.txt")?;
    }
    staged.commit()?;
    println!(
        "recoded {} records into {}",
        source.len(),
        args.destination.display()
    );
    Ok(())
}

/// Appends every record of `source` to `out` (a store of the same kind and dtype), in index order.
pub(crate) fn copy(source: &AnyStore, out: &AnyStore, quiet: bool) -> Result<()> {
    let bar = progress::records(quiet, source.len(), "copy");
    match (source, out) {
        (AnyStore::Dense(src), AnyStore::Dense(dst)) => {
            let step = chunk_records(src.record_bytes()) as u64;
            let mut buf = Vec::new();
            for start in (0..src.len()).step_by(step as usize) {
                let indices: Vec<u64> = (start..(start + step).min(src.len())).collect();
                buf.resize(indices.len() * src.record_bytes(), 0);
                src.gather_bytes(&indices, &mut buf)?;
                dst.append_bytes(src.dtype(), &buf)?;
                bar.inc(indices.len() as u64);
            }
        }
        (AnyStore::Ragged(src), AnyStore::Ragged(dst)) => {
            let mut start = 0;
            while start < src.len() {
                let indices: Vec<u64> = (start..(start + 4096).min(src.len())).collect();
                dst.append_batch(&src.gather_dyn(&indices)?)?;
                bar.inc(indices.len() as u64);
                start += 4096;
            }
        }
        _ => anyhow::bail!("source and destination are of different kinds"),
    }
    bar.finish_and_clear();
    Ok(())
}
