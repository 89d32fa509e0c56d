//! `zrecord import parquet`: each chosen column of one Parquet file, or of
//! a folder of them (a Hugging Face dataset split), becomes a store
//! `OUT/<column>`; row `i` of the files is record `i` of every store.
//!
//! Row groups are read one batch at a time, so memory stays bounded by a
//! batch of rows whatever the size of the files.
//!
//! With `--tokenizer`, string columns are documents, tokenised as `import
//! text` tokenises them (the same code) into ragged token stores; without
//! it, a string is its UTF-8 bytes.

mod column;

use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema};
use indicatif::ProgressBar;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use rayon::prelude::*;
use zrecord::{AnyStore, Codec, DynRaggedBatch};

use super::Summary;
use super::tokenizer::{Encoder, TokenArgs};
use crate::staging::{RemoveOnDrop, Staged};
use crate::{CodecArg, Target, progress, transfer};
use column::{Converter, Fill};
use zrecord::Schema as StoreSchema;

/// Rows per batch read from a row group, at most.
const BATCH_ROWS: usize = 8192;

/// Bytes per batch read (uncompressed, by the file's own count), about:
/// wide rows (images, long texts) come in fewer rows per batch.
const BATCH_BYTES: u64 = 8 << 20;

/// Row groups decoded side by side, at most.
const MAX_READERS: usize = 4;

/// Batches a reader decodes ahead of the one being handed out: with rows
/// of up to a row group of 65,536 (8 batches), a second reader decodes the
/// next row group whole while the first's is handed out.
const LOOKAHEAD: usize = 8;

/// Batches queued for each column's appender.
const BATCHES_IN_FLIGHT: usize = 2;

/// How often the stores' written bytes are flushed while an import runs. On
/// the virtual disk this was measured on, a flush costs time in proportion
/// to the bytes written since the last; flushed as they come, the final
/// sync has little left.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A .parquet file, or a folder searched for them (imported in sorted path order).
    input: PathBuf,
    /// The columns to import, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    columns: Vec<String>,
    /// Import a null as VALUE (a null variable list as an empty one) instead
    /// of stopping at it.
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    fill: Option<String>,
    /// Import rows of nested variable lists as their elements end to end
    /// (one axis) — for lists whose inner lists differ in length.
    #[arg(long)]
    flatten: bool,
    /// Tokenise string columns into ragged token stores (one record per
    /// row, ending with the end-of-document token) as `import text` does:
    /// `bytes`, an OpenAI encoding (`cl100k_base`, `o200k_base`, ...), or a
    /// Hugging Face tokenizer.json file. Without it a string is its UTF-8
    /// bytes (u8). A null string fails, or with --fill is an empty document.
    #[arg(long)]
    tokenizer: Option<String>,
    #[command(flatten)]
    tokens: TokenArgs,
    /// The folder to create, one store per column. Its codec options apply to every store.
    #[command(flatten)]
    target: Target,
}

/// A column being imported.
struct Output {
    name: String,
    data_type: DataType,
    shape: StoreSchema,
    converter: Converter,
    /// The tokenizer of a tokenised string column.
    encoder: Option<Arc<Encoder>>,
    /// A null of a tokenised column is an empty document (`--fill`).
    empty_nulls: bool,
    store: AnyStore,
    /// Where the store is built (a raw store first, for zstd-dict).
    path: PathBuf,
}

pub(crate) fn run(args: &Args, quiet: bool) -> Result<Summary> {
    let files = parquet_files(&args.input)?;
    let encoder = args
        .tokenizer
        .as_deref()
        .map(|spec| Encoder::new(spec, &args.tokens).map(Arc::new))
        .transpose()?;
    // A shard is a run of whole files.
    let all_files = files.len();
    let share = args.target.share(files.len());
    let files = files[share.clone()].to_vec();
    if files.is_empty() {
        bail!("no Parquet files for this shard (fewer files than shards): use fewer shards");
    }
    let target = args.target.clone().into_shard();
    let (schema, rows, metadata) = survey(&files)?;
    let chosen: Vec<usize> = match args.columns.is_empty() {
        true => (0..schema.fields().len()).collect(),
        false => args
            .columns
            .iter()
            .map(|c| {
                schema.index_of(c).map_err(|_| {
                    let names: Vec<&str> =
                        schema.fields().iter().map(|f| f.name().as_str()).collect();
                    anyhow::anyhow!("no column {c:?}; the columns are {names:?}")
                })
            })
            .collect::<Result<_>>()?,
    };

    let staged = Staged::new(&target.store, target.force)?;
    std::fs::create_dir_all(staged.path())
        .with_context(|| format!("cannot create {}", staged.path().display()))?;
    let dict = matches!(target.codec(), CodecArg::ZstdDict);
    let codec = match dict {
        true => Codec::Raw,
        false => crate::codec(target.codec(), None)?,
    };
    let mut outputs = Vec::new();
    for &i in &chosen {
        let field = schema.field(i);
        let name = field.name();
        if !is_plain_name(name) {
            bail!("column {name:?} cannot name a store folder");
        }
        let tokenised = encoder
            .as_ref()
            .filter(|_| is_string(field.data_type()))
            .cloned();
        let shape = match &tokenised {
            Some(e) => StoreSchema::Ragged { dtype: e.dtype() },
            None => column::shape(name, field.data_type())?,
        };
        let fill = match (&args.fill, &shape) {
            // A tokenised column's null is an empty document.
            (Some(_), _) if tokenised.is_some() => None,
            (Some(v), StoreSchema::Dense { dtype, .. } | StoreSchema::Ragged { dtype }) => {
                Some(Fill::parse(v, *dtype).with_context(|| format!("column {name:?}"))?)
            }
            (None, _) => None,
        };
        let path = staged.path().join(if dict {
            format!("{name}.raw")
        } else {
            name.clone()
        });
        outputs.push(Output {
            name: name.clone(),
            data_type: field.data_type().clone(),
            store: crate::create_store(
                &path,
                &shape,
                codec.clone(),
                target.level.filter(|_| !dict),
            )?,
            shape,
            converter: Converter::new(name, fill, args.flatten),
            empty_nulls: args.fill.is_some() && tokenised.is_some(),
            encoder: tokenised,
            path,
        });
    }
    if encoder.is_some() && outputs.iter().all(|o| o.encoder.is_none()) {
        bail!("--tokenizer: none of the columns imported is a string column");
    }

    let bar = progress::records(quiet, rows, "import");
    // A zstd-dict import recodes its raw stores, so flushing them early would be wasted.
    let parts = parts(&files, metadata, &outputs)?;
    import_rows(&parts, &outputs, !dict, &bar)?;
    bar.finish_and_clear();

    if dict {
        for o in outputs {
            recode_with_dictionary(o, staged.path(), &target, quiet)?;
        }
    } else {
        // Flushed side by side: the disk takes the stores' files in one go
        // rather than one file's flush after another's.
        std::thread::scope(|s| {
            let syncs: Vec<_> = outputs.iter().map(|o| s.spawn(|| o.store.sync())).collect();
            syncs.into_iter().try_for_each(|h| match h.join() {
                Ok(synced) => Ok(synced?),
                Err(_) => bail!("a store's sync panicked"),
            })
        })?;
    }
    staged.commit()?;
    let tokenised: Vec<&str> = outputs_names(&chosen, &schema, encoder.is_some());
    let shard = match args.target.shard {
        Some((k, n)) => format!(
            " (shard {k}/{n}: files {}..{} of {})",
            share.start, share.end, all_files
        ),
        None => String::new(),
    };
    Ok(format!(
        "imported {rows} rows of {} columns into {}{shard}{}",
        chosen.len(),
        target.store.display(),
        match (&encoder, tokenised.is_empty()) {
            (Some(e), false) => format!("; tokenised {} with {}", tokenised.join(", "), e.name()),
            _ => String::new(),
        }
    )
    .into())
}

/// The names of the chosen columns that `--tokenizer` tokenises.
fn outputs_names<'s>(chosen: &[usize], schema: &'s Schema, tokenizer: bool) -> Vec<&'s str> {
    chosen
        .iter()
        .map(|&i| schema.field(i))
        .filter(|f| tokenizer && is_string(f.data_type()))
        .map(|f| f.name().as_str())
        .collect()
}

/// Whether a column holds strings (documents, under `--tokenizer`).
fn is_string(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// A row group of one of the files: what a reader thread decodes at a time.
struct Part<'f> {
    file: &'f Path,
    /// The file's metadata, read once.
    metadata: ArrowReaderMetadata,
    row_group: usize,
    /// Rows per decoded batch, from the row group's size.
    batch_rows: usize,
}

/// The row groups of `files` in order, each file's columns checked
/// against the first file's.
fn parts<'f>(
    files: &'f [PathBuf],
    metadata: Vec<ArrowReaderMetadata>,
    outputs: &[Output],
) -> Result<Vec<Part<'f>>> {
    let mut parts = Vec::new();
    for (file, metadata) in files.iter().zip(metadata) {
        for o in outputs {
            let found = metadata
                .schema()
                .field_with_name(&o.name)
                .map(|f| f.data_type());
            if found.as_ref().ok().copied() != Some(&o.data_type) {
                bail!(
                    "{}: column {:?} is {} here but {} in {}",
                    file.display(),
                    o.name,
                    found.map_or("missing".to_string(), |t| t.to_string()),
                    o.data_type,
                    files[0].display()
                );
            }
        }
        for (row_group, meta) in metadata.metadata().row_groups().iter().enumerate() {
            let row_bytes = meta.total_byte_size().max(1) as u64 / meta.num_rows().max(1) as u64;
            parts.push(Part {
                file,
                metadata: metadata.clone(),
                row_group,
                batch_rows: (BATCH_BYTES / row_bytes.max(1)).clamp(1, BATCH_ROWS as u64) as usize,
            });
        }
    }
    Ok(parts)
}

/// A column's batch on its way to the column's appender: the values, the
/// number of their first row, and the file they come from.
type Column<'f> = (ArrayRef, u64, &'f Path);

/// Imports the rows of `parts`, in order. Reader threads decode row groups
/// side by side (reader `t` takes parts `t`, `t + readers`, …), this thread
/// takes their batches in row order and hands each column to its
/// appender, one thread per column, which converts and appends it. Every
/// channel holds a few batches, so memory stays bounded. With `flush`,
/// another thread flushes what the appenders write as they go, so the
/// device takes the bytes during the import rather than all at the final sync.
fn import_rows(parts: &[Part], outputs: &[Output], flush: bool, bar: &ProgressBar) -> Result<()> {
    let names: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
    let readers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_READERS)
        .min(parts.len().max(1));
    std::thread::scope(|s| {
        let (senders, appenders): (Vec<_>, Vec<_>) = outputs
            .iter()
            .map(|o| {
                let (tx, rx) = mpsc::sync_channel::<Column>(BATCHES_IN_FLIGHT);
                let appender = s.spawn(move || {
                    rx.into_iter().try_for_each(|(array, row, file)| {
                        append(o, &array, row)
                            .with_context(|| file.display().to_string())
                            .map_err(|e| (row, e))
                    })
                });
                (tx, appender)
            })
            .unzip();
        let (feeds, decoders): (Vec<_>, Vec<_>) = (0..readers)
            .map(|t| {
                let (tx, rx) = mpsc::sync_channel::<Option<RecordBatch>>(LOOKAHEAD);
                let names = &names;
                let decoder = s.spawn(move || decode(parts, t, readers, names, &tx));
                (rx, decoder)
            })
            .unzip();
        let (stop, stopped) = mpsc::channel::<()>();
        let flusher = flush.then(|| {
            s.spawn(move || -> Result<()> {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(FLUSH_EVERY) {
                    outputs.iter().try_for_each(|o| o.store.flush_written())?;
                }
                Ok(())
            })
        });
        let dispatched = dispatch(parts, &feeds, outputs, &senders, bar);
        drop(feeds);
        drop(senders);
        // An appender quits at its error and this thread then stops, so an
        // appender's error comes first: the one of the earliest batch, and
        // of these the first column's, as if the columns were appended one
        // after another.
        let mut first: Option<(u64, anyhow::Error)> = None;
        for appender in appenders {
            let result = appender
                .join()
                .unwrap_or_else(|_| Err((0, anyhow::anyhow!("a column's appender panicked"))));
            if let Err((row, e)) = result
                && first.as_ref().is_none_or(|(r, _)| row < *r)
            {
                first = Some((row, e));
            }
        }
        if let Some((_, e)) = first {
            return Err(e);
        }
        let decoded: Vec<Result<()>> = decoders
            .into_iter()
            .map(|d| d.join().unwrap_or_else(|_| bail!("a reader panicked")))
            .collect();
        // The reader whose feed ended early has the error of the earliest row.
        if let Some(t) = dispatched? {
            decoded.into_iter().nth(t).transpose()?;
            bail!("a reader stopped early");
        }
        drop(stop);
        if let Some(flusher) = flusher {
            flusher
                .join()
                .unwrap_or_else(|_| bail!("the flusher panicked"))?;
        }
        Ok(())
    })
}

/// Reader `t` of `readers`: decodes its parts' batches into `feed`, each
/// part followed by `None`. Stops early, without an error, when the feed's
/// receiver has gone.
fn decode(
    parts: &[Part],
    t: usize,
    readers: usize,
    names: &[&str],
    feed: &mpsc::SyncSender<Option<RecordBatch>>,
) -> Result<()> {
    for part in parts.iter().skip(t).step_by(readers) {
        let handle = File::open(part.file)
            .with_context(|| format!("cannot open {}", part.file.display()))?;
        let builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(handle, part.metadata.clone());
        let roots: Vec<usize> = names
            .iter()
            .filter_map(|c| part.metadata.schema().index_of(c).ok())
            .collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let reader = builder
            .with_projection(mask)
            .with_row_groups(vec![part.row_group])
            .with_batch_size(part.batch_rows)
            .build()
            .with_context(|| format!("{}: cannot read", part.file.display()))?;
        for batch in reader {
            let batch = batch.with_context(|| format!("{}: cannot read", part.file.display()))?;
            if feed.send(Some(batch)).is_err() {
                return Ok(());
            }
        }
        if feed.send(None).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// Hands the parts' batches, in row order, to the columns' appenders.
/// Returns the reader whose feed ended before its part did, if one did (it
/// quit on an error); stops without one when an appender has quit.
fn dispatch<'f>(
    parts: &[Part<'f>],
    feeds: &[mpsc::Receiver<Option<RecordBatch>>],
    outputs: &[Output],
    senders: &[mpsc::SyncSender<Column<'f>>],
    bar: &ProgressBar,
) -> Result<Option<usize>> {
    let mut row = 0u64;
    for (u, part) in parts.iter().enumerate() {
        let t = u % feeds.len();
        loop {
            let batch = match feeds[t].recv() {
                Ok(Some(batch)) => batch,
                Ok(None) => break,
                Err(_) => return Ok(Some(t)),
            };
            for (o, tx) in outputs.iter().zip(senders) {
                let array = batch
                    .column_by_name(&o.name)
                    .with_context(|| format!("{}: no column {:?}", part.file.display(), o.name))?;
                if tx.send((array.clone(), row, part.file)).is_err() {
                    // The appender quit on an error, which its join reports.
                    return Ok(None);
                }
            }
            row += batch.num_rows() as u64;
            bar.inc(batch.num_rows() as u64);
        }
    }
    Ok(None)
}

/// Appends one batch of a column to its store.
fn append(o: &Output, array: &ArrayRef, row: u64) -> Result<()> {
    if let (Some(encoder), AnyStore::Ragged(s)) = (&o.encoder, &o.store) {
        s.append_batch(&tokenise(o, encoder, array, row)?)?;
        return Ok(());
    }
    match (&o.shape, &o.store) {
        (StoreSchema::Dense { dtype, .. }, AnyStore::Dense(s)) => {
            let values = o.converter.dense(array, *dtype, row)?;
            s.append_bytes(*dtype, values.as_bytes())?;
        }
        (StoreSchema::Ragged { dtype }, AnyStore::Ragged(s)) => {
            s.append_batch(&o.converter.ragged(array, *dtype, row)?)?;
        }
        _ => unreachable!("stores are created from their shape"),
    }
    Ok(())
}

/// A batch of a string column as documents' tokens, in parallel.
fn tokenise(o: &Output, encoder: &Encoder, array: &ArrayRef, row: u64) -> Result<DynRaggedBatch> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    let text = |i: usize| -> Option<&str> {
        if array.is_null(i) {
            return None;
        }
        Some(match array.data_type() {
            DataType::Utf8 => array.as_string::<i32>().value(i),
            DataType::LargeUtf8 => array.as_string::<i64>().value(i),
            _ => array.as_string_view().value(i),
        })
    };
    let place = |i: usize| format!("column {:?} row {}", o.name, row + i as u64);
    let encoded: Vec<Vec<u32>> = (0..array.len())
        .into_par_iter()
        .map(|i| match text(i) {
            Some(t) => encoder.encode(t.as_bytes(), || place(i)),
            None if o.empty_nulls => encoder.encode(b"", || place(i)),
            None => bail!(
                "{}: null (use --fill to import it as an empty document)",
                place(i)
            ),
        })
        .collect::<Result<_>>()?;
    encoder.batch(&encoded, place)
}

/// Trains a dictionary on a column's raw store and recodes it into place.
fn recode_with_dictionary(o: Output, folder: &Path, target: &Target, quiet: bool) -> Result<()> {
    let _raw = RemoveOnDrop(o.path.clone());
    let dict = o
        .store
        .train_dict(target.tier.into())
        .with_context(|| format!("column {:?}: cannot train a dictionary", o.name))?;
    let out = crate::create_store(
        &folder.join(&o.name),
        &o.shape,
        Codec::ZstdDict(dict),
        target.level,
    )?;
    transfer::copy(&o.store, &out, quiet)?;
    Ok(out.sync()?)
}

/// The input file, or the `.parquet` files under the input folder in sorted order.
fn parquet_files(input: &Path) -> Result<Vec<PathBuf>> {
    if !input.is_dir() {
        return Ok(vec![input.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut dirs = vec![input.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                files.push(path);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        bail!("{} holds no .parquet file", input.display());
    }
    Ok(files)
}

/// The first file's schema, the rows of all files, and each file's metadata.
fn survey(files: &[PathBuf]) -> Result<(Schema, u64, Vec<ArrowReaderMetadata>)> {
    let mut rows = 0;
    let mut all = Vec::with_capacity(files.len());
    for file in files {
        let handle = File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        let metadata = ArrowReaderMetadata::load(&handle, ArrowReaderOptions::default())
            .with_context(|| format!("{} is not a readable Parquet file", file.display()))?;
        rows += metadata.metadata().file_metadata().num_rows().max(0) as u64;
        all.push(metadata);
    }
    let schema = all
        .first()
        .map_or_else(Schema::empty, |m| m.schema().as_ref().clone());
    Ok((schema, rows, all))
}

/// Whether `name` is one ordinary path component.
fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    ) && !name.contains('/')
}
