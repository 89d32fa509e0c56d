//! Documents out of a text file: one per line, one per paragraph, or one per
//! JSON Lines record.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;

/// What a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Every non-empty line.
    Lines,
    /// Lines up to a blank line, joined with newlines.
    Paragraphs,
    /// A field of each JSON Lines record.
    Jsonl,
}

impl Format {
    /// JSON Lines for `.jsonl` / `.ndjson` files, lines otherwise.
    pub(crate) fn guess(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl" | "ndjson") => Format::Jsonl,
            _ => Format::Lines,
        }
    }
}

/// What to do with a JSON Lines line that yields no document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnError {
    Fail,
    Skip,
}

/// One document and the line it starts on (1-based), for messages.
pub(crate) struct Document {
    pub(crate) line: u64,
    pub(crate) bytes: Vec<u8>,
}

/// Reads documents in rounds of about a given size.
pub(crate) struct Documents<R> {
    reader: R,
    format: Format,
    field: String,
    on_error: OnError,
    line: u64,
    skipped: u64,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> Documents<R> {
    pub(crate) fn new(reader: R, format: Format, field: &str, on_error: OnError) -> Self {
        Documents {
            reader,
            format,
            field: field.to_string(),
            on_error,
            line: 0,
            skipped: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    /// JSON Lines lines skipped under `--on-error skip`.
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The next documents, about `bytes` of them (empty at the end).
    pub(crate) fn next_round(&mut self, bytes: usize) -> Result<Vec<Document>> {
        let mut round = Vec::new();
        let mut size = 0;
        while size < bytes {
            match self.next_document()? {
                Some(doc) => {
                    size += doc.bytes.len() + 1;
                    round.push(doc);
                }
                None => break,
            }
        }
        Ok(round)
    }

    /// Reads the next line into `buf`, without its line ending; `false` at the end.
    fn next_line(&mut self) -> Result<bool> {
        self.buf.clear();
        if self.done
            || self
                .reader
                .read_until(b'\n', &mut self.buf)
                .context("cannot read")?
                == 0
        {
            self.done = true;
            return Ok(false);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        Ok(true)
    }

    fn next_document(&mut self) -> Result<Option<Document>> {
        match self.format {
            Format::Lines => {
                while self.next_line()? {
                    if !self.buf.is_empty() {
                        return Ok(Some(Document {
                            line: self.line,
                            bytes: self.buf.clone(),
                        }));
                    }
                }
                Ok(None)
            }
            Format::Paragraphs => {
                let mut doc: Option<Document> = None;
                while self.next_line()? {
                    if self.buf.iter().all(u8::is_ascii_whitespace) {
                        if doc.is_some() {
                            break;
                        }
                        continue;
                    }
                    let line = self.buf.clone();
                    match &mut doc {
                        Some(d) => {
                            d.bytes.push(b'\n');
                            d.bytes.extend_from_slice(&line);
                        }
                        None => {
                            doc = Some(Document {
                                line: self.line,
                                bytes: line,
                            })
                        }
                    }
                }
                Ok(doc)
            }
            Format::Jsonl => loop {
                if !self.next_line()? {
                    return Ok(None);
                }
                if self.buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let number = self.line;
                match json_field(&self.buf, &self.field) {
                    Ok(text) => {
                        return Ok(Some(Document {
                            line: number,
                            bytes: text.into_bytes(),
                        }));
                    }
                    Err(_) if self.on_error == OnError::Skip => self.skipped += 1,
                    Err(e) => {
                        bail!("line {number}: {e} (use --on-error skip to leave such lines out)")
                    }
                }
            },
        }
    }
}

/// The string `field` of the JSON object in `line`.
fn json_field(line: &[u8], field: &str) -> Result<String> {
    let value: serde_json::Value = serde_json::from_slice(line).context("not JSON")?;
    match value.get(field) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(other) => bail!("field {field:?} is not a string but {other}"),
        None => bail!("no field {field:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str, format: Format, on_error: OnError) -> Result<(Vec<(u64, String)>, u64)> {
        let mut docs = Documents::new(text.as_bytes(), format, "text", on_error);
        let round = docs.next_round(usize::MAX)?;
        let out = round
            .into_iter()
            .map(|d| (d.line, String::from_utf8(d.bytes).unwrap()))
            .collect();
        Ok((out, docs.skipped()))
    }

    #[test]
    fn lines_skip_empty_ones_and_strip_line_endings() {
        let (docs, _) = all("a b\r\n\nc\n", Format::Lines, OnError::Fail).unwrap();
        assert_eq!(docs, vec![(1, "a b".into()), (3, "c".into())]);
    }

    #[test]
    fn paragraphs_join_lines_up_to_a_blank_line() {
        let (docs, _) = all("\nx\ny\n  \n\nz", Format::Paragraphs, OnError::Fail).unwrap();
        assert_eq!(docs, vec![(2, "x\ny".into()), (6, "z".into())]);
    }

    #[test]
    fn jsonl_names_the_bad_line_or_skips_it() {
        let text =
            "{\"text\": \"one\"}\nnot json\n{\"other\": 1}\n{\"text\": 5}\n{\"text\": \"\"}\n";
        let e = all(text, Format::Jsonl, OnError::Fail).unwrap_err();
        assert!(e.to_string().starts_with("line 2: not JSON"), "{e}");
        let (docs, skipped) = all(text, Format::Jsonl, OnError::Skip).unwrap();
        assert_eq!(docs, vec![(1, "one".into()), (5, String::new())]);
        assert_eq!(skipped, 3);
    }
}
