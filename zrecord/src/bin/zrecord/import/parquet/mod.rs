//! `zrecord import parquet`: each chosen column of one Parquet file, or of
//! a folder of them (a Hugging Face dataset split), becomes a store
//! `OUT/<column>`; row `i` of the files is record `i` of every store.
//!
//! Row groups are read one batch at a time, so memory stays bounded by a
//! batch of rows whatever the size of the files.

mod column;

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use arrow_schema::{DataType, Schema};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use zrecord::{AnyStore, Codec};

use crate::staging::{RemoveOnDrop, Staged};
use crate::{CodecArg, Target, progress, transfer};
use column::{Converter, Fill};
use zrecord::Schema as StoreSchema;

/// Rows per batch read from a row group.
const BATCH_ROWS: usize = 8192;

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
    store: AnyStore,
    /// Where the store is built (a raw store first, for zstd-dict).
    path: PathBuf,
}

pub(crate) fn run(args: &Args, quiet: bool) -> Result<()> {
    let files = parquet_files(&args.input)?;
    // A shard is a run of whole files.
    let files = files[args.target.share(files.len())].to_vec();
    if files.is_empty() {
        bail!("no Parquet files for this shard (fewer files than shards): use fewer shards");
    }
    let target = args.target.clone().into_shard();
    let (schema, rows) = survey(&files)?;
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
    let dict = matches!(target.codec, CodecArg::ZstdDict);
    let codec = match dict {
        true => Codec::Raw,
        false => crate::codec(target.codec, None)?,
    };
    let mut outputs = Vec::new();
    for &i in &chosen {
        let field = schema.field(i);
        let name = field.name();
        if !is_plain_name(name) {
            bail!("column {name:?} cannot name a store folder");
        }
        let shape = column::shape(name, field.data_type())?;
        let fill = match (&args.fill, &shape) {
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
            path,
        });
    }

    let bar = progress::records(quiet, rows, "import");
    let mut row = 0u64;
    for file in &files {
        let names: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
        let (reader, file_schema) = open(file, &names)?;
        for o in &outputs {
            let found = file_schema.field_with_name(&o.name).map(|f| f.data_type());
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
        for batch in reader {
            let batch = batch.with_context(|| format!("{}: cannot read", file.display()))?;
            for o in &outputs {
                let array = batch
                    .column_by_name(&o.name)
                    .with_context(|| format!("{}: no column {:?}", file.display(), o.name))?;
                append(o, array, row).with_context(|| file.display().to_string())?;
            }
            row += batch.num_rows() as u64;
            bar.inc(batch.num_rows() as u64);
        }
    }
    bar.finish_and_clear();

    for o in outputs {
        finish(o, staged.path(), &target, quiet)?;
    }
    staged.commit()
}

/// Appends one batch of a column to its store.
fn append(o: &Output, array: &arrow_array::ArrayRef, row: u64) -> Result<()> {
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

/// Syncs a column's store; for zstd-dict, trains the dictionary on it and
/// recodes it into place.
fn finish(o: Output, folder: &Path, target: &Target, quiet: bool) -> Result<()> {
    let sync = |store: &AnyStore| -> Result<()> {
        match store {
            AnyStore::Dense(s) => s.sync()?,
            AnyStore::Ragged(s) => s.sync()?,
        }
        Ok(())
    };
    if !matches!(target.codec, CodecArg::ZstdDict) {
        return sync(&o.store);
    }
    let _raw = RemoveOnDrop(o.path.clone());
    let dict = match &o.store {
        AnyStore::Dense(s) => s.train_dict(target.tier.into()),
        AnyStore::Ragged(s) => s.train_dict(target.tier.into()),
    }
    .with_context(|| format!("column {:?}: cannot train a dictionary", o.name))?;
    let out = crate::create_store(
        &folder.join(&o.name),
        &o.shape,
        Codec::ZstdDict(dict),
        target.level,
    )?;
    transfer::copy(&o.store, &out, quiet)?;
    sync(&out)
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

/// The first file's schema and the rows of all files.
fn survey(files: &[PathBuf]) -> Result<(Schema, u64)> {
    let mut rows = 0;
    let mut schema = None;
    for file in files {
        let builder = builder(file)?;
        rows += builder.metadata().file_metadata().num_rows().max(0) as u64;
        schema.get_or_insert_with(|| builder.schema().as_ref().clone());
    }
    Ok((schema.unwrap_or_else(Schema::empty), rows))
}

fn builder(file: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let handle = File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    ParquetRecordBatchReaderBuilder::try_new(handle)
        .with_context(|| format!("{} is not a readable Parquet file", file.display()))
}

/// A batch reader over the named top-level columns of `file`.
fn open(
    file: &Path,
    columns: &[&str],
) -> Result<(
    parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    Schema,
)> {
    let builder = builder(file)?;
    let schema = builder.schema().as_ref().clone();
    let roots: Vec<usize> = columns
        .iter()
        .filter_map(|c| schema.index_of(c).ok())
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| format!("{}: cannot read", file.display()))?;
    Ok((reader, schema))
}

/// Whether `name` is one ordinary path component.
fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    ) && !name.contains('/')
}
