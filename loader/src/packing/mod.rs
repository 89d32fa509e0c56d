//! Sequence packing: a ragged token stream (one document per record) into
//! fixed-length rows for language-model training.
//!
//! Two ways to fill rows of `seq_len` tokens ([`Packing`]):
//!
//! * **concat-and-split** — documents end to end, cut every `seq_len`
//!   tokens: no padding, documents cut at row ends;
//! * **best fit** — best-fit decreasing over each window of documents:
//!   documents stay whole unless longer than a row, padding is minimised.
//!
//! Each batch ([`PackedBatch`]) holds `tokens (B, L)`, `segment_ids` (1, 2, …
//! per row, 0 = padding) and `positions` (from 0 at each segment start), so
//! a model can keep attention within documents (see
//! `zrecord_burn::block_causal_mask`). [`PackedLoader`] reads the documents
//! on the loader's worker threads and saves its place in a [`PackedState`]
//! of a few dozen bytes; [`Packer`] is the packing itself, for documents
//! already in memory.

mod batch;
mod best_fit;
mod documents;
mod loader;
mod packer;

pub use batch::PackedBatch;
pub use documents::Documents;
pub use loader::{DEFAULT_WINDOW, PackedLoader, PackedLoaderBuilder, PackedState};
pub use packer::{Cursor, Packer, Packing};
