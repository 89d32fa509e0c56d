//! `zrecord import text`: documents of a text or JSON Lines file, tokenised
//! in parallel into a ragged token store (one record per document, each
//! ending with the end-of-document token).

mod documents;
mod tokenizer;

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use rayon::prelude::*;
use zrecord::{DType, DynRaggedBatch, Element, RaggedBatch};

use super::write_store;
use crate::Target;
use documents::{Document, Documents, Format, OnError};
use tokenizer::Tokenizer;
use zrecord::Schema;

/// Text read per parallel tokenisation round.
const ROUND_BYTES: usize = 8 << 20;

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
    /// The token ending every document: an id, a token of the tokenizer, or
    /// `none`. Default: the newline byte (10) for bytes, `<|endoftext|>`
    /// for OpenAI encodings, `<|endoftext|>`, `</s>` or `<eos>` — whichever
    /// a tokenizer.json has.
    #[arg(long)]
    eod: Option<String>,
    /// The token dtype of the store.
    #[arg(long, value_enum, default_value = "u32")]
    dtype: TokenDType,
    /// A JSON Lines line that is not JSON, or lacks the field: stop with an
    /// error naming the line, or skip it (and report how many were).
    #[arg(long, value_enum, default_value = "fail")]
    on_error: OnError,
    /// Replace invalid UTF-8 with U+FFFD rather than stop (tokenizers other
    /// than `bytes` read UTF-8; `bytes` takes any bytes as they are).
    #[arg(long)]
    lossy: bool,
    #[command(flatten)]
    target: Target,
}

/// Token dtypes a text store may have.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum TokenDType {
    U8,
    U16,
    U32,
}

pub(crate) fn run(args: &Args, quiet: bool) -> Result<()> {
    args.target.refuse_shard("text")?;
    let tokenizer = Tokenizer::load(&args.tokenizer)?;
    let eod = tokenizer.eod(args.eod.as_deref())?;
    let format = args.format.unwrap_or_else(|| Format::guess(&args.file));
    let file =
        File::open(&args.file).with_context(|| format!("cannot open {}", args.file.display()))?;
    let mut documents = Documents::new(BufReader::new(file), format, &args.field, args.on_error);
    let dtype = match args.dtype {
        TokenDType::U8 => DType::U8,
        TokenDType::U16 => DType::U16,
        TokenDType::U32 => DType::U32,
    };
    let start = Instant::now();
    let (mut docs, mut tokens) = (0u64, 0u64);
    write_store(
        &args.target,
        Schema::Ragged { dtype },
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
                    .map(|doc| encode(&tokenizer, doc, args.lossy, eod))
                    .collect::<Result<_>>()?;
                let batch = match dtype {
                    DType::U8 => narrow::<u8>(&round, &encoded)?,
                    DType::U16 => narrow::<u16>(&round, &encoded)?,
                    _ => narrow::<u32>(&round, &encoded)?,
                };
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
    if !quiet {
        eprintln!(
            "{docs} documents, {tokens} tokens ({}) in {secs:.2} s: {:.2} M tokens/s{}",
            tokenizer.name(),
            tokens as f64 / secs / 1e6,
            if skipped > 0 {
                format!("; skipped {skipped} bad lines")
            } else {
                String::new()
            }
        );
    } else if skipped > 0 {
        eprintln!("skipped {skipped} bad lines");
    }
    Ok(())
}

/// One document's tokens, the end-of-document token last.
fn encode(
    tokenizer: &Tokenizer,
    doc: &Document,
    lossy: bool,
    eod: Option<u32>,
) -> Result<Vec<u32>> {
    let mut tokens = if tokenizer.reads_bytes() {
        tokenizer.encode_bytes(&doc.bytes)
    } else {
        match std::str::from_utf8(&doc.bytes) {
            Ok(text) => tokenizer.encode(text)?,
            Err(_) if lossy => tokenizer.encode(&String::from_utf8_lossy(&doc.bytes))?,
            Err(e) => bail!(
                "line {}: invalid UTF-8 at byte {} of the document (use --lossy to replace it with U+FFFD)",
                doc.line,
                e.valid_up_to()
            ),
        }
    };
    tokens.extend(eod);
    Ok(tokens)
}

/// The round's documents as a ragged batch of `T`, refusing a token id
/// that `T` cannot hold.
fn narrow<T>(round: &[Document], encoded: &[Vec<u32>]) -> Result<DynRaggedBatch>
where
    T: Element + TryFrom<u32>,
{
    let mut batch = RaggedBatch::<T>::new();
    let mut values = Vec::new();
    for (doc, tokens) in round.iter().zip(encoded) {
        values.clear();
        for &t in tokens {
            match T::try_from(t) {
                Ok(v) => values.push(v),
                Err(_) => bail!(
                    "line {}: token id {t} does not fit the store's dtype {} (use --dtype u32)",
                    doc.line,
                    T::DTYPE
                ),
            }
        }
        batch.push(&[values.len()], &values)?;
    }
    Ok(batch.into())
}
