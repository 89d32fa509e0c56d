//! `zrecord import safetensors`: one tensor of a file, memory-mapped.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use safetensors::{Dtype, SafeTensors};
use zrecord::{DType, Schema};

use super::{Summary, write_store, wrote};
use crate::Target;
use crate::transfer::chunk_records;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The .safetensors file.
    file: PathBuf,
    /// The tensor's name.
    tensor: String,
    #[command(flatten)]
    target: Target,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<Summary> {
    args.target.refuse_shard("safetensors")?;
    import(&args.file, &args.tensor, &args.target, quiet)
        .with_context(|| args.file.display().to_string())
}

fn import(file: &Path, tensor: &str, target: &Target, quiet: bool) -> Result<Summary> {
    let f = File::open(file).context("cannot open")?;
    // SAFETY: the map is read-only and lives only for this import; a file
    // truncated by another program meanwhile could fault, as with any map.
    let map = unsafe { memmap2::Mmap::map(&f) }.context("cannot map")?;
    let tensors = SafeTensors::deserialize(&map)
        .map_err(|e| anyhow::anyhow!("not a valid safetensors file: {e}"))?;
    let view = tensors.tensor(tensor).map_err(|_| {
        let mut names: Vec<String> = tensors.names().into_iter().map(|n| n.to_string()).collect();
        names.sort();
        anyhow::anyhow!("no tensor {tensor:?} (it has {names:?})")
    })?;
    let dtype = match view.dtype() {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::U16 => DType::U16,
        Dtype::I16 => DType::I16,
        Dtype::U32 => DType::U32,
        Dtype::I32 => DType::I32,
        Dtype::U64 => DType::U64,
        Dtype::I64 => DType::I64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        other => bail!("tensor {tensor:?} has dtype {other:?}, which zrecord does not store"),
    };
    let Some((&records, item_shape)) = view.shape().split_first() else {
        bail!("tensor {tensor:?} is a scalar: it has no records");
    };
    if item_shape.contains(&0) {
        bail!("records of shape {item_shape:?} are empty");
    }
    let record_bytes = dtype.size() * item_shape.iter().product::<usize>();
    let data = view.data();
    let schema = Schema::Dense {
        dtype,
        item_shape: item_shape.to_vec(),
    };
    let written = write_store(target, schema, records as u64, quiet, &[], |sink| {
        for chunk in data.chunks(chunk_records(record_bytes) * record_bytes) {
            sink.dense(chunk)?;
        }
        Ok(())
    })?;
    Ok(wrote(written, target))
}
