//! `zrecord import npy` and `zrecord import idx`: a dense array file, axis 0
//! indexing records, streamed in bounded chunks so files larger than memory
//! import.

use std::path::PathBuf;

use anyhow::Result;
use zrecord::{ArrayFile, Schema};

use super::{Summary, write_store, wrote};
use crate::Target;
use crate::transfer::chunk_records;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The file.
    file: PathBuf,
    #[command(flatten)]
    target: Target,
}

/// Imports the array `open` reads from the file (its errors name the file).
pub(crate) fn run(
    args: Args,
    open: fn(&std::path::Path) -> zrecord::Result<ArrayFile>,
    quiet: bool,
) -> Result<Summary> {
    let mut array = open(&args.file)?;
    let (records, item_shape) = array.records()?;
    let dtype = array.dtype();
    let record_bytes = dtype.size() * item_shape.iter().product::<usize>();
    let schema = Schema::Dense {
        dtype,
        item_shape: item_shape.to_vec(),
    };
    let share = args.target.share(records);
    array.skip((share.start * record_bytes) as u64)?;
    let records = share.len();
    let target = args.target.into_shard();
    let written = write_store(&target, schema, records as u64, quiet, &[], |sink| {
        let per_chunk = chunk_records(record_bytes);
        let mut buf = vec![0u8; per_chunk * record_bytes];
        let mut left = records;
        while left > 0 {
            let n = left.min(per_chunk);
            let bytes = &mut buf[..n * record_bytes];
            array.read_exact(bytes)?;
            sink.dense(bytes)?;
            left -= n;
        }
        Ok(())
    })?;
    Ok(wrote(written, &target))
}
