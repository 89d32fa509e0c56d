//! Stores shared by the loader tests.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;

use zrecord::{Codec, DenseStore, DynDenseStore, DynRaggedStore, RaggedStore};

/// Records in the test streams.
pub const LEN: u64 = 300;

/// Three aligned streams over `LEN` records: `label[r] = r` (i64 scalars),
/// `image[r]` = 3×4 f32 of value `r`, and `tokens[r]` = `r % 7 + 1` copies of `r` (u32, ragged).
pub struct Streams {
    pub label: Arc<DynDenseStore>,
    pub image: Arc<DynDenseStore>,
    pub tokens: Arc<DynRaggedStore>,
}

pub fn streams(dir: &Path) -> Streams {
    let label = DenseStore::<i64>::create(dir.join("label"), &[], Codec::Raw).unwrap();
    label.append(&(0..LEN as i64).collect::<Vec<_>>()).unwrap();
    let image = DenseStore::<f32>::create(dir.join("image"), &[3, 4], Codec::Zstd).unwrap();
    image
        .append(&(0..LEN).flat_map(|r| [r as f32; 12]).collect::<Vec<_>>())
        .unwrap();
    let tokens = RaggedStore::<u32>::create(dir.join("tokens"), Codec::Zstd).unwrap();
    let seqs: Vec<Vec<u32>> = (0..LEN as u32)
        .map(|r| vec![r; (r % 7 + 1) as usize])
        .collect();
    tokens.append_slices(&seqs).unwrap();
    Streams {
        label: Arc::new(label.into_dyn()),
        image: Arc::new(image.into_dyn()),
        tokens: Arc::new(tokens.into_dyn()),
    }
}

/// Runs `f` on another thread and fails the test if it takes longer than
/// `secs`: a hang becomes a failure, not a stuck CI run. A panic in `f` is
/// raised again here, as the panic it was.
pub fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    use std::sync::mpsc::RecvTimeoutError;
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => panic!("timed out after {secs} s: the loader hung"),
        // The sender is gone without a result: `f` panicked.
        Err(RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
    }
}
