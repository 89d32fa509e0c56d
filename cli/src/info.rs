//! `zrecord info`: what a store, dataset or folder of stores holds and what
//! it costs in storage.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use zrecord::dataset::Manifest;
use zrecord::storage::Io;

use crate::source::{Kind, RemoteArgs, Source, Stream};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A store, a dataset (a folder with dataset.zr), a folder of stores,
    /// or one of these in object storage (s3://…, gs://…, az://…, https://…).
    source: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let source = Source::open(&args.source, &args.remote, Io::Auto)?;
    let value = match &source.kind {
        Kind::Store => store_json(&source, &source.streams[0], "")?,
        Kind::Dataset(manifest) => dataset_json(&source, manifest)?,
        Kind::Stores => stores_json(&source)?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    match &source.kind {
        Kind::Store => print_store(&value, &source.streams[0].shard_stores()[0].codec_shown()),
        Kind::Dataset(_) => print_dataset(&value),
        Kind::Stores => print_stores(&value),
    }
    Ok(())
}

/// One store: the stream's only shard, at `relative` in the source.
fn store_json(source: &Source, stream: &Stream, relative: &str) -> Result<Value> {
    let store = stream.shard_stores()[0];
    let shown = source.store_shown(relative);
    let stats = store.stats().with_context(|| shown.clone())?;
    let ratio = stats.logical_bytes as f64 / stats.live_bytes.max(1) as f64;
    let (kind, dtype, shape) = schema(stream);
    let mut value = json!({
        "path": shown,
        "kind": kind,
        "dtype": dtype,
        "item_shape": shape,
        "records": stats.records,
        "codec": store.codec(),
        "dictionary_bytes": store.dictionary_bytes(),
        "bytes": source.store_bytes(relative)?,
        "logical_bytes": stats.logical_bytes,
        "live_bytes": stats.live_bytes,
        "chunk_bytes": stats.chunk_bytes,
        "reclaimable_bytes": stats.reclaimable_bytes,
        "compression_ratio": ratio,
        "format_version": store.format_version(),
    });
    if let Some(dir) = source.local_path() {
        value["bytes_on_disk"] = json!(allocated_bytes(&dir.join(relative))?);
    }
    if let Some(l) = store.lengths().with_context(|| shown.clone())? {
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
    Ok(value)
}

/// Kind, dtype and item shape (`null` for ragged) of a stream.
fn schema(stream: &Stream) -> (String, String, Value) {
    match &stream.shards {
        zrecord::Stream::Dense(s) => (
            "dense".into(),
            s.dtype().name().to_string(),
            json!(s.item_shape()),
        ),
        zrecord::Stream::Ragged(s) => ("ragged".into(), s.dtype().name().to_string(), json!(null)),
    }
}

fn dataset_json(source: &Source, manifest: &Manifest) -> Result<Value> {
    let mut shards: Vec<Value> = manifest
        .shards
        .iter()
        .map(|s| json!({"folder": s.folder, "records": s.records, "bytes": 0u64}))
        .collect();
    let mut streams = Vec::new();
    let mut total_bytes = 0u64;
    for stream in &source.streams {
        let (kind, dtype, shape) = schema(stream);
        let (mut logical, mut stored, mut bytes) = (0u64, 0u64, 0u64);
        let mut codecs: Vec<&str> = Vec::new();
        for (k, (store, relative)) in stream
            .shard_stores()
            .into_iter()
            .zip(&stream.stores)
            .enumerate()
        {
            let stats = store
                .stats()
                .with_context(|| source.store_shown(relative))?;
            let b = source.store_bytes(relative)?;
            logical += stats.logical_bytes;
            stored += stats.live_bytes;
            bytes += b;
            if let Some(shard) = shards.get_mut(k) {
                shard["bytes"] = json!(shard["bytes"].as_u64().unwrap_or(0) + b);
            }
            if !codecs.contains(&store.codec()) {
                codecs.push(store.codec());
            }
        }
        total_bytes += bytes;
        streams.push(json!({
            "name": stream.name,
            "kind": kind,
            "dtype": dtype,
            "item_shape": shape,
            "records": stream.len(),
            "codec": codecs.join(","),
            "bytes": bytes,
            "logical_bytes": logical,
            "live_bytes": stored,
        }));
    }
    Ok(json!({
        "path": source.shown,
        "kind": "dataset",
        "records": manifest.len(),
        "shards": shards,
        "streams": streams,
        "bytes": total_bytes,
    }))
}

fn stores_json(source: &Source) -> Result<Value> {
    let mut stores = Vec::new();
    let mut total = 0u64;
    for stream in &source.streams {
        let mut value = store_json(source, stream, &stream.stores[0])?;
        total += value["bytes"].as_u64().unwrap_or(0);
        value["name"] = json!(stream.name);
        stores.push(value);
    }
    Ok(json!({
        "path": source.shown,
        "kind": "stores",
        "stores": stores,
        "bytes": total,
    }))
}

/// A JSON number or string as text.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(text).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn print_store(v: &Value, codec: &str) {
    println!("store        {}", text(&v["path"]));
    println!("kind         {}", text(&v["kind"]));
    println!("dtype        {}", text(&v["dtype"]));
    if !v["item_shape"].is_null() {
        println!("item shape   {}", text(&v["item_shape"]));
    }
    println!("records      {}", text(&v["records"]));
    let l = &v["lengths"];
    if l.is_object() && l["records"].as_u64().unwrap_or(0) > 0 {
        println!(
            "lengths      min {}  p50 {}  p90 {}  p99 {}  max {}  mean {:.1} elements",
            l["min"],
            l["p50"],
            l["p90"],
            l["p99"],
            l["max"],
            l["mean"].as_f64().unwrap_or(0.0)
        );
    }
    println!("codec        {codec}");
    if v["dictionary_bytes"].as_u64().unwrap_or(0) > 0 {
        println!("dictionary   {} bytes", v["dictionary_bytes"]);
    }
    if v["bytes_on_disk"].is_null() {
        println!("stored       {} bytes (objects)", v["bytes"]);
    } else {
        println!("on disk      {} bytes (allocated)", v["bytes_on_disk"]);
    }
    println!("logical      {} bytes", v["logical_bytes"]);
    println!(
        "ratio        {:.2}x",
        v["compression_ratio"].as_f64().unwrap_or(0.0)
    );
    println!("reclaimable  {} bytes", v["reclaimable_bytes"]);
    println!("format       version {}", v["format_version"]);
}

fn print_dataset(v: &Value) {
    let empty = Vec::new();
    let shards = v["shards"].as_array().unwrap_or(&empty);
    let streams = v["streams"].as_array().unwrap_or(&empty);
    println!("dataset      {}", text(&v["path"]));
    println!("records      {}", v["records"]);
    println!("shards       {}", shards.len());
    println!("bytes        {}", v["bytes"]);
    println!();
    print_store_rows("stream", streams);
    println!();
    println!("{:<24} {:>12} {:>14}", "shard", "records", "bytes");
    for s in shards {
        println!(
            "{:<24} {:>12} {:>14}",
            text(&s["folder"]),
            text(&s["records"]),
            text(&s["bytes"])
        );
    }
    println!(
        "{:<24} {:>12} {:>14}",
        "total",
        text(&v["records"]),
        text(&v["bytes"])
    );
}

fn print_stores(v: &Value) {
    let empty = Vec::new();
    let stores = v["stores"].as_array().unwrap_or(&empty);
    println!("stores       {}", text(&v["path"]));
    println!("bytes        {}", v["bytes"]);
    println!();
    print_store_rows("store", stores);
}

/// One line per store or stream: name (headed `first`), kind, dtype, item
/// shape, records, bytes, logical bytes, codec.
fn print_store_rows(first: &str, rows: &[Value]) {
    println!(
        "{:<24} {:>7} {:>8} {:<16} {:>12} {:>14} {:>14} {:<10}",
        first, "kind", "dtype", "item shape", "records", "bytes", "logical bytes", "codec"
    );
    for s in rows {
        println!(
            "{:<24} {:>7} {:>8} {:<16} {:>12} {:>14} {:>14} {:<10}",
            text(&s["name"]),
            text(&s["kind"]),
            text(&s["dtype"]),
            text(&s["item_shape"]),
            text(&s["records"]),
            text(&s["bytes"]),
            text(&s["logical_bytes"]),
            text(&s["codec"]),
        );
    }
}

/// Blocks allocated to the store's files, in bytes.
fn allocated_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        total += entry?.metadata()?.blocks() * 512;
    }
    Ok(total)
}
