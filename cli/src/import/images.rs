//! `zrecord import images`: an ImageFolder tree (one subfolder per class) or
//! a `path,label` list into a folder of two streams and two text files:
//!
//! * `images/` — the encoded files as they are (a ragged `u8` store, raw by
//!   default: JPEG and PNG are compressed already, and zstd makes them
//!   larger), or, with `--resize S`, decoded once: a dense `u8` store of
//!   `[S, S, 3]` RGB (shorter side scaled to S, then the centre S×S; zstd
//!   by default);
//! * `labels/` — a dense `i64` store, the class of each image;
//! * `classes.txt` — the class names, line `i` naming label `i`;
//! * `paths.txt` — line `i` the source path of record `i`, relative to DIR.
//!
//! Every image is decoded at import (in parallel, a bounded chunk at a time),
//! so a corrupt one is reported by path before anything is kept: the import
//! fails and leaves nothing, or with `--on-error skip` leaves it out and
//! prints the count and the paths. Files of a class folder that are not
//! `.jpg`, `.jpeg` or `.png` are counted and reported as ignored.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use rayon::prelude::*;
use zrecord::{DType, RaggedBatch, Schema};
use zrecord_vision::{IMAGE_EXTENSIONS, ImageFolder, RgbImage, Transform};

use super::{Summary, write_store};
use crate::staging::Staged;
use crate::{CodecArg, Target};

/// Images read and decoded at once: bounds memory to a chunk of files.
const CHUNK: usize = 256;

/// What to do with an image that does not decode.
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub(crate) enum OnError {
    /// Stop; nothing is written.
    #[default]
    Fail,
    /// Leave it out and report it.
    Skip,
}

/// `zrecord import images` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The ImageFolder root (`DIR/<class>/**/*.{jpg,jpeg,png}`), or the folder
    /// the paths of `--list` are relative to. Other files in it are
    /// ignored, and counted in the summary.
    pub(crate) dir: PathBuf,
    #[command(flatten)]
    target: Target,
    /// A CSV (`path,label`) or TSV (`path<TAB>label`) list instead of the
    /// folder layout; a first line `path,label` is a header. Labels that are
    /// all integers up to 65535 are the class indices; otherwise class names, numbered in
    /// sorted order.
    #[arg(long)]
    list: Option<PathBuf>,
    /// Decode at import into `[SIZE, SIZE, 3]` RGB: shorter side to SIZE,
    /// then the centre crop.
    #[arg(long, value_name = "SIZE")]
    resize: Option<u32>,
    /// A corrupt or unreadable image fails the import, or is skipped.
    #[arg(long, value_enum, default_value = "fail")]
    on_error: OnError,
}

pub(crate) fn run(args: &Args, quiet: bool) -> Result<Summary> {
    if !args.dir.is_dir() {
        bail!("not a folder");
    }
    let (folder, ignored) = match &args.list {
        Some(list) => (ImageFolder::from_list(&args.dir, list)?, 0),
        None => (ImageFolder::scan(&args.dir)?, not_images(&args.dir)?),
    };
    // Classes come from the whole input, so every shard numbers them alike.
    let share = args.target.share(folder.images.len());
    let items = &folder.images[share.clone()];
    let classes = &folder.classes;
    let target = args.target.clone().into_shard();
    let resize = args
        .resize
        .map(|size| {
            let transform = Transform::center_crop(size, size);
            transform.check().map(|()| transform)
        })
        .transpose()?;

    let staged = Staged::new(&target.store, target.force)?;
    std::fs::create_dir(staged.path())
        .with_context(|| format!("cannot create {}", staged.path().display()))?;
    let part = |name: &str, codec: CodecArg| Target {
        store: staged.path().join(name),
        codec: Some(codec),
        tier: target.tier,
        level: target.level,
        force: false,
        shard: None,
    };
    let shape = match &resize {
        Some(t) => Schema::Dense {
            dtype: DType::U8,
            item_shape: t.hwc().to_vec(),
        },
        None => Schema::Ragged { dtype: DType::U8 },
    };
    // Encoded images are compressed already: zstd gains nothing on them
    // (about 0.94x: larger) and costs time on every read.
    let codec = target.codec.unwrap_or(match resize {
        Some(_) => CodecArg::Zstd,
        None => CodecArg::Raw,
    });
    let mut kept = Vec::with_capacity(items.len());
    let mut skipped = Vec::new();
    write_store(
        &part("images", codec),
        shape,
        items.len() as u64,
        quiet,
        &[],
        |sink| {
            for chunk in items.chunks(CHUNK) {
                let results: Vec<Result<Vec<u8>>> = chunk
                    .par_iter()
                    .map_init(RgbImage::default, |scratch, item| {
                        zrecord_vision::read_checked(
                            &args.dir.join(&item.path),
                            resize.as_ref(),
                            scratch,
                        )
                        .map_err(anyhow::Error::from)
                    })
                    .collect();
                let mut batch = RaggedBatch::<u8>::new();
                let mut dense = Vec::new();
                for (item, result) in chunk.iter().zip(results) {
                    match (result, args.on_error) {
                        (Ok(bytes), _) => {
                            if resize.is_some() {
                                dense.extend_from_slice(&bytes);
                            } else {
                                batch.push(&[bytes.len()], &bytes)?;
                            }
                            kept.push(item);
                        }
                        (Err(e), OnError::Skip) => skipped.push((item, e)),
                        (Err(e), OnError::Fail) => {
                            return Err(e.context(format!(
                                "{} (use --on-error skip to leave it out)",
                                item.path.display()
                            )));
                        }
                    }
                }
                if resize.is_some() {
                    sink.dense(&dense)?;
                } else {
                    sink.ragged(&batch.into())?;
                }
            }
            Ok(())
        },
    )?;
    if kept.is_empty() && !items.is_empty() {
        bail!("every image failed to decode");
    }
    let labels: Vec<u8> = kept.iter().flat_map(|i| i.label.to_le_bytes()).collect();
    write_store(
        &part("labels", CodecArg::Raw),
        Schema::Dense {
            dtype: DType::I64,
            item_shape: Vec::new(),
        },
        kept.len() as u64,
        true,
        &[],
        |sink| sink.dense(&labels),
    )?;
    let mut paths = String::new();
    for item in &kept {
        paths.push_str(&utf8(&item.path)?);
        paths.push('\n');
    }
    let names: String = classes.iter().map(|c| format!("{c}\n")).collect();
    for (name, text) in [("classes.txt", names), ("paths.txt", paths)] {
        let path = staged.path().join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    staged.commit()?;
    let notes = skipped
        .iter()
        .map(|(item, error)| format!("skipped {}: {error:#}", item.path.display()))
        .collect();
    let codec_note = match (args.target.codec, resize.is_some()) {
        (Some(_), _) => format!("images stored {}", codec_name(codec)),
        (None, false) => "images kept raw (already compressed; --codec zstd to change)".into(),
        (None, true) => "decoded images stored zstd".into(),
    };
    let shard_note = match args.target.shard {
        Some((k, n)) => format!(
            "; shard {k}/{n}: input files {}..{} of {} (each shard takes {} files; records are \
             fewer where files were skipped)",
            share.start,
            share.end,
            folder.images.len(),
            folder.images.len().div_ceil(n as usize)
        ),
        None => String::new(),
    };
    // Every shard scans the whole folder: say so, lest shards' counts be summed.
    let whole = if args.target.shard.is_some() {
        " of the whole folder"
    } else {
        ""
    };
    let line = format!(
        "imported {} images, skipped {} as corrupt, ignored {ignored} non-image files{whole}; {} classes, \
         {codec_note}, into {}{shard_note}",
        kept.len(),
        skipped.len(),
        classes.len(),
        target.store.display(),
    );
    Ok(Summary { notes, line })
}

fn codec_name(codec: CodecArg) -> &'static str {
    match codec {
        CodecArg::Raw => "raw",
        CodecArg::Zstd => "zstd",
        CodecArg::ZstdDict => "zstd-dict",
    }
}

/// Files under the class folders of `root` that are not images (by
/// extension), and files beside the class folders: what
/// [`ImageFolder::scan`] leaves out. Hidden files and folders are not counted.
fn not_images(root: &Path) -> Result<u64> {
    fn hidden(path: &Path) -> bool {
        path.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
    }
    fn walk(dir: &Path, top: bool, count: &mut u64) -> Result<()> {
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?
        {
            let path = entry
                .with_context(|| format!("cannot list {}", dir.display()))?
                .path();
            if hidden(&path) {
                continue;
            }
            if path.is_dir() {
                walk(&path, false, count)?;
            } else {
                let image = path.extension().is_some_and(|e| {
                    IMAGE_EXTENSIONS
                        .iter()
                        .any(|x| e.to_string_lossy().eq_ignore_ascii_case(x))
                });
                if top || !image {
                    *count += 1;
                }
            }
        }
        Ok(())
    }
    let mut count = 0;
    walk(root, true, &mut count)?;
    Ok(count)
}

fn utf8(path: &Path) -> Result<String> {
    let text = path
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", path.display()))?;
    if text.contains('\n') {
        bail!("{text:?} has a newline in its name");
    }
    Ok(text.to_owned())
}
