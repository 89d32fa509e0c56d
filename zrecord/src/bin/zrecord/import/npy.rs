//! `zrecord import npy`: streamed in bounded chunks, so files larger than
//! memory import.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Shape, chunk_records, write_store};
use crate::{Target, npy};

pub(crate) fn run(file: &Path, target: &Target, quiet: bool) -> Result<()> {
    let mut reader = BufReader::new(File::open(file).context("cannot open")?);
    let header = npy::read_header(&mut reader)?;
    let Some((&records, item_shape)) = header.shape.split_first() else {
        bail!("a 0-dimensional array has no records");
    };
    let data = header.data_bytes().context("the shape overflows")?;
    let size = std::fs::metadata(file).context("cannot stat")?.len();
    if size < header.data_offset + data {
        bail!(
            "truncated: the header promises {data} bytes of data, the file holds {}",
            size.saturating_sub(header.data_offset)
        );
    }
    if item_shape.contains(&0) {
        bail!("records of shape {item_shape:?} are empty");
    }
    let record_bytes = header.dtype.size() * item_shape.iter().product::<usize>();
    let shape = Shape::Dense {
        dtype: header.dtype,
        item_shape: item_shape.to_vec(),
    };
    write_store(target, shape, records as u64, quiet, &[], |sink| {
        let mut buf = vec![0u8; chunk_records(record_bytes) * record_bytes];
        let mut left = records;
        while left > 0 {
            let n = left.min(chunk_records(record_bytes));
            let bytes = &mut buf[..n * record_bytes];
            reader.read_exact(bytes).context("truncated data")?;
            if header.big_endian {
                npy::swap_elements(bytes, header.dtype.size());
            }
            sink.dense(bytes)?;
            left -= n;
        }
        Ok(())
    })
}
