//! Recycled batch buffers: memory stays bounded by the prefetch depth.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use crate::column::Column;
use crate::{Counters, Stream};

/// One batch's buffers: its indices and a column per stream (`None` where
/// the consumer took the column out).
type Buffers = (Vec<u64>, Vec<Option<Column>>);

/// Buffers of dropped batches, waiting for the next step.
#[derive(Debug)]
pub(crate) struct Pool {
    free: Mutex<Vec<Buffers>>,
    /// Buffer sets kept; more than this are freed.
    keep: usize,
    /// Counts stream buffers allocated fresh (not recycled).
    counters: Arc<Counters>,
}

impl Pool {
    pub(crate) fn new(keep: usize, counters: Arc<Counters>) -> Pool {
        Pool {
            free: Mutex::new(Vec::new()),
            keep,
            counters,
        }
    }

    /// Buffers for one batch of `streams`: recycled where possible.
    pub(crate) fn take(&self, streams: &[Stream]) -> (Vec<u64>, Vec<Column>) {
        let (indices, mut columns) = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_default();
        columns.resize_with(streams.len(), || None);
        let columns = columns
            .into_iter()
            .zip(streams)
            .map(|(column, stream)| match column {
                Some(c) if c.kind() == stream.kind() && c.dtype() == stream.dtype() => c,
                _ => {
                    self.counters
                        .buffers_allocated
                        .fetch_add(1, Ordering::Relaxed);
                    Column::for_stream(stream)
                }
            })
            .collect();
        (indices, columns)
    }

    /// Returns a batch's buffers.
    pub(crate) fn give(&self, indices: Vec<u64>, columns: Vec<Option<Column>>) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        if free.len() < self.keep {
            free.push((indices, columns));
        }
    }
}
