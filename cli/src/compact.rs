//! `zrecord compact`: reclaim the bytes of deleted records, in place.

use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::{Context, Result};
use zrecord::AnyStore;

use crate::progress;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store.
    store: PathBuf,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<()> {
    let mut store =
        AnyStore::open(&args.store).with_context(|| args.store.display().to_string())?;
    let bar = progress::records(quiet, 0, "compact");
    let on_progress = |p: &zrecord::CompactProgress| {
        bar.set_length(p.total);
        bar.set_position(p.visited);
        ControlFlow::Continue(())
    };
    let before = store.stats()?;
    store.compact_with(on_progress)?;
    let after = store.stats()?;
    bar.finish_and_clear();
    println!(
        "compacted {}: {} records, chunk bytes {} -> {} ({} reclaimed)",
        args.store.display(),
        after.records,
        before.chunk_bytes,
        after.chunk_bytes,
        before.chunk_bytes - after.chunk_bytes
    );
    Ok(())
}
