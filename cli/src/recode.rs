//! `zrecord recode`: copy a store into a new one with another codec, in
//! index order (which keeps multi-stream alignment).

use std::path::PathBuf;

use anyhow::{Context, Result};
use zrecord::{AnyStore, Dictionary};

use crate::staging::Staged;
use crate::{CodecArg, TierArg, transfer};

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
    /// The zstd level of the new store's `zstd` (default 3) or `zstd-dict`
    /// (default 6) frames.
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Replace an existing destination.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let source = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<AnyStore>(&args.source)
        .with_context(|| args.source.display().to_string())?;
    let dict = match (&args.codec, &args.dict) {
        (CodecArg::ZstdDict, Some(path)) => Some(
            Dictionary::from_bytes(
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
            )
            .with_context(|| path.display().to_string())?,
        ),
        (CodecArg::ZstdDict, None) => Some(source.train_dict(args.tier.into())?),
        _ => None,
    };
    let staged = Staged::new(&args.destination, args.force)?;
    let out = crate::create_store(
        staged.path(),
        &source.schema(),
        crate::codec(args.codec, dict)?,
        args.level,
    )?;
    transfer::copy(&source, &out, quiet)?;
    out.sync()?;
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
