//! `zrecord import lines`: one u8 record per line of a text file.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use zrecord::{DType, RaggedBatch, Schema};

use super::{Summary, write_store, wrote};
use crate::Target;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The text file.
    file: PathBuf,
    /// Leave empty lines out (by default each is an empty record).
    #[arg(long)]
    skip_empty: bool,
    #[command(flatten)]
    target: Target,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<Summary> {
    args.target.refuse_shard("lines")?;
    import(&args.file, args.skip_empty, &args.target, quiet)
        .with_context(|| args.file.display().to_string())
}

fn import(file: &Path, skip_empty: bool, target: &Target, quiet: bool) -> Result<Summary> {
    let mut reader = BufReader::new(File::open(file).context("cannot open")?);
    // The number of lines is unknown until the end: the bar only counts.
    let written = write_store(
        target,
        Schema::Ragged { dtype: DType::U8 },
        0,
        quiet,
        &[],
        |sink| {
            let mut batch = RaggedBatch::<u8>::new();
            let mut line = Vec::new();
            loop {
                line.clear();
                if reader.read_until(b'\n', &mut line).context("cannot read")? == 0 {
                    break;
                }
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                if line.is_empty() && skip_empty {
                    continue;
                }
                batch.push(&[line.len()], &line)?;
                if batch.values().len() >= 16 << 20 {
                    sink.ragged(&std::mem::take(&mut batch).into())?;
                }
            }
            sink.ragged(&batch.into())
        },
    )?;
    Ok(wrote(written, target))
}
