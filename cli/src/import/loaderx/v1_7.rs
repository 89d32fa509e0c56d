//! The loaderx 1.7 layout: `store.zr` (typed header + msgpack type
//! identity), `meta.zr` (32 bytes), `{n}.loc` record tables of 16-byte
//! entries, `{n}.chunk` payloads, `dict.zr` for zstd_dict. A ragged record
//! `i` is two physical records: values at `2i`, shape (`u64` rank, then the
//! dimensions) at `2i + 1`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::{
    Compression, Decoder, Source, check_size, numpy_dtype, read_at, read_file, u32_at, u64_at,
};
use zrecord::Schema;

/// Entries per `.loc` segment.
const SEGMENT: u64 = 1 << 28;

/// The msgpack type identity in `store.zr`.
#[derive(Deserialize)]
struct Identity {
    dtype: String,
    item_shape: Option<Vec<u64>>,
}

pub(super) struct Store {
    dir: PathBuf,
    shape: Schema,
    pub(super) compression: Compression,
    /// Logical records (physical ones for dense, half of them for ragged).
    len: u64,
    /// Each `.loc` segment, read whole.
    segments: Vec<Vec<u8>>,
    /// Open chunk files and their sizes, by id.
    chunks: Mutex<BTreeMap<u32, (File, u64)>>,
}

impl Store {
    pub(super) fn open(dir: &Path) -> Result<Store> {
        let store_zr = read_file(&dir.join("store.zr"))?;
        let bad = |what: &str| anyhow::anyhow!("{}: {what}", dir.join("store.zr").display());
        if store_zr.len() < 32 || &store_zr[..4] != b"LXST" {
            return Err(bad("no LXST magic: not a loaderx store"));
        }
        if store_zr[4] != 1 {
            return Err(bad(&format!(
                "typed-header version {} is not one this reader knows (1, loaderx 1.7)",
                store_zr[4]
            )));
        }
        let kind = store_zr[5];
        let width = u64_at(&store_zr, 8);
        let identity_len = u64_at(&store_zr, 16);
        if store_zr.len() as u64 != 32 + identity_len {
            return Err(bad(&format!(
                "{} bytes, but the header promises 32 + {identity_len}",
                store_zr.len()
            )));
        }
        let identity: Identity = rmp_serde::from_slice(&store_zr[32..])
            .map_err(|e| bad(&format!("the type identity is not msgpack: {e}")))?;
        let dtype = numpy_dtype(&identity.dtype).map_err(|e| bad(&e.to_string()))?;
        let shape = match (kind, identity.item_shape) {
            (1, Some(dims)) => {
                let item_shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
                let bytes = item_shape.iter().product::<usize>() * dtype.size();
                if bytes as u64 != width {
                    return Err(bad(&format!(
                        "records of {item_shape:?} {dtype} are {bytes} bytes, the header says {width}"
                    )));
                }
                Schema::Dense { dtype, item_shape }
            }
            (2, None) => Schema::Ragged { dtype },
            (k, _) => return Err(bad(&format!("kind {k} with this type identity is unknown"))),
        };

        let meta = read_file(&dir.join("meta.zr"))?;
        let bad = |what: &str| anyhow::anyhow!("{}: {what}", dir.join("meta.zr").display());
        if meta.len() != 32 || &meta[..4] != b"ZREC" {
            return Err(bad("not a 32-byte header starting ZREC"));
        }
        if meta[4] != 4 {
            return Err(bad(&format!(
                "header version {} is not one this reader knows (4, loaderx 1.7)",
                meta[4]
            )));
        }
        let physical = u64_at(&meta, 14);
        let compression = match meta[5] {
            0 => Compression::Raw,
            1 => Compression::Zstd,
            2 => Compression::ZstdDict(read_file(&dir.join("dict.zr"))?),
            c => return Err(bad(&format!("codec {c} is unknown"))),
        };
        let len = match &shape {
            Schema::Dense { .. } => physical,
            Schema::Ragged { .. } if physical.is_multiple_of(2) => physical / 2,
            Schema::Ragged { .. } => {
                return Err(bad(&format!(
                    "a ragged store with an odd number ({physical}) of physical records"
                )));
            }
        };
        let mut segments = Vec::new();
        for s in 0..physical.div_ceil(SEGMENT) {
            let path = dir.join(format!("{s}.loc"));
            let segment = read_file(&path)?;
            let needed = (physical - s * SEGMENT).min(SEGMENT) * 16;
            if (segment.len() as u64) < needed {
                bail!(
                    "{}: {} bytes, too short for the {} records of meta.zr",
                    path.display(),
                    segment.len(),
                    physical
                );
            }
            segments.push(segment);
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            shape,
            compression,
            len,
            segments,
            chunks: Mutex::new(BTreeMap::new()),
        })
    }

    /// Physical record `p`, decoded.
    fn physical(&self, p: u64, decoder: &mut Decoder) -> Result<Vec<u8>> {
        let entry = &self.segments[(p / SEGMENT) as usize][((p % SEGMENT) * 16) as usize..][..16];
        let (offset, stored, logic, chunk) = (
            u32_at(entry, 0),
            u32_at(entry, 4),
            u32_at(entry, 8),
            u32_at(entry, 12),
        );
        let path = self.dir.join(format!("{chunk}.chunk"));
        let stored = {
            let mut chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
            if let std::collections::btree_map::Entry::Vacant(slot) = chunks.entry(chunk) {
                let file =
                    File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
                let size = file.metadata()?.len();
                slot.insert((file, size));
            }
            let (file, size) = &chunks[&chunk];
            read_at(file, &path, *size, offset.into(), stored.into())?
        };
        decoder
            .decode(stored, logic as usize)
            .with_context(|| format!("{}: physical record {p}", path.display()))
    }
}

impl Source for Store {
    fn shape(&self) -> &Schema {
        &self.shape
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn record(&self, i: u64, decoder: &mut Decoder) -> Result<(Vec<usize>, Vec<u8>)> {
        match &self.shape {
            Schema::Dense { item_shape, dtype } => {
                let values = self.physical(i, decoder)?;
                check_size(item_shape, *dtype, values.len())
                    .with_context(|| format!("{}: record {i}", self.dir.display()))?;
                Ok((item_shape.clone(), values))
            }
            Schema::Ragged { dtype } => {
                let values = self.physical(2 * i, decoder)?;
                let shape_bytes = self.physical(2 * i + 1, decoder)?;
                let context = || format!("{}: record {i}", self.dir.display());
                let rank = if shape_bytes.len() >= 8 {
                    u64_at(&shape_bytes, 0)
                } else {
                    u64::MAX
                };
                if rank.checked_mul(8).and_then(|n| n.checked_add(8))
                    != Some(shape_bytes.len() as u64)
                {
                    bail!(
                        "{}: its shape record is not a rank and its dimensions",
                        context()
                    );
                }
                let shape: Vec<usize> = (0..rank as usize)
                    .map(|k| u64_at(&shape_bytes, 8 + 8 * k) as usize)
                    .collect();
                check_size(&shape, *dtype, values.len()).with_context(context)?;
                Ok((shape, values))
            }
        }
    }
}
