//! Data-parallel training with Burn from zrecord stores: N ranks, one model,
//! gradients averaged across the ranks after every backward pass.
//!
//! zrecord's part of data parallelism is the data: built with
//! `.shard(rank, world)` over the same stores and seed, rank `r`'s loader
//! serves positions `⌊r·B/world⌋ .. ⌊(r+1)·B/world⌋` of every global batch of
//! `B`, so the ranks together see exactly the batches one rank would. The
//! other part is the training framework's: after each backward pass every
//! rank must replace its gradient by the gradient of the loss over the whole
//! global batch, then take the same optimizer step. Without that the ranks
//! train N different models, each on a fraction of the data.
//!
//! Here each rank is a thread with its own model replica, optimizer and
//! sharded `StoreDataLoader`. After `backward`, each rank flattens its
//! gradients, weighted by its record count, into one buffer; a small
//! all-reduce written with a `Mutex` and a `Condvar` ([`AllReduce`]) adds
//! the ranks' buffers in rank order and hands every rank the same sum;
//! dividing by the global batch's record count gives the gradient of the
//! mean loss over the global batch, also when the shards are unequal (a
//! batch of 32 on 3 ranks is 10 + 11 + 11 records). Every rank then steps
//! with identical gradients, so the replicas stay identical. The same buffer
//! carries the loss and accuracy counts, so every rank knows the global
//! batch's metrics.
//!
//! At the end the example trains a single-rank model on the same global
//! batches from the same initial weights and prints the largest difference
//! between the ranks' parameters (0: the replicas are bit-identical) and
//! between the data-parallel and the single-rank model (float rounding
//! only: the loss is summed in another order). `--no-average` skips the
//! averaging to show what goes wrong without it.
//!
//! ```text
//! cargo run --release --example burn_data_parallel -- [--ranks 2] [--epochs 10] [--batch 32] [--steps-per-epoch N] [--seed S] [--no-average] [--stores DIR]
//! ```
//!
//! **Why threads.** Burn 0.22's collective (`DistributedOps::all_reduce`,
//! behind `ExecutionStrategy::ddp`) runs only on CUDA, through NCCL. Flex,
//! NdArray and LibTorch keep its `unimplemented!()` default, Burn's dispatch
//! panics on a Flex device ("Distributed operations are not supported"),
//! cubecl's CPU runtime has no transport between devices, and no Burn 0.22
//! crate offers a CPU or network all-reduce. So the example brings its own,
//! and threads let it run anywhere without a network setup. On CUDA devices,
//! Burn's DDP averages the gradients itself.
//!
//! **As N processes.** The rank code does not change: each process takes its
//! rank from the launcher (`zrecord_loader::Launcher::from_env()`, which
//! reads `RANK` and `WORLD_SIZE`), builds its loader with
//! `.shard(rank, world)`, and starts from the same weights (seed the device
//! the same way in every process, or have rank 0 save its initial record and
//! the others load it). Only [`AllReduce::sum`] becomes a network call with
//! the same contract — a buffer in, the sum added in rank order out,
//! identical on every rank: for instance every rank connects to rank 0 over
//! TCP (at `MASTER_ADDR:MASTER_PORT`), sends its buffer, and rank 0 adds
//! them in rank order and sends the sum back; or each rank writes its buffer
//! to a shared folder and reads the others'.
//!
//! This file is self-contained: copy it into a crate of your own along with
//! the dependencies the README's Burn section lists.

use std::error::Error;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor, TensorData};
use zrecord::{Codec, DenseStore};
use zrecord_burn::{Batch, EpochMode, Mode, StoreDataLoader, Stream, dense_tensor};

/// Errors cross the rank threads, so they are `Send`.
type BoxError = Box<dyn Error + Send + Sync>;

/// What a rank returns when another rank failed first.
const ABORTED: &str = "stopped: another rank failed";

/// The peak learning rate of the cosine schedule.
const LEARNING_RATE: f64 = 3e-3;

/// Command-line options.
#[derive(Clone, Debug)]
struct Options {
    ranks: usize,
    epochs: usize,
    batch: u64,
    steps_per_epoch: Option<u64>,
    /// Seeds both the model's initial weights and the sampler.
    seed: u64,
    /// Whether the ranks average their gradients (`--no-average` turns it
    /// off, to show the replicas drifting apart).
    average: bool,
    stores: PathBuf,
    /// Whether rank 0 prints a line per epoch.
    print: bool,
}

fn options() -> Result<Options, String> {
    let usage = "usage: burn_data_parallel [--ranks N] [--epochs N] [--batch B] \
                 [--steps-per-epoch N] [--seed S] [--no-average] [--stores DIR]";
    let mut options = Options {
        ranks: 2,
        epochs: 10,
        batch: 32,
        steps_per_epoch: None,
        seed: 7,
        average: true,
        stores: std::env::temp_dir().join("zrecord-burn-data-parallel"),
        print: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{usage}"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{arg}: {e}\n{usage}"));
        match arg.as_str() {
            "--ranks" => options.ranks = number(value(&arg)?)? as usize,
            "--epochs" => options.epochs = number(value(&arg)?)? as usize,
            "--batch" => options.batch = number(value(&arg)?)?,
            "--steps-per-epoch" => options.steps_per_epoch = Some(number(value(&arg)?)?),
            "--seed" => options.seed = number(value(&arg)?)?,
            "--no-average" => options.average = false,
            "--stores" => options.stores = value(&arg)?.into(),
            "-h" | "--help" => return Err(usage.into()),
            _ => return Err(format!("unexpected argument {arg:?}\n{usage}")),
        }
    }
    if options.ranks == 0 || options.ranks as u64 > options.batch {
        return Err(format!(
            "--ranks must be 1 to the batch size: every rank takes a share of every batch\n{usage}"
        ));
    }
    Ok(options)
}

// ---------------------------------------------------------------------------
// The data: the scikit-learn digits, as in the quickstart.

/// Every fifth digit is held out for testing.
fn is_test(index: usize) -> bool {
    index.is_multiple_of(5)
}

/// Reads `digits.csv.gz` — rows of 64 pixels (0–16) and a label, no header —
/// into pixels scaled to 0.0..=1.0 and labels.
fn read_digits(path: &Path) -> Result<(Vec<f32>, Vec<i64>), BoxError> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text)?;
    let (mut pixels, mut labels) = (Vec::new(), Vec::new());
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let values: Vec<u8> = line
            .split(',')
            .map(|v| v.trim().parse())
            .collect::<Result<_, _>>()?;
        match values.split_last() {
            Some((&label, row)) if row.len() == 64 && label <= 9 => {
                pixels.extend(row.iter().map(|&p| f32::from(p) / 16.0));
                labels.push(i64::from(label));
            }
            _ => {
                return Err(format!(
                    "{} line {}: expected 64 pixels and a label",
                    path.display(),
                    n + 1
                )
                .into());
            }
        }
    }
    Ok((pixels, labels))
}

/// One split's streams: images (64 `f32` pixels a record) and labels.
#[derive(Clone)]
struct Split {
    images: Stream,
    labels: Stream,
    len: u64,
}

/// Writes one split into an image store and a label store under `dir`.
fn write_split(dir: &Path, pixels: &[f32], labels: &[i64], test: bool) -> Result<Split, BoxError> {
    let keep = |k: &usize| is_test(*k) == test;
    let images = DenseStore::<f32>::create(dir.join("images"), &[64], Codec::Zstd)?;
    let split: Vec<f32> = pixels
        .chunks(64)
        .enumerate()
        .filter(|(k, _)| keep(k))
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    images.append(&split)?;
    let label_store = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw)?;
    let split: Vec<i64> = labels
        .iter()
        .enumerate()
        .filter(|(k, _)| keep(k))
        .map(|(_, &l)| l)
        .collect();
    label_store.append(&split)?;
    Ok(Split {
        len: label_store.len(),
        images: images.into(),
        labels: label_store.into(),
    })
}

/// The training and test splits, written fresh under `dir`.
struct Data {
    train: Split,
    test: Split,
}

impl Data {
    fn write(dir: &Path) -> Result<Data, BoxError> {
        let _ = std::fs::remove_dir_all(dir); // start fresh
        let digits = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits.csv.gz");
        let (pixels, labels) = read_digits(&digits)?;
        Ok(Data {
            train: write_split(&dir.join("train"), &pixels, &labels, false)?,
            test: write_split(&dir.join("test"), &pixels, &labels, true)?,
        })
    }
}

/// A batch of flattened images and their class labels.
#[derive(Clone, Debug)]
struct ImageBatch {
    /// `(B, 64)`.
    images: Tensor<2>,
    /// `(B,)`.
    labels: Tensor<1, Int>,
}

/// A loader batch → the model's input, on the loader's worker threads.
fn to_model_input(mut batch: Batch, device: &Device) -> zrecord_burn::Result<ImageBatch> {
    let images: Tensor<2> = dense_tensor(&mut batch, "image", device)?;
    let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
    Ok(ImageBatch { images, labels })
}

// ---------------------------------------------------------------------------
// The model.

/// A perceptron with one hidden layer: 64 pixels → 256 → 10 classes.
#[derive(Module, Debug)]
struct Mlp {
    hidden: Linear,
    output: Linear,
}

impl Mlp {
    fn new(device: &Device) -> Mlp {
        Mlp {
            hidden: LinearConfig::new(64, 256).init(device),
            output: LinearConfig::new(256, 10).init(device),
        }
    }

    /// Class logits `(B, 10)`.
    fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        self.output.forward(relu(self.hidden.forward(images)))
    }
}

/// Correct predictions among `logits` for `labels`.
fn correct(logits: Tensor<2>, labels: Tensor<1, Int>) -> i64 {
    let predicted = logits.argmax(1).flatten::<1>(0, 1);
    predicted.equal(labels).int().sum().into_scalar::<i64>()
}

/// Correct predictions and images over one epoch of `loader`.
fn score(model: &Mlp, loader: &dyn DataLoader<ImageBatch>) -> Result<(i64, usize), BoxError> {
    let (mut right, mut total) = (0, 0);
    for batch in loader.iter() {
        let batch = batch?;
        total += batch.labels.dims()[0];
        right += correct(model.forward(batch.images), batch.labels);
    }
    Ok((right, total))
}

// ---------------------------------------------------------------------------
// The all-reduce.

/// Sums equal-length buffers across the ranks of this process: every rank
/// calls [`sum`](Self::sum) with its buffer and gets back the same sum.
///
/// The last rank to arrive adds the buffers in rank order (in `f64`), so the
/// sum does not depend on which rank that is: every rank, and every run,
/// gets the same bits. A rank that fails calls [`abort`](Self::abort), which
/// releases the others with an error instead of leaving them waiting.
struct AllReduce {
    world: usize,
    state: Mutex<ReduceState>,
    done: Condvar,
}

struct ReduceState {
    /// Each rank's buffer for the round in progress.
    slots: Vec<Option<Vec<f32>>>,
    arrived: usize,
    /// Rounds completed: a waiting rank's round is over when this moves on.
    round: u64,
    /// The last completed round's sum. No later round can complete, and
    /// replace it, before every rank has read it: a round needs everyone's
    /// buffer.
    sum: Arc<[f32]>,
    failed: bool,
}

impl AllReduce {
    fn new(world: usize) -> AllReduce {
        AllReduce {
            world,
            state: Mutex::new(ReduceState {
                slots: vec![None; world],
                arrived: 0,
                round: 0,
                sum: Arc::from(Vec::new()),
                failed: false,
            }),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ReduceState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `values` to the other ranks' buffers of this round; returns the
    /// sum once every rank has given its buffer.
    fn sum(&self, rank: usize, values: Vec<f32>) -> Result<Arc<[f32]>, BoxError> {
        let mut state = self.lock();
        if state.failed {
            return Err(ABORTED.into());
        }
        let round = state.round;
        state.slots[rank] = Some(values);
        state.arrived += 1;
        if state.arrived == self.world {
            let slots: Vec<Vec<f32>> = state.slots.iter_mut().filter_map(Option::take).collect();
            let len = slots.first().map_or(0, Vec::len);
            if slots.len() != self.world || slots.iter().any(|s| s.len() != len) {
                state.failed = true;
                self.done.notify_all();
                return Err("the ranks' buffers differ in length".into());
            }
            let mut sum = vec![0f64; len];
            for slot in &slots {
                for (total, &value) in sum.iter_mut().zip(slot) {
                    *total += f64::from(value);
                }
            }
            state.sum = sum.into_iter().map(|v| v as f32).collect();
            state.arrived = 0;
            state.round += 1;
            self.done.notify_all();
        }
        while state.round == round && !state.failed {
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.round == round {
            return Err(ABORTED.into());
        }
        Ok(Arc::clone(&state.sum))
    }

    /// Releases every rank waiting now or later with an error.
    fn abort(&self) {
        self.lock().failed = true;
        self.done.notify_all();
    }
}

/// Aborts the all-reduce if its rank's thread panics, so that the other
/// ranks return instead of waiting for it forever.
struct AbortOnPanic<'a>(&'a AllReduce);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}

// ---------------------------------------------------------------------------
// Gradients to a flat buffer and back, parameter by parameter (`ParamId`).

/// Appends `scale ×` every float parameter's gradient to `out`, in the
/// module's visiting order — the same on every rank, since every replica has
/// the same structure. A parameter without a gradient adds zeros, so that
/// the buffers still line up.
struct FlattenGradients<'a> {
    grads: &'a GradientsParams,
    scale: f32,
    out: Vec<f32>,
    error: Option<String>,
}

impl ModuleVisitor for FlattenGradients<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        match self.grads.get::<D>(param.id) {
            Some(grad) => match grad.into_data().try_into_vec::<f32>() {
                Ok(values) => self.out.extend(values.into_iter().map(|g| g * self.scale)),
                Err(e) => {
                    self.error
                        .get_or_insert(format!("gradient {}: {e}", param.id));
                }
            },
            None => {
                let len = param.val().dims().iter().product::<usize>();
                self.out.extend(std::iter::repeat_n(0.0, len));
            }
        }
    }
}

/// Replaces every gradient in `grads` by its slice of `sum` divided by
/// `divisor`, walking the parameters in the order [`FlattenGradients`] did.
/// A parameter without a gradient keeps none, as a single rank's step would.
struct UnflattenGradients<'a> {
    grads: &'a mut GradientsParams,
    sum: &'a [f32],
    divisor: f32,
    at: usize,
    error: Option<String>,
}

impl ModuleVisitor for UnflattenGradients<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let len = param.val().dims().iter().product::<usize>();
        let Some(values) = self.sum.get(self.at..self.at + len) else {
            self.error
                .get_or_insert(format!("gradient {}: the sum is short", param.id));
            return;
        };
        self.at += len;
        if let Some(local) = self.grads.remove::<D>(param.id) {
            let mean: Vec<f32> = values.iter().map(|v| v / self.divisor).collect();
            let mean = Tensor::<D>::from_data(TensorData::new(mean, local.dims()), &local.device());
            self.grads.register(param.id, mean);
        }
    }
}

/// Every float parameter's values, in visiting order.
struct ParamValues {
    out: Vec<f32>,
    error: Option<String>,
}

impl ModuleVisitor for ParamValues {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        match param.val().into_data().try_into_vec::<f32>() {
            Ok(values) => self.out.extend(values),
            Err(e) => {
                self.error
                    .get_or_insert(format!("parameter {}: {e}", param.id));
            }
        }
    }
}

/// The model's parameters as one flat vector.
fn parameters(model: &Mlp) -> Result<Vec<f32>, BoxError> {
    let mut visitor = ParamValues {
        out: Vec::new(),
        error: None,
    };
    model.visit(&mut visitor);
    match visitor.error {
        Some(e) => Err(e.into()),
        None => Ok(visitor.out),
    }
}

/// The largest absolute difference between two equally long vectors.
fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

// ---------------------------------------------------------------------------
// Training.

/// What a training run left: each rank's final parameters and rank 0's model.
struct Trained {
    /// Each rank's parameters, flattened, in rank order.
    replicas: Vec<Vec<f32>>,
    model: Mlp,
}

/// Trains `initial` on `options.ranks` threads, each a data-parallel rank.
fn train(options: &Options, initial: &Mlp, data: &Data) -> Result<Trained, BoxError> {
    let reduce = AllReduce::new(options.ranks);
    let results: Vec<Result<Mlp, BoxError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..options.ranks)
            .map(|rank| {
                let reduce = &reduce;
                scope.spawn(move || {
                    let _guard = AbortOnPanic(reduce);
                    let result = run_rank(rank, options, initial, data, reduce);
                    if result.is_err() {
                        reduce.abort();
                    }
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(rank, h)| {
                h.join()
                    .unwrap_or_else(|_| Err(format!("rank {rank} panicked").into()))
            })
            .collect()
    });
    // Report the error that stopped the run, not the ranks it stopped.
    let mut models = Vec::new();
    let mut aborted = None;
    for result in results {
        match result {
            Ok(model) => models.push(model),
            Err(e) if e.to_string() == ABORTED => aborted = Some(e),
            Err(e) => return Err(e),
        }
    }
    if let Some(e) = aborted {
        return Err(e);
    }
    let replicas = models.iter().map(parameters).collect::<Result<_, _>>()?;
    let model = models.into_iter().next().ok_or("no rank ran")?;
    Ok(Trained { replicas, model })
}

/// One rank's training loop: its own replica, optimizer and loaders.
fn run_rank(
    rank: usize,
    options: &Options,
    initial: &Mlp,
    data: &Data,
    reduce: &AllReduce,
) -> Result<Mlp, BoxError> {
    let world = options.ranks;
    let device = Device::flex();
    let autodiff = device.clone().autodiff();
    // The same stores and seed on every rank; `shard` gives each its part of
    // every global batch. The digits are small: one worker thread a rank.
    let mut train = StoreDataLoader::builder(options.batch)
        .stream("image", data.train.images.clone())
        .stream("label", data.train.labels.clone())
        .seed(options.seed)
        .shard(rank as u64, world as u64)
        .workers(1);
    if let Some(steps) = options.steps_per_epoch {
        train = train.steps_per_epoch(steps);
    }
    let train = train.build(&autodiff, to_model_input)?;
    // The test split in order, each rank scoring its part of every batch.
    let test = StoreDataLoader::builder(64)
        .stream("image", data.test.images.clone())
        .stream("label", data.test.labels.clone())
        .mode(Mode::Sequential)
        .epoch_mode(EpochMode::Repeat)
        .shard(rank as u64, world as u64)
        .workers(1)
        .build(&device, to_model_input)?;

    // `fork` gives the replica its own autodiff graph; the values (and the
    // `ParamId`s the gradients are keyed by) are the initial model's.
    let mut model = initial.clone().fork(&autodiff);
    let mut optimizer = AdamConfig::new().init();
    let steps = options.epochs * train.steps_per_epoch() as usize;
    let mut schedule = CosineAnnealingLrSchedulerConfig::new(LEARNING_RATE, steps.max(1)).init()?;
    let averaging = options.average && world > 1;
    let loss_fn = CrossEntropyLossConfig::new().init(&autodiff);
    for epoch in 1..=options.epochs {
        let (mut records, mut loss_sum, mut right) = (0.0, 0.0, 0.0);
        for batch in train.iter() {
            let batch = batch?;
            let n = batch.labels.dims()[0] as f32;
            let logits = model.forward(batch.images);
            let batch_right = correct(logits.clone().detach(), batch.labels.clone());
            // The mean over this rank's records: weighting it by `n` below
            // makes the sum over ranks the global batch's total.
            let loss = loss_fn.forward(logits, batch.labels);
            let batch_loss = loss.clone().into_scalar::<f32>();
            let mut grads = GradientsParams::from_grads(loss.backward(), &model);

            let mut buffer = if averaging {
                let mut flat = FlattenGradients {
                    grads: &grads,
                    scale: n,
                    out: Vec::new(),
                    error: None,
                };
                model.visit(&mut flat);
                if let Some(e) = flat.error {
                    return Err(e.into());
                }
                flat.out
            } else {
                Vec::new()
            };
            let stats = buffer.len();
            buffer.extend([n, n * batch_loss, batch_right as f32]);
            let sum = reduce.sum(rank, buffer)?;
            let (grad_sum, totals) = sum.split_at(stats);
            let global_records = totals[0];
            if averaging {
                let mut unflatten = UnflattenGradients {
                    grads: &mut grads,
                    sum: grad_sum,
                    divisor: global_records,
                    at: 0,
                    error: None,
                };
                model.visit(&mut unflatten);
                if let Some(e) = unflatten.error {
                    return Err(e.into());
                }
            }
            records += f64::from(global_records);
            loss_sum += f64::from(totals[1]);
            right += f64::from(totals[2]);
            model = optimizer.step(schedule.step(), model, grads);
        }

        let (test_right, test_total) = score(&model.valid(), &test)?;
        let test_counts = reduce.sum(rank, vec![test_right as f32, test_total as f32])?;
        if options.print && rank == 0 {
            println!(
                "epoch {epoch:2}/{}  train loss {:.4}  train accuracy {:6.2} %  \
                 test accuracy {:6.2} % ({} digits)",
                options.epochs,
                loss_sum / records.max(1.0),
                100.0 * right / records.max(1.0),
                100.0 * f64::from(test_counts[0]) / f64::from(test_counts[1]).max(1.0),
                test_counts[1],
            );
        }
    }
    Ok(model)
}

fn main() -> Result<(), BoxError> {
    let options = options()?;
    let start = Instant::now();
    let data = Data::write(&options.stores)?;
    println!(
        "wrote {} training and {} test digits to zrecord stores under {}",
        data.train.len,
        data.test.len,
        options.stores.display()
    );

    // One initial model for every run, its lazy parameters initialised here
    // (by reading them) so that every replica copies the same values.
    let device = Device::flex();
    device.seed(options.seed);
    let initial = Mlp::new(&device.clone().autodiff());
    let initial_params = parameters(&initial)?;

    let world = options.ranks as u64;
    let per_rank = if options.batch.is_multiple_of(world) {
        format!("{}", options.batch / world)
    } else {
        format!(
            "{}–{}",
            options.batch / world,
            options.batch.div_ceil(world)
        )
    };
    println!(
        "{} rank(s) as threads, global batch {} ({per_rank} records a rank), gradients {}",
        options.ranks,
        options.batch,
        if options.average {
            "averaged across ranks after every backward pass"
        } else {
            "NOT averaged (--no-average): each rank steps on its own"
        }
    );
    let parallel_start = Instant::now();
    let parallel = train(&options, &initial, &data)?;
    let parallel_time = parallel_start.elapsed();

    let single_start = Instant::now();
    let single_options = Options {
        ranks: 1,
        print: false,
        ..options.clone()
    };
    let single = train(&single_options, &initial, &data)?;
    let single_time = single_start.elapsed();

    let (test_right, test_total) = score(&parallel.model.valid(), &reference_test(&data)?)?;
    let reference = &single.replicas[0];
    let between_ranks = parallel.replicas[1..]
        .iter()
        .map(|r| max_abs_diff(&parallel.replicas[0], r))
        .fold(0.0, f32::max);
    let from_single = parallel
        .replicas
        .iter()
        .map(|r| max_abs_diff(r, reference))
        .fold(0.0, f32::max);
    let largest = reference.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    println!(
        "data-parallel training {:.1} s; the single-rank reference on the same global batches {:.1} s",
        parallel_time.as_secs_f64(),
        single_time.as_secs_f64()
    );
    println!(
        "test accuracy {:.2} % on {test_total} held-out digits (rank 0's model, scored alone)",
        100.0 * test_right as f64 / test_total.max(1) as f64
    );
    println!(
        "{} parameters; moved from their initial values by up to {:.3}",
        reference.len(),
        max_abs_diff(&initial_params, reference)
    );
    println!(
        "largest |difference| between the ranks' parameters: {}",
        describe(between_ranks)
    );
    println!(
        "largest |difference| from the single-rank model: {} (largest |parameter| {largest:.3})",
        describe(from_single)
    );
    println!("done in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// A parameter difference for people: exact zero stands out.
fn describe(diff: f32) -> String {
    if diff == 0.0 {
        "0 (bit-identical)".into()
    } else {
        format!("{diff:.1e}")
    }
}

/// The whole test split on one loader, to score a model alone.
fn reference_test(data: &Data) -> Result<StoreDataLoader<ImageBatch>, BoxError> {
    Ok(StoreDataLoader::builder(64)
        .stream("image", data.test.images.clone())
        .stream("label", data.test.labels.clone())
        .mode(Mode::Sequential)
        .epoch_mode(EpochMode::Repeat)
        .build(&Device::flex(), to_model_input)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few steps on `ranks` ranks from `initial`: the replicas' parameters.
    fn replicas(
        ranks: usize,
        average: bool,
        initial: &Mlp,
        data: &Data,
        dir: &Path,
    ) -> Vec<Vec<f32>> {
        let options = Options {
            ranks,
            epochs: 2,
            batch: 32,
            steps_per_epoch: Some(4),
            seed: 11,
            average,
            stores: dir.into(),
            print: false,
        };
        train(&options, initial, data).unwrap().replicas
    }

    /// `max |a − b| / max |b|`.
    fn relative_diff(a: &[f32], b: &[f32]) -> f32 {
        let largest = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        max_abs_diff(a, b) / largest
    }

    /// Averaged gradients make N ranks train the single-rank model: the same
    /// parameters up to float rounding, from the same initial weights and
    /// global batches — with equal shards (2 ranks of 16) and unequal ones
    /// (3 ranks: 10 + 11 + 11, weighted by their record counts) — and the
    /// replicas bit-identical. Without the averaging, the same check fails.
    #[test]
    fn averaged_gradients_train_the_single_rank_model() {
        let dir = tempfile::tempdir().unwrap();
        let stores = dir.path().join("stores");
        let data = Data::write(&stores).unwrap();
        let device = Device::flex();
        device.seed(3);
        let initial = Mlp::new(&device.autodiff());
        let start = parameters(&initial).unwrap();

        let single = replicas(1, true, &initial, &data, &stores).remove(0);
        // Training moved the parameters well beyond the tolerance below.
        assert!(relative_diff(&start, &single) > 1e-3);
        for ranks in [2, 3] {
            let parallel = replicas(ranks, true, &initial, &data, &stores);
            assert_eq!(parallel.len(), ranks);
            for replica in &parallel[1..] {
                assert_eq!(max_abs_diff(&parallel[0], replica), 0.0, "{ranks} ranks");
            }
            let diff = relative_diff(&parallel[0], &single);
            assert!(diff < 1e-5, "{ranks} ranks: relative difference {diff:e}");
        }

        // The control: without averaging, the same comparison fails.
        let drifting = replicas(2, false, &initial, &data, &stores);
        assert!(max_abs_diff(&drifting[0], &drifting[1]) > 0.0);
        let diff = relative_diff(&drifting[0], &single);
        assert!(
            diff > 1e-3,
            "without averaging: relative difference {diff:e}"
        );
    }

    /// The all-reduce hands every rank the same sum, round after round, and
    /// a failed rank releases the others instead of leaving them waiting.
    #[test]
    fn all_reduce_sums_in_rank_order_and_aborts() {
        let reduce = AllReduce::new(3);
        let sums: Vec<Vec<Vec<f32>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..3)
                .map(|rank| {
                    let reduce = &reduce;
                    scope.spawn(move || {
                        (0..50)
                            .map(|round| {
                                let values = vec![rank as f32, round as f32];
                                reduce.sum(rank, values).unwrap().to_vec()
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for rank in &sums {
            for (round, sum) in rank.iter().enumerate() {
                assert_eq!(sum, &vec![3.0, 3.0 * round as f32]);
            }
        }

        let reduce = AllReduce::new(2);
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| reduce.sum(0, vec![1.0]));
            std::thread::sleep(std::time::Duration::from_millis(20));
            reduce.abort();
            let error = waiting.join().unwrap().unwrap_err();
            assert_eq!(error.to_string(), ABORTED);
        });
        assert!(reduce.sum(1, vec![1.0]).is_err());
    }
}
