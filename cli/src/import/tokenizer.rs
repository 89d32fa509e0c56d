//! The tokenizers of `import text` and `import parquet --tokenizer`: bytes,
//! OpenAI's BPE encodings (`tiktoken-rs`, carried inside the crate) and
//! Hugging Face tokenizer.json files (`tokenizers`); and the [`Encoder`]
//! both importers tokenise documents with.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use zrecord::{DType, DynRaggedBatch, Element, RaggedBatch};

/// How documents become tokens: the options `import text` and `import
/// parquet` share (each names its own `--tokenizer`).
#[derive(clap::Args, Clone)]
pub(crate) struct TokenArgs {
    /// The token ending every document: an id, a token of the tokenizer, or
    /// `none`. Default: the newline byte (10) for bytes, `<|endoftext|>`
    /// for OpenAI encodings, `<|endoftext|>`, `</s>` or `<eos>` — whichever
    /// a tokenizer.json has.
    #[arg(long, requires = "tokenizer")]
    eod: Option<String>,
    /// The token dtype of the store.
    #[arg(long, value_enum, default_value = "u32")]
    dtype: TokenDType,
    /// Replace invalid UTF-8 with U+FFFD rather than stop (tokenizers other
    /// than `bytes` read UTF-8; `bytes` takes any bytes as they are).
    #[arg(long, requires = "tokenizer")]
    lossy: bool,
}

/// Token dtypes a token store may have.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum TokenDType {
    U8,
    U16,
    U32,
}

/// A tokenizer with its end-of-document token, dtype and UTF-8 policy.
pub(crate) struct Encoder {
    tokenizer: Tokenizer,
    eod: Option<u32>,
    lossy: bool,
    dtype: DType,
}

impl Encoder {
    /// The tokenizer `spec` (see [`Tokenizer::load`]) with `args`.
    pub(crate) fn new(spec: &str, args: &TokenArgs) -> Result<Encoder> {
        let tokenizer = Tokenizer::load(spec)?;
        let eod = tokenizer.eod(args.eod.as_deref())?;
        let dtype = match args.dtype {
            TokenDType::U8 => DType::U8,
            TokenDType::U16 => DType::U16,
            TokenDType::U32 => DType::U32,
        };
        Ok(Encoder {
            tokenizer,
            eod,
            lossy: args.lossy,
            dtype,
        })
    }

    /// The dtype of the token store.
    pub(crate) fn dtype(&self) -> DType {
        self.dtype
    }

    /// The tokenizer's name.
    pub(crate) fn name(&self) -> &str {
        self.tokenizer.name()
    }

    /// One document's tokens, the end-of-document token last. `place`
    /// names the document in errors (`line 3`, `row 7`).
    pub(crate) fn encode(&self, bytes: &[u8], place: impl Fn() -> String) -> Result<Vec<u32>> {
        let tokenizer = &self.tokenizer;
        let mut tokens = if tokenizer.reads_bytes() {
            tokenizer.encode_bytes(bytes)
        } else {
            match std::str::from_utf8(bytes) {
                Ok(text) => tokenizer.encode(text)?,
                Err(_) if self.lossy => tokenizer.encode(&String::from_utf8_lossy(bytes))?,
                Err(e) => bail!(
                    "{}: invalid UTF-8 at byte {} of the document (use --lossy to replace it with U+FFFD)",
                    place(),
                    e.valid_up_to()
                ),
            }
        };
        tokens.extend(self.eod);
        Ok(tokens)
    }

    /// Documents' tokens as a ragged batch of the store's dtype, refusing
    /// a token id the dtype cannot hold; `place(i)` names document `i`.
    pub(crate) fn batch(
        &self,
        encoded: &[Vec<u32>],
        place: impl Fn(usize) -> String,
    ) -> Result<DynRaggedBatch> {
        match self.dtype {
            DType::U8 => narrow::<u8>(encoded, place),
            DType::U16 => narrow::<u16>(encoded, place),
            _ => narrow::<u32>(encoded, place),
        }
    }
}

/// The documents as a ragged batch of `T`.
fn narrow<T>(encoded: &[Vec<u32>], place: impl Fn(usize) -> String) -> Result<DynRaggedBatch>
where
    T: Element + TryFrom<u32>,
{
    let mut batch = RaggedBatch::<T>::new();
    let mut values = Vec::new();
    for (i, tokens) in encoded.iter().enumerate() {
        values.clear();
        for &t in tokens {
            match T::try_from(t) {
                Ok(v) => values.push(v),
                Err(_) => bail!(
                    "{}: token id {t} does not fit the store's dtype {} (use --dtype u32)",
                    place(i),
                    T::DTYPE
                ),
            }
        }
        batch.push(&[values.len()], &values)?;
    }
    Ok(batch.into())
}

/// A loaded tokenizer.
pub(crate) enum Tokenizer {
    /// One token per byte: vocabulary 256.
    Bytes,
    /// An OpenAI encoding.
    #[cfg(feature = "tiktoken")]
    Tiktoken {
        name: String,
        bpe: Box<tiktoken_rs::CoreBPE>,
    },
    /// A Hugging Face tokenizer.json.
    #[cfg(feature = "tokenizers")]
    HuggingFace {
        name: String,
        tokenizer: Box<tokenizers::Tokenizer>,
    },
}

/// OpenAI encodings by name.
const OPENAI: [&str; 6] = [
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "r50k_base",
    "p50k_base",
    "p50k_edit",
];

/// End-of-document tokens looked for in a tokenizer.json, in this order.
const EOD_TOKENS: [&str; 4] = ["<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>"];

impl Tokenizer {
    /// `bytes`, an OpenAI encoding's name, or a tokenizer.json path.
    pub(crate) fn load(spec: &str) -> Result<Tokenizer> {
        if spec == "bytes" {
            return Ok(Tokenizer::Bytes);
        }
        if OPENAI.contains(&spec) {
            return openai(spec);
        }
        if Path::new(spec).is_file() {
            return hugging_face(spec);
        }
        bail!(
            "unknown tokenizer {spec:?}: give `bytes`, one of {}, or the path of a tokenizer.json file",
            OPENAI.join(", ")
        )
    }

    /// The name it was loaded by.
    pub(crate) fn name(&self) -> &str {
        match self {
            Tokenizer::Bytes => "bytes",
            #[cfg(feature = "tiktoken")]
            Tokenizer::Tiktoken { name, .. } => name,
            #[cfg(feature = "tokenizers")]
            Tokenizer::HuggingFace { name, .. } => name,
        }
    }

    /// Whether it takes any bytes (no UTF-8 needed).
    pub(crate) fn reads_bytes(&self) -> bool {
        matches!(self, Tokenizer::Bytes)
    }

    /// The bytes tokenizer's tokens.
    pub(crate) fn encode_bytes(&self, bytes: &[u8]) -> Vec<u32> {
        bytes.iter().map(|&b| u32::from(b)).collect()
    }

    /// The tokens of `text` (no special tokens added or read from the text).
    pub(crate) fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(match self {
            Tokenizer::Bytes => self.encode_bytes(text.as_bytes()),
            #[cfg(feature = "tiktoken")]
            Tokenizer::Tiktoken { bpe, .. } => bpe.encode_ordinary(text),
            #[cfg(feature = "tokenizers")]
            Tokenizer::HuggingFace { tokenizer, .. } => tokenizer
                .encode_fast(text, false)
                .map_err(|e| anyhow::anyhow!("cannot tokenise: {e}"))?
                .get_ids()
                .to_vec(),
        })
    }

    /// The id of special token `token`, if the tokenizer has it.
    fn token_id(&self, token: &str) -> Option<u32> {
        // Without the tokenizer features only `Bytes` exists, which has none.
        let _ = token;
        match self {
            Tokenizer::Bytes => None,
            #[cfg(feature = "tiktoken")]
            Tokenizer::Tiktoken { bpe, .. } => {
                match bpe.encode_with_special_tokens(token).as_slice() {
                    [id] if bpe.special_tokens().contains(token) => Some(*id),
                    _ => None,
                }
            }
            #[cfg(feature = "tokenizers")]
            Tokenizer::HuggingFace { tokenizer, .. } => tokenizer.token_to_id(token),
        }
    }

    /// The end-of-document token: from `--eod` (an id, a token, `none`) or
    /// the tokenizer's own.
    pub(crate) fn eod(&self, given: Option<&str>) -> Result<Option<u32>> {
        match given {
            Some("none") => Ok(None),
            Some(s) => match s.parse::<u32>() {
                Ok(id) => Ok(Some(id)),
                Err(_) => self.token_id(s).map(Some).with_context(|| {
                    format!("--eod {s:?}: {} has no such token", self.name())
                }),
            },
            None => match self {
                Tokenizer::Bytes => Ok(Some(u32::from(b'\n'))),
                #[allow(unreachable_patterns)] // only `Bytes` without the tokenizer features
                _ => EOD_TOKENS
                    .iter()
                    .find_map(|t| self.token_id(t))
                    .map(Some)
                    .with_context(|| {
                        format!(
                            "{} has none of {EOD_TOKENS:?}: name the end-of-document token with --eod (or --eod none)",
                            self.name()
                        )
                    }),
            },
        }
    }
}

#[cfg(feature = "tiktoken")]
fn openai(name: &str) -> Result<Tokenizer> {
    let bpe = match name {
        "cl100k_base" => tiktoken_rs::cl100k_base(),
        "o200k_base" => tiktoken_rs::o200k_base(),
        "o200k_harmony" => tiktoken_rs::o200k_harmony(),
        "r50k_base" => tiktoken_rs::r50k_base(),
        "p50k_base" => tiktoken_rs::p50k_base(),
        _ => tiktoken_rs::p50k_edit(),
    }
    .with_context(|| format!("cannot build the {name} encoding"))?;
    Ok(Tokenizer::Tiktoken {
        name: name.to_string(),
        bpe: Box::new(bpe),
    })
}

#[cfg(not(feature = "tiktoken"))]
fn openai(name: &str) -> Result<Tokenizer> {
    bail!("{name}: this zrecord was built without OpenAI encodings (cargo feature `tiktoken`)")
}

#[cfg(feature = "tokenizers")]
fn hugging_face(path: &str) -> Result<Tokenizer> {
    let tokenizer = tokenizers::Tokenizer::from_file(path)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("{path} is not a readable tokenizer.json"))?;
    Ok(Tokenizer::HuggingFace {
        name: path.to_string(),
        tokenizer: Box::new(tokenizer),
    })
}

#[cfg(not(feature = "tokenizers"))]
fn hugging_face(path: &str) -> Result<Tokenizer> {
    bail!(
        "{path}: this zrecord was built without tokenizer.json support (cargo feature `tokenizers`)"
    )
}
