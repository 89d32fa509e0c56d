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
            Backend::Memory => DynDenseStore::create_in_with_geometry(
                self.storage(),
                dtype,
                shape,
                codec,
                geometry,
            ),
            _ => {
                drop(DynDenseStore::create_with_geometry(
                    &self.path, dtype, shape, codec, geometry,
                )?);
                self.open_dense(OpenOptions::new())
            }
        }
    }

    pub fn open_dense(&self, options: OpenOptions) -> Result<DynDenseStore> {
        let options = self.options(options);
        match self.backend {
            Backend::Memory => DynDenseStore::open_in(self.storage(), options),
            _ => DynDenseStore::open_with(&self.path, options),
        }
    }

    pub fn create_ragged(
        &self,
        dtype: DType,
        codec: Codec,
        geometry: Geometry,
    ) -> Result<DynRaggedStore> {
        match self.backend {
            Backend::Memory => {
                DynRaggedStore::create_in_with_geometry(self.storage(), dtype, codec, geometry)
            }
            _ => {
                drop(DynRaggedStore::create_with_geometry(
                    &self.path, dtype, codec, geometry,
                )?);
                self.open_ragged(OpenOptions::new())
            }
        }
    }

    pub fn open_ragged(&self, options: OpenOptions) -> Result<DynRaggedStore> {
        let options = self.options(options);
        match self.backend {
            Backend::Memory => DynRaggedStore::open_in(self.storage(), options),
            _ => DynRaggedStore::open_with(&self.path, options),
        }
    }
}
