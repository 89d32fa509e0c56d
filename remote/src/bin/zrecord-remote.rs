//! `zrecord-remote push LOCAL URL` and `zrecord-remote pull URL LOCAL`:
//! stores and datasets between a local folder and object storage.
//!
//! Credentials and endpoints come from the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ALLOW_HTTP`, `GOOGLE_APPLICATION_CREDENTIALS`, …) or `--option
//! KEY=VALUE`, as the crate's README lists them ("Credentials and
//! endpoints"); the instance metadata service is asked for credentials only
//! with `ZRECORD_INSTANCE_METADATA=true`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use zrecord_remote::{RemoteOptions, TransferReport, pull, push};

#[derive(Parser)]
#[command(
    name = "zrecord-remote",
    version,
    about = "Copy zrecord stores to and from object storage"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// An object-store setting by object_store's key name, e.g.
    /// `aws_endpoint=http://127.0.0.1:9000` (repeatable).
    #[arg(long = "option", value_name = "KEY=VALUE", global = true)]
    options: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Upload a store, or a folder of stores (a dataset), header last.
    Push {
        /// The store or dataset folder.
        local: PathBuf,
        /// Where to put it: `s3://bucket/prefix`, `gs://…`, `az://…`, `file:///…`.
        url: String,
        /// Read every object back and compare its CRC-32C with the local file's.
        #[arg(long)]
        verify: bool,
    },
    /// Download a store or dataset into a new local folder.
    Pull {
        /// The store or dataset folder in object storage.
        url: String,
        /// The folder to create.
        local: PathBuf,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(report) => {
            // The transfer is done: a reader that closed the pipe early
            // (`| head -1`) is no reason to fail or panic now.
            let mut out = std::io::stdout().lock();
            for (name, files, bytes) in &report.stores {
                let name = if name.is_empty() { "store" } else { name };
                let _ = writeln!(out, "{name}: {files} files, {bytes} bytes");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            let mut source = std::error::Error::source(&*e);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<TransferReport, Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let mut options = RemoteOptions::new();
    for setting in &cli.options {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| format!("--option {setting:?}: expected KEY=VALUE"))?;
        options = options.store_option(key, value);
    }
    let bar = ProgressBar::new(0).with_style(ProgressStyle::with_template(
        "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
    )?);
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = match cli.command {
        Command::Push { local, url, verify } => push(&local, &url, &options, verify, progress)?,
        Command::Pull { url, local } => pull(&url, &local, &options, progress)?,
    };
    bar.finish_and_clear();
    Ok(report)
}
