//! `zrecord`: get data into and out of zrecord stores without Python.
//!
//! A thin shell over the library: one module per subcommand, each parsing
//! its arguments, calling the library and reporting progress.

mod bench;
mod compact;
mod dataset;
mod export;
mod import;
mod info;
mod progress;
mod recode;
mod remote;
mod source;
mod staging;
mod train_dict;
mod transfer;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit code for a store that `verify` found corrupt.
const EXIT_CORRUPT: u8 = 1;
/// Exit code for bad input or any other failure.
const EXIT_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "zrecord",
    version,
    about = "Import, inspect, verify and maintain zrecord stores"
)]
struct Cli {
    /// No progress bars; the one-line summary of an import stays (on stderr).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// No progress bars and no summary: only errors.
    #[arg(long, global = true)]
    silent: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import data into a new store.
    #[command(subcommand)]
    Import(import::Import),
    /// Write records out: a dense stream to FILE.npy, a ragged u8 stream to a folder of files.
    Export(export::Args),
    /// Describe a store, dataset or folder of stores: streams, shards, records, bytes.
    Info(info::Args),
    /// Read and decode every record; exit 0 if clean, 1 if corrupt.
    Verify(verify::Args),
    /// Reclaim the space of deleted records, in place.
    Compact(compact::Args),
    /// Train a zstd dictionary on a store's records.
    TrainDict(train_dict::Args),
    /// Copy a store into a new one with another codec, in index order.
    Recode(recode::Args),
    /// Measure random-batch gather throughput of a store on this machine.
    Bench(bench::Args),
    /// Sharded datasets: join the shards written by `import --shard`.
    #[command(subcommand)]
    Dataset(dataset::Dataset),
    /// Upload a store, folder of stores or dataset to object storage (headers last).
    Push(remote::PushArgs),
    /// Download a store, folder of stores or dataset from object storage.
    Pull(remote::PullArgs),
}

/// Codec choices on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum CodecArg {
    Raw,
    Zstd,
    ZstdDict,
}

/// Dictionary tiers on the command line.
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
enum TierArg {
    Fast,
    #[default]
    Balanced,
    Max,
}

impl From<TierArg> for zrecord::DictTier {
    fn from(t: TierArg) -> Self {
        match t {
            TierArg::Fast => zrecord::DictTier::Fast,
            TierArg::Balanced => zrecord::DictTier::Balanced,
            TierArg::Max => zrecord::DictTier::Max,
        }
    }
}

/// The codec `arg` names; `zstd-dict` needs its dictionary.
fn codec(arg: CodecArg, dict: Option<zrecord::Dictionary>) -> anyhow::Result<zrecord::Codec> {
    Ok(match (arg, dict) {
        (CodecArg::Raw, _) => zrecord::Codec::Raw,
        (CodecArg::Zstd, _) => zrecord::Codec::Zstd,
        (CodecArg::ZstdDict, Some(dict)) => zrecord::Codec::ZstdDict(dict),
        (CodecArg::ZstdDict, None) => anyhow::bail!("--codec zstd-dict needs a dictionary"),
    })
}

/// Creates a store whose appends compress at zstd `level` (the codec's
/// default when `None`).
fn create_store(
    path: &std::path::Path,
    schema: &zrecord::Schema,
    codec: zrecord::Codec,
    level: Option<i32>,
) -> anyhow::Result<zrecord::AnyStore> {
    let mut options = zrecord::OpenOptions::new();
    if let Some(level) = level {
        options = options.zstd_level(level);
    }
    Ok(options.create(path, schema, codec)?)
}

/// Where a new store goes and how it is encoded: shared by every import.
#[derive(clap::Args, Clone)]
struct Target {
    /// The store to create.
    store: PathBuf,
    /// The codec of the new store. Default: zstd, except for `import
    /// images` without --resize, whose JPEG and PNG files are already
    /// compressed and are kept raw (zstd would make them larger).
    #[arg(long, value_enum)]
    codec: Option<CodecArg>,
    /// The dictionary tier for `--codec zstd-dict` (trained on the imported data).
    #[arg(long, value_enum, default_value = "balanced")]
    tier: TierArg,
    /// The zstd level of `--codec zstd` (default 3) or `zstd-dict` (default
    /// 6): higher writes slower and smaller.
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Replace an existing store at the target.
    #[arg(long)]
    force: bool,
    /// Import only shard K of N (counting from 0) of the input, into
    /// `STORE/shard-KKKKK-of-NNNNN`: N jobs write a sharded dataset in
    /// parallel, and `zrecord dataset join STORE` completes it. The input
    /// is split by files (rows for npy/idx): shard K takes inputs
    /// K·c .. (K+1)·c with c = ⌈inputs/N⌉, so the last shard may take
    /// fewer, and a shard holds fewer records than inputs where inputs
    /// were skipped (`--on-error skip`).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
}

impl Target {
    /// The codec asked for, or zstd.
    fn codec(&self) -> CodecArg {
        self.codec.unwrap_or(CodecArg::Zstd)
    }

    /// The part of `total` input items this import takes: all of them, or
    /// shard K's `K·c .. (K+1)·c` with `c = ⌈total/N⌉` (cut at `total`).
    /// Every shard but the last then takes `c` inputs, and holds `c`
    /// records when none was skipped: block shuffles of `c` records then
    /// align their blocks with the shards.
    fn share(&self, total: usize) -> std::ops::Range<usize> {
        match self.shard {
            None => 0..total,
            Some((k, n)) => {
                let c = total.div_ceil(n as usize);
                let at = |k: u64| (k as usize).saturating_mul(c).min(total);
                at(k)..at(k + 1)
            }
        }
    }

    /// Refuses `--shard` for an importer that reads its input whole.
    fn refuse_shard(&self, importer: &str) -> anyhow::Result<()> {
        if self.shard.is_some() {
            anyhow::bail!(
                "`import {importer}` does not take --shard: `import files`, `images`, `npy`, \
                 `idx` and `parquet` do; import each part of the input into DATASET/shard-K-of-N instead"
            );
        }
        Ok(())
    }

    /// With `--shard`, the target becomes the shard's folder in the dataset.
    fn into_shard(mut self) -> Target {
        if let Some((k, n)) = self.shard {
            self.store = self.store.join(zrecord::shard_folder(k, n));
        }
        self
    }
}

/// `K/N` with `K < N`.
fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let parsed = text
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((k, n)) if k < n => Ok((k, n)),
        _ => Err(format!("{text:?} is not K/N with 0 <= K < N (e.g. 3/16)")),
    }
}

/// A failure and the exit code it maps to.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure {
            code: EXIT_ERROR,
            error,
        }
    }
}

fn main() -> ExitCode {
    exit_quietly_on_a_closed_pipe();
    let cli = Cli::parse();
    let quiet = cli.quiet || cli.silent;
    let result = match cli.command {
        Command::Push(args) => remote::push(args, quiet).map_err(Failure::from),
        Command::Pull(args) => remote::pull(args, quiet).map_err(Failure::from),
        Command::Import(args) => import::run(args, quiet, cli.silent).map_err(Failure::from),
        Command::Export(args) => export::run(args, quiet).map_err(Failure::from),
        Command::Info(args) => info::run(args).map_err(Failure::from),
        Command::Verify(args) => verify::run(args, quiet),
        Command::Compact(args) => compact::run(args, quiet).map_err(Failure::from),
        Command::TrainDict(args) => train_dict::run(args).map_err(Failure::from),
        Command::Recode(args) => recode::run(args, quiet).map_err(Failure::from),
        Command::Bench(args) => bench::run(args, quiet).map_err(Failure::from),
        Command::Dataset(command) => dataset::run(command).map_err(Failure::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, error }) => {
            // One line: the context chain, outermost first.
            let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
            eprintln!("zrecord: {}", chain.join(": "));
            ExitCode::from(code)
        }
    }
}

/// Makes writing to a closed pipe (`zrecord info STORE | head -1`) end the
/// process as other command-line tools end, rather than panic in `println!`:
/// Rust ignores SIGPIPE by default.
fn exit_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists,
    // to restore the signal's default disposition; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
