//! The systems the store benchmarks set side by side, all gathering the same
//! records with the same index plans into a reused batch buffer:
//!
//! - [`InMemory`]: every record in one `Vec<u8>`, copied into the batch with
//!   the same threads zrecord uses (rayon's pool, in parallel for batches of
//!   1 MiB and more, in the same pieces as zrecord) — the physical limit;
//! - [`Mmap`]: one flat file of all records, memory-mapped, record `i` copied
//!   from offset `i * record_bytes` on the calling thread — the strong baseline;
//! - [`Frames`]: every record compressed once exactly as zrecord's `zstd` codec
//!   does (zstd level 3, content size and checksum), the frames kept in memory
//!   and decoded on all cores straight into the batch buffer, one `DCtx` per
//!   thread — the limit for compressed gathers;
//! - [`Zrecord`]: a `DenseStore<u8>` (raw or zstd) gathered with `gather_into`.

use std::cell::RefCell;
use std::error::Error;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use zrecord::{Codec, DenseStore};
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx};

/// A way to gather fixed-size records into a batch buffer.
pub trait Gather: Sync {
    /// Short name for tables.
    fn name(&self) -> &str;

    /// Bytes per record.
    fn record_bytes(&self) -> usize;

    /// Number of records.
    fn records(&self) -> u64;

    /// Copies records `indices` end to end into `out`
    /// (`indices.len() * record_bytes()` bytes).
    ///
    /// # Panics
    /// On any error: benchmarks gather only valid indices.
    fn gather(&self, indices: &[u64], out: &mut [u8]);
}

/// zrecord copies a raw batch in parallel from this many bytes on
/// (`PARALLEL_COPY_BYTES` in `zrecord/src/engine/gather.rs`).
pub const ZRECORD_PARALLEL_COPY_BYTES: usize = 1 << 20;

/// Records per parallel piece, as zrecord splits a batch: a few pieces per thread.
fn min_len(records: usize) -> usize {
    records.div_ceil(rayon::current_num_threads() * 4).max(1)
}

/// All records in one buffer (the in-memory limit).
pub struct InMemory {
    data: Arc<Vec<u8>>,
    record_bytes: usize,
}

impl InMemory {
    /// Gathers from `data`, records of `record_bytes` laid end to end.
    pub fn new(data: Arc<Vec<u8>>, record_bytes: usize) -> Self {
        InMemory { data, record_bytes }
    }
}

impl Gather for InMemory {
    fn name(&self) -> &str {
        "in-memory"
    }

    fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    fn records(&self) -> u64 {
        (self.data.len() / self.record_bytes) as u64
    }

    fn gather(&self, indices: &[u64], out: &mut [u8]) {
        let w = self.record_bytes;
        let data = &self.data[..];
        let copy = |(dst, &i): (&mut [u8], &u64)| {
            let at = i as usize * w;
            dst.copy_from_slice(&data[at..at + w]);
        };
        if out.len() >= ZRECORD_PARALLEL_COPY_BYTES
            && indices.len() > 1
            && rayon::current_num_threads() > 1
        {
            out.par_chunks_mut(w)
                .zip(indices.par_iter())
                .with_min_len(min_len(indices.len()))
                .for_each(copy);
        } else {
            out.chunks_mut(w).zip(indices).for_each(copy);
        }
    }
}

/// A flat file of all records, memory-mapped; single-threaded copy.
pub struct Mmap {
    map: memmap2::Mmap,
    record_bytes: usize,
}

impl Mmap {
    /// Writes `data` to `path` and maps it.
    ///
    /// # Errors
    /// When the file cannot be written or mapped.
    pub fn create(path: &Path, data: &[u8], record_bytes: usize) -> std::io::Result<Self> {
        std::fs::write(path, data)?;
        let file = File::open(path)?;
        // SAFETY: the file is private to this benchmark (created just above in
        // its own temporary folder) and nothing writes or truncates it while
        // the map lives.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        Ok(Mmap { map, record_bytes })
    }
}

impl Gather for Mmap {
    fn name(&self) -> &str {
        "mmap"
    }

    fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    fn records(&self) -> u64 {
        (self.map.len() / self.record_bytes) as u64
    }

    fn gather(&self, indices: &[u64], out: &mut [u8]) {
        let w = self.record_bytes;
        for (dst, &i) in out.chunks_mut(w).zip(indices) {
            let at = i as usize * w;
            dst.copy_from_slice(&self.map[at..at + w]);
        }
    }
}

/// zstd frames of every record, in memory, decoded on all cores.
pub struct Frames {
    frames: Vec<Vec<u8>>,
    record_bytes: usize,
}

/// A zstd compression context set up as zrecord's `zstd` codec sets its own.
fn zrecord_cctx() -> CCtx<'static> {
    let mut cctx = CCtx::create();
    for p in [
        CParameter::ChecksumFlag(true),
        CParameter::ContentSizeFlag(true),
        CParameter::CompressionLevel(zrecord::ZSTD_LEVEL),
    ] {
        cctx.set_parameter(p).expect("valid zstd parameter");
    }
    cctx
}

thread_local! {
    /// One decompression context per thread, reused by every batch.
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

impl Frames {
    /// Compresses every record of `data` (in parallel, one context per
    /// thread) with zstd level 3 plus content size and checksum.
    pub fn compress(data: &[u8], record_bytes: usize) -> Self {
        let frames = data
            .par_chunks(record_bytes)
            .map_init(zrecord_cctx, |cctx, record| {
                let mut frame = vec![0u8; zstd_safe::compress_bound(record.len())];
                let n = cctx
                    .compress2(&mut frame[..], record)
                    .unwrap_or_else(|e| panic!("zstd: {}", zstd_safe::get_error_name(e)));
                frame.truncate(n);
                frame
            })
            .collect();
        Frames {
            frames,
            record_bytes,
        }
    }

    /// Total bytes of all frames.
    pub fn compressed_bytes(&self) -> u64 {
        self.frames.iter().map(|f| f.len() as u64).sum()
    }
}

impl Gather for Frames {
    fn name(&self) -> &str {
        "zstd frames from memory"
    }

    fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    fn records(&self) -> u64 {
        self.frames.len() as u64
    }

    fn gather(&self, indices: &[u64], out: &mut [u8]) {
        out.par_chunks_mut(self.record_bytes)
            .zip(indices.par_iter())
            .with_min_len(min_len(indices.len()))
            .for_each(|(dst, &i)| {
                let n = DCTX
                    .with_borrow_mut(|dctx| dctx.decompress(dst, &self.frames[i as usize]))
                    .unwrap_or_else(|e| panic!("zstd: {}", zstd_safe::get_error_name(e)));
                assert_eq!(n, dst.len(), "frame {i} decodes to {n} bytes");
            });
    }
}

/// A zrecord `DenseStore<u8>`.
pub struct Zrecord {
    store: DenseStore<u8>,
    name: String,
}

impl Zrecord {
    /// Creates a store of `shape` records with `codec` at `path` and appends
    /// `data` (whole records), in appends of about 64 MiB.
    ///
    /// # Errors
    /// Any zrecord error.
    pub fn create(
        path: &Path,
        data: &[u8],
        shape: &[usize],
        codec: Codec,
    ) -> Result<Self, zrecord::Error> {
        let name = format!("zrecord {codec}");
        let store = DenseStore::<u8>::create(path, shape, codec)?;
        let width = shape.iter().product::<usize>();
        let per_append = (64usize << 20).div_ceil(width) * width;
        for piece in data.chunks(per_append) {
            store.append(piece)?;
        }
        Ok(Zrecord { store, name })
    }

    /// The store.
    pub fn store(&self) -> &DenseStore<u8> {
        &self.store
    }
}

impl Gather for Zrecord {
    fn name(&self) -> &str {
        &self.name
    }

    fn record_bytes(&self) -> usize {
        self.store.record_len()
    }

    fn records(&self) -> u64 {
        self.store.len()
    }

    fn gather(&self, indices: &[u64], out: &mut [u8]) {
        self.store
            .gather_into(indices, out)
            .unwrap_or_else(|e| panic!("zrecord gather: {e}"));
    }
}

/// Gathers `batch` from `system` and compares it with the source `data`.
///
/// # Errors
/// A description of the first differing record.
pub fn check_batch(system: &dyn Gather, data: &[u8], batch: &[u64]) -> Result<(), String> {
    let w = system.record_bytes();
    let mut out = vec![0xA5u8; batch.len() * w];
    system.gather(batch, &mut out);
    for (k, (got, &i)) in out.chunks(w).zip(batch).enumerate() {
        let at = i as usize * w;
        if got != &data[at..at + w] {
            return Err(format!(
                "{}: record {i} (position {k} of the batch) differs from the source",
                system.name()
            ));
        }
    }
    Ok(())
}

/// Gathers every record once, in order and in batches of `batch`: brings
/// every page a system reads into memory and its map before timing.
pub fn touch_all(system: &dyn Gather, batch: usize) {
    let n = system.records();
    let mut out = vec![0u8; batch * system.record_bytes()];
    let mut first = 0;
    while first < n {
        let indices: Vec<u64> = (first..(first + batch as u64).min(n)).collect();
        system.gather(&indices, &mut out[..indices.len() * system.record_bytes()]);
        first += batch as u64;
    }
}

/// Every system of one dense workload, built from the same records in one
/// temporary folder (removed on drop).
pub struct DenseSuite {
    /// The source records, end to end.
    pub data: Arc<Vec<u8>>,
    /// Bytes per record.
    pub record_bytes: usize,
    /// See [`InMemory`].
    pub in_memory: InMemory,
    /// See [`Mmap`].
    pub mmap: Mmap,
    /// See [`Frames`].
    pub frames: Frames,
    /// zrecord with `Codec::Raw`.
    pub zrecord_raw: Zrecord,
    /// zrecord with `Codec::Zstd`.
    pub zrecord_zstd: Zrecord,
    // Last: the stores and the map close before their folder goes.
    _dir: tempfile::TempDir,
}

impl DenseSuite {
    /// Builds every system over `data` (records of `shape`) in a new
    /// temporary folder, and checks that the zrecord zstd store holds exactly
    /// the bytes of [`Frames`] (the same frames).
    ///
    /// # Errors
    /// I/O and zrecord errors, or frames that differ in size from the store's.
    pub fn build(data: Vec<u8>, shape: &[usize]) -> Result<Self, Box<dyn Error>> {
        let record_bytes: usize = shape.iter().product();
        let dir = tempfile::Builder::new().prefix("zrecord-bench").tempdir()?;
        let data = Arc::new(data);
        let in_memory = InMemory::new(Arc::clone(&data), record_bytes);
        let mmap = Mmap::create(&dir.path().join("flat.bin"), &data, record_bytes)?;
        let frames = Frames::compress(&data, record_bytes);
        let zrecord_raw = Zrecord::create(&dir.path().join("raw"), &data, shape, Codec::Raw)?;
        let zrecord_zstd = Zrecord::create(&dir.path().join("zstd"), &data, shape, Codec::Zstd)?;
        let stored = zrecord_zstd.store().stats()?.live_bytes;
        if stored != frames.compressed_bytes() {
            return Err(format!(
                "the zstd store holds {stored} bytes of frames, the reference {}: not the same frames",
                frames.compressed_bytes()
            )
            .into());
        }
        Ok(DenseSuite {
            data,
            record_bytes,
            in_memory,
            mmap,
            frames,
            zrecord_raw,
            zrecord_zstd,
            _dir: dir,
        })
    }

    /// Number of records.
    pub fn records(&self) -> u64 {
        (self.data.len() / self.record_bytes) as u64
    }

    /// Every system, references first.
    pub fn systems(&self) -> [&dyn Gather; 5] {
        [
            &self.in_memory,
            &self.mmap,
            &self.frames,
            &self.zrecord_raw,
            &self.zrecord_zstd,
        ]
    }

    /// Checks the first three and the last batch of `plan` on every system.
    ///
    /// # Errors
    /// The first difference found.
    pub fn check_plan(&self, plan: &[Vec<u64>]) -> Result<(), String> {
        let picks = plan.iter().take(3).chain(plan.last());
        for batch in picks {
            for system in self.systems() {
                check_batch(system, &self.data, batch)?;
            }
        }
        Ok(())
    }

    /// Compression ratio of the zstd frames (logical / stored bytes).
    pub fn zstd_ratio(&self) -> f64 {
        self.data.len() as f64 / self.frames.compressed_bytes() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plans::plan;
    use crate::workloads::{DENSE_A, DENSE_B};

    #[test]
    fn every_system_gathers_the_source() {
        for (w, records) in [(DENSE_A, 12), (DENSE_B, 3000)] {
            let suite = DenseSuite::build(w.generate(records), &w.shape).unwrap();
            let batches = plan(w.plan_seed, 4, 64, records as u64);
            suite.check_plan(&batches).unwrap();
            for system in suite.systems() {
                assert_eq!(system.records(), records as u64);
                touch_all(system, 256);
            }
            assert!(suite.zstd_ratio() > 1.0);
        }
    }

    #[test]
    fn a_wrong_system_is_caught() {
        let data: Vec<u8> = (0..64u8).collect();
        let wrong = InMemory::new(Arc::new(vec![0u8; 64]), 8);
        assert!(check_batch(&wrong, &data, &[3, 1]).is_err());
        let right = InMemory::new(Arc::new(data.clone()), 8);
        assert!(check_batch(&right, &data, &[3, 1, 3]).is_ok());
    }
}
