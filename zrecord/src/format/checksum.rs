//! Record checksums (format version 2): every record stored raw — the
//! payloads of a `raw` store and every ragged shape record — ends with a
//! CRC-32C of its bytes, little-endian, the checksum TFRecord and LevelDB
//! keep per record. zstd frames carry zstd's own content checksum instead.
//!
//! CRC-32C because the CPU computes it (SSE 4.2 on x86-64, the CRC
//! extension on ARMv8): as fast as XXH3-64 on small records and faster than
//! CRC-32 (IEEE) on all, and four bytes keep the trailer small next to
//! small records. Gathers without read checks never compute it.

/// Bytes of the checksum after a raw record.
pub(crate) const TRAILER_LEN: usize = 4;

/// Inputs up to this long take [`short_crc32c`]: most records an import
/// writes are this small (scalars, shape records, short strings).
const SHORT: usize = 64;

/// The trailer of `bytes`.
#[inline]
pub(crate) fn trailer(bytes: &[u8]) -> [u8; TRAILER_LEN] {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() <= SHORT && std::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked on the line above.
        return unsafe { short_crc32c(bytes) }.to_le_bytes();
    }
    crc32c::crc32c(bytes).to_le_bytes()
}

/// CRC-32C of a short input, eight bytes per instruction and then one.
/// The `crc32c` crate's general routine, built for long inputs, took twice
/// as long on the 2- to 40-byte records of an import (10 against 20 ns).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn short_crc32c(bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};
    let mut crc = u64::from(u32::MAX);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(w));
    }
    let mut crc = crc as u32;
    for &b in words.remainder() {
        crc = _mm_crc32_u8(crc, b);
    }
    !crc
}

/// Checks `body` against the trailer `want`.
#[inline]
pub(crate) fn check_body(body: &[u8], want: [u8; TRAILER_LEN]) -> Result<(), String> {
    let got = trailer(body);
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "checksum mismatch: its bytes hash to CRC-32C {:08x}, the record says {:08x}",
            u32::from_le_bytes(got),
            u32::from_le_bytes(want)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value_and_round_trip() {
        // The CRC-32C check value (RFC 3720, iSCSI).
        assert_eq!(trailer(b"123456789"), 0xE306_9283u32.to_le_bytes());
        assert_eq!(check_body(b"hello", trailer(b"hello")), Ok(()));
        assert_eq!(check_body(b"", trailer(b"")), Ok(()));
        let err = check_body(b"hellp", trailer(b"hello")).unwrap_err();
        assert!(err.contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn the_short_path_agrees_with_the_general_one() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 131 + 7) as u8).collect();
        for start in 0..9 {
            for len in 0..=SHORT + 9 {
                let input = &bytes[start..start + len];
                assert_eq!(
                    trailer(input),
                    crc32c::crc32c(input).to_le_bytes(),
                    "{len} bytes from {start}"
                );
            }
        }
    }
}
