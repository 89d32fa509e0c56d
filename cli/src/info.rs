//! `zrecord info`: what a store holds and what it costs on disk.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;
use zrecord::AnyStore;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store.
    store: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let store = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<AnyStore>(&args.store)
        .with_context(|| args.store.display().to_string())?;
    let stats = store.stats()?;
    let codec = store.codec();
    let schema = store.schema();
    let shape = schema.item_shape();
    let on_disk = allocated_bytes(&args.store)?;
    let ratio = stats.logical_bytes as f64 / stats.live_bytes.max(1) as f64;
    let dict = codec.dictionary().map_or(0, |d| d.len());
    // Ragged stores only: dense records all have the item shape's length.
    let lengths = match &store {
        AnyStore::Ragged(ragged) => Some(ragged.length_stats()?),
        AnyStore::Dense(_) => None,
    };
    if args.json {
        let mut value = json!({
            "path": args.store,
            "kind": store.kind().to_string(),
            "dtype": store.dtype().name(),
            "item_shape": shape,
            "records": stats.records,
            "codec": codec.name(),
            "dictionary_bytes": dict,
            "bytes_on_disk": on_disk,
            "logical_bytes": stats.logical_bytes,
            "live_bytes": stats.live_bytes,
            "chunk_bytes": stats.chunk_bytes,
            "reclaimable_bytes": stats.reclaimable_bytes,
            "compression_ratio": ratio,
            "format_version": store.format_version(),
        });
        if let Some(l) = &lengths {
            value["lengths"] = json!({
                "records": l.records,
                "total": l.total,
                "min": l.min,
                "max": l.max,
                "mean": l.mean,
                "p50": l.p50,
                "p90": l.p90,
                "p99": l.p99,
            });
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!("store        {}", args.store.display());
    println!("kind         {}", store.kind());
    println!("dtype        {}", store.dtype());
    if let Some(shape) = shape {
        println!("item shape   {shape:?}");
    }
    println!("records      {}", stats.records);
    if let Some(l) = lengths.filter(|l| l.records > 0) {
        println!(
            "lengths      min {}  p50 {}  p90 {}  p99 {}  max {}  mean {:.1} elements",
            l.min, l.p50, l.p90, l.p99, l.max, l.mean
        );
    }
    println!("codec        {codec}");
    if dict > 0 {
        println!("dictionary   {dict} bytes");
    }
    println!("on disk      {on_disk} bytes (allocated)");
    println!("logical      {} bytes", stats.logical_bytes);
    println!("ratio        {ratio:.2}x");
    println!("reclaimable  {} bytes", stats.reclaimable_bytes);
    println!("format       version {}", store.format_version());
    Ok(())
}

/// Blocks allocated to the store's files, in bytes.
fn allocated_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        total += entry?.metadata()?.blocks() * 512;
    }
    Ok(total)
}
