//! `zrecord import ...`: data in other formats into a new store.
//!
//! Each importer is a file here with its `Args` and a `run` that hands
//! records to a [`Sink`] inside [`write_store`]; add one by adding its file,
//! a variant below and a line in [`run`].

mod array;
mod files;
#[cfg(feature = "images")]
mod images;
mod lines;
mod loaderx;
#[cfg(feature = "parquet")]
mod parquet;
mod safetensors;
mod text;
mod tokenizer;
mod values;

use anyhow::{Context, Result};
use clap::Subcommand;
use indicatif::ProgressBar;
use zrecord::{AnyStore, Codec, DynRaggedBatch, Schema};

use crate::staging::{RemoveOnDrop, Staged};
use crate::{CodecArg, Target, progress, transfer};

#[derive(Subcommand)]
pub(crate) enum Import {
    /// An .npy array: axis 0 indexes records (a 1-D array becomes scalar records).
    Npy(array::Args),
    /// MNIST-style IDX images or labels, plain or gzipped.
    Idx(array::Args),
    /// One tensor of a .safetensors file: axis 0 indexes records.
    Safetensors(safetensors::Args),
    /// A folder of files, one u8 record each in sorted path order; the paths go to `paths.txt` in the store.
    Files(files::Args),
    /// A text file, one u8 record per line (without its line ending).
    Lines(lines::Args),
    /// An image folder (one subfolder per class) or a path,label list: encoded
    /// images kept raw (or decoded with --resize, zstd), labels and class
    /// names in a new folder.
    #[cfg(feature = "images")]
    Images(images::Args),
    /// (This build has no image support: build with feature `images`.)
    #[cfg(not(feature = "images"))]
    #[command(hide = true)]
    Images {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Columns of a Parquet file, or of a folder of them: one store per column
    /// in OUT; string columns tokenised with --tokenizer.
    #[cfg(feature = "parquet")]
    Parquet(parquet::Args),
    /// (This build has no Parquet support: build with feature `parquet`.)
    #[cfg(not(feature = "parquet"))]
    #[command(hide = true)]
    Parquet {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Documents of a text or JSON Lines file, tokenised into a ragged token
    /// store (a Parquet column: `import parquet --tokenizer`).
    Text(text::Args),
    /// A store written by loaderx 1.7 or 2.8.
    Loaderx(loaderx::Args),
}

/// What an import did: notes (a line per skipped input) and the one-line
/// summary, printed on stderr unless `--silent`.
pub(crate) struct Summary {
    pub(crate) notes: Vec<String>,
    pub(crate) line: String,
}

impl From<String> for Summary {
    fn from(line: String) -> Summary {
        Summary {
            notes: Vec::new(),
            line,
        }
    }
}

/// The summary of an import that wrote `records` records into `target`.
pub(crate) fn wrote(records: u64, target: &Target) -> Summary {
    let shard = match target.shard {
        Some((k, n)) => format!(" (shard {k}/{n})"),
        None => String::new(),
    };
    format!(
        "imported {records} records into {}{shard}",
        target.store.display()
    )
    .into()
}

pub(crate) fn run(import: Import, quiet: bool, silent: bool) -> Result<()> {
    let summary = pick(import, quiet)?;
    if !silent {
        for note in &summary.notes {
            eprintln!("zrecord: {note}");
        }
        eprintln!("{}", summary.line);
    }
    Ok(())
}

fn pick(import: Import, quiet: bool) -> Result<Summary> {
    match import {
        Import::Npy(args) => array::run(args, |p| zrecord::npy::open(p), quiet),
        Import::Idx(args) => array::run(args, |p| zrecord::idx::open(p), quiet),
        Import::Safetensors(args) => safetensors::run(args, quiet),
        Import::Files(args) => files::run(args, quiet),
        Import::Lines(args) => lines::run(args, quiet),
        #[cfg(feature = "images")]
        Import::Images(args) => {
            images::run(&args, quiet).with_context(|| args.dir.display().to_string())
        }
        #[cfg(not(feature = "images"))]
        Import::Images { .. } => {
            anyhow::bail!("this zrecord was built without image support (cargo feature `images`)")
        }
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

/// Where an importer puts records.
pub(crate) struct Sink {
    store: AnyStore,
    bar: ProgressBar,
    bytes: u64,
    records: u64,
}

impl Sink {
    /// Appends whole dense records given as little-endian bytes.
    ///
    /// # Errors
    /// A kind mismatch when the store being written is ragged.
    pub(crate) fn dense(&mut self, bytes: &[u8]) -> Result<()> {
        let store = self.store.as_dense()?;
        store.append_bytes(store.dtype(), bytes)?;
        let records = bytes.len() / store.record_bytes();
        self.advance(records as u64, bytes.len() as u64);
        Ok(())
    }

    /// Appends ragged records.
    ///
    /// # Errors
    /// A kind mismatch when the store being written is dense.
    pub(crate) fn ragged(&mut self, batch: &DynRaggedBatch) -> Result<()> {
        self.store.as_ragged()?.append_batch(batch)?;
        self.advance(batch.len() as u64, batch.values().as_bytes().len() as u64);
        Ok(())
    }

    fn advance(&mut self, records: u64, bytes: u64) {
        self.bytes += bytes;
        self.records += records;
        self.bar.inc(records);
        progress::show_bytes(&self.bar, self.bytes);
    }
}

/// Builds a new store of `schema` at `target` from what `produce` sends to
/// the sink: staged beside the target and renamed into place only when
/// complete. `records` sizes the progress bar; `extra` files are written
/// into the store folder. Returns the records written.
pub(crate) fn write_store(
    target: &Target,
    schema: Schema,
    records: u64,
    quiet: bool,
    extra: &[(&str, &[u8])],
    produce: impl FnOnce(&mut Sink) -> Result<()>,
) -> Result<u64> {
    let staged = Staged::new(&target.store, target.force)?;
    let wants_dict = matches!(target.codec(), CodecArg::ZstdDict);
    // A dictionary trains on the settled data: import raw first, then recode.
    let first = if wants_dict {
        staged.aside("raw")
    } else {
        staged.path().to_path_buf()
    };
    let _raw = wants_dict.then(|| RemoveOnDrop(first.clone()));
    let codec = if wants_dict {
        Codec::Raw
    } else {
        crate::codec(target.codec(), None)?
    };
    let level = target.level.filter(|_| !wants_dict); // the raw staging copy has none
    let store = crate::create_store(&first, &schema, codec, level)?;
    let bar = progress::records(quiet, records, "import");
    let mut sink = Sink {
        store,
        bar,
        bytes: 0,
        records: 0,
    };
    produce(&mut sink)?;
    sink.bar.finish_and_clear();
    let written = sink.records;
    let store = sink.store;
    if wants_dict {
        let dict = store
            .train_dict(target.tier.into())
            .context("cannot train a dictionary on the imported data")?;
        let out = crate::create_store(staged.path(), &schema, Codec::ZstdDict(dict), target.level)?;
        transfer::copy(&store, &out, quiet)?;
        out.sync()?;
    } else {
        store.sync()?;
    }
    drop(store);
    for (name, bytes) in extra {
        let path = staged.path().join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    staged.commit()?;
    Ok(written)
}
