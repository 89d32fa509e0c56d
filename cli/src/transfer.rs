//! Records moved in bounded chunks: how many at a time, and a store-to-store
//! copy in index order (which keeps multi-stream alignment).

use anyhow::Result;
use zrecord::AnyStore;

use crate::progress;

/// Records per chunk for records of about `record_bytes`: about 16 MiB at a time.
pub(crate) fn chunk_records(record_bytes: usize) -> usize {
    ((16 << 20) / record_bytes.max(1)).max(1)
}

/// Appends every record of `source` to `out` (a store of the same schema), in index order.
pub(crate) fn copy(source: &AnyStore, out: &AnyStore, quiet: bool) -> Result<()> {
    let stats = source.stats()?;
    let per_chunk = chunk_records((stats.logical_bytes / stats.records.max(1)) as usize) as u64;
    let bar = progress::records(quiet, source.len(), "copy");
    let mut batch = source.new_batch();
    for start in (0..source.len()).step_by(per_chunk as usize) {
        let indices: Vec<u64> = (start..(start + per_chunk).min(source.len())).collect();
        source.gather_into(&indices, &mut batch)?;
        out.append(&batch)?;
        bar.inc(indices.len() as u64);
    }
    bar.finish_and_clear();
    Ok(())
}
