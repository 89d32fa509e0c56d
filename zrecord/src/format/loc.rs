//! `{n}.loc`: the record table, 16 bytes per physical record.

use super::le;

/// Bytes per record-table entry.
pub(crate) const LOC_ENTRY_LEN: usize = 16;

const OFFSET: usize = 0;
const PHYS_LEN: usize = OFFSET + 4;
const LOGIC_LEN: usize = PHYS_LEN + 4;
const CHUNK: usize = LOGIC_LEN + 4;
const _: () = assert!(CHUNK + 4 == LOC_ENTRY_LEN);

/// Where one physical record lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RecordLoc {
    /// Byte offset in the chunk.
    pub(crate) offset: u32,
    /// Stored size (the frame, for compressed codecs).
    pub(crate) phys_len: u32,
    /// Size before compression.
    pub(crate) logic_len: u32,
    /// The chunk holding it.
    pub(crate) chunk: u32,
}

impl RecordLoc {
    pub(crate) fn encode(&self) -> [u8; LOC_ENTRY_LEN] {
        let mut b = [0u8; LOC_ENTRY_LEN];
        b[OFFSET..PHYS_LEN].copy_from_slice(&self.offset.to_le_bytes());
        b[PHYS_LEN..LOGIC_LEN].copy_from_slice(&self.phys_len.to_le_bytes());
        b[LOGIC_LEN..CHUNK].copy_from_slice(&self.logic_len.to_le_bytes());
        b[CHUNK..].copy_from_slice(&self.chunk.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; LOC_ENTRY_LEN]) -> RecordLoc {
        RecordLoc {
            offset: le!(u32, b, OFFSET),
            phys_len: le!(u32, b, PHYS_LEN),
            logic_len: le!(u32, b, LOGIC_LEN),
            chunk: le!(u32, b, CHUNK),
        }
    }

    /// One past the record's last byte in its chunk.
    pub(crate) fn end(&self) -> u64 {
        u64::from(self.offset) + u64::from(self.phys_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_format_md() {
        let loc = RecordLoc {
            offset: 0x0403_0201,
            phys_len: 5,
            logic_len: 6,
            chunk: 7,
        };
        assert_eq!(
            loc.encode(),
            [1, 2, 3, 4, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0]
        );
        assert_eq!(RecordLoc::decode(&loc.encode()), loc);
        assert_eq!(loc.end(), 0x0403_0206);
    }
}
