//! SHA-256 of workload arrays (raw little-endian bytes of the whole array), as
//! `benches/DATA.md` gives them.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex SHA-256 of `values` as little-endian `u32`s (`i32`s cast
/// with `bytemuck`), hashed a piece at a time.
pub fn sha256_hex_u32(values: &[u32]) -> String {
    let mut hasher = Sha256::new();
    for piece in values.chunks(1 << 14) {
        let bytes: Vec<u8> = piece.iter().flat_map(|v| v.to_le_bytes()).collect();
        hasher.update(bytes);
    }
    hex(&hasher.finalize())
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a checksum check established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// Full-size data: its SHA-256 matches DATA.md.
    Checksum,
    /// A prefix (fewer records than the full workload): DATA.md has no
    /// checksum for it, so nothing was checked.
    PrefixUnchecked,
}

impl Verified {
    /// For a table's notes: `what` was checked against benches/DATA.md, or
    /// nothing was (a prefix).
    pub fn describe(self, what: &str) -> String {
        match self {
            Verified::Checksum => format!("{what} benches/DATA.md"),
            Verified::PrefixUnchecked => "a prefix: no checksum exists".into(),
        }
    }
}

/// Checks the SHA-256 `got` of workload array `array` (`"a"`, `"b"`,
/// `"c lengths"`, `"c tokens"`) against DATA.md's `expected`; the error
/// says which array differs.
pub(crate) fn compare(array: &str, expected: &str, got: String) -> Result<Verified, String> {
    if got == expected {
        return Ok(Verified::Checksum);
    }
    Err(format!(
        "workload {array}: SHA-256 {got} differs from benches/DATA.md's {expected}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_names_the_array() {
        let err = compare("a", "00", "01".into()).unwrap_err();
        assert!(err.contains("workload a"), "{err}");
    }
}
