//! zstd frames in memory: every record's frame read out of a zrecord store's
//! files and decoded on all cores (the limit a compressed gather is held to),
//! and records compressed in groups (a ratio reference only).

use std::cell::RefCell;
use std::io;
use std::path::Path;

use rayon::prelude::*;
use zrecord::{Codec, ZSTD_LEVEL};
use zstd::zstd_safe::{self, DCtx, DDict};

use super::systems::{Cuts, Out, Packed, Source, System};

thread_local! {
    /// One decompression context per thread, reused by every batch.
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// Every record of a workload as its own zstd frame, the frames end to end
/// in one buffer (as a store's chunk holds them), in memory.
pub(crate) struct Frames {
    bytes: Vec<u8>,
    /// Where frame `i` starts; one entry past the last frame.
    starts: Vec<usize>,
    ddict: Option<DDict<'static>>,
    /// The records, for their sizes.
    source: Source,
    out: Out,
}

impl Frames {
    /// The frames the zrecord store of `source`'s records at `dir` holds,
    /// read from its files (FORMAT.md, versions 1 and 2 alike: `meta.zr`, the
    /// `{n}.loc` record tables and the `{n}.chunk` files): every record's
    /// first physical record (a ragged record is two: payload, shape). So the
    /// in-memory limit decodes exactly the bytes the store decodes.
    pub(crate) fn from_store(dir: &Path, codec: &Codec, source: &Source) -> io::Result<Frames> {
        let group = 1 + usize::from(matches!(source, Source::Ragged(_)));
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        // The current header: the first 32 bytes (a synced copy may follow).
        let meta = std::fs::read(dir.join("meta.zr"))?;
        if !matches!(meta.len(), 32 | 64) || &meta[..4] != b"ZREC" || !matches!(meta[4], 1 | 2) {
            return Err(bad("meta.zr is not a version-1 or -2 zrecord header".into()));
        }
        let u32_at = |b: &[u8], at: usize| {
            u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
        };
        let length = u64::from_le_bytes(meta[14..22].try_into().expect("8 bytes"));
        let per_segment = 1u64 << meta[22];
        let segments = (0..length.div_ceil(per_segment))
            .map(|n| std::fs::read(dir.join(format!("{n}.loc"))))
            .collect::<io::Result<Vec<_>>>()?;
        // Chunks `0..=tail_chunk` exist.
        let chunks = (0..=u32_at(&meta, 6))
            .map(|n| super::disk::map(&dir.join(format!("{n}.chunk"))))
            .collect::<io::Result<Vec<_>>>()?;
        let (mut bytes, mut starts) = (Vec::new(), vec![0]);
        for phys in (0..length).step_by(group) {
            let at = ((phys % per_segment) * 16) as usize;
            let entry = segments[(phys / per_segment) as usize]
                .get(at..at + 16)
                .ok_or_else(|| bad(format!("no table entry for physical record {phys}")))?;
            let (offset, len) = (u32_at(entry, 0), u32_at(entry, 4));
            let frame = chunks
                .get(u32_at(entry, 12))
                .and_then(|c| c.get(offset..offset + len))
                .ok_or_else(|| bad(format!("record {phys} lies past its chunk's end")))?;
            bytes.extend_from_slice(frame);
            starts.push(bytes.len());
        }
        let ddict = match codec {
            Codec::ZstdDict(dict) => Some(
                DDict::try_create(dict.as_bytes())
                    .ok_or_else(|| bad("zstd cannot load the dictionary".into()))?,
            ),
            _ => None,
        };
        Ok(Frames {
            bytes,
            starts,
            ddict,
            source: source.clone(),
            out: Out::default(),
        })
    }

    pub(crate) fn compressed_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }
}

impl System for Frames {
    fn gather(&mut self, indices: &[u64]) -> Packed<'_> {
        // Decodes frame `i` into `dst` (exactly its content size).
        let decode = |dst: &mut [u8], i: u64| {
            let frame = &self.bytes[self.starts[i as usize]..self.starts[i as usize + 1]];
            let n = DCTX
                .with_borrow_mut(|dctx| match &self.ddict {
                    Some(ddict) => dctx.decompress_using_ddict(dst, frame, ddict),
                    None => dctx.decompress(dst, frame),
                })
                .unwrap_or_else(|e| panic!("zstd: {}", zstd_safe::get_error_name(e)));
            assert_eq!(n, dst.len(), "frame {i} decodes to {n} bytes");
        };
        match self.source.cuts() {
            Cuts::Width(w) => self.out.fixed(w, indices, true, decode),
            cuts => self
                .out
                .packed(indices, |i| cuts.range(i).len(), |_| true, decode),
        }
    }
}

/// Compressed size of `source`'s records in groups of `per_group`
/// consecutive records, each group one zstd frame at the store's level with
/// a checksum, as a store writes its frames (in parallel).
pub(crate) fn grouped_bytes(source: &Source, per_group: usize) -> u64 {
    let (n, cuts) = (source.len(), source.cuts());
    let compressor = || {
        let mut c = zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("a valid zstd level");
        c.include_checksum(true).expect("a valid zstd parameter");
        c
    };
    let group_bytes = |c: &mut zstd::bulk::Compressor<'_>, first: usize| {
        let last = (first + per_group).min(n) - 1;
        let group = cuts.range(first as u64).start..cuts.range(last as u64).end;
        c.compress(&source.bytes()[group])
            .expect("zstd compresses")
            .len() as u64
    };
    let firsts = (0..n).into_par_iter().step_by(per_group);
    firsts.map_init(compressor, group_bytes).sum()
}
