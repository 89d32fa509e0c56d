//! `zrecord push` and `zrecord pull`: stores and datasets between a local
//! folder and object storage, in this process through `zrecord-remote`.
//!
//! Credentials and endpoints come from the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ALLOW_HTTP`, `GOOGLE_SERVICE_ACCOUNT`, …) or `--option KEY=VALUE`;
//! a missing one is an error naming the variable before any request.

use std::path::PathBuf;

use anyhow::{Context, Result};
use zrecord_remote::{RemoteOptions, TransferReport};

use crate::progress;

/// Object-store settings on the command line.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct Settings {
    /// An object-store setting by object_store's key name, e.g.
    /// `aws_endpoint=http://127.0.0.1:9000` (repeatable); over the environment.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
}

impl Settings {
    /// The remote options these settings make.
    pub(crate) fn remote_options(&self) -> Result<RemoteOptions> {
        let mut options = RemoteOptions::new();
        for setting in &self.options {
            let (key, value) = setting
                .split_once('=')
                .with_context(|| format!("--option {setting:?}: expected KEY=VALUE"))?;
            options = options.store_option(key, value);
        }
        Ok(options)
    }
}

#[derive(clap::Args)]
pub(crate) struct PushArgs {
    /// The store, folder of stores or dataset to upload.
    local: PathBuf,
    /// Where to put it: `s3://bucket/prefix`, `gs://…`, `az://…`, `file:///…`
    /// (an empty folder).
    url: String,
    /// Read every object back and compare its CRC-32C with the local file's.
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    settings: Settings,
}

#[derive(clap::Args)]
pub(crate) struct PullArgs {
    /// The store, folder of stores or dataset in object storage.
    url: String,
    /// The folder to create.
    local: PathBuf,
    #[command(flatten)]
    settings: Settings,
}

pub(crate) fn push(args: PushArgs, quiet: bool) -> Result<()> {
    crate::source::check_backend(&args.url)?;
    let options = args.settings.remote_options()?;
    let bar = progress::bytes(quiet, "push");
    let report = zrecord_remote::push(&args.local, &args.url, &options, args.verify, |d, t| {
        progress::set(&bar, d, t)
    })
    .with_context(|| format!("push {} to {}", args.local.display(), args.url))?;
    bar.finish_and_clear();
    summarise(&report, &args.url, quiet);
    Ok(())
}

pub(crate) fn pull(args: PullArgs, quiet: bool) -> Result<()> {
    crate::source::check_backend(&args.url)?;
    let options = args.settings.remote_options()?;
    let bar = progress::bytes(quiet, "pull");
    let report = zrecord_remote::pull(&args.url, &args.local, &options, |d, t| {
        progress::set(&bar, d, t)
    })
    .with_context(|| format!("pull {} to {}", args.url, args.local.display()))?;
    bar.finish_and_clear();
    summarise(&report, &args.local.display().to_string(), quiet);
    Ok(())
}

/// One line per store copied, then the total (only the total with `--quiet`).
fn summarise(report: &TransferReport, to: &str, quiet: bool) {
    if !quiet {
        for (name, files, bytes) in &report.stores {
            let name = if name.is_empty() { "store" } else { name };
            println!("{name}: {files} files, {bytes} bytes");
        }
    }
    eprintln!(
        "copied {} store(s), {} bytes, to {to}",
        report.stores.len(),
        report.bytes
    );
}
