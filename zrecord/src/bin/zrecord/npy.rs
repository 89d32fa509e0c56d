//! The `.npy` format (NumPy 1.0–3.0 headers): enough to stream arrays of the
//! store dtypes in and out. <https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>

use std::io::{Read, Write};

use anyhow::{Context, Result, bail};
use zrecord::DType;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// What an `.npy` header says.
pub(crate) struct Header {
    pub(crate) dtype: DType,
    /// Elements are big-endian and must be swapped.
    pub(crate) big_endian: bool,
    pub(crate) shape: Vec<usize>,
    /// Bytes before the data.
    pub(crate) data_offset: u64,
}

impl Header {
    /// Bytes of data the header promises.
    pub(crate) fn data_bytes(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(self.dtype.size() as u64, |acc, &d| {
                acc.checked_mul(d as u64)
            })
    }
}

/// Reads and checks an `.npy` header.
pub(crate) fn read_header(r: &mut impl Read) -> Result<Header> {
    let mut start = [0u8; 8];
    r.read_exact(&mut start)
        .context("too short to be an .npy file")?;
    if &start[..6] != MAGIC {
        bail!("not an .npy file (bad magic)");
    }
    let (len, prefix) = match start[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).context("truncated header")?;
            (u16::from_le_bytes(b) as usize, 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).context("truncated header")?;
            (u32::from_le_bytes(b) as usize, 12)
        }
        v => bail!("unsupported .npy version {v}"),
    };
    if len > 1 << 20 {
        bail!("an .npy header of {len} bytes is not plausible");
    }
    let mut text = vec![0u8; len];
    r.read_exact(&mut text).context("truncated header")?;
    let text = String::from_utf8(text).context("the header is not text")?;
    let descr = field(&text, "descr").context("the header has no 'descr'")?;
    let descr = descr.trim().trim_matches(|c| c == '\'' || c == '"');
    if field(&text, "fortran_order").is_some_and(|v| v.trim() == "True") {
        bail!("Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
    }
    let shape_text = field(&text, "shape").context("the header has no 'shape'")?;
    let shape = shape_text
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .with_context(|| format!("bad shape entry {s:?}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let (dtype, big_endian) = parse_descr(descr)?;
    Ok(Header {
        dtype,
        big_endian,
        shape,
        data_offset: (prefix + len) as u64,
    })
}

/// The text of `key`'s value in a Python dict literal (up to the next key or the end).
fn field<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let at = dict.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = dict[at..].trim_start().strip_prefix(':')?;
    let end = if rest.trim_start().starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(&rest[..end])
}

fn parse_descr(descr: &str) -> Result<(DType, bool)> {
    let (order, code) = descr.split_at(descr.len().min(1));
    let big_endian = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => bail!("unsupported dtype {descr:?}"),
    };
    let dtype = match code {
        "b1" => DType::Bool,
        "u1" => DType::U8,
        "i1" => DType::I8,
        "u2" => DType::U16,
        "i2" => DType::I16,
        "u4" => DType::U32,
        "i4" => DType::I32,
        "u8" => DType::U64,
        "i8" => DType::I64,
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => bail!(
            "unsupported dtype {descr:?} (zrecord stores bool, u8..u64, i8..i64, f16, f32, f64)"
        ),
    };
    Ok((dtype, big_endian && dtype.size() > 1))
}

/// The `descr` of `dtype`, little-endian.
fn descr(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::U64 => "<u8",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        other => bail!("npy has no {other} dtype"),
    })
}

/// Writes a version 1.0 header for a C-ordered array.
pub(crate) fn write_header(w: &mut impl Write, dtype: DType, shape: &[usize]) -> Result<()> {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut text = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(dtype)?
    );
    // Pad so the data starts on a 64-byte boundary, ending with a newline.
    let unpadded = MAGIC.len() + 4 + text.len() + 1;
    text.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    text.push('\n');
    let len = u16::try_from(text.len()).context("shape too long for an .npy header")?;
    w.write_all(MAGIC)?;
    w.write_all(&[1, 0])?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(text.as_bytes())?;
    Ok(())
}

/// Swaps every `size`-byte element of `bytes` in place.
pub(crate) fn swap_elements(bytes: &mut [u8], size: usize) {
    if size > 1 {
        bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        for (dtype, shape) in [
            (DType::F32, vec![3, 4]),
            (DType::U8, vec![5]),
            (DType::Bool, vec![2, 1, 1]),
        ] {
            let mut b = Vec::new();
            write_header(&mut b, dtype, &shape).unwrap();
            assert_eq!(b.len() % 64, 0);
            let h = read_header(&mut b.as_slice()).unwrap();
            assert_eq!(
                (h.dtype, h.shape, h.data_offset, h.big_endian),
                (dtype, shape, b.len() as u64, false)
            );
        }
        let text = "{'descr': '>i4', 'fortran_order': False, 'shape': (7,), }\n";
        let mut numpy = b"\x93NUMPY\x01\x00".to_vec();
        numpy.extend_from_slice(&(text.len() as u16).to_le_bytes());
        numpy.extend_from_slice(text.as_bytes());
        let h = read_header(&mut numpy.as_slice()).unwrap();
        assert_eq!(
            (h.dtype, h.big_endian, h.shape),
            (DType::I32, true, vec![7])
        );
    }
}
