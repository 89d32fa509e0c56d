//! Serving: a dynamic batcher in front of a predictor, and its metrics.
//!
//! * [`Predictor`] — what runs one batch: records `ids` in, one output row
//!   per id out. [`StorePredictor`] gathers a dense store and runs a forward
//!   function.
//! * [`Batcher`] — a thread that collects requests into batches (at most
//!   [`BatchConfig::max_batch`] records; whatever queued while the model was
//!   busy, plus what arrives within [`BatchConfig::max_wait`]) and answers
//!   each request with its rows.
//! * [`Metrics`] — counters and latency percentiles, readable any time.

mod batcher;
mod metrics;
mod predictor;

pub use batcher::{BatchConfig, Batcher};
pub use metrics::{Metrics, MetricsSnapshot};
pub use predictor::{Predictor, StorePredictor};
