//! Append: encode in parallel, place, write payload, then record table, then
//! the header — so a crash at any point leaves a prefix of whole batches.

use std::ops::Range;
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use super::Engine;
use super::files::FileTable;
use crate::format::{LOC_ENTRY_LEN, MAX_RECORD_BYTES, RecordLoc, checksum};
use crate::{Error, Result};

/// Below this many input bytes an append compresses on the calling thread.
const PARALLEL_ENCODE_BYTES: usize = 256 << 10;

/// Payload is written in pieces that end on multiples of this file offset
/// (2 MiB), whatever the caller's batch and record sizes: small records are
/// gathered into one write, and the page cache can hold the file in large
/// folios that the read maps then map with 2 MiB pages (measured: 10-20 %
/// faster gathers than with 256 KiB writes).
const WRITE_ALIGN: u64 = 2 << 20;

/// A raw record's checksum, stored after it.
type Trailer = [u8; checksum::TRAILER_LEN];

/// Records encoded by one thread, laid end to end.
struct EncodedShard {
    first: usize,
    bytes: Vec<u8>,
    /// `ends[k]` is where record `first + k` ends in `bytes`.
    ends: Vec<usize>,
}

/// A batch's stored bytes: the input itself (raw, each record followed by
/// its checksum in format version 2) or compressed frames (shape records
/// raw, with their checksums, among them).
enum Encoded {
    Raw { n: usize, checksums: bool },
    Frames(Vec<EncodedShard>),
}

impl Engine {
    /// Appends `n` physical records (`n` a multiple of the group), where
    /// `record(i)` is record `i`'s bytes. Returns the first new logical index.
    /// Callers have validated shapes and dtypes; this checks sizes — all
    /// before anything is written.
    pub(crate) fn append<'a, F>(&self, n: usize, record: F) -> Result<u64>
    where
        F: Fn(usize) -> &'a [u8] + Sync,
    {
        self.check_writable()?;
        debug_assert_eq!(n as u64 % self.group, 0);
        let group = self.group as usize;
        for i in 0..n {
            let len = record(i).len() as u64;
            if len > MAX_RECORD_BYTES {
                return Err(Error::RecordTooLarge {
                    position: i / group,
                    bytes: len,
                    limit: MAX_RECORD_BYTES,
                });
            }
        }
        let encoded = self.encode(n, &record)?;

        let mut w = self.writer();
        let old_len = self.len.load(Ordering::Acquire);
        if n == 0 {
            return Ok(old_len / self.group);
        }

        // Place every record; one that does not fit the tail chunk opens the next.
        let capacity = self.geometry.chunk_capacity();
        let (mut chunk, mut offset) = (w.tail_chunk, w.tail_offset);
        let mut locs = Vec::with_capacity(n);
        let mut closed = Vec::new(); // (chunk, final size) of chunks this batch fills
        encoded.visit_lengths(&record, |i, phys_len| {
            if phys_len > capacity {
                return Err(Error::RecordTooLarge {
                    position: i / group,
                    bytes: phys_len,
                    limit: capacity,
                });
            }
            if offset + phys_len > capacity {
                closed.push((chunk, offset));
                chunk = chunk
                    .checked_add(1)
                    .ok_or_else(|| Error::corrupt(&self.dir, "out of chunk ids"))?;
                offset = 0;
            }
            locs.push(RecordLoc {
                offset: offset as u32,
                phys_len: phys_len as u32,
                logic_len: record(i).len() as u32,
                chunk,
            });
            offset += phys_len;
            Ok(())
        })?;
        let new_len = old_len + n as u64;

        // Open the chunks and table segments the batch reaches. Adding files
        // waits for running gathers, so look first: most appends add none.
        let segments = self.geometry.segments_for(new_len);
        let mut files = self.files();
        if files.chunks.len() <= chunk as usize || (files.segments.len() as u64) < segments {
            // A new table, published before the commit: readers keep theirs
            // meanwhile, and never wait for this one.
            let mut grown = (*files).clone();
            while grown.chunks.len() <= chunk as usize {
                grown.create_chunk()?;
            }
            while (grown.segments.len() as u64) < segments {
                grown.create_segment()?;
            }
            self.publish_files(grown);
            files = self.files();
        }

        // 1. Payload.
        let mut out = PayloadWriter {
            files: &files,
            buf: std::mem::take(&mut w.payload_buf),
            at: None,
        };
        let written = encoded
            .visit(&record, |i, stored, trailer| {
                out.write(locs[i], stored, trailer)
            })
            .and_then(|()| out.flush());
        w.payload_buf = reusable(out.buf);
        written?;
        crate::hooks::hold("append:payload");

        // 2. Record table, one write per segment.
        let mut table = std::mem::take(&mut w.table_buf);
        table.clear();
        for loc in &locs {
            table.extend_from_slice(&loc.encode());
        }
        let written = self.write_table(&files, &table, old_len, new_len);
        w.table_buf = reusable(table);
        written?;
        crate::hooks::hold("append:table");

        // 3. Header: the commit point. Then publish to readers.
        self.write_meta(chunk, offset, new_len)?;
        for (c, size) in closed {
            files.chunks[c as usize]
                .committed
                .store(size, Ordering::Release);
        }
        files.chunks[chunk as usize]
            .committed
            .store(offset, Ordering::Release);
        self.len.store(new_len, Ordering::Release);
        let first_chunk = w.tail_chunk;
        w.touch(
            Some(first_chunk),
            Some(old_len / self.geometry.segment_entries()),
        );
        w.tail_chunk = chunk;
        w.tail_offset = offset;
        Ok(old_len / self.group)
    }

    /// Writes the encoded entries of physical records `old_len..new_len`,
    /// one write per record-table segment.
    fn write_table(
        &self,
        files: &FileTable,
        table: &[u8],
        old_len: u64,
        new_len: u64,
    ) -> Result<()> {
        let entries = self.geometry.segment_entries();
        let mut phys = old_len;
        while phys < new_len {
            let segment = phys / entries;
            let end = ((segment + 1) * entries).min(new_len);
            let bytes = &table[(phys - old_len) as usize * LOC_ENTRY_LEN
                ..(end - old_len) as usize * LOC_ENTRY_LEN];
            files.segments[segment as usize]
                .file
                .write_at(bytes, (phys % entries) * LOC_ENTRY_LEN as u64)?;
            phys = end;
        }
        Ok(())
    }

    /// Compresses the records (in parallel for large batches); raw stores
    /// and shape records keep their input bytes.
    fn encode<'a, F>(&self, n: usize, record: &F) -> Result<Encoded>
    where
        F: Fn(usize) -> &'a [u8] + Sync,
    {
        if self.codec.is_raw() {
            return Ok(Encoded::Raw {
                n,
                checksums: self.features.checksums,
            });
        }
        let checksums = self.features.checksums;
        let total: usize = (0..n).map(|i| record(i).len()).sum();
        let shards = if total < PARALLEL_ENCODE_BYTES {
            1
        } else {
            rayon::current_num_threads() * 4
        };
        let per_shard = n.div_ceil(shards).max(1);
        let ranges: Vec<Range<usize>> = (0..n)
            .step_by(per_shard)
            .map(|s| s..(s + per_shard).min(n))
            .collect();
        let encode_shard = |records: Range<usize>| -> Result<EncodedShard> {
            let mut compressor = self.codec.compressor()?;
            let mut bytes = Vec::new();
            let mut ends = Vec::with_capacity(records.len());
            for i in records.clone() {
                let src = record(i);
                if self.is_shape_record(i as u64) {
                    bytes.extend_from_slice(src);
                    if checksums {
                        bytes.extend_from_slice(&checksum::trailer(src));
                    }
                } else {
                    compressor
                        .compress(src, &mut bytes)
                        .map_err(|reason| Error::Compress {
                            position: i / self.group as usize,
                            reason,
                        })?;
                }
                ends.push(bytes.len());
            }
            Ok(EncodedShard {
                first: records.start,
                bytes,
                ends,
            })
        };
        let shards = if ranges.len() == 1 {
            ranges
                .into_iter()
                .map(encode_shard)
                .collect::<Result<Vec<_>>>()?
        } else {
            ranges
                .into_par_iter()
                .map(encode_shard)
                .collect::<Result<Vec<_>>>()?
        };
        Ok(Encoded::Frames(shards))
    }
}

impl Encoded {
    /// Calls `f(i, stored_length)` for every record, in order.
    fn visit_lengths<'a, F>(
        &self,
        record: &F,
        mut f: impl FnMut(usize, u64) -> Result<()>,
    ) -> Result<()>
    where
        F: Fn(usize) -> &'a [u8],
    {
        match self {
            &Encoded::Raw { n, checksums } => {
                let trailer = if checksums { checksum::TRAILER_LEN } else { 0 };
                (0..n).try_for_each(|i| f(i, (record(i).len() + trailer) as u64))
            }
            Encoded::Frames(_) => self.visit(record, |i, stored, _| f(i, stored.len() as u64)),
        }
    }

    /// Calls `f(i, stored_bytes, trailer)` for every record, in order: the
    /// record is stored as `stored_bytes` followed by `trailer`, if any.
    fn visit<'a, F>(
        &self,
        record: &F,
        mut f: impl FnMut(usize, &[u8], Option<Trailer>) -> Result<()>,
    ) -> Result<()>
    where
        F: Fn(usize) -> &'a [u8],
    {
        match self {
            &Encoded::Raw { n, checksums } => (0..n).try_for_each(|i| {
                let bytes = record(i);
                if checksums {
                    f(i, bytes, Some(checksum::trailer(bytes)))
                } else {
                    f(i, bytes, None)
                }
            }),
            Encoded::Frames(shards) => {
                for shard in shards {
                    let mut start = 0;
                    for (k, &end) in shard.ends.iter().enumerate() {
                        f(shard.first + k, &shard.bytes[start..end], None)?;
                        start = end;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Appends `bytes` to `buf`, the sizes of scalars and of rank-0 and rank-1
/// shape records as fixed-size copies: for records this small, a call to
/// `memcpy` costs more than the copy itself.
#[inline]
fn extend_small(buf: &mut Vec<u8>, bytes: &[u8]) {
    fn fixed<const N: usize>(buf: &mut Vec<u8>, bytes: &[u8]) -> bool {
        <&[u8; N]>::try_from(bytes)
            .map(|b| buf.extend_from_slice(b))
            .is_ok()
    }
    let copied = match bytes.len() {
        1 => fixed::<1>(buf, bytes),
        2 => fixed::<2>(buf, bytes),
        4 => fixed::<4>(buf, bytes),
        8 => fixed::<8>(buf, bytes),
        16 => fixed::<16>(buf, bytes),
        _ => false,
    };
    if !copied {
        buf.extend_from_slice(bytes);
    }
}

/// Buffers above this size are freed after an append rather than kept for
/// the next: one huge record should not pin its size for the handle's life.
const KEEP_BUFFER_BYTES: usize = 8 << 20;

/// `buf`, emptied, if it is small enough to keep.
fn reusable(mut buf: Vec<u8>) -> Vec<u8> {
    if buf.capacity() > KEEP_BUFFER_BYTES {
        return Vec::new();
    }
    buf.clear();
    buf
}

/// Writes placed records, gathering small neighbours into one `pwrite`.
struct PayloadWriter<'a> {
    files: &'a FileTable,
    buf: Vec<u8>,
    /// Chunk and offset where `buf` goes.
    at: Option<(u32, u64)>,
}

impl PayloadWriter<'_> {
    /// Writes a record stored as `bytes` then `trailer`.
    fn write(&mut self, loc: RecordLoc, bytes: &[u8], trailer: Option<Trailer>) -> Result<()> {
        let follows = self.at.is_some_and(|(c, o)| {
            c == loc.chunk && o + self.buf.len() as u64 == u64::from(loc.offset)
        });
        if !follows {
            self.flush()?;
        }
        let (chunk, at) = *self.at.get_or_insert((loc.chunk, loc.offset.into()));
        extend_small(&mut self.buf, bytes);
        if let Some(trailer) = trailer {
            // A fixed-size copy: no call per record.
            self.buf.extend_from_slice(&trailer);
        }
        // Write everything up to the last 2 MiB boundary the buffer reaches.
        let end = at + self.buf.len() as u64;
        let boundary = end / WRITE_ALIGN * WRITE_ALIGN;
        if boundary > at {
            let n = (boundary - at) as usize;
            self.write_at(chunk, at, &self.buf[..n])?;
            self.buf.drain(..n);
            self.at = Some((chunk, boundary));
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if let Some((chunk, offset)) = self.at.take() {
            let buf = std::mem::take(&mut self.buf);
            self.write_at(chunk, offset, &buf)?;
            self.buf = buf;
            self.buf.clear();
        }
        Ok(())
    }

    fn write_at(&self, chunk: u32, offset: u64, bytes: &[u8]) -> Result<()> {
        self.files.chunks[chunk as usize]
            .file
            .file
            .write_at(bytes, offset)
    }
}
