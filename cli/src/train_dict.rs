//! `zrecord train-dict`: a zstd dictionary trained on a store's records.

use std::path::PathBuf;

use anyhow::{Context, Result};
use zrecord::AnyStore;

use crate::TierArg;
use crate::staging::Staged;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store to sample.
    store: PathBuf,
    /// Where to write the dictionary.
    output: PathBuf,
    /// Dictionary size and training budget.
    #[arg(long, value_enum, default_value = "balanced")]
    tier: TierArg,
    /// Replace an existing output.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<AnyStore>(&args.store)
        .with_context(|| args.store.display().to_string())?;
    let dict = store
        .train_dict(args.tier.into())
        .with_context(|| args.store.display().to_string())?;
    let staged = Staged::new(&args.output, args.force)?;
    std::fs::write(staged.path(), dict.as_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    staged.commit()?;
    println!(
        "wrote a {}-byte dictionary to {}",
        dict.len(),
        args.output.display()
    );
    Ok(())
}
