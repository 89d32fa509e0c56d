//! A small decoder-only transformer trained from packed token rows: learned
//! token and position embeddings (positions restart at every document of a
//! packed row), pre-norm transformer blocks under a block-diagonal causal
//! mask, a linear head. The `burn_gpt` example trains it on the King James
//! Bible, one byte per token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use burn::module::Module;
use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
};
use burn::nn::{
    Embedding, EmbeddingConfig, Initializer, LayerNorm, LayerNormConfig, Linear, LinearConfig,
};
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use zrecord::DynRaggedStore;
use zrecord_burn::{PackedTensors, block_causal_mask, packed_tensors};
use zrecord_loader::{Mode, PackedBatch, PackedLoader, Packing};

/// The model's shape.
#[derive(Clone, Copy, Debug)]
pub struct GptConfig {
    /// Token ids are `0..vocab`.
    pub vocab: usize,
    /// The longest input (positions are `0..context`).
    pub context: usize,
    /// Width of the residual stream.
    pub d_model: usize,
    /// Attention heads per block.
    pub heads: usize,
    /// Transformer blocks.
    pub layers: usize,
}

/// A decoder-only transformer.
#[derive(Module, Debug)]
pub struct Gpt {
    token: Embedding,
    position: Embedding,
    blocks: TransformerEncoder,
    norm: LayerNorm,
    head: Linear,
}

impl Gpt {
    /// A freshly initialised model on `device`.
    pub fn new(config: &GptConfig, device: &Device) -> Gpt {
        let small = Initializer::Normal {
            mean: 0.0,
            std: 0.02,
        };
        Gpt {
            token: EmbeddingConfig::new(config.vocab, config.d_model)
                .with_initializer(small.clone())
                .init(device),
            position: EmbeddingConfig::new(config.context, config.d_model)
                .with_initializer(small)
                .init(device),
            blocks: TransformerEncoderConfig::new(
                config.d_model,
                4 * config.d_model,
                config.heads,
                config.layers,
            )
            .with_dropout(0.0)
            .with_norm_first(true)
            .init(device),
            norm: LayerNormConfig::new(config.d_model).init(device),
            head: LinearConfig::new(config.d_model, config.vocab).init(device),
        }
    }

    /// Logits `(B, T, vocab)` of tokens `(B, T)` at `positions`, attending
    /// where `mask` (from [`block_causal_mask`]) allows.
    pub fn forward(
        &self,
        tokens: Tensor<2, Int>,
        positions: Tensor<2, Int>,
        mask: Tensor<3, burn::tensor::Bool>,
    ) -> Tensor<3> {
        let x = self.token.forward(tokens) + self.position.forward(positions);
        let x = self
            .blocks
            .forward(TransformerEncoderInput::new(x).mask_attn(mask));
        self.head.forward(self.norm.forward(x))
    }

    /// Mean next-token cross-entropy (nats per token) over a packed batch:
    /// each token predicts the next one of its own segment; a segment's last
    /// token and padding predict nothing.
    pub fn loss(&self, batch: PackedTensors) -> Tensor<1> {
        let [b, l] = batch.tokens.dims();
        let input = |t: Tensor<2, Int>| t.slice([0..b, 0..l - 1]);
        let segments = batch.segment_ids;
        let next_segment = segments.clone().slice([0..b, 1..l]);
        let weight = input(segments.clone())
            .equal(next_segment.clone())
            .bool_and(next_segment.not_equal_elem(0))
            .float();
        let targets = batch.tokens.clone().slice([0..b, 1..l]);
        let logits = self.forward(
            input(batch.tokens),
            input(batch.positions),
            block_causal_mask(input(segments)),
        );
        let nll = log_softmax(logits, 2)
            .gather(2, targets.unsqueeze_dim(2))
            .squeeze_dim::<2>(2)
            .neg();
        (nll * weight.clone()).sum() / weight.sum().clamp_min(1.0)
    }

    /// `count` tokens sampled after `prompt` (temperature `temperature`,
    /// deterministic for a given `seed`).
    pub fn generate(&self, prompt: &[u32], count: usize, temperature: f32, seed: u64) -> Vec<u32> {
        let device = self.head.weight.device();
        let context = self.position.weight.dims()[0];
        let mut tokens = prompt.to_vec();
        let mut rng = seed | 1;
        for _ in 0..count {
            let window = &tokens[tokens.len().saturating_sub(context)..];
            let t = window.len();
            let input = Tensor::<2, Int>::from_data(
                TensorData::new(window.iter().map(|&v| v as i64).collect::<Vec<_>>(), [1, t]),
                &device,
            );
            let positions = Tensor::<1, Int>::arange(0..t as i64, &device).reshape([1, t]);
            let segments = Tensor::<2, Int>::ones([1, t], &device);
            let logits = self.forward(input, positions, block_causal_mask(segments));
            let last: Vec<f32> = logits
                .slice([0..1, t - 1..t])
                .flatten::<1>(0, 2)
                .into_data()
                .try_to_vec_as()
                .unwrap_or_default();
            tokens.push(sample(&last, temperature, &mut rng));
        }
        tokens.split_off(prompt.len())
    }
}

/// A token drawn from `logits / temperature` (xorshift random numbers).
fn sample(logits: &[f32], temperature: f32, rng: &mut u64) -> u32 {
    let max = logits.iter().copied().fold(f32::MIN, f32::max);
    let weights: Vec<f64> = logits
        .iter()
        .map(|&l| f64::from((l - max) / temperature.max(1e-3)).exp())
        .collect();
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let mut x = (*rng >> 11) as f64 / (1u64 << 53) as f64 * weights.iter().sum::<f64>();
    for (token, w) in weights.iter().enumerate() {
        x -= w;
        if x <= 0.0 {
            return token as u32;
        }
    }
    weights.len().saturating_sub(1) as u32
}

/// How to train.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// The model.
    pub model: GptConfig,
    /// Rows per batch.
    pub rows: usize,
    /// Peak learning rate (Adam), reached after `warmup` steps, then cosine
    /// decay to a tenth of it at the end.
    pub learning_rate: f64,
    /// Warm-up steps.
    pub warmup: usize,
    /// Stop after this many steps ...
    pub max_steps: usize,
    /// ... or this much training time, whichever comes first.
    pub budget: Duration,
    /// Evaluate every this many steps (and at the end).
    pub eval_every: usize,
    /// How documents are packed.
    pub packing: Packing,
    /// Seed of the document order and the initialisation.
    pub seed: u64,
}

/// One evaluation.
#[derive(Clone, Copy, Debug)]
pub struct Eval {
    /// Steps trained.
    pub step: usize,
    /// Seconds of training so far.
    pub seconds: f64,
    /// Mean training loss since the last evaluation.
    pub train_loss: f64,
    /// Validation loss, nats per token.
    pub val_loss: f64,
}

/// What training did.
#[derive(Debug)]
pub struct TrainReport {
    /// Every evaluation, the last at the end.
    pub evals: Vec<Eval>,
    /// Tokens trained on per second (padding excluded).
    pub tokens_per_second: f64,
    /// Share of padding in the training batches.
    pub padding: f64,
    /// The trained model.
    pub model: Gpt,
}

/// Trains a [`Gpt`] on `tokens` (one document per record): documents whose
/// index is in `validation` are held out and measured every `eval_every`
/// steps. `log` gets one line per evaluation.
///
/// # Errors
/// The loader's errors.
pub fn train(
    tokens: Arc<DynRaggedStore>,
    validation: &[u64],
    config: &TrainConfig,
    device: &Device,
    mut log: impl FnMut(&Eval),
) -> Result<TrainReport, Box<dyn std::error::Error>> {
    let seq_len = config.model.context + 1;
    let held_out: std::collections::HashSet<u64> = validation.iter().copied().collect();
    let training: Vec<u64> = (0..tokens.len())
        .filter(|i| !held_out.contains(i))
        .collect();
    let mut train = PackedLoader::builder(seq_len, config.rows)
        .tokens(Arc::clone(&tokens))
        .packing(config.packing)
        .subset(training)
        .mode(Mode::Cyclic)
        .seed(config.seed)
        .build()?;
    let val_batches = validation_batches(&tokens, validation, seq_len, config)?;

    let autodiff = device.clone().autodiff();
    let mut model = Gpt::new(&config.model, &autodiff);
    let mut optim = AdamConfig::new()
        .with_grad_clipping(Some(GradientClippingConfig::Norm(1.0)))
        .init();
    let start = Instant::now();
    let (mut evals, mut since) = (Vec::new(), Vec::new());
    let (mut real, mut padding) = (0usize, 0usize);
    let mut step = 0;
    while step < config.max_steps && start.elapsed() < config.budget {
        let batch = train.next_batch()?;
        padding += batch.padding();
        real += batch.tokens().len() - batch.padding();
        let loss = model.loss(packed_tensors(batch, &autodiff)?);
        since.push(loss.clone().into_scalar::<f32>() as f64);
        let progress = (step as f64 / config.max_steps as f64)
            .max(start.elapsed().as_secs_f64() / config.budget.as_secs_f64());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(learning_rate(config, step, progress), model, grads);
        step += 1;
        let last = step >= config.max_steps || start.elapsed() >= config.budget;
        if step % config.eval_every == 0 || last {
            let eval = Eval {
                step,
                seconds: start.elapsed().as_secs_f64(),
                train_loss: since.iter().sum::<f64>() / since.len().max(1) as f64,
                val_loss: evaluate(&model.valid(), &val_batches, device)?,
            };
            since.clear();
            log(&eval);
            evals.push(eval);
        }
    }
    Ok(TrainReport {
        evals,
        tokens_per_second: real as f64 / start.elapsed().as_secs_f64(),
        padding: padding as f64 / (padding + real).max(1) as f64,
        model: model.valid(),
    })
}

/// Linear warm-up, then cosine decay to a tenth of the peak as `progress` goes 0 → 1.
fn learning_rate(config: &TrainConfig, step: usize, progress: f64) -> f64 {
    let peak = config.learning_rate;
    if step < config.warmup {
        return peak * (step + 1) as f64 / config.warmup as f64;
    }
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress.min(1.0)).cos());
    peak * (0.1 + 0.9 * cosine)
}

/// The held-out documents packed once, in order, into batches that cover
/// them all (the last batch wraps around to the first documents).
fn validation_batches(
    tokens: &Arc<DynRaggedStore>,
    validation: &[u64],
    seq_len: usize,
    config: &TrainConfig,
) -> Result<Vec<PackedBatch>, Box<dyn std::error::Error>> {
    let total = tokens.gather_dyn(validation)?.values().len();
    let mut loader = PackedLoader::builder(seq_len, config.rows)
        .tokens(Arc::clone(tokens))
        .packing(config.packing)
        .subset(validation.to_vec())
        .mode(Mode::Sequential)
        .window(validation.len() as u64)
        .build()?;
    let mut batches = Vec::new();
    let mut covered = 0;
    while covered < total {
        let batch = loader.next_batch()?;
        covered += batch.tokens().len() - batch.padding();
        batches.push(batch);
    }
    Ok(batches)
}

/// Mean loss per predicted token over `batches`.
fn evaluate(
    model: &Gpt,
    batches: &[PackedBatch],
    device: &Device,
) -> Result<f64, Box<dyn std::error::Error>> {
    let (mut sum, mut count) = (0.0, 0.0);
    for batch in batches {
        // Tokens predicted: those followed by one of their own segment.
        let segments = batch.segment_ids_view();
        let n = segments
            .rows()
            .into_iter()
            .map(|r| {
                r.windows(2)
                    .into_iter()
                    .filter(|w| w[0] == w[1] && w[1] != 0)
                    .count()
            })
            .sum::<usize>() as f64;
        let loss = model.loss(packed_tensors(batch.clone(), device)?);
        sum += loss.into_scalar::<f32>() as f64 * n;
        count += n;
    }
    Ok(sum / count.max(1.0))
}
