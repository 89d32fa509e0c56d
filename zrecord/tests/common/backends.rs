//! The storage backends every backend-parameterised test runs over.

use std::path::PathBuf;
use std::sync::Arc;

use zrecord::storage::{Io, Memory, Storage};
use zrecord::{Codec, DType, DynDenseStore, DynRaggedStore, Geometry, OpenOptions, Result};

/// Where a test's store lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A folder on disk, memory-mapped.
    Mapped,
    /// A folder on disk, read with explicit reads.
    Direct,
    /// In memory.
    Memory,
}

pub const BACKENDS: [Backend; 3] = [Backend::Mapped, Backend::Direct, Backend::Memory];

/// One store's place on a backend: create it, reopen it.
pub struct Site {
    pub backend: Backend,
    _dir: Option<tempfile::TempDir>,
    path: PathBuf,
    memory: Memory,
}

impl Site {
    pub fn new(backend: Backend) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        Site {
            backend,
            _dir: Some(dir),
            path,
            memory: Memory::new("memory-store"),
        }
    }

    fn storage(&self) -> Arc<dyn Storage> {
        Arc::new(self.memory.clone())
    }

    /// The options every open on this backend uses, plus `options`.
    pub fn options(&self, options: OpenOptions) -> OpenOptions {
        match self.backend {
            Backend::Mapped => options.io(Io::Mapped),
            Backend::Direct | Backend::Memory => options.io(Io::Direct),
        }
    }

    pub fn create_dense(
        &self,
        dtype: DType,
        shape: &[usize],
        codec: Codec,
        geometry: Geometry,
    ) -> Result<DynDenseStore> {
        match self.backend {
            Backend::Memory => zrecord::OpenOptions::new()
                .geometry(geometry)
                .create::<DynDenseStore>(
                    self.storage(),
                    &zrecord::Schema::dense(dtype, shape),
                    codec,
                ),
            _ => {
                drop(
                    zrecord::OpenOptions::new()
                        .geometry(geometry)
                        .create::<DynDenseStore>(
                            &self.path,
                            &zrecord::Schema::dense(dtype, shape),
                            codec,
                        )?,
                );
                self.open_dense(OpenOptions::new())
            }
        }
    }

    pub fn open_dense(&self, options: OpenOptions) -> Result<DynDenseStore> {
        let options = self.options(options);
        match self.backend {
            Backend::Memory => options.open::<DynDenseStore>(self.storage()),
            _ => options.open::<DynDenseStore>(&self.path),
        }
    }

    pub fn create_ragged(
        &self,
        dtype: DType,
        codec: Codec,
        geometry: Geometry,
    ) -> Result<DynRaggedStore> {
        match self.backend {
            Backend::Memory => zrecord::OpenOptions::new()
                .geometry(geometry)
                .create::<DynRaggedStore>(self.storage(), &zrecord::Schema::ragged(dtype), codec),
            _ => {
                drop(
                    zrecord::OpenOptions::new()
                        .geometry(geometry)
                        .create::<DynRaggedStore>(
                            &self.path,
                            &zrecord::Schema::ragged(dtype),
                            codec,
                        )?,
                );
                self.open_ragged(OpenOptions::new())
            }
        }
    }

    pub fn open_ragged(&self, options: OpenOptions) -> Result<DynRaggedStore> {
        let options = self.options(options);
        match self.backend {
            Backend::Memory => options.open::<DynRaggedStore>(self.storage()),
            _ => options.open::<DynRaggedStore>(&self.path),
        }
    }
}
