//! `zrecord import text`: documents of a text or JSON Lines file, tokenised
//! in parallel into a ragged token store (one record per document, each
//! ending with the end-of-document token).

mod documents;

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use zrecord::Schema;

use super::tokenizer::{Encoder, TokenArgs};
use super::{Summary, write_store};
use crate::Target;
use documents::{Documents, Format, OnError};

/// Text read per parallel tokenisation round.
const ROUND_BYTES: usize = 8 << 20;

/// Documents of a text or JSON Lines file; for a text column of a Parquet
/// file, `zrecord import parquet --tokenizer` does the same.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The text or JSON Lines file.
    file: PathBuf,
    /// `bytes` (one token per byte), an OpenAI encoding (`cl100k_base`,
    /// `o200k_base`, `r50k_base`, `p50k_base`, ...), or a Hugging Face
    /// tokenizer.json file.
    #[arg(long)]
    tokenizer: String,
    /// What a document is: a line, a paragraph (lines up to a blank line),
    /// or the `--field` of a JSON Lines record. Default: jsonl for
    /// `.jsonl`/`.ndjson` files, lines otherwise.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The JSON Lines field holding the text.
    #[arg(long, default_value = "text")]
    field: String,
    #[command(flatten)]
    tokens: TokenArgs,
    /// A JSON Lines line that is not JSON, or lacks the field: stop with an
    /// error naming the line, or skip it (and report how many were).
    #[arg(long, value_enum, default_value = "fail")]
    on_error: OnError,
    #[command(flatten)]
    target: Target,
}

pub(crate) fn run(args: &Args, quiet: bool) -> Result<Summary> {
    args.target.refuse_shard("text")?;
    let encoder = Encoder::new(&args.tokenizer, &args.tokens)?;
    let format = args.format.unwrap_or_else(|| Format::guess(&args.file));
    let file =
        File::open(&args.file).with_context(|| format!("cannot open {}", args.file.display()))?;
    let mut documents = Documents::new(BufReader::new(file), format, &args.field, args.on_error);
    let start = Instant::now();
    let (mut docs, mut tokens) = (0u64, 0u64);
    write_store(
        &args.target,
        Schema::Ragged {
            dtype: encoder.dtype(),
        },
        0,
        quiet,
        &[],
        |sink| {
            loop {
                let round = documents.next_round(ROUND_BYTES)?;
                if round.is_empty() {
                    break;
                }
                let encoded: Vec<Vec<u32>> = round
                    .par_iter()
                    .map(|doc| encoder.encode(&doc.bytes, || format!("line {}", doc.line)))
                    .collect::<Result<_>>()?;
                let batch = encoder.batch(&encoded, |i| format!("line {}", round[i].line))?;
                docs += round.len() as u64;
                tokens += encoded.iter().map(|t| t.len() as u64).sum::<u64>();
                sink.ragged(&batch)?;
            }
            if docs == 0 {
                bail!("no documents found");
            }
            Ok(())
        },
    )
    .with_context(|| args.file.display().to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let skipped = documents.skipped();
    Ok(format!(
        "imported {docs} documents, {tokens} tokens ({}) into {} in {secs:.2} s: {:.2} M tokens/s{}",
        encoder.name(),
        args.target.store.display(),
        tokens as f64 / secs / 1e6,
        if skipped > 0 {
            format!("; skipped {skipped} bad lines")
        } else {
            String::new()
        }
    )
    .into())
}
