//! zrecord-burn against Burn's own data loading, on MNIST.
//!
//! ```text
//! cargo bench -p zrecord-integration-benches --bench burn_loaders -- MNIST_DIR [--quick] [--rounds R] [--batches N]
//! cargo bench -p zrecord-integration-benches --features burn-sqlite --bench burn_loaders -- MNIST_DIR   # + SqliteDataset rows
//! ```
//!
//! Every system serves the 60,000 MNIST training images and labels at batch
//! 256 as the same `(images: Tensor<3>, labels: Tensor<1, Int>)` on Burn's
//! `flex` CPU backend: images `(B, 28, 28)` as the device's float type (the
//! pixel values 0–255, unscaled), labels `(B,)` as its int type.
//!
//! * **ours** — [`StoreDataLoader`] over zstd or raw stores (`u8[28][28]`
//!   images, `i64` labels): our sampler (a fresh permutation each pass), our
//!   prefetching workers, [`dense_tensor`] as the converter.
//! * **Burn** — `DataLoaderBuilder` with `shuffle` and a batcher that copies
//!   the items' pixels into one buffer and makes one tensor of it (the
//!   cheapest batcher a Burn user can write), over `InMemDataset` (workers 0
//!   and 2; once more with the batcher of Burn's MNIST example, which makes
//!   one tensor per image and concatenates them), over
//!   `SqliteDataset` (written once with Burn's `SqliteDatasetWriter`; feature
//!   `burn-sqlite`), and over our [`StoreDataset`]. Burn's `shuffle` wraps
//!   the dataset, so a shuffled Burn loader reads one item at a time with
//!   `get`; the rows "in order" leave `shuffle` off, which is the only way
//!   Burn's loader calls `get_many` (one SQL query, one zrecord gather per
//!   batch) — but then every epoch is the same order.
//!
//! Before timing, each system is checked: one epoch (or, with `--quick`, its
//! first three batches) is read back from the tensors and every
//! (image, label) pair must be an MNIST training pair, with the right shapes
//! and the same dtypes for every system. Burn's epochs must be exactly the
//! training set (60,000 pairs, a short batch at the end of each worker's share); ours are ⌊60000 / 256⌋
//! full batches of distinct records (59,904 pairs, a different 96 left out
//! each pass).
//!
//! Timing: per round and system, a fresh `iter()` (one epoch as Burn's
//! `Learner` would start it), `W` warm-up batches untimed, then `N` batches
//! timed; systems run in interleaved rounds (a rotating order) and the table
//! gives the median batches/s over rounds. The consumer does nothing with a
//! batch but drop it.

use std::collections::HashMap;
use std::error::Error;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use zrecord::{Codec, DenseStore};
use zrecord_benches::compare::machine;
use zrecord_benches::compare::measure::median;
use zrecord_burn::{Batch, StoreDataLoader, StoreDataset, Stream, dense_tensor};

type BoxError = Box<dyn Error + Send + Sync>;

/// What every loader yields.
type Out = (Tensor<3>, Tensor<1, Int>);

const BATCH: usize = 256;
const ROWS: usize = 28;
const COLS: usize = 28;
const PIXELS: usize = ROWS * COLS;
const SEED: u64 = 2024;

/// zrecord-burn against Burn's own data loading, on MNIST's training split.
#[derive(clap::Parser)]
struct Options {
    /// The folder with MNIST's IDX files (`train-images-idx3-ubyte[.gz]`,
    /// `train-labels-idx1-ubyte[.gz]`); without it, nothing runs.
    data: Option<PathBuf>,
    /// Check three batches per system and time 2 rounds of 40 batches: a smoke test.
    #[arg(long, alias = "test")]
    quick: bool,
    /// Passed by `cargo bench`.
    #[arg(long = "bench", hide = true)]
    _bench: bool,
    /// Interleaved timing rounds [default: 15, quick 2].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    rounds: Option<u16>,
    /// Batches timed per round and system [default: 200, quick 40].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    batches: Option<u16>,
}

/// The run's shape: rounds, warm-up and timed batches.
struct Plan {
    rounds: usize,
    warmup: usize,
    batches: usize,
}

impl Options {
    fn plan(&self) -> Result<Plan, String> {
        let (rounds, warmup, batches) = if self.quick {
            (2, 5, 40)
        } else {
            (15, 10, 200)
        };
        let plan = Plan {
            rounds: self.rounds.map_or(rounds, usize::from),
            warmup,
            batches: self.batches.map_or(batches, usize::from),
        };
        // One epoch is 234 full batches; warm-up and timed batches stay in one.
        let epoch = 60_000 / BATCH;
        if plan.warmup + plan.batches > epoch {
            return Err(format!(
                "--batches at most {} (one epoch, after {} warm-up batches)",
                epoch - plan.warmup,
                plan.warmup
            ));
        }
        Ok(plan)
    }
}

// ---------------------------------------------------------------- MNIST

/// MNIST's training split: images row-major, labels.
struct Mnist {
    images: Vec<u8>,
    labels: Vec<u8>,
}

impl Mnist {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn image(&self, i: usize) -> &[u8] {
        &self.images[i * PIXELS..(i + 1) * PIXELS]
    }
}

/// A `u8` IDX file's dimensions and elements.
fn read_idx_u8(path: &Path) -> Result<(Vec<usize>, Vec<u8>), BoxError> {
    Ok(zrecord::idx::open(path)?.read_as::<u8>()?)
}

/// The training split of `dir`, or why it cannot be read (`Ok(Err)` when
/// the files are simply not there).
fn load_mnist(dir: &Path) -> Result<Result<Mnist, String>, BoxError> {
    let (Some(images), Some(labels)) = (
        zrecord::idx::find(dir, "train-images-idx3-ubyte"),
        zrecord::idx::find(dir, "train-labels-idx1-ubyte"),
    ) else {
        return Ok(Err(format!(
            "{} has no train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz]",
            dir.display()
        )));
    };
    let (image_dims, images) = read_idx_u8(&images)?;
    let (label_dims, labels) = read_idx_u8(&labels)?;
    if image_dims.get(1..) != Some(&[ROWS, COLS][..]) || label_dims != image_dims[..1] {
        return Err(
            format!("images {image_dims:?} and labels {label_dims:?} are not MNIST").into(),
        );
    }
    Ok(Ok(Mnist { images, labels }))
}

// ---------------------------------------------------------------- Burn side

/// One MNIST item as a Burn user keeps it (`serde_bytes` makes the SQLite
/// blob a msgpack `bin`, the cheap encoding Burn's docs recommend).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct MnistItem {
    #[cfg_attr(feature = "burn-sqlite", serde(with = "serde_bytes"))]
    image: Vec<u8>,
    label: u8,
}

/// Items → `(images, labels)`: the pixels copied into one buffer, one
/// tensor made of it (Burn casts `u8` to the float type), labels as `i64`.
#[derive(Clone, Copy)]
struct MnistBatcher;

impl Batcher<MnistItem, Out> for MnistBatcher {
    fn batch(&self, items: Vec<MnistItem>, device: &Device) -> Out {
        let n = items.len();
        let mut pixels = Vec::with_capacity(n * PIXELS);
        let mut labels = Vec::with_capacity(n);
        for item in &items {
            pixels.extend_from_slice(&item.image);
            labels.push(i64::from(item.label));
        }
        (
            Tensor::from_data(TensorData::new(pixels, [n, ROWS, COLS]), device),
            Tensor::from_data(TensorData::new(labels, [n]), device),
        )
    }
}

/// Items → `(images, labels)` the way Burn's MNIST example batches: one
/// tensor per item, concatenated (without the example's normalisation, so
/// that every system yields the same values).
#[derive(Clone, Copy)]
struct PerItemBatcher;

impl Batcher<MnistItem, Out> for PerItemBatcher {
    fn batch(&self, items: Vec<MnistItem>, device: &Device) -> Out {
        let images = items
            .iter()
            .map(|item| {
                Tensor::<3>::from_data(TensorData::new(item.image.clone(), [1, ROWS, COLS]), device)
            })
            .collect();
        let labels = items
            .iter()
            .map(|item| {
                Tensor::<1, Int>::from_data(
                    TensorData::new(vec![i64::from(item.label)], [1]),
                    device,
                )
            })
            .collect();
        (Tensor::cat(images, 0), Tensor::cat(labels, 0))
    }
}

fn burn_loader<D>(dataset: D, workers: usize, shuffle: bool, device: &Device) -> Loader
where
    D: burn::data::dataset::Dataset<MnistItem> + 'static,
{
    burn_loader_with(MnistBatcher, dataset, workers, shuffle, device)
}

fn burn_loader_with<B, D>(
    batcher: B,
    dataset: D,
    workers: usize,
    shuffle: bool,
    device: &Device,
) -> Loader
where
    B: Batcher<MnistItem, Out> + 'static,
    D: burn::data::dataset::Dataset<MnistItem> + 'static,
{
    let mut builder = DataLoaderBuilder::new(batcher)
        .batch_size(BATCH)
        .num_workers(workers)
        .set_device(device.clone());
    if shuffle {
        builder = builder.shuffle(SEED);
    }
    builder.build(dataset)
}

#[cfg(feature = "burn-sqlite")]
mod sqlite {
    //! Burn's `SqliteDataset`, written with Burn's writer, as a `Dataset<I>`.

    use std::path::Path;

    use burn::data::dataset::{
        Dataset, DatasetError, SqliteDataset, SqliteDatasetError, SqliteDatasetWriter,
    };

    use super::{Mnist, MnistItem};

    /// `SqliteDataset` implements `Dataset<I, SqliteDatasetError>`; Burn's
    /// loader wants `Dataset<I>`.
    pub(super) struct Sqlite(SqliteDataset<MnistItem>);

    impl Dataset<MnistItem> for Sqlite {
        fn get(&self, index: usize) -> Result<MnistItem, DatasetError> {
            self.0.get(index).map_err(DatasetError::new)
        }

        fn get_many(&self, indexes: Vec<usize>) -> Result<Vec<MnistItem>, DatasetError> {
            self.0.get_many(indexes).map_err(DatasetError::new)
        }

        fn len(&self) -> usize {
            self.0.len()
        }
    }

    /// Writes the training split to `db` (split `train`) and opens it.
    pub(super) fn write(mnist: &Mnist, db: &Path) -> Result<Sqlite, SqliteDatasetError> {
        let mut writer = SqliteDatasetWriter::<MnistItem>::new(db, true)?;
        for i in 0..mnist.len() {
            writer.write(
                "train",
                &MnistItem {
                    image: mnist.image(i).to_vec(),
                    label: mnist.labels[i],
                },
            )?;
        }
        writer.set_completed()?;
        Ok(Sqlite(SqliteDataset::from_db_file(db, "train")?))
    }
}

// ---------------------------------------------------------------- ours

/// A loader batch → `(images, labels)`, moved into tensors without a copy
/// (Burn casts the `u8` pixels to the float type once, as for the others).
fn to_tensors(mut batch: Batch, device: &Device) -> zrecord_burn::Result<Out> {
    let images: Tensor<3> = dense_tensor(&mut batch, "image", device)?;
    let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
    Ok((images, labels))
}

fn store_loader(
    image: &Stream,
    label: &Stream,
    workers: usize,
    device: &Device,
) -> Result<Loader, BoxError> {
    let loader = StoreDataLoader::builder(BATCH as u64)
        .stream("image", image.clone())
        .stream("label", label.clone())
        .seed(SEED)
        .workers(workers)
        .build(device, to_tensors)?;
    Ok(Arc::new(loader))
}

fn store_dataset(image: &Stream, label: &Stream) -> Result<StoreDataset<MnistItem>, BoxError> {
    Ok(StoreDataset::builder()
        .stream("image", image.clone())
        .stream("label", label.clone())
        .build(|record| {
            let label = record.dense_slice::<i64>("label")?[0];
            Ok(MnistItem {
                image: record.dense_slice::<u8>("image")?.to_vec(),
                label: u8::try_from(label)
                    .map_err(|_| zrecord_burn::Error::InvalidArgument(format!("label {label}")))?,
            })
        })?)
}

// ---------------------------------------------------------------- harness

type Loader = Arc<dyn DataLoader<Out>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    /// Our DataLoader.
    Ours,
    /// Burn's loader over Burn's datasets.
    BurnNative,
    /// Burn's loader over our Dataset.
    BurnOverOurs,
}

struct System {
    name: String,
    group: Group,
    shuffled: bool,
    loader: Loader,
    rates: Vec<f64>,
}

/// `(image, label)` pairs by content: a hash of both → how many times.
type PairCounts = HashMap<u64, u32>;

fn pair_key(image: &[u8], label: i64) -> u64 {
    let mut h = DefaultHasher::new();
    image.hash(&mut h);
    label.hash(&mut h);
    h.finish()
}

/// What the check of one system saw.
struct Checked {
    batches: usize,
    pairs: usize,
    dtypes: (DType, DType),
    exact: bool,
}

/// Reads `limit` batches (or a whole epoch) back from the tensors; checks
/// shapes, dtypes and that every pair is an MNIST pair (no more often than
/// in MNIST). `exact` tells whether the epoch was exactly the training set.
fn check(
    system: &System,
    reference: &PairCounts,
    limit: Option<usize>,
) -> Result<Checked, BoxError> {
    let mut seen = PairCounts::new();
    let mut dtypes = None;
    let (mut batches, mut pairs) = (0, 0);
    for batch in system.loader.iter().take(limit.unwrap_or(usize::MAX)) {
        let (images, labels) = batch?;
        let [n, h, w] = images.dims();
        // Ours yields full batches only; Burn's loader ends each worker's
        // share of an epoch with a short batch, wherever it falls.
        let full = system.group != Group::Ours || n == BATCH;
        if !full || [h, w] != [ROWS, COLS] || labels.dims() != [n] || n == 0 || n > BATCH {
            return Err(format!(
                "{}: batch {batches} has images {:?}, labels {:?}",
                system.name,
                images.dims(),
                labels.dims()
            )
            .into());
        }
        let these = (images.dtype(), labels.dtype());
        if *dtypes.get_or_insert(these) != these {
            return Err(format!("{}: dtypes change between batches", system.name).into());
        }
        let pixels = images.into_data().try_into_vec_as::<f32>()?;
        let labels = labels.into_data().try_into_vec_as::<i64>()?;
        let mut image = [0u8; PIXELS];
        for (values, &label) in pixels.chunks_exact(PIXELS).zip(&labels) {
            for (byte, &v) in image.iter_mut().zip(values) {
                if !(0.0..=255.0).contains(&v) || v.fract() != 0.0 {
                    return Err(format!("{}: pixel value {v}", system.name).into());
                }
                *byte = v as u8;
            }
            let key = pair_key(&image, label);
            let count = seen.entry(key).or_insert(0);
            *count += 1;
            if *count > reference.get(&key).copied().unwrap_or(0) {
                return Err(format!(
                    "{}: batch {batches} holds an (image, label) pair that is not MNIST's \
                     (or more often than in MNIST)",
                    system.name
                )
                .into());
            }
        }
        batches += 1;
        pairs += n;
    }
    Ok(Checked {
        batches,
        pairs,
        dtypes: dtypes.ok_or_else(|| format!("{}: no batch", system.name))?,
        exact: seen == *reference,
    })
}

/// One timed run: a fresh epoch, `warmup` batches, then `batches` timed.
fn time(loader: &Loader, warmup: usize, batches: usize) -> Result<f64, BoxError> {
    let mut epoch = loader.iter();
    let mut next = || -> Result<Out, BoxError> {
        Ok(epoch
            .next()
            .ok_or("the epoch ended before the timed batches")??)
    };
    for _ in 0..warmup {
        std::hint::black_box(next()?);
    }
    let start = Instant::now();
    for _ in 0..batches {
        std::hint::black_box(next()?);
    }
    Ok(batches as f64 / start.elapsed().as_secs_f64())
}

fn load_average() -> String {
    machine::load_average().unwrap_or_else(|| "unknown".into())
}

fn main() -> Result<(), BoxError> {
    let options = <Options as clap::Parser>::parse();
    let plan = options.plan()?;
    let Some(data) = &options.data else {
        println!(
            "burn_loaders: skipped, pass the folder with MNIST's IDX files (see the README's \"Burn\")."
        );
        return Ok(());
    };
    let mnist = match load_mnist(data)? {
        Ok(mnist) => mnist,
        Err(why) => {
            println!(
                "burn_loaders: skipped, no MNIST: {why}.\n\
                 Pass the folder with the IDX files (where to get them: the README's \"Burn\")."
            );
            return Ok(());
        }
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load_start = load_average();
    println!(
        "# Burn data loaders on MNIST train ({} images), batch {BATCH}, Burn flex backend\n\n\
         {cores} cores; load average at start {load_start}; {} rounds × ({} warm-up + {} timed batches)",
        mnist.len(),
        plan.rounds,
        plan.warmup,
        plan.batches
    );

    let device = Device::flex();
    let dir = tempfile::tempdir()?;
    let t = Instant::now();
    let labels_i64: Vec<i64> = mnist.labels.iter().map(|&l| i64::from(l)).collect();
    let mut streams = Vec::new();
    for (name, codec) in [("zstd", Codec::Zstd), ("raw", Codec::Raw)] {
        let images = DenseStore::<u8>::create(
            dir.path().join(format!("{name}-images")),
            &[ROWS, COLS],
            codec,
        )?;
        images.append(&mnist.images)?;
        let labels =
            DenseStore::<i64>::create(dir.path().join(format!("{name}-labels")), &[], Codec::Raw)?;
        labels.append(&labels_i64)?;
        streams.push((name, Stream::from(images), Stream::from(labels)));
    }
    println!("stores written in {:.1} s", t.elapsed().as_secs_f64());
    let items: Vec<MnistItem> = (0..mnist.len())
        .map(|i| MnistItem {
            image: mnist.image(i).to_vec(),
            label: mnist.labels[i],
        })
        .collect();

    let mut systems = Vec::new();
    let mut add = |name: String, group, shuffled, loader| {
        systems.push(System {
            name,
            group,
            shuffled,
            loader,
            rates: Vec::new(),
        });
    };
    for (codec, image, label) in &streams {
        for (workers, note) in [(2, " (default)"), (1, "")] {
            add(
                format!(
                    "StoreDataLoader, {codec} stores, {workers} worker{}{note}",
                    if workers == 1 { "" } else { "s" }
                ),
                Group::Ours,
                true,
                store_loader(image, label, workers, &device)?,
            );
        }
    }
    for workers in [0, 2] {
        add(
            format!("DataLoaderBuilder + InMemDataset, shuffle, workers {workers}"),
            Group::BurnNative,
            true,
            burn_loader(InMemDataset::new(items.clone()), workers, true, &device),
        );
    }
    add(
        "DataLoaderBuilder + InMemDataset, shuffle, workers 2, a tensor per item + cat (Burn's MNIST example)".into(),
        Group::BurnNative,
        true,
        burn_loader_with(PerItemBatcher, InMemDataset::new(items.clone()), 2, true, &device),
    );
    #[cfg(feature = "burn-sqlite")]
    {
        let t = Instant::now();
        let db = dir.path().join("mnist.db");
        let sqlite = Arc::new(sqlite::write(&mnist, &db)?);
        println!(
            "SqliteDataset written with Burn's SqliteDatasetWriter in {:.1} s ({:.1} MB)",
            t.elapsed().as_secs_f64(),
            std::fs::metadata(&db)?.len() as f64 / 1e6
        );
        for workers in [0, 2] {
            add(
                format!("DataLoaderBuilder + SqliteDataset, shuffle, workers {workers}"),
                Group::BurnNative,
                true,
                burn_loader(Arc::clone(&sqlite), workers, true, &device),
            );
        }
        add(
            "DataLoaderBuilder + SqliteDataset, in order (get_many), workers 2".into(),
            Group::BurnNative,
            false,
            burn_loader(Arc::clone(&sqlite), 2, false, &device),
        );
    }
    #[cfg(not(feature = "burn-sqlite"))]
    println!("SqliteDataset rows: not built (run with --features burn-sqlite)");
    if let Some((codec, image, label)) = streams.first() {
        let dataset = store_dataset(image, label)?;
        add(
            format!("DataLoaderBuilder + StoreDataset ({codec}), shuffle, workers 2"),
            Group::BurnOverOurs,
            true,
            burn_loader(dataset.clone(), 2, true, &device),
        );
        add(
            format!("DataLoaderBuilder + StoreDataset ({codec}), in order (get_many), workers 2"),
            Group::BurnOverOurs,
            false,
            burn_loader(dataset, 2, false, &device),
        );
    }
    drop(items);

    // ---- check
    let mut reference = PairCounts::new();
    for i in 0..mnist.len() {
        *reference
            .entry(pair_key(mnist.image(i), i64::from(mnist.labels[i])))
            .or_insert(0) += 1;
    }
    let limit = options.quick.then_some(3);
    println!(
        "\nchecking {} (image, label) pairs of every system against MNIST:",
        if options.quick {
            "the first 3 batches' "
        } else {
            "one epoch's"
        }
    );
    let mut dtypes = None;
    for system in &systems {
        let t = Instant::now();
        let c = check(system, &reference, limit)?;
        if *dtypes.get_or_insert(c.dtypes) != c.dtypes {
            return Err(format!(
                "{}: dtypes {:?} differ from the others'",
                system.name, c.dtypes
            )
            .into());
        }
        let epoch = if limit.is_some() {
            "pairs valid".to_string()
        } else if system.group == Group::Ours {
            // ⌊N / B⌋ full batches of distinct records.
            if c.pairs != mnist.len() / BATCH * BATCH || c.batches != mnist.len() / BATCH {
                return Err(format!("{}: an epoch of {} pairs", system.name, c.pairs).into());
            }
            format!("{} distinct training pairs", c.pairs)
        } else {
            if !c.exact {
                return Err(format!("{}: the epoch is not the training set", system.name).into());
            }
            "exactly the training set".to_string()
        };
        println!(
            "  ok  {}: {} batches, {epoch}, images {:?}, labels {:?} ({:.1} s)",
            system.name,
            c.batches,
            c.dtypes.0,
            c.dtypes.1,
            t.elapsed().as_secs_f64()
        );
    }

    // ---- time
    let n = systems.len();
    for round in 0..plan.rounds {
        for k in 0..n {
            let system = &mut systems[(k + round) % n];
            let rate = time(&system.loader, plan.warmup, plan.batches)?;
            system.rates.push(rate);
        }
        eprintln!("round {}/{} done", round + 1, plan.rounds);
    }

    let fastest = |pred: &dyn Fn(&System) -> bool| {
        systems
            .iter()
            .filter(|s| pred(s))
            .map(|s| (median(&s.rates), s.name.as_str()))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let burn_shuffled = fastest(&|s| s.group == Group::BurnNative && s.shuffled);
    let burn_any = fastest(&|s| s.group == Group::BurnNative);
    let reference_rate = burn_shuffled.map_or(f64::NAN, |b| b.0);

    println!(
        "\n| system | path | shuffled | batches/s (median) | min – max | × fastest shuffled Burn-native |"
    );
    println!("|---|---|---|---:|---:|---:|");
    for s in &systems {
        let m = median(&s.rates);
        let (lo, hi) = s
            .rates
            .iter()
            .fold((f64::INFINITY, 0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        let path = match s.group {
            Group::Ours => "ours",
            Group::BurnNative => "Burn-native",
            Group::BurnOverOurs => "Burn over ours",
        };
        let name = if s.group == Group::Ours {
            format!("**{}**", s.name)
        } else {
            s.name.clone()
        };
        println!(
            "| {name} | {path} | {} | {m:.1} | {lo:.1} – {hi:.1} | {:.2}× |",
            if s.shuffled { "yes" } else { "no" },
            m / reference_rate
        );
    }
    let ours_default = systems
        .iter()
        .find(|s| s.group == Group::Ours)
        .map_or(f64::NAN, |s| median(&s.rates));
    let ours_best = fastest(&|s| s.group == Group::Ours);
    println!();
    if let Some((rate, name)) = burn_shuffled {
        println!("fastest shuffled Burn-native path: {name} ({rate:.1} batches/s)");
        println!(
            "ours (zstd, default workers) / it: {:.2}×; best of ours ({}) / it: {:.2}× — target ≥ 3×: {}",
            ours_default / rate,
            ours_best.map_or("-", |b| b.1),
            ours_best.map_or(f64::NAN, |b| b.0) / rate,
            if ours_default / rate >= 3.0 {
                "reached"
            } else {
                "not reached"
            }
        );
    }
    if let Some((rate, name)) = burn_any.filter(|b| b.0 > reference_rate) {
        println!(
            "fastest Burn-native path of all (unshuffled): {name} ({rate:.1} batches/s); ours (zstd, default) / it: {:.2}×",
            ours_default / rate
        );
    }
    println!("load average at the end: {}", load_average());
    Ok(())
}
