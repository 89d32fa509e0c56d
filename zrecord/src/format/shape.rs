//! Ragged shape records: `rank: u64` then `rank` dimensions, each a `u64`.
//! They are physical record `2i + 1`, beside payload `2i`, and never compressed.

use super::le;

/// Encodes `shape` and appends it to `out`.
pub(crate) fn encode_shape(shape: &[usize], out: &mut Vec<u8>) {
    out.extend_from_slice(&(shape.len() as u64).to_le_bytes());
    for &d in shape {
        out.extend_from_slice(&(d as u64).to_le_bytes());
    }
}

/// Decodes a shape record, appending its dimensions to `dims`; a reason on failure.
pub(crate) fn decode_shape(bytes: &[u8], dims: &mut Vec<usize>) -> Result<(), String> {
    if bytes.len() < 8 || !bytes.len().is_multiple_of(8) {
        return Err(format!(
            "a shape record of {} bytes (a multiple of 8, at least 8)",
            bytes.len()
        ));
    }
    let rank = le!(u64, bytes, 0);
    let count = (bytes.len() / 8 - 1) as u64;
    if rank != count {
        return Err(format!(
            "a shape record claims rank {rank} but holds {count} dimensions"
        ));
    }
    for at in (8..bytes.len()).step_by(8) {
        let d = le!(u64, bytes, at);
        dims.push(
            usize::try_from(d).map_err(|_| format!("dimension {d} does not fit this machine"))?,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_round_trip_including_scalars() {
        for shape in [&[][..], &[3], &[2, 5, 1]] {
            let mut b = Vec::new();
            encode_shape(shape, &mut b);
            assert_eq!(b.len(), 8 + 8 * shape.len());
            let mut dims = Vec::new();
            decode_shape(&b, &mut dims).unwrap();
            assert_eq!(dims, shape);
        }
        let mut dims = Vec::new();
        assert!(decode_shape(&[1, 0, 0, 0, 0, 0, 0, 0], &mut dims).is_err());
        assert!(decode_shape(&[0; 7], &mut dims).is_err());
    }
}
