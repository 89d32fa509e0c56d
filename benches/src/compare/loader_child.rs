//! Workload (e), the measuring side: one configuration per child process
//! (`compare --loader-child JSON`), so peak RSS is this run's alone and not
//! the generator's hundreds of MiB. The child opens the stores from disk,
//! runs, and prints one [`ChildResult`] line on stdout.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use zrecord::{DenseStore, Padding, RaggedBatch, RaggedStore};
use zrecord_loader::{Batch, Loader, LoaderBuilder, Mode};
use zsampler::Sampler;

use super::rss::{self, Monitor};
use crate::checksum::sha256_hex;

/// The flag that makes `compare` a loader child.
pub const CHILD_FLAG: &str = "--loader-child";
/// The prefix of the result line.
pub const RESULT_PREFIX: &str = "LOADER-RESULT ";
/// Batch size of workload (e).
pub const BATCH: u64 = 256;
/// Sampler seed of workload (e).
pub const SEED: u64 = 5;

/// The stores a child reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Data {
    /// Data (a) or (b), with labels.
    Labelled {
        /// The dense `u8` store.
        records: PathBuf,
        /// Its label store (`i64`, `label[r] = r`).
        labels: PathBuf,
    },
    /// A ragged `i32` token store (data (c)), each batch padded with zeros
    /// into one `(batch, longest)` buffer, as the Burn converter
    /// (`zrecord_burn::ragged_padded`) pads it before wrapping it in a tensor.
    PaddedTokens {
        /// The token store.
        tokens: PathBuf,
    },
}

/// What a child runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildConfig {
    /// The stores.
    pub data: Data,
    /// `None`: the bare loop on the calling thread; `Some(w)`: the loader with `w` workers.
    pub workers: Option<usize>,
    /// The loader's prefetch depth.
    pub prefetch: usize,
    /// Steps run before timing.
    pub warmup: u64,
    /// Steps timed.
    pub steps: u64,
    /// Seconds the consumer sleeps per step (a training step that leaves the CPU free).
    pub consumer_sleep_s: f64,
}

/// What a child measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChildResult {
    /// Timed steps.
    pub steps: u64,
    /// Wall seconds of the timed steps.
    pub wall_s: f64,
    /// Batches per second over the timed steps.
    pub batches_per_s: f64,
    /// Seconds the consumer waited for batches (loader counters), timed steps only.
    pub wait_s: f64,
    /// Gather seconds summed over workers (loader) or the loop's own gather time.
    pub gather_s: f64,
    /// Resident KiB right after opening the stores.
    pub rss_open_kib: u64,
    /// Peak resident KiB of the process (`VmHWM`).
    pub vm_hwm_kib: u64,
    /// Sampled peak of anonymous resident KiB.
    pub peak_anon_kib: u64,
    /// Sampled peak of file-backed resident KiB (the stores' maps).
    pub peak_file_kib: u64,
    /// Stream buffers the loader allocated (not recycled).
    pub buffers_allocated: u64,
}

fn check_labels(labels: &[i64], indices: &[u64]) -> Result<(), String> {
    match labels
        .iter()
        .zip(indices)
        .position(|(&l, &i)| l != i as i64)
    {
        None if labels.len() == indices.len() => Ok(()),
        None => Err(format!(
            "{} labels for {} indices",
            labels.len(),
            indices.len()
        )),
        Some(k) => Err(format!(
            "label {} at position {k} for index {}",
            labels[k], indices[k]
        )),
    }
}

/// Runs `config` and returns what it measured.
///
/// # Errors
/// zrecord and loader errors, or a batch that is not what the sampler chose.
pub fn run(config: &ChildConfig) -> super::Result<ChildResult> {
    let sleep = Duration::from_secs_f64(config.consumer_sleep_s);
    let rss_open_kib;
    let monitor;
    let mut result = match &config.data {
        Data::Labelled { records, labels } => {
            let images = DenseStore::<u8>::open_read_only(records)?;
            let labels = DenseStore::<i64>::open_read_only(labels)?;
            rss_open_kib = rss::status().vm_rss;
            monitor = Monitor::start(Duration::from_millis(2));
            match config.workers {
                None => bare_loop(config, &images, &labels, sleep)?,
                Some(workers) => loader(config, images, labels, workers, sleep)?,
            }
        }
        Data::PaddedTokens { tokens } => {
            let tokens = RaggedStore::<i32>::open_read_only(tokens)?;
            rss_open_kib = rss::status().vm_rss;
            monitor = Monitor::start(Duration::from_millis(2));
            match config.workers {
                None => bare_token_loop(config, &tokens, sleep)?,
                Some(workers) => token_loader(config, tokens, workers, sleep)?,
            }
        }
    };
    let (anon, file) = monitor.finish();
    result.rss_open_kib = rss_open_kib;
    result.vm_hwm_kib = rss::status().vm_hwm;
    result.peak_anon_kib = anon;
    result.peak_file_kib = file;
    Ok(result)
}

/// Runs `work(step)` for the warm-up and the timed steps on the calling
/// thread, sleeping after each as the consumer; the time inside `work` is
/// the gather time.
fn bare_steps(
    config: &ChildConfig,
    sleep: Duration,
    mut work: impl FnMut(u64) -> super::Result<()>,
) -> super::Result<ChildResult> {
    let mut gather = Duration::ZERO;
    let mut start = Instant::now();
    for step in 0..config.warmup + config.steps {
        if step == config.warmup {
            start = Instant::now();
            gather = Duration::ZERO;
        }
        let t = Instant::now();
        work(step)?;
        gather += t.elapsed();
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    Ok(ChildResult {
        steps: config.steps,
        wall_s,
        batches_per_s: config.steps as f64 / wall_s,
        gather_s: gather.as_secs_f64(),
        ..ChildResult::default()
    })
}

/// Builds the loader of `streams` (the workload's sampler, `workers`
/// workers) and takes the warm-up and the timed steps' batches from it,
/// calling `consume(step, batch)` on each and sleeping after it as the
/// consumer.
fn loader_steps(
    config: &ChildConfig,
    streams: LoaderBuilder<Batch>,
    workers: usize,
    sleep: Duration,
    mut consume: impl FnMut(u64, &Batch) -> super::Result<()>,
) -> super::Result<ChildResult> {
    let mut loader = streams
        .mode(Mode::Cyclic)
        .seed(SEED)
        .workers(workers)
        .prefetch(config.prefetch)
        .build()?;
    let counters = loader.counters();
    let mut start = Instant::now();
    let mut before = counters.snapshot();
    for step in 0..config.warmup + config.steps {
        if step == config.warmup {
            start = Instant::now();
            before = counters.snapshot();
        }
        let batch = loader.next_batch()?;
        consume(step, &batch)?;
        drop(batch);
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    let after = counters.snapshot();
    Ok(ChildResult {
        steps: config.steps,
        wall_s,
        batches_per_s: config.steps as f64 / wall_s,
        wait_s: (after.consumer_wait - before.consumer_wait).as_secs_f64(),
        gather_s: (after.gather_time - before.gather_time).as_secs_f64(),
        buffers_allocated: after.buffers_allocated,
        ..ChildResult::default()
    })
}

/// Fails unless the loader's batch `step` is the one a direct gather gave
/// (`expected`: indices and digest of the first batches).
fn check_batch(
    step: u64,
    expected: &[(Vec<u64>, String)],
    indices: &[u64],
    digest: impl FnOnce() -> Option<String>,
) -> super::Result<()> {
    match expected.get(step as usize) {
        Some((want, sum)) if indices != &want[..] || digest().as_ref() != Some(sum) => {
            Err(format!("the loader's batch {step} differs from a direct gather").into())
        }
        _ => Ok(()),
    }
}

/// Samples and gathers on the calling thread (zrecord's gather uses every
/// core for batches of 1 MiB and more), as a program without a loader would.
fn bare_loop(
    config: &ChildConfig,
    images: &DenseStore<u8>,
    labels: &DenseStore<i64>,
    sleep: Duration,
) -> super::Result<ChildResult> {
    let sampler = sampler(images.len())?;
    let mut indices = vec![0u64; BATCH as usize];
    let mut image_buf = vec![0u8; BATCH as usize * images.record_len()];
    let mut label_buf = vec![0i64; BATCH as usize];
    bare_steps(config, sleep, |step| {
        sampler.fill_batch(step, &mut indices);
        images.gather_into(&indices, &mut image_buf)?;
        labels.gather_into(&indices, &mut label_buf)?;
        check_labels(&label_buf, &indices)?;
        std::hint::black_box(&image_buf);
        Ok(())
    })
}

fn loader(
    config: &ChildConfig,
    images: DenseStore<u8>,
    labels: DenseStore<i64>,
    workers: usize,
    sleep: Duration,
) -> super::Result<ChildResult> {
    // A direct gather of the first batches, to check the loader's against.
    let sampler = sampler(images.len())?;
    // Kept as digests: holding the batches would count against the loader's RSS.
    let expected: Vec<(Vec<u64>, String)> = (0..2)
        .map(|step| {
            let indices = sampler.batch_at(step);
            let mut buf = vec![0u8; indices.len() * images.record_len()];
            images
                .gather_into(&indices, &mut buf)
                .map(|()| (indices, sha256_hex(&buf)))
        })
        .collect::<Result<_, _>>()?;
    let streams = Loader::builder(BATCH)
        .stream("image", images)
        .stream("label", labels);
    loader_steps(config, streams, workers, sleep, |step, batch| {
        let image = batch.dense::<u8>("image")?;
        let label = batch.dense::<i64>("label")?;
        check_labels(
            label.as_slice().ok_or("labels not contiguous")?,
            batch.indices(),
        )?;
        check_batch(step, &expected, batch.indices(), || {
            image.as_slice().map(sha256_hex)
        })?;
        std::hint::black_box(&image);
        Ok(())
    })
}

/// The sampler of every run over `records` records.
fn sampler(records: u64) -> super::Result<Sampler> {
    Ok(Sampler::builder(records, BATCH)
        .seed(SEED)
        .mode(Mode::Cyclic)
        .build()?)
}

/// A padded token batch as one digest (shape, lengths and values).
fn padded_digest(padded: &zrecord::PaddedBatch<i32>) -> String {
    let mut bytes: Vec<u8> = padded.shape.iter().flat_map(|d| d.to_le_bytes()).collect();
    bytes.extend(padded.lengths.iter().flat_map(|l| l.to_le_bytes()));
    bytes.extend(padded.values.iter().flat_map(|v| v.to_le_bytes()));
    sha256_hex(&bytes)
}

/// Samples, gathers and pads token batches on the calling thread.
fn bare_token_loop(
    config: &ChildConfig,
    tokens: &RaggedStore<i32>,
    sleep: Duration,
) -> super::Result<ChildResult> {
    let sampler = sampler(tokens.len())?;
    let padding = Padding::new(0i32);
    let mut indices = vec![0u64; BATCH as usize];
    let mut batch = RaggedBatch::<i32>::new();
    bare_steps(config, sleep, |step| {
        sampler.fill_batch(step, &mut indices);
        tokens.gather_into(&indices, &mut batch)?;
        std::hint::black_box(padding.pad(batch.values(), batch.layout())?);
        Ok(())
    })
}

/// The loader over the token store; the consumer pads each batch.
fn token_loader(
    config: &ChildConfig,
    tokens: RaggedStore<i32>,
    workers: usize,
    sleep: Duration,
) -> super::Result<ChildResult> {
    let sampler = sampler(tokens.len())?;
    let padding = Padding::new(0i32);
    let expected: Vec<(Vec<u64>, String)> = (0..2)
        .map(|step| -> super::Result<_> {
            let indices = sampler.batch_at(step);
            let batch = tokens.gather(&indices)?;
            let padded = padding.pad(batch.values(), batch.layout())?;
            Ok((indices, padded_digest(&padded)))
        })
        .collect::<super::Result<_>>()?;
    let streams = Loader::builder(BATCH).stream("tokens", tokens);
    loader_steps(config, streams, workers, sleep, |step, batch| {
        let padded = batch.padded::<i32>("tokens", 0)?;
        check_batch(step, &expected, batch.indices(), || {
            Some(padded_digest(&padded))
        })?;
        std::hint::black_box(&padded);
        Ok(())
    })
}

/// The child's entry point: parses the config, runs, prints the result line.
///
/// # Errors
/// A bad config, or any error of [`run`].
pub fn main(config_json: &str) -> super::Result<()> {
    let config: ChildConfig = serde_json::from_str(config_json)?;
    let result = run(&config)?;
    println!("{RESULT_PREFIX}{}", serde_json::to_string(&result)?);
    Ok(())
}
