//! `zrecord verify`: decode every record of a store, dataset or folder of
//! stores; exit 0 when clean, 1 when corrupt.

use anyhow::{anyhow, bail};
use zrecord::storage::Io;
use zrecord::{Error, VerifyReport};

use crate::source::{RemoteArgs, Source, is_url};
use crate::{EXIT_CORRUPT, Failure, progress};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A store, a dataset (a folder with dataset.zr), a folder of stores,
    /// or one of these in object storage (s3://…, gs://…, az://…, https://…).
    source: String,
    /// First open every store writable: finish what a killed writer left,
    /// and remove a damaged journal that keeps a store from opening (saying
    /// what may be lost), then verify. Local stores only.
    #[arg(long)]
    repair: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<(), Failure> {
    if args.repair {
        repair(&args.source)?;
    }
    let source = match Source::open(&args.source, &args.remote, Io::Auto) {
        Ok(source) => source,
        Err(e) => {
            let corrupt = e
                .chain()
                .any(|c| c.downcast_ref::<Error>().is_some_and(is_corruption));
            if corrupt {
                println!("corrupt: {e:#}");
                return Err(Failure {
                    code: EXIT_CORRUPT,
                    error: e,
                });
            }
            return Err(e.into());
        }
    };
    let bar = progress::records(quiet, source.total_records(), "verify");
    let mut total = VerifyReport::default();
    let mut stores = 0usize;
    for stream in &source.streams {
        for (store, relative) in stream.shard_stores().into_iter().zip(&stream.stores) {
            let done = bar.position();
            let report = store.verify_with(|n, _| bar.set_position(done + n));
            let shown = source.store_shown(relative);
            match report {
                Ok(r) => {
                    total.records += r.records;
                    total.logical_bytes += r.logical_bytes;
                    total.stored_bytes += r.stored_bytes;
                    stores += 1;
                }
                Err(e) if is_corruption(&e) => {
                    bar.finish_and_clear();
                    println!("corrupt: {shown}: {e}");
                    return Err(Failure {
                        code: EXIT_CORRUPT,
                        error: anyhow!(e).context(shown),
                    });
                }
                Err(e) => {
                    bar.finish_and_clear();
                    return Err(anyhow!(e).context(shown).into());
                }
            }
        }
    }
    bar.finish_and_clear();
    // A dataset's record is one record of each stream: say both counts.
    let across = if stores == 1 {
        String::new()
    } else {
        let streams: Vec<String> = source
            .streams
            .iter()
            .map(|s| format!("{} {}", s.name, s.len()))
            .collect();
        format!(" in {stores} stores ({})", streams.join(", "))
    };
    println!(
        "ok: {} records{across}, {} logical bytes in {} stored bytes, every frame and location checked",
        total.records, total.logical_bytes, total.stored_bytes
    );
    Ok(())
}

/// `--repair`: every store of a local store, dataset or folder of stores.
fn repair(location: &str) -> anyhow::Result<()> {
    if is_url(location) {
        bail!(
            "{location}: --repair writes to the stores, and a URL is opened read-only; \
             `zrecord pull {location} DIR`, repair DIR, then push it"
        );
    }
    let root = std::path::Path::new(location);
    for dir in local_stores(root)? {
        let report =
            zrecord::repair(&dir).map_err(|e| anyhow!(e).context(dir.display().to_string()))?;
        for j in &report.discarded {
            println!("removed {}: {}; {}", j.path.display(), j.reason, j.risk);
        }
        if report.rolled_back > 0 {
            println!(
                "{}: rolled back to its last sync: {} records appended after it did not \
                 check out (a power cut kept their header, not all of their bytes)",
                dir.display(),
                report.rolled_back
            );
        }
    }
    Ok(())
}

/// The store folders at or under `root`: the folder itself when it is a
/// store (or not a folder: its repair says why), else every folder below
/// it that holds a store header.
fn local_stores(root: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    use crate::source::STORE_HEADER;
    if root.join(STORE_HEADER).exists() || !root.is_dir() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| anyhow!(e).context(format!("cannot list {}", dir.display())))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if hidden || !path.is_dir() {
                continue;
            }
            if path.join(STORE_HEADER).exists() {
                found.push(path);
            } else {
                dirs.push(path);
            }
        }
    }
    found.sort();
    if found.is_empty() {
        found.push(root.to_path_buf());
    }
    Ok(found)
}

/// Whether the store's bytes are damaged (rather than unreadable for another reason).
fn is_corruption(e: &Error) -> bool {
    matches!(
        e,
        Error::Corrupt { .. }
            | Error::CorruptRecord { .. }
            | Error::BadMagic { .. }
            | Error::InvalidTag { .. }
            | Error::MissingDictionary { .. }
            | Error::NotRegularFile { .. }
    )
}
