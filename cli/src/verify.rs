//! `zrecord verify`: decode every record; exit 0 when clean, 1 when corrupt.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use zrecord::{AnyStore, Error};

use crate::{EXIT_CORRUPT, Failure, progress};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The store.
    store: PathBuf,
    /// First open the store writable: finish what a killed writer left, and
    /// remove a damaged journal that keeps the store from opening (saying
    /// what may be lost), then verify.
    #[arg(long)]
    repair: bool,
}

pub(crate) fn run(args: Args, quiet: bool) -> Result<(), Failure> {
    let shown = args.store.display().to_string();
    if args.repair {
        let report = zrecord::repair(&args.store)
            .map_err(|e| Failure::from(anyhow!(e).context(shown.clone())))?;
        for j in &report.discarded {
            println!("removed {}: {}; {}", j.path.display(), j.reason, j.risk);
        }
    }
    let report = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<AnyStore>(&args.store)
        .and_then(|store| {
            let bar = progress::records(quiet, store.len(), "verify");
            let progress = |done, _| bar.set_position(done);
            let report = store.verify_with(progress);
            bar.finish_and_clear();
            report
        });
    match report {
        Ok(r) => {
            println!(
                "ok: {} records, {} logical bytes in {} stored bytes, every frame and location checked",
                r.records, r.logical_bytes, r.stored_bytes
            );
            Ok(())
        }
        Err(e) if is_corruption(&e) => {
            println!("corrupt: {e}");
            Err(Failure {
                code: EXIT_CORRUPT,
                error: anyhow!(e).context(shown),
            })
        }
        Err(e) => Err(Failure::from(Err::<(), _>(e).context(shown).unwrap_err())),
    }
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
