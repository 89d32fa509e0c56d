//! `zrecord dataset ...`: sharded datasets.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;

#[derive(Subcommand)]
pub(crate) enum Dataset {
    /// Check the shards of DIR (written by `import --shard K/N`, or any
    /// stores of the same streams in its subfolders) and write its manifest,
    /// DIR/dataset.zr: the dataset then opens as one index space.
    Join {
        /// The dataset folder.
        dir: PathBuf,
    },
}

pub(crate) fn run(command: Dataset) -> Result<()> {
    match command {
        Dataset::Join { dir } => {
            let manifest = zrecord::Dataset::join(&dir)
                .with_context(|| format!("cannot join {}", dir.display()))?;
            let streams: Vec<&str> = manifest.streams.iter().map(|s| s.name.as_str()).collect();
            println!(
                "{}: {} shards, {} records, streams {}",
                dir.join(zrecord::dataset::MANIFEST_FILE).display(),
                manifest.shards.len(),
                manifest.len(),
                streams.join(", ")
            );
            Ok(())
        }
    }
}
