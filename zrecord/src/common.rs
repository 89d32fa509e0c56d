//! What every store type shares: maintenance methods forwarded to the engine,
//! and the choice of records a dictionary trains on.

use crate::DictTier;

/// Indices of an evenly strided subset of `len` records of about
/// `record_bytes` each, sized to the tier's training budget.
pub(crate) fn training_indices(len: u64, record_bytes: u64, tier: DictTier) -> Vec<u64> {
    let wanted = (tier.sample_bytes() as u64 / record_bytes.max(1)).clamp(1, len.max(1));
    let stride = (len / wanted).max(1);
    (0..len)
        .step_by(stride as usize)
        .take(wanted as usize)
        .collect()
}

/// Adds the methods every store has to a type with `fn engine(&self) -> &Engine`
/// and `fn engine_mut(&mut self) -> &mut Engine`.
macro_rules! store_methods {
    () => {
        /// Number of records.
        pub fn len(&self) -> u64 {
            self.engine().len()
        }

        /// Whether the store holds no records.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// The store's folder.
        pub fn path(&self) -> &std::path::Path {
            self.engine().dir()
        }

        /// The store's codec (with its dictionary for `zstd_dict`).
        pub fn codec(&self) -> &$crate::Codec {
            self.engine().codec()
        }

        /// How this handle reads the store's data files:
        /// [`Io::Mapped`](crate::storage::Io::Mapped) or
        /// [`Io::Direct`](crate::storage::Io::Direct) (what
        /// [`Io::Auto`](crate::storage::Io::Auto) chose, if asked to choose).
        pub fn io(&self) -> $crate::storage::Io {
            self.engine().io()
        }

        /// Whether this handle was opened read-only (see [`OpenOptions`](crate::OpenOptions)).
        pub fn is_read_only(&self) -> bool {
            self.engine().is_read_only()
        }

        /// The store's on-disk format version: 2 for stores this build
        /// creates, 1 for older stores (read and appended to in their own
        /// layout, without record checksums).
        pub fn format_version(&self) -> u8 {
            self.engine().version()
        }

        /// Record counts and space accounting; reads the whole record table.
        ///
        /// # Errors
        /// [`Error::CorruptRecord`](crate::Error::CorruptRecord) if the table is damaged.
        pub fn stats(&self) -> $crate::Result<$crate::Stats> {
            self.engine().stats()
        }

        /// Makes every committed append, delete and compaction durable:
        /// data first, then the record table, then the header.
        ///
        /// Appends are committed (visible, and kept if the process dies) when
        /// `append` returns; `sync` also protects them against power loss.
        /// An open of a store whose last appends were not synced reads and
        /// checks those records (a power cut may have written the header
        /// back before them) and keeps them only if every one is whole, else
        /// the store opens as the last `sync` left it; a store whose writer
        /// called `sync` last opens without reading any record.
        /// On a read-only handle there is nothing to flush.
        ///
        /// # Errors
        /// [`Error::Io`](crate::Error::Io) when the operating system cannot flush a file.
        pub fn sync(&self) -> $crate::Result<()> {
            self.engine().sync()
        }

        /// Flushes the records' bytes written since the last
        /// [`sync`](Self::sync) to the device, without holding up appends
        /// from other threads meanwhile. It commits nothing: `sync` still
        /// makes the appends durable, and finds less left to flush.
        ///
        /// Call it from a second thread during a long import: the device
        /// then takes the bytes as they come instead of all at the end.
        ///
        /// # Errors
        /// [`Error::Io`](crate::Error::Io) when the operating system cannot flush a file.
        pub fn flush_written(&self) -> $crate::Result<()> {
            self.engine().flush_written()
        }

        /// Reads and decodes every record and checks every location, length,
        /// checksum (zstd's frame checksum, or the CRC-32C of a raw record or
        /// shape record) and shape, and that no two records overlap. Memory
        /// stays bounded: large records are checked a piece at a time.
        ///
        /// `gather` checks the same frames as it decodes (a damaged compressed
        /// record is an error there too), and raw records' checksums when the
        /// store was opened with
        /// [`verify_on_read`](crate::OpenOptions::verify_on_read); `verify` is
        /// the full scan.
        ///
        /// # Errors
        /// The first problem found, in index order, usually
        /// [`Error::CorruptRecord`](crate::Error::CorruptRecord) naming the record.
        pub fn verify(&self) -> $crate::Result<$crate::VerifyReport> {
            self.engine().verify(|_, _| {})
        }

        /// [`verify`](Self::verify), calling `progress(done, total)` as it goes.
        ///
        /// # Errors
        /// As [`verify`](Self::verify).
        pub fn verify_with(
            &self,
            progress: impl FnMut(u64, u64),
        ) -> $crate::Result<$crate::VerifyReport> {
            self.engine().verify(progress)
        }

        /// Deletes records by moving the last live record into each hole, so
        /// the live records stay exactly `0..len`. `indices` refer to the store
        /// before the call, in any order; an index named twice is deleted once.
        /// Returns how many records were deleted.
        ///
        /// Indices you keep elsewhere are stable only until a delete: record
        /// `len - 1` may now be at a deleted index. The space is reclaimed by
        /// [`compact`](Self::compact). A delete is all or nothing: a process
        /// killed in the middle leaves a journal that the next `open` uses
        /// to finish it. It syncs before and after, so once it returns it
        /// survives power loss too (and so does everything committed before).
        ///
        /// # Errors
        /// [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange) before
        /// anything is changed if any index is past the end;
        /// [`Error::ReadOnly`](crate::Error::ReadOnly) on a read-only handle.
        pub fn delete(&mut self, indices: &[u64]) -> $crate::Result<u64> {
            self.engine_mut().delete(indices)
        }

        /// Reclaims the bytes of deleted records in place, then syncs.
        ///
        /// Live records are repacked in physical order, each moving only
        /// toward the start of the store (a few, at most 16 MiB, may first be
        /// copied past its end), so no scratch file is needed and the store
        /// is consistent between any two records. A record that moves onto
        /// its own old bytes is journaled first, so a process killed in the
        /// middle of compacting loses nothing: the next `open` redoes that
        /// one move (FORMAT.md, "Compaction journal"). Moves are made
        /// durable in batches before anything they free is overwritten, so a
        /// power cut in the middle loses nothing either.
        ///
        /// # Errors
        /// [`Error::Io`](crate::Error::Io) or a corrupt record table; a store
        /// stopped by an error is consistent, and compacting again finishes it.
        pub fn compact(&mut self) -> $crate::Result<$crate::CompactProgress> {
            self.engine_mut()
                .compact(|_| std::ops::ControlFlow::Continue(()))
        }

        /// [`compact`](Self::compact), calling `on_progress` after every
        /// record; returning `ControlFlow::Break(())` stops between records,
        /// leaving a consistent store that a later `compact` finishes.
        ///
        /// # Errors
        /// As [`compact`](Self::compact).
        pub fn compact_with(
            &mut self,
            on_progress: impl FnMut(&$crate::CompactProgress) -> std::ops::ControlFlow<()>,
        ) -> $crate::Result<$crate::CompactProgress> {
            self.engine_mut().compact(on_progress)
        }
    };
}
pub(crate) use store_methods;
