//! The loaderx 2.8 layout: `meta.zr` (a 4096-byte header page, then one
//! 16-byte entry per record) and `data_{k}.zr` shards, record `i` in shard
//! `i mod S`. A ragged record is one payload: `ndim × u32` dimensions, then
//! the values. The layout carries no version: every field is checked.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::{
    Compression, Decoder, Source, check_size, numpy_dtype, read_at, read_file, u32_at, u64_at,
};
use zrecord::Schema as StoreSchema;

/// The header page.
const HEADER: usize = 0x1000;
/// Where the schema JSON starts.
const SCHEMA_AT: usize = 0x808;

/// The schema JSON in the header.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Schema {
    dtype: String,
    item_shape: Option<Vec<u64>>,
    ndim: Option<u64>,
}

pub(super) struct Store {
    dir: PathBuf,
    shape: StoreSchema,
    pub(super) compression: Compression,
    /// `ndim` of ragged records.
    ndim: usize,
    len: u64,
    meta: Vec<u8>,
    shards: Vec<(PathBuf, File, u64)>,
}

impl Store {
    pub(super) fn open(dir: &Path) -> Result<Store> {
        let path = dir.join("meta.zr");
        let meta = read_file(&path)?;
        let bad = |what: String| {
            anyhow::anyhow!(
                "{}: {what} (not a loaderx 2.8 store, or a damaged one)",
                path.display()
            )
        };
        if meta.len() < HEADER {
            return Err(bad(format!(
                "{} bytes, shorter than the 4096-byte header",
                meta.len()
            )));
        }
        let len = u64_at(&meta, 0);
        let schema_len = u16::from_le_bytes([meta[8], meta[9]]) as usize;
        let shard_count = meta[10] as usize;
        let compression = match meta[11] {
            0 => Compression::Raw,
            1 => Compression::Zstd,
            2 => Compression::ZstdDict(read_file(&dir.join("dict.zr"))?),
            c => return Err(bad(format!("codec {c} is unknown"))),
        };
        if meta[12..16] != [0; 4] || shard_count == 0 || SCHEMA_AT + schema_len > HEADER {
            return Err(bad("the header's fields are out of range".into()));
        }
        if Some(meta.len() as u64)
            != len
                .checked_mul(16)
                .and_then(|n| n.checked_add(HEADER as u64))
        {
            return Err(bad(format!(
                "{} bytes do not hold the table of {len} records",
                meta.len()
            )));
        }
        let schema: Schema = serde_json::from_slice(&meta[SCHEMA_AT..SCHEMA_AT + schema_len])
            .map_err(|e| bad(format!("the schema is not the JSON expected: {e}")))?;
        let dtype = numpy_dtype(&schema.dtype).map_err(|e| bad(e.to_string()))?;
        let (shape, ndim) = match (schema.item_shape, schema.ndim) {
            (Some(dims), None) => (
                StoreSchema::Dense {
                    dtype,
                    item_shape: dims.iter().map(|&d| d as usize).collect(),
                },
                0,
            ),
            (None, Some(ndim)) if (1..=64).contains(&ndim) => {
                (StoreSchema::Ragged { dtype }, ndim as usize)
            }
            _ => {
                return Err(bad(
                    "the schema has neither an item_shape nor an ndim".into()
                ));
            }
        };
        let mut shards = Vec::new();
        for k in 0..shard_count {
            let shard = dir.join(format!("data_{k}.zr"));
            let file =
                File::open(&shard).with_context(|| format!("cannot open {}", shard.display()))?;
            let size = file.metadata()?.len();
            let promised = u64_at(&meta, 16 + 8 * k);
            if size != promised {
                bail!(
                    "{}: {size} bytes, meta.zr says {promised}: the store is damaged",
                    shard.display()
                );
            }
            shards.push((shard, file, size));
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            shape,
            compression,
            ndim,
            len,
            meta,
            shards,
        })
    }
}

impl Source for Store {
    fn shape(&self) -> &StoreSchema {
        &self.shape
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn record(&self, i: u64, decoder: &mut Decoder) -> Result<(Vec<usize>, Vec<u8>)> {
        let entry = &self.meta[HEADER + 16 * i as usize..][..16];
        let (offset, stored, decoded) = (u64_at(entry, 0), u32_at(entry, 8), u32_at(entry, 12));
        let (path, file, size) = &self.shards[(i % self.shards.len() as u64) as usize];
        let bytes = read_at(file, path, *size, offset, stored.into())?;
        let context = || format!("{}: record {i}", self.dir.display());
        let mut bytes = decoder
            .decode(bytes, decoded as usize)
            .with_context(context)?;
        match &self.shape {
            StoreSchema::Dense { dtype, item_shape } => {
                check_size(item_shape, *dtype, bytes.len()).with_context(context)?;
                Ok((item_shape.clone(), bytes))
            }
            StoreSchema::Ragged { dtype } => {
                let head = 4 * self.ndim;
                if bytes.len() < head {
                    bail!("{}: too short for its {} dimensions", context(), self.ndim);
                }
                let shape: Vec<usize> = (0..self.ndim)
                    .map(|k| u32_at(&bytes, 4 * k) as usize)
                    .collect();
                bytes.drain(..head);
                check_size(&shape, *dtype, bytes.len()).with_context(context)?;
                Ok((shape, bytes))
            }
        }
    }
}
