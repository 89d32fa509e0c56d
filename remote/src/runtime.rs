//! The internal async runtime: callers stay synchronous.
//!
//! Object-store clients are async. Every request of this crate runs on one
//! process-wide Tokio runtime with its own threads, and the calling thread
//! waits on a channel for the answer, so a call works from any thread —
//! even from inside a caller's own async runtime, which `block_on` would
//! refuse.

use std::future::Future;
use std::sync::OnceLock;

use crate::{Error, Result};

/// Threads of the runtime: requests are I/O-bound, two drive hundreds in flight.
const THREADS: usize = 2;

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(THREADS)
                .thread_name("zrecord-remote")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Options(format!("cannot start the I/O runtime: {e}")))
}

/// Runs `future` on the runtime and waits for its output.
pub(crate) fn run<T, F>(future: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        // The receiver only goes away if the caller's thread is gone.
        let _ = tx.send(future.await);
    });
    rx.recv()
        .map_err(|_| Error::Options("the I/O runtime stopped".into()))?
}
