//! `zrecord import idx`: MNIST-style IDX files, plain or gzipped.
//!
//! Header: two zero bytes, a type byte, the number of dimensions, then each
//! dimension as a big-endian u32; the data follows, big-endian.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result, bail};
use zrecord::DType;

use super::{Shape, chunk_records, write_store};
use crate::{Target, npy};

pub(crate) fn run(file: &Path, target: &Target, quiet: bool) -> Result<()> {
    let mut reader = open(file)?;
    let mut magic = [0u8; 4];
    reader
        .read_exact(&mut magic)
        .context("too short to be an IDX file")?;
    if magic[..2] != [0, 0] {
        bail!("not an IDX file (bad magic {magic:02x?})");
    }
    let dtype = match magic[2] {
        0x08 => DType::U8,
        0x09 => DType::I8,
        0x0B => DType::I16,
        0x0C => DType::I32,
        0x0D => DType::F32,
        0x0E => DType::F64,
        t => bail!("unknown IDX element type 0x{t:02x}"),
    };
    if magic[3] == 0 {
        bail!("an IDX file with no dimensions has no records");
    }
    let mut dims = Vec::new();
    for _ in 0..magic[3] {
        let mut d = [0u8; 4];
        reader.read_exact(&mut d).context("truncated header")?;
        #[expect(
            clippy::big_endian_bytes,
            reason = "IDX headers are big-endian by definition"
        )]
        dims.push(u32::from_be_bytes(d) as usize);
    }
    let (&records, item_shape) = dims.split_first().context("no dimensions")?;
    if item_shape.contains(&0) {
        bail!("records of shape {item_shape:?} are empty");
    }
    let record_bytes = dtype.size() * item_shape.iter().product::<usize>();
    let shape = Shape::Dense {
        dtype,
        item_shape: item_shape.to_vec(),
    };
    write_store(target, shape, records as u64, quiet, &[], |sink| {
        let mut buf = vec![0u8; chunk_records(record_bytes) * record_bytes];
        let mut left = records;
        while left > 0 {
            let n = left.min(chunk_records(record_bytes));
            let bytes = &mut buf[..n * record_bytes];
            reader
                .read_exact(bytes)
                .with_context(|| format!("truncated data: {left} of {records} records missing"))?;
            npy::swap_elements(bytes, dtype.size()); // IDX is big-endian
            sink.dense(bytes)?;
            left -= n;
        }
        Ok(())
    })
}

/// A reader of the file's content, gunzipping when it starts with gzip's magic.
fn open(file: &Path) -> Result<Box<dyn Read>> {
    let mut f = File::open(file).context("cannot open")?;
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic).context("cannot read")?;
    let f = BufReader::new(File::open(file).context("cannot open")?);
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(flate2::read::GzDecoder::new(f))
    } else {
        Box::new(f)
    })
}
