//! Text classification with Burn from a ragged token store: which Testament
//! is a verse of the King James Bible from?
//!
//! The 31,102 verses (shipped in `examples/data/kjv.txt.gz`) become word ids
//! in a `RaggedStore<u32>` — one record per verse, as long as the verse —
//! beside a `DenseStore<i64>` of labels (0 Old Testament, 1 New). Every
//! tenth verse is held out through `subset`; both loaders share the stores.
//! Batches are padded on the loader's worker threads, capped at the 99th
//! percentile of the verse lengths, with a mask; the model averages the word
//! embeddings under the mask and classifies the mean. Burn's `Learner`
//! trains it and the test split is scored on every verse, whatever the batch
//! size. Prints, last, `test_accuracy=<value>`.
//!
//! With `--mix W` the training verses are read as a [`Mixture`] of two
//! corpora instead — the Old Testament's and the New's, each its own pair of
//! stores — with the New Testament at weight `W` of every batch (`--mix 0.3`:
//! 70/30, where the corpora alone are 74/26); the program prints each
//! source's share of the verses and words it trained on.
//!
//! ```text
//! cargo run --release --example burn_text -- [--epochs 6] [--batch 64] [--steps-per-epoch N] [--stores DIR] [--mix W]
//! ```
//!
//! [`Mixture`]: zrecord_burn::Mixture
//!
//! This file is self-contained: copy it into a crate of your own along with
//! the dependencies the README's Burn section lists.

use std::collections::HashMap;
use std::error::Error;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::optim::AdamConfig;
use burn::tensor::{Bool, Device, Int, Tensor};
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep,
};
use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_burn::{
    Batch, EpochReport, Mixture, Mode, Padding, Source, StoreDataLoader, Stream, dense_tensor,
    ragged_padded,
};

/// The first New Testament verse (Matthew 1:1) is line 23,146 of the file.
const NEW_TESTAMENT_FROM: usize = 23_145;
/// Word id 0 pads, 1 stands for a word seen fewer than twice in training.
const PAD: u32 = 0;
const UNKNOWN: u32 = 1;

/// Command-line options.
struct Options {
    epochs: usize,
    batch: u64,
    steps_per_epoch: Option<u64>,
    stores: PathBuf,
    /// The New Testament's weight in a two-corpus mixture.
    mix: Option<f64>,
}

fn options() -> Result<Options, String> {
    let usage =
        "usage: burn_text [--epochs N] [--batch B] [--steps-per-epoch N] [--stores DIR] [--mix W]";
    let mut options = Options {
        epochs: 6,
        batch: 64,
        steps_per_epoch: None,
        stores: std::env::temp_dir().join("zrecord-burn-text"),
        mix: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{usage}"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{arg}: {e}\n{usage}"));
        match arg.as_str() {
            "--epochs" => options.epochs = number(value("--epochs")?)? as usize,
            "--batch" => options.batch = number(value("--batch")?)?,
            "--steps-per-epoch" => options.steps_per_epoch = Some(number(value(&arg)?)?),
            "--stores" => options.stores = value("--stores")?.into(),
            "--mix" => {
                let w = value("--mix")?;
                let w = w
                    .parse::<f64>()
                    .map_err(|e| format!("--mix {w}: {e}\n{usage}"))?;
                if !(w > 0.0 && w < 1.0) {
                    return Err(format!("--mix takes a weight between 0 and 1, not {w}"));
                }
                options.mix = Some(w);
            }
            _ => return Err(format!("unexpected argument {arg:?}\n{usage}")),
        }
    }
    Ok(options)
}

/// Every tenth verse is held out for testing.
fn is_test(verse: usize) -> bool {
    verse.is_multiple_of(10)
}

/// The lowercase words of a verse.
fn words(verse: &str) -> impl Iterator<Item = String> + '_ {
    verse
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
}

/// Reads the verses, builds the vocabulary from the training verses (words
/// seen at least twice, most frequent first) and writes the token and label
/// stores.
fn write_stores(text: &Path, dir: &Path) -> Result<Stores, Box<dyn Error>> {
    let file = std::fs::File::open(text).map_err(|e| format!("{}: {e}", text.display()))?;
    let verses: Vec<String> = BufReader::new(flate2::read::GzDecoder::new(file))
        .lines()
        .collect::<Result<_, _>>()?;

    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, verse) in verses.iter().enumerate().filter(|(k, _)| !is_test(*k)) {
        for word in words(verse) {
            *counts.entry(word).or_default() += 1;
        }
    }
    let mut vocabulary: Vec<(String, usize)> =
        counts.into_iter().filter(|(_, n)| *n >= 2).collect();
    vocabulary.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let ids: HashMap<&str, u32> = vocabulary
        .iter()
        .zip(2u32..)
        .map(|((w, _), id)| (w.as_str(), id))
        .collect();

    let tokens: Vec<Vec<u32>> = verses
        .iter()
        .map(|v| {
            words(v)
                .map(|w| ids.get(w.as_str()).copied().unwrap_or(UNKNOWN))
                .collect()
        })
        .collect();
    let labels: Vec<i64> = (0..verses.len())
        .map(|k| i64::from(k >= NEW_TESTAMENT_FROM))
        .collect();

    let _ = std::fs::remove_dir_all(dir); // start fresh
    let token_store = RaggedStore::<u32>::create(dir.join("tokens"), Codec::Zstd)?;
    token_store.append_slices(&tokens)?;
    let label_store = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw)?;
    label_store.append(&labels)?;
    // Each Testament's training verses as a corpus of its own, for `--mix`.
    let mut corpora = Vec::new();
    for (name, range) in [
        ("old", 0..NEW_TESTAMENT_FROM),
        ("new", NEW_TESTAMENT_FROM..verses.len()),
    ] {
        let train: Vec<usize> = range.filter(|&k| !is_test(k)).collect();
        let corpus_tokens = RaggedStore::<u32>::create(dir.join(name).join("tokens"), Codec::Zstd)?;
        corpus_tokens
            .append_slices(&train.iter().map(|&k| tokens[k].clone()).collect::<Vec<_>>())?;
        let corpus_labels =
            DenseStore::<i64>::create(dir.join(name).join("labels"), &[], Codec::Raw)?;
        corpus_labels.append(&train.iter().map(|&k| labels[k]).collect::<Vec<_>>())?;
        corpora.push(
            Source::new(name)
                .stream("tokens", corpus_tokens)
                .stream("label", corpus_labels),
        );
    }
    Ok(Stores {
        tokens: token_store,
        labels: label_store,
        vocabulary: vocabulary.len() + 2,
        corpora,
    })
}

/// The verses as word ids, their labels, and the number of word ids.
struct Stores {
    tokens: RaggedStore<u32>,
    labels: DenseStore<i64>,
    vocabulary: usize,
    /// The Old and the New Testament's training verses, as mixture sources.
    corpora: Vec<Source>,
}

/// A batch of padded verses and their labels.
#[derive(Clone, Debug)]
struct VerseBatch {
    /// `(B, L)` word ids, `PAD` after each verse's end.
    tokens: Tensor<2, Int>,
    /// `(B, L)`, `true` on words.
    mask: Tensor<2, Bool>,
    /// `(B,)` words per verse (after the length cap).
    lengths: Tensor<1, Int>,
    /// `(B,)` 0 Old Testament, 1 New.
    labels: Tensor<1, Int>,
}

/// Word embeddings, averaged over each verse's words, then a linear layer.
#[derive(Module, Debug)]
struct BagOfWords {
    embedding: Embedding,
    output: Linear,
}

impl BagOfWords {
    fn new(vocabulary: usize, width: usize, device: &Device) -> BagOfWords {
        BagOfWords {
            embedding: EmbeddingConfig::new(vocabulary, width).init(device),
            output: LinearConfig::new(width, 2).init(device),
        }
    }

    /// Class logits `(B, 2)`.
    fn forward(&self, batch: &VerseBatch) -> Tensor<2> {
        let words = self.embedding.forward(batch.tokens.clone()); // (B, L, E)
        let mask = batch.mask.clone().float().unsqueeze_dim::<3>(2); // (B, L, 1)
        let sum = (words * mask).sum_dim(1).squeeze_dim::<2>(1); // (B, E): padding adds 0
        let count = batch
            .lengths
            .clone()
            .float()
            .clamp_min(1.0)
            .unsqueeze_dim::<2>(1);
        self.output.forward(sum / count)
    }

    fn classify(&self, batch: VerseBatch) -> ClassificationOutput {
        let logits = self.forward(&batch);
        let loss = CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits.clone(), batch.labels.clone());
        ClassificationOutput::new(loss, logits, batch.labels)
    }
}

impl TrainStep for BagOfWords {
    type Input = VerseBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: VerseBatch) -> TrainOutput<ClassificationOutput> {
        let output = self.classify(batch);
        TrainOutput::new(self, output.loss.backward(), output)
    }
}

impl InferenceStep for BagOfWords {
    type Input = VerseBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: VerseBatch) -> ClassificationOutput {
        self.classify(batch)
    }
}

/// Correct predictions and verses over one epoch of `loader`.
fn score(
    model: &BagOfWords,
    loader: &dyn DataLoader<VerseBatch>,
) -> Result<(usize, usize), Box<dyn Error>> {
    let (mut correct, mut total) = (0, 0);
    for batch in loader.iter() {
        let batch = batch?;
        let predicted = model.forward(&batch).argmax(1).flatten::<1>(0, 1);
        total += batch.labels.dims()[0];
        correct += predicted
            .equal(batch.labels)
            .int()
            .sum()
            .into_scalar::<i64>() as usize;
    }
    Ok((correct, total))
}

/// Trains and tests; returns the test accuracy and the verses each corpus
/// of a mixture gave the training loader (zero without `--mix`).
fn run(options: &Options) -> Result<(f64, [u64; 2]), Box<dyn Error>> {
    let start = Instant::now();
    let text = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/kjv.txt.gz");
    let Stores {
        tokens,
        labels,
        vocabulary,
        corpora,
    } = write_stores(&text, &options.stores)?;

    // The verse lengths, from the store's record table: cap padding at the
    // 99th percentile so one long verse does not pad its whole batch.
    let lengths = tokens.length_stats()?;
    let max_len = lengths.p99 as usize;
    println!(
        "{} verses, {vocabulary} words; words per verse: mean {:.1}, p99 {}, max {} (batches cut at {max_len})",
        lengths.records, lengths.mean, lengths.p99, lengths.max
    );

    // One `Stream` per store, cloned into both loaders: they share the open stores.
    let (tokens, labels) = (Stream::from(tokens), Stream::from(labels));
    let n = tokens.len();
    let (train_ids, test_ids): (Vec<u64>, Vec<u64>) = (0..n).partition(|&k| !is_test(k as usize));
    // Verses and words trained on per corpus, counted on the workers.
    let read: Arc<[[AtomicU64; 2]; 2]> = Arc::default();
    let counted = Arc::clone(&read);
    let convert = move |mut batch: Batch, device: &Device| {
        if let Ok(verses) = batch.ragged::<u32>("tokens") {
            for k in 0..batch.len() {
                let corpus = match batch.source(k) {
                    Some(name) => usize::from(name == "new"),
                    None => continue, // the test split: no mixture
                };
                let words = verses.layout().range(k).map_or(0, |r| r.len());
                counted[corpus][0].fetch_add(1, Ordering::Relaxed);
                counted[corpus][1].fetch_add(words as u64, Ordering::Relaxed);
            }
        }
        let padded = ragged_padded(&batch, "tokens", Padding::new(PAD).max_len(max_len), device)?;
        Ok(VerseBatch {
            tokens: padded.values,
            mask: padded.mask,
            lengths: padded.lengths,
            labels: dense_tensor(&mut batch, "label", device)?,
        })
    };
    let device = Device::flex();
    let mut train = StoreDataLoader::builder(options.batch).seed(7);
    train = match options.mix {
        // The same training verses, at the weights asked for.
        Some(new) => {
            let [old_corpus, new_corpus] =
                <[Source; 2]>::try_from(corpora).map_err(|_| "two corpora")?;
            train.mixture(
                Mixture::new()
                    .source(old_corpus.weight(1.0 - new))
                    .source(new_corpus.weight(new)),
            )
        }
        None => train
            .stream("tokens", tokens.clone())
            .stream("label", labels.clone())
            .subset(train_ids),
    };
    if let Some(steps) = options.steps_per_epoch {
        train = train.steps_per_epoch(steps);
    }
    let train = Arc::new(train.build(&device.clone().autodiff(), convert.clone())?);
    // Sequential + Repeat: every epoch scores each test verse exactly once,
    // the last batch holding what is left.
    let test = Arc::new(
        StoreDataLoader::builder(options.batch)
            .stream("tokens", tokens)
            .stream("label", labels)
            .subset(test_ids)
            .mode(Mode::Sequential)
            .epoch_mode(zrecord_burn::EpochMode::Repeat)
            .build(&device, convert)?,
    );

    let steps = options.epochs * train.steps_per_epoch() as usize;
    println!(
        "training a bag-of-words classifier for {} epochs of {} steps ({} verses each); testing on {}",
        options.epochs,
        train.steps_per_epoch(),
        train.num_items(),
        test.num_items(),
    );
    let model = BagOfWords::new(vocabulary, 64, &device.clone().autodiff());
    let schedule = CosineAnnealingLrSchedulerConfig::new(1e-2, steps.max(1)).init()?;
    let learner = Learner::new(model, AdamConfig::new().init(), schedule);
    let result =
        SupervisedTraining::new(options.stores.join("training"), train.clone(), test.clone())
            .metrics((AccuracyMetric::new(), LossMetric::new()))
            .num_epochs(options.epochs)
            .renderer(Box::new(EpochReport::new()))
            .with_application_logger(None)
            .launch(learner);
    if let Some(error) = result.error {
        return Err(format!("training stopped: {error}").into());
    }

    let (correct, total) = score(&result.model, test.as_ref())?;
    if total != test.num_items() {
        return Err(format!("scored {total} verses of {}", test.num_items()).into());
    }
    let accuracy = correct as f64 / total.max(1) as f64;
    let c = train.counters();
    println!(
        "loader: {} steps, gather {:.0} ms + pad {:.0} ms on the workers, training loop waited {:.0} ms for data",
        c.steps_delivered,
        c.gather_time.as_secs_f64() * 1e3,
        c.transform_time.as_secs_f64() * 1e3,
        c.consumer_wait.as_secs_f64() * 1e3,
    );
    if options.mix.is_some() {
        let share = |corpus: usize, what: usize| {
            let all = read[0][what].load(Ordering::Relaxed) + read[1][what].load(Ordering::Relaxed);
            100.0 * read[corpus][what].load(Ordering::Relaxed) as f64 / all.max(1) as f64
        };
        println!(
            "mixture: old testament {:.1} % of verses, {:.1} % of words; new testament {:.1} % of verses, {:.1} % of words",
            share(0, 0),
            share(0, 1),
            share(1, 0),
            share(1, 1),
        );
    }
    println!(
        "{correct} of {total} held-out verses right in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let verses = [0, 1].map(|corpus| read[corpus][0].load(Ordering::Relaxed));
    Ok((accuracy, verses))
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = options()?;
    let (accuracy, _) = run(&options)?;
    println!("test_accuracy={accuracy:.4}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few hundred steps learn more than the class prior, and the whole
    /// test split is scored (`run` fails unless every verse was).
    #[test]
    fn a_few_steps_train_and_score_every_test_verse() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            epochs: 1,
            batch: 64,
            steps_per_epoch: Some(200),
            stores: dir.path().join("stores"),
            mix: None,
        };
        let (accuracy, _) = run(&options).unwrap();
        // The Old Testament holds 74 % of the test verses.
        assert!(accuracy > 0.8, "accuracy {accuracy}");
    }

    /// Trained on an even mixture of the two corpora, the model still
    /// learns, and each corpus gave exactly half of every batch.
    #[test]
    fn a_two_corpus_mixture_trains() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            epochs: 1,
            batch: 64,
            steps_per_epoch: Some(100),
            stores: dir.path().join("stores"),
            mix: Some(0.5),
        };
        let (accuracy, [old, new]) = run(&options).unwrap();
        assert!(accuracy > 0.7, "accuracy {accuracy}");
        assert!(
            old >= 100 * 32 && old == new,
            "{old} old and {new} new verses"
        );
    }
}
