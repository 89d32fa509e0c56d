//! A tokenizer's own rate on one core: OpenAI's BPE encodings (`tiktoken-rs`)
//! over the King James Bible, one verse at a time — the yardstick for
//! `zrecord import text`, which tokenises on every core and prints its own
//! tokens per second.
//!
//! ```text
//! cargo run --release -p zrecord-benches --bin tokenize -- [cl100k_base|o200k_base|r50k_base ...]
//! ```

use std::io::Read;
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/kjv.txt.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let verses: Vec<&str> = text.lines().collect();
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names = vec!["cl100k_base".into(), "o200k_base".into()];
    }
    println!(
        "KJV: {} verses, {:.1} MB; one core, median of 3 passes",
        verses.len(),
        text.len() as f64 / 1e6
    );
    for name in names {
        let bpe = match name.as_str() {
            "cl100k_base" => tiktoken_rs::cl100k_base()?,
            "o200k_base" => tiktoken_rs::o200k_base()?,
            "r50k_base" => tiktoken_rs::r50k_base()?,
            other => return Err(format!("unknown encoding {other}").into()),
        };
        let mut rates = Vec::new();
        let mut tokens = 0;
        for _ in 0..3 {
            let start = Instant::now();
            tokens = verses
                .iter()
                .map(|v| bpe.encode_ordinary(v).len())
                .sum::<usize>();
            rates.push(tokens as f64 / start.elapsed().as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "  {name}: {tokens} tokens, {:.2} M tokens/s",
            rates[1] / 1e6
        );
    }
    Ok(())
}
