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
/// `secs`: a hang becomes a failure, not a stuck CI run.
pub fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .expect("timed out: the loader hung")
}
