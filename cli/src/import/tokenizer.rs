//! The tokenizers `import text` knows: bytes, OpenAI's BPE encodings
//! (`tiktoken-rs`, carried inside the crate) and Hugging Face tokenizer.json
//! files (`tokenizers`).

use std::path::Path;

use anyhow::{Context, Result, bail};

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
