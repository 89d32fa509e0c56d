//! `zrecord import ...`: data in other formats into a new store.

mod files;
mod idx;
mod lines;
mod loaderx;
mod npy;
#[cfg(feature = "parquet")]
mod parquet;
mod safetensors;
mod text;
mod values;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;
use indicatif::ProgressBar;
use zrecord::{AnyStore, Codec, DType, DynDenseStore, DynRaggedBatch, DynRaggedStore};

use crate::staging::{RemoveOnDrop, Staged};
use crate::{CodecArg, Target, progress, recode};

#[derive(Subcommand)]
pub(crate) enum Import {
    /// An .npy array: axis 0 indexes records (a 1-D array becomes scalar records).
    Npy {
        /// The .npy file.
        file: PathBuf,
        #[command(flatten)]
        target: Target,
    },
    /// MNIST-style IDX images or labels, plain or gzipped.
    Idx {
        /// The IDX file.
        file: PathBuf,
        #[command(flatten)]
        target: Target,
    },
    /// One tensor of a .safetensors file: axis 0 indexes records.
    Safetensors {
        /// The .safetensors file.
        file: PathBuf,
        /// The tensor's name.
        tensor: String,
        #[command(flatten)]
        target: Target,
    },
    /// A folder of files, one u8 record each in sorted path order; the paths go to `paths.txt` in the store.
    Files {
        /// The folder.
        dir: PathBuf,
        /// Only files whose path relative to the folder matches (e.g. '**/*.jpg').
        #[arg(long)]
        glob: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// A text file, one u8 record per line (without its line ending).
    Lines {
        /// The text file.
        file: PathBuf,
        /// Skip empty lines (records are never empty, so by default an empty line is an error).
        #[arg(long)]
        skip_empty: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Columns of a Parquet file, or of a folder of them: one store per column in OUT.
    #[cfg(feature = "parquet")]
    Parquet(parquet::Args),
    /// (This build has no Parquet support: build with feature `parquet`.)
    #[cfg(not(feature = "parquet"))]
    #[command(hide = true)]
    Parquet {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Documents of a text or JSON Lines file, tokenised into a ragged token store.
    Text(text::Args),
    /// A store written by loaderx 1.7 or 2.8.
    Loaderx(loaderx::Args),
}

pub(crate) fn run(import: Import, quiet: bool) -> Result<()> {
    match import {
        Import::Npy { file, target } => {
            npy::run(&file, &target, quiet).with_context(|| file.display().to_string())
        }
        Import::Idx { file, target } => {
            idx::run(&file, &target, quiet).with_context(|| file.display().to_string())
        }
        Import::Safetensors {
            file,
            tensor,
            target,
        } => safetensors::run(&file, &tensor, &target, quiet)
            .with_context(|| file.display().to_string()),
        Import::Files { dir, glob, target } => files::run(&dir, glob.as_deref(), &target, quiet)
            .with_context(|| dir.display().to_string()),
        Import::Lines {
            file,
            skip_empty,
            target,
        } => lines::run(&file, skip_empty, &target, quiet)
            .with_context(|| file.display().to_string()),
        #[cfg(feature = "parquet")]
        Import::Parquet(args) => parquet::run(&args, quiet),
        #[cfg(not(feature = "parquet"))]
        Import::Parquet { .. } => {
            anyhow::bail!(
                "this zrecord was built without Parquet support (cargo feature `parquet`)"
            )
        }
        Import::Text(args) => text::run(&args, quiet),
        Import::Loaderx(args) => loaderx::run(&args, quiet),
    }
}

/// The kind of store an import writes.
pub(crate) enum Shape {
    Dense {
        dtype: DType,
        item_shape: Vec<usize>,
    },
    Ragged {
        dtype: DType,
    },
}

/// Where an importer puts records.
pub(crate) struct Sink {
    store: AnyStore,
    bar: ProgressBar,
    bytes: u64,
}

impl Sink {
    /// Appends whole dense records given as little-endian bytes.
    pub(crate) fn dense(&mut self, bytes: &[u8]) -> Result<()> {
        if let AnyStore::Dense(s) = &self.store {
            s.append_bytes(s.dtype(), bytes)?;
            self.advance(
                bytes.len() as u64 / s.record_bytes() as u64,
                bytes.len() as u64,
            );
        }
        Ok(())
    }

    /// Appends ragged records.
    pub(crate) fn ragged(&mut self, batch: &DynRaggedBatch) -> Result<()> {
        if let AnyStore::Ragged(s) = &self.store {
            s.append_batch(batch)?;
            self.advance(batch.len() as u64, batch.values().as_bytes().len() as u64);
        }
        Ok(())
    }

    fn advance(&mut self, records: u64, bytes: u64) {
        self.bytes += bytes;
        self.bar.inc(records);
        progress::show_bytes(&self.bar, self.bytes);
    }
}

/// Builds a new store at `target` from what `produce` sends to the sink:
/// staged beside the target and renamed into place only when complete.
/// `records` sizes the progress bar; `extra` files are written into the store folder.
pub(crate) fn write_store(
    target: &Target,
    shape: Shape,
    records: u64,
    quiet: bool,
    extra: &[(&str, &[u8])],
    produce: impl FnOnce(&mut Sink) -> Result<()>,
) -> Result<()> {
    let staged = Staged::new(&target.store, target.force)?;
    let wants_dict = matches!(target.codec, CodecArg::ZstdDict);
    // A dictionary trains on the settled data: import raw first, then recode.
    let first = if wants_dict {
        staged.path().with_extension("raw")
    } else {
        staged.path().to_path_buf()
    };
    let _raw = wants_dict.then(|| RemoveOnDrop(first.clone()));
    let codec = if wants_dict {
        Codec::Raw
    } else {
        crate::codec(target.codec, None)?
    };
    let store = create(&first, &shape, codec)?;
    let bar = progress::records(quiet, records, "import");
    let mut sink = Sink {
        store,
        bar,
        bytes: 0,
    };
    produce(&mut sink)?;
    sink.bar.finish_and_clear();
    let store = sink.store;
    if wants_dict {
        let dict = match &store {
            AnyStore::Dense(s) => s.train_dict(target.tier.into()),
            AnyStore::Ragged(s) => s.train_dict(target.tier.into()),
        }
        .context("cannot train a dictionary on the imported data")?;
        let out = create(staged.path(), &shape, Codec::ZstdDict(dict))?;
        recode::copy(&store, &out, quiet)?;
        out_sync(&out)?;
    } else {
        out_sync(&store)?;
    }
    drop(store);
    for (name, bytes) in extra {
        let path = staged.path().join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    staged.commit()
}

/// Creates an empty store of `shape` at `path`.
pub(crate) fn create(path: &Path, shape: &Shape, codec: Codec) -> Result<AnyStore> {
    Ok(match shape {
        Shape::Dense { dtype, item_shape } => {
            AnyStore::Dense(DynDenseStore::create(path, *dtype, item_shape, codec)?)
        }
        Shape::Ragged { dtype } => AnyStore::Ragged(DynRaggedStore::create(path, *dtype, codec)?),
    })
}

fn out_sync(store: &AnyStore) -> Result<()> {
    match store {
        AnyStore::Dense(s) => s.sync()?,
        AnyStore::Ragged(s) => s.sync()?,
    }
    Ok(())
}

/// Records per append for `record_bytes`-byte records: about 16 MiB at a time.
pub(crate) fn chunk_records(record_bytes: usize) -> usize {
    ((16 << 20) / record_bytes.max(1)).max(1)
}
