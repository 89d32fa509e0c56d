//! Record checksums (format version 2): every record stored raw — the
//! payloads of a `raw` store and every ragged shape record — ends with a
//! CRC-32C of its bytes, little-endian, the checksum TFRecord and LevelDB
//! keep per record. zstd frames carry zstd's own content checksum instead.
//!
//! CRC-32C because the CPU computes it (SSE 4.2 on x86-64, the CRC
//! extension on ARMv8). Measured on this project's 2-core EPYC machine
//! under load, one thread: 2.1 GB/s on 784-byte records and 3.8 GB/s on
//! 256 KiB ones, against 2.1 and 3.2 for XXH3-64 and 1.6 and 3.0 for CRC-32
//! (IEEE, `crc32fast`); and four bytes keep the trailer small next to
//! 784-byte records. Gathers without read checks never compute it.

/// Bytes of the checksum after a raw record.
pub(crate) const TRAILER_LEN: usize = 4;

/// The trailer of `bytes`.
#[inline]
pub(crate) fn trailer(bytes: &[u8]) -> [u8; TRAILER_LEN] {
    crc32c::crc32c(bytes).to_le_bytes()
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
}
