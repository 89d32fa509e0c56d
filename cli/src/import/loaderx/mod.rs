//! `zrecord import loaderx`: a store written by the Python library loaderx
//! (the 1.7 layout: `store.zr` + `meta.zr` + `.loc`/`.chunk` files; or the
//! 2.8 layout: `meta.zr` + `data_{k}.zr` shards), dense or ragged, any of its
//! three codecs, into a new zrecord store with the same records in the same
//! order.
//!
//! Every header, table entry and frame is checked before it is used: a
//! damaged store, or one of a layout or version not listed here, is an
//! error that names the file, and nothing is written.

mod v1_7;
mod v2_8;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use zrecord::{DType, RaggedLayout};

use super::values::{from_le_bytes, ragged_batch};
use super::write_store;
use crate::Target;
use zrecord::Schema;

/// Bytes decoded per append.
const ROUND_BYTES: usize = 16 << 20;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The loaderx store folder.
    dir: PathBuf,
    #[command(flatten)]
    target: Target,
}

/// How a loaderx store compressed its records.
enum Compression {
    Raw,
    Zstd,
    ZstdDict(Vec<u8>),
}

/// A loaderx store opened for reading, of either layout.
trait Source {
    /// The kind, dtype and (dense) item shape.
    fn shape(&self) -> &Schema;
    /// Number of records.
    fn len(&self) -> u64;
    /// Record `i`: its shape (ragged) and its values' bytes, decoded.
    fn record(&self, i: u64, decoder: &mut Decoder) -> Result<(Vec<usize>, Vec<u8>)>;
}

pub(crate) fn run(args: &Args, quiet: bool) -> Result<super::Summary> {
    args.target.refuse_shard("loaderx")?;
    let source = open(&args.dir)?;
    let mut decoder = Decoder::new(source.compression())?;
    let source = source.as_source();
    let shape = match source.shape() {
        Schema::Dense { dtype, item_shape } => Schema::Dense {
            dtype: *dtype,
            item_shape: item_shape.clone(),
        },
        Schema::Ragged { dtype } => Schema::Ragged { dtype: *dtype },
    };
    let written = write_store(&args.target, shape, source.len(), quiet, &[], |sink| {
        let mut i = 0;
        while i < source.len() {
            match source.shape() {
                Schema::Dense { .. } => {
                    let mut bytes = Vec::new();
                    while i < source.len() && bytes.len() < ROUND_BYTES {
                        bytes.extend_from_slice(&source.record(i, &mut decoder)?.1);
                        i += 1;
                    }
                    sink.dense(&bytes)?;
                }
                Schema::Ragged { dtype } => {
                    let mut bytes = Vec::new();
                    let mut layout = RaggedLayout::new();
                    while i < source.len() && bytes.len() < ROUND_BYTES {
                        let (shape, values) = source.record(i, &mut decoder)?;
                        layout.push(&shape)?;
                        bytes.extend_from_slice(&values);
                        i += 1;
                    }
                    sink.ragged(&ragged_batch(from_le_bytes(*dtype, &bytes)?, layout)?)?;
                }
            }
        }
        Ok(())
    })
    .with_context(|| args.dir.display().to_string())?;
    Ok(super::wrote(written, &args.target))
}

/// A store of either layout.
enum Opened {
    V1_7(v1_7::Store),
    V2_8(v2_8::Store),
}

impl Opened {
    fn as_source(&self) -> &dyn Source {
        match self {
            Opened::V1_7(s) => s,
            Opened::V2_8(s) => s,
        }
    }

    fn compression(&self) -> &Compression {
        match self {
            Opened::V1_7(s) => &s.compression,
            Opened::V2_8(s) => &s.compression,
        }
    }
}

/// Tells the layouts apart: 1.7 has a `store.zr`, 2.8 a `data_0.zr`.
fn open(dir: &Path) -> Result<Opened> {
    let in_dir = |name: &str| dir.join(name);
    if !dir.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    if in_dir("store.zr").exists() {
        Ok(Opened::V1_7(v1_7::Store::open(dir)?))
    } else if in_dir("data_0.zr").exists() && in_dir("meta.zr").exists() {
        Ok(Opened::V2_8(v2_8::Store::open(dir)?))
    } else {
        bail!(
            "{} is not a loaderx store: it has neither store.zr (loaderx 1.x) nor meta.zr and data_0.zr (loaderx 2.x)",
            dir.display()
        )
    }
}

/// Decodes records, reusing its zstd context.
struct Decoder {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Decoder {
    fn new(compression: &Compression) -> Result<Decoder> {
        let zstd = match compression {
            Compression::Raw => None,
            Compression::Zstd => Some(zstd::bulk::Decompressor::new()?),
            Compression::ZstdDict(dict) => Some(
                zstd::bulk::Decompressor::with_dictionary(dict)
                    .context("dict.zr is not a zstd dictionary")?,
            ),
        };
        Ok(Decoder { zstd })
    }

    /// `stored` decoded to exactly `len` bytes.
    fn decode(&mut self, stored: Vec<u8>, len: usize) -> Result<Vec<u8>> {
        let out = match &mut self.zstd {
            None => stored,
            Some(z) => z
                .decompress(&stored, len)
                .map_err(|e| anyhow::anyhow!("not a zstd frame of {len} bytes: {e}"))?,
        };
        if out.len() != len {
            bail!("decodes to {} bytes, the table says {len}", out.len());
        }
        Ok(out)
    }
}

/// `len` bytes at `offset` of `file`, refusing a range past its end.
fn read_at(file: &File, path: &Path, size: u64, offset: u64, len: u64) -> Result<Vec<u8>> {
    if offset.checked_add(len).is_none_or(|end| end > size) {
        bail!(
            "{}: bytes {offset}..{} lie past its end ({size} bytes)",
            path.display(),
            offset.saturating_add(len)
        );
    }
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, offset)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(buf)
}

/// A whole small file.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// The zrecord dtype of a numpy dtype, by name (`float32`) or
/// little-endian type string (`<f4`, `|u1`).
fn numpy_dtype(name: &str) -> Result<DType> {
    let dtype = match name {
        "bool" | "|b1" => DType::Bool,
        "uint8" | "|u1" => DType::U8,
        "int8" | "|i1" => DType::I8,
        "uint16" | "<u2" => DType::U16,
        "int16" | "<i2" => DType::I16,
        "uint32" | "<u4" => DType::U32,
        "int32" | "<i4" => DType::I32,
        "uint64" | "<u8" => DType::U64,
        "int64" | "<i8" => DType::I64,
        "float16" | "<f2" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" | "<f4" => DType::F32,
        "float64" | "<f8" => DType::F64,
        other => bail!("numpy dtype {other:?} has no zrecord counterpart"),
    };
    Ok(dtype)
}

/// Checks that `shape` holds exactly `bytes` of `dtype`.
fn check_size(shape: &[usize], dtype: DType, bytes: usize) -> Result<()> {
    let elements = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if elements.and_then(|e| e.checked_mul(dtype.size())) != Some(bytes) {
        bail!("shape {shape:?} of {dtype} does not hold {bytes} bytes");
    }
    Ok(())
}
