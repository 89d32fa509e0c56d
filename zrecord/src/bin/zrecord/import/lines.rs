//! `zrecord import lines`: one u8 record per line of a text file.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, Result, bail};
use zrecord::{DType, RaggedBatch};

use super::{Shape, write_store};
use crate::Target;

pub(crate) fn run(file: &Path, skip_empty: bool, target: &Target, quiet: bool) -> Result<()> {
    let mut reader = BufReader::new(File::open(file).context("cannot open")?);
    // The number of lines is unknown until the end: the bar only counts.
    write_store(
        target,
        Shape::Ragged { dtype: DType::U8 },
        0,
        quiet,
        &[],
        |sink| {
            let mut batch = RaggedBatch::<u8>::new();
            let mut line = Vec::new();
            let mut number = 0u64;
            loop {
                line.clear();
                if reader.read_until(b'\n', &mut line).context("cannot read")? == 0 {
                    break;
                }
                number += 1;
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                if line.is_empty() {
                    if skip_empty {
                        continue;
                    }
                    bail!(
                        "line {number} is empty; records are never empty (use --skip-empty to leave such lines out)"
                    );
                }
                batch.push(&[line.len()], &line)?;
                if batch.values().len() >= 16 << 20 {
                    sink.ragged(&std::mem::take(&mut batch).into())?;
                }
            }
            sink.ragged(&batch.into())
        },
    )
}
