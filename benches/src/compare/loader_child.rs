//! Workload (e), the measuring side: one configuration per child process
//! (`compare --loader-child JSON`), so peak RSS is this run's alone and not
//! the generator's hundreds of MiB. The child opens the stores from disk,
//! runs, and prints one [`ChildResult`] line on stdout.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zrecord::{DenseStore, RaggedBatch, RaggedStore};
use zrecord_loader::{Batch, Counters, Loader, LoaderBuilder, Mixture, Mode, Source};
use zrecord_loader::{PaddedBatch, Padding};
use zsampler::Sampler;

use super::Result;
use super::loader_table::PREFETCH;
use super::rss;
use crate::checksum::sha256_hex;

/// The flag that makes `compare` a loader child.
pub(crate) const CHILD_FLAG: &str = "--loader-child";
pub(crate) const RESULT_PREFIX: &str = "LOADER-RESULT ";
/// Batch size of workload (e).
pub(crate) const BATCH: u64 = 256;
/// Sampler seed of workload (e).
pub(crate) const SEED: u64 = 5;

/// The stores a child reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Data {
    /// Data (a) or (b): a dense `u8` store and its `i64` labels (`label[r] = r`).
    Labelled { records: PathBuf, labels: PathBuf },
    /// A ragged `i32` token store (data (c)), each batch padded with zeros
    /// into one `(batch, longest)` buffer, as the Burn converter
    /// (`zrecord_burn::ragged_padded`) pads it before wrapping it in a tensor.
    PaddedTokens { tokens: PathBuf },
    /// Data (b) split into sources of consecutive records, each a dense
    /// `u8` store and its `i64` labels (`label = ` the record's index in the
    /// sources laid end to end), read as a [`Mixture`] with these weights.
    Mixture {
        sources: Vec<(PathBuf, PathBuf)>,
        weights: Vec<f64>,
    },
}

/// What a child runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ChildConfig {
    pub(crate) data: Data,
    /// `None`: the bare loop on the calling thread; `Some(w)`: the loader with `w` workers.
    pub(crate) workers: Option<usize>,
    /// Steps run before timing.
    pub(crate) warmup: u64,
    pub(crate) steps: u64,
    /// Seconds the consumer sleeps per step (a training step that leaves the CPU free).
    pub(crate) consumer_sleep_s: f64,
}

/// What a child measured, over the timed steps.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ChildResult {
    pub(crate) wall_s: f64,
    pub(crate) batches_per_s: f64,
    /// Seconds the consumer waited for batches (loader counters).
    pub(crate) wait_s: f64,
    /// Gather seconds summed over workers (loader) or the loop's own gather time.
    pub(crate) gather_s: f64,
    /// Resident KiB right after opening the stores.
    pub(crate) rss_open_kib: u64,
    /// Peak resident KiB of the process (`VmHWM`).
    pub(crate) vm_hwm_kib: u64,
    /// Sampled peak of anonymous resident KiB.
    pub(crate) peak_anon_kib: u64,
    /// Sampled peak of file-backed resident KiB (the stores' maps).
    pub(crate) peak_file_kib: u64,
}

/// The child's entry point: parses the config, runs, prints the result line.
pub fn main(config_json: &str) -> Result<()> {
    let config: ChildConfig = serde_json::from_str(config_json)?;
    let result = match &config.data {
        Data::Labelled { records, labels } => {
            let images = zrecord::OpenOptions::new()
                .read_only(true)
                .open::<DenseStore<u8>>(records)?;
            let labels = zrecord::OpenOptions::new()
                .read_only(true)
                .open::<DenseStore<i64>>(labels)?;
            measured(|| labelled(&config, images, labels))?
        }
        Data::PaddedTokens { tokens } => {
            let tokens = zrecord::OpenOptions::new()
                .read_only(true)
                .open::<RaggedStore<i32>>(tokens)?;
            measured(|| padded(&config, tokens))?
        }
        Data::Mixture { sources, weights } => {
            // The images twice: the loader's, and a handle to check its batches.
            let open = |(records, labels): &(PathBuf, PathBuf)| -> Result<_> {
                let options = zrecord::OpenOptions::new().read_only(true);
                Ok((
                    options.open::<DenseStore<u8>>(records)?,
                    options.open::<DenseStore<i64>>(labels)?,
                    options.open::<DenseStore<u8>>(records)?,
                ))
            };
            let sources = sources.iter().map(open).collect::<Result<Vec<_>>>()?;
            measured(|| mixture(&config, sources, weights))?
        }
    };
    println!("{RESULT_PREFIX}{}", serde_json::to_string(&result)?);
    Ok(())
}

/// Runs `f` with its stores open, adding the memory figures to its result.
fn measured(f: impl FnOnce() -> Result<ChildResult>) -> Result<ChildResult> {
    let rss_open_kib = rss::kib(&rss::status(), "VmRSS");
    let (result, (peak_anon_kib, peak_file_kib)) = rss::peaks(Duration::from_millis(2), f);
    Ok(ChildResult {
        rss_open_kib,
        vm_hwm_kib: rss::kib(&rss::status(), "VmHWM"),
        peak_anon_kib,
        peak_file_kib,
        ..result?
    })
}

/// Runs `work(step)` for the warm-up and the timed steps, sleeping after
/// each as the consumer. The time inside `work` is the bare loop's gather
/// time; a loader's `counters` give its wait and gather time instead.
fn steps(
    config: &ChildConfig,
    counters: Option<&Counters>,
    mut work: impl FnMut(u64) -> Result<()>,
) -> Result<ChildResult> {
    let sleep = Duration::from_secs_f64(config.consumer_sleep_s);
    let snapshot = || counters.map(Counters::snapshot);
    let (mut gather, mut start, mut before) = (Duration::ZERO, Instant::now(), snapshot());
    for step in 0..config.warmup + config.steps {
        if step == config.warmup {
            (gather, start, before) = (Duration::ZERO, Instant::now(), snapshot());
        }
        let t = Instant::now();
        work(step)?;
        gather += t.elapsed();
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    let mut result = ChildResult {
        wall_s,
        batches_per_s: config.steps as f64 / wall_s,
        gather_s: gather.as_secs_f64(),
        ..ChildResult::default()
    };
    if let (Some(before), Some(after)) = (before, snapshot()) {
        result.wait_s = (after.consumer_wait - before.consumer_wait).as_secs_f64();
        result.gather_s = (after.gather_time - before.gather_time).as_secs_f64();
    }
    Ok(result)
}

/// Builds the loader of `streams` (the workload's sampler, `workers`
/// workers) and takes the warm-up and the timed steps' batches from it,
/// calling `consume` on each. The first batches must be the `expected` ones
/// (indices, and `digest` of the batch).
fn loader_steps(
    config: &ChildConfig,
    streams: LoaderBuilder<Batch>,
    workers: usize,
    expected: &Expected,
    digest: impl Fn(&Batch) -> Result<Option<String>>,
    mut consume: impl FnMut(&Batch) -> Result<()>,
) -> Result<ChildResult> {
    let mut loader = streams
        .mode(Mode::Cyclic)
        .seed(SEED)
        .workers(workers)
        .prefetch(PREFETCH)
        .build()?;
    let counters = loader.counters();
    steps(config, Some(&counters), |step| {
        let batch = loader.next_batch()?;
        if let Some((indices, sum)) = expected.get(step as usize)
            && (batch.indices() != &indices[..] || digest(&batch)?.as_ref() != Some(sum))
        {
            return Err(format!("the loader's batch {step} differs from a direct gather").into());
        }
        consume(&batch)
    })
}

pub(crate) fn sampler(records: u64) -> Result<Sampler> {
    Ok(Sampler::builder(records, BATCH)
        .seed(SEED)
        .mode(Mode::Cyclic)
        .build()?)
}

/// Indices and digest of the first batches gathered directly, to check the
/// loader's against (digests: holding the batches would count against the
/// loader's RSS).
type Expected = Vec<(Vec<u64>, String)>;

fn expected(sampler: &Sampler, digest: impl Fn(&[u64]) -> Result<String>) -> Result<Expected> {
    (0..2)
        .map(|step| {
            let indices = sampler.batch_at(step);
            digest(&indices).map(|d| (indices, d))
        })
        .collect()
}

/// Fails unless the labels are their records' indices (`label[r] = r`).
fn check_labels(labels: &[i64], indices: &[u64]) -> Result<()> {
    if labels.iter().copied().eq(indices.iter().map(|&i| i as i64)) {
        return Ok(());
    }
    Err(format!("labels {labels:?} for the records {indices:?}").into())
}

/// Data (a) or (b) with labels: the bare loop samples and gathers on the
/// calling thread (zrecord's gather uses every core for batches of 1 MiB and
/// more), as a program without a loader would.
fn labelled(
    config: &ChildConfig,
    images: DenseStore<u8>,
    labels: DenseStore<i64>,
) -> Result<ChildResult> {
    let sampler = sampler(images.len())?;
    let Some(workers) = config.workers else {
        let mut indices = vec![0u64; BATCH as usize];
        let mut image_buf = vec![0u8; BATCH as usize * images.record_len()];
        let mut label_buf = vec![0i64; BATCH as usize];
        return steps(config, None, |step| {
            sampler.fill_batch(step, &mut indices);
            images.gather_into(&indices, &mut image_buf)?;
            labels.gather_into(&indices, &mut label_buf)?;
            check_labels(&label_buf, &indices)?;
            std::hint::black_box(&image_buf);
            Ok(())
        });
    };
    let expected = expected(&sampler, |indices| {
        let mut buf = vec![0u8; indices.len() * images.record_len()];
        images.gather_into(indices, &mut buf)?;
        Ok(sha256_hex(&buf))
    })?;
    let streams = Loader::builder(BATCH)
        .stream("image", images)
        .stream("label", labels);
    let digest = |batch: &Batch| Ok(batch.dense::<u8>("image")?.as_slice().map(sha256_hex));
    loader_steps(config, streams, workers, &expected, digest, |batch| {
        let image = batch.dense::<u8>("image")?;
        let label = batch.dense::<i64>("label")?;
        let label = label.as_slice().ok_or("labels not contiguous")?;
        check_labels(label, batch.indices())?;
        std::hint::black_box(&image);
        Ok(())
    })
}

/// A padded token batch as one digest (shape, lengths and values).
fn padded_digest(padded: &PaddedBatch<i32>) -> String {
    let mut bytes: Vec<u8> = padded.shape.iter().flat_map(|d| d.to_le_bytes()).collect();
    bytes.extend(padded.lengths.iter().flat_map(|l| l.to_le_bytes()));
    bytes.extend(padded.values.iter().flat_map(|v| v.to_le_bytes()));
    sha256_hex(&bytes)
}

/// Token batches padded by the consumer: on the calling thread, or from the
/// loader.
fn padded(config: &ChildConfig, tokens: RaggedStore<i32>) -> Result<ChildResult> {
    let sampler = sampler(tokens.len())?;
    let padding = Padding::new(0i32);
    let Some(workers) = config.workers else {
        let mut indices = vec![0u64; BATCH as usize];
        let mut batch = RaggedBatch::<i32>::new();
        return steps(config, None, |step| {
            sampler.fill_batch(step, &mut indices);
            tokens.gather_into(&indices, &mut batch)?;
            std::hint::black_box(padding.pad(batch.values(), batch.layout())?);
            Ok(())
        });
    };
    let expected = expected(&sampler, |indices| {
        let batch = tokens.gather(indices)?;
        Ok(padded_digest(&padding.pad(batch.values(), batch.layout())?))
    })?;
    let streams = Loader::builder(BATCH).stream("tokens", tokens);
    let digest = |batch: &Batch| Ok(Some(padded_digest(&batch.padded::<i32>("tokens", 0)?)));
    loader_steps(config, streams, workers, &expected, digest, |batch| {
        std::hint::black_box(batch.padded::<i32>("tokens", 0)?);
        Ok(())
    })
}

/// Data (b) as a mixture of its sources, from the loader only (a mixture's
/// order is the loader's own): every batch's labels must be its indices,
/// and the first two batches' images the records a direct gather from the
/// sources gives.
fn mixture(
    config: &ChildConfig,
    sources: Vec<(DenseStore<u8>, DenseStore<i64>, DenseStore<u8>)>,
    weights: &[f64],
) -> Result<ChildResult> {
    let workers = config
        .workers
        .ok_or("a mixture is read by the loader only")?;
    let mut starts = vec![0u64];
    let mut mixture = Mixture::new();
    let mut direct = Vec::new();
    for (k, ((images, labels, check), &weight)) in sources.into_iter().zip(weights).enumerate() {
        starts.push(starts[k] + images.len());
        direct.push(check);
        mixture = mixture.source(
            Source::new(format!("source {k}"))
                .stream("image", images)
                .stream("label", labels)
                .weight(weight),
        );
    }
    let streams = Loader::builder(BATCH).mixture(mixture);
    let mut checked = 0;
    loader_steps(
        config,
        streams,
        workers,
        &Vec::new(),
        |_| Ok(None),
        |batch| {
            let image = batch.dense::<u8>("image")?;
            let label = batch.dense::<i64>("label")?;
            check_labels(
                label.as_slice().ok_or("labels not contiguous")?,
                batch.indices(),
            )?;
            if checked < 2 {
                let image = image.as_slice().ok_or("images not contiguous")?;
                let width = image.len() / batch.len();
                let mut record = vec![0u8; width];
                for (k, &index) in batch.indices().iter().enumerate() {
                    let source = starts.partition_point(|&s| s <= index) - 1;
                    direct[source].gather_into(&[index - starts[source]], &mut record)?;
                    if record != image[k * width..(k + 1) * width] {
                        return Err(format!(
                            "the mixture's record {index} differs from its source"
                        )
                        .into());
                    }
                }
                checked += 1;
            }
            std::hint::black_box(&image);
            Ok(())
        },
    )
}
