//! Train a digit classifier with candle from zrecord stores, then serve it
//! over HTTP with dynamic batching: a request names records of a store by
//! id, and one gather + one forward pass answers many concurrent requests.
//!
//! ```text
//! cargo run --release --example candle_serve -- train MNIST_DIR [--out DIR] [--epochs N] [--batch B] [--hidden H] [--seed S]
//! cargo run --release --example candle_serve -- serve [--out DIR] [--addr 127.0.0.1:8080]
//!     [--max-batch 256] [--max-wait-ms 0] [--threads 64] [--unbatched]
//! curl -s localhost:8080/predict -d '{"ids": [0, 1, 2]}'     # {"predictions":[7,2,1]}
//! ```
//!
//! `train` imports the four IDX files of `MNIST_DIR` (gzipped or plain) into
//! zstd stores under `DIR/stores`, trains through the zrecord loader, prints
//! the test accuracy, and saves the weights to `DIR/mnist-mlp.safetensors`.
//! `serve` loads them and serves the test images store: ids are its record
//! numbers (0..10000). `DIR` defaults to `zrecord-candle-mnist` in the
//! temporary folder. Ctrl-C stops the server gracefully and prints its
//! metrics. Where to get MNIST: see the README ("Burn").

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use candle_core::{Device, Tensor};
use zrecord::DenseStore;
use zrecord_candle::http::{HttpConfig, HttpServer};
use zrecord_candle::{BatchConfig, Batcher, StorePredictor};
use zrecord_candle_examples::candle_mnist::{self, Mlp, StorePaths, TrainConfig, WEIGHTS};

const USAGE: &str = "usage:
  candle_serve train MNIST_DIR [--out DIR] [--epochs N] [--batch B] [--hidden H] [--seed S]
  candle_serve serve [--out DIR] [--addr HOST:PORT] [--max-batch N] [--max-wait-ms MS] [--threads N] [--unbatched]";

/// Parsed command line.
enum Command {
    Train {
        data: PathBuf,
        out: PathBuf,
        config: TrainConfig,
    },
    Serve {
        out: PathBuf,
        addr: String,
        batch: BatchConfig,
        http: HttpConfig,
    },
}

fn parse() -> Result<Command, String> {
    let mut args = std::env::args().skip(1);
    let command = args.next().ok_or(USAGE)?;
    let mut out = std::env::temp_dir().join("zrecord-candle-mnist");
    let mut data = None;
    let mut config = TrainConfig::default();
    let mut addr = "127.0.0.1:8080".to_string();
    let mut batch = BatchConfig::default();
    let mut http = HttpConfig::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        fn num<T: std::str::FromStr>(name: &str, v: String) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("{name}: not a number: {v:?}"))
        }
        match (command.as_str(), arg.as_str()) {
            (_, "--out") => out = value("--out")?.into(),
            ("train", "--epochs") => config.epochs = num("--epochs", value("--epochs")?)?,
            ("train", "--batch") => config.batch = num("--batch", value("--batch")?)?,
            ("train", "--hidden") => config.hidden = num("--hidden", value("--hidden")?)?,
            ("train", "--seed") => config.seed = num("--seed", value("--seed")?)?,
            ("serve", "--addr") => addr = value("--addr")?,
            ("serve", "--max-batch") => {
                batch.max_batch = num("--max-batch", value("--max-batch")?)?;
            }
            ("serve", "--max-wait-ms") => {
                let ms: f64 = num("--max-wait-ms", value("--max-wait-ms")?)?;
                batch.max_wait = Duration::try_from_secs_f64(ms / 1e3)
                    .map_err(|_| format!("--max-wait-ms: {ms} is not a duration"))?;
            }
            ("serve", "--threads") => http.threads = num("--threads", value("--threads")?)?,
            ("serve", "--unbatched") => batch = batch.unbatched(),
            (_, "-h" | "--help") => return Err(USAGE.into()),
            ("train", _) if data.is_none() && !arg.starts_with('-') => data = Some(arg.into()),
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    match command.as_str() {
        "train" => Ok(Command::Train {
            data: data.ok_or(format!("train needs the MNIST folder\n{USAGE}"))?,
            out,
            config,
        }),
        "serve" => Ok(Command::Serve {
            out,
            addr,
            batch,
            http,
        }),
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    }
}

fn main() {
    let command = match parse() {
        Ok(c) => c,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let result = match command {
        Command::Train { data, out, config } => train(&data, &out, &config),
        Command::Serve {
            out,
            addr,
            batch,
            http,
        } => serve(&out, &addr, batch, http),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn train(
    data: &std::path::Path,
    out: &std::path::Path,
    config: &TrainConfig,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let device = Device::Cpu;
    let stores = StorePaths::new(out.join("stores"));
    let start = Instant::now();
    let (train, test) = candle_mnist::import_mnist(data, &stores)?;
    println!(
        "imported {train} training and {test} test images into {} in {:.1} s",
        stores.dir.display(),
        start.elapsed().as_secs_f64()
    );
    let (model, varmap, report) = candle_mnist::train(&stores, config, &device, |epoch, loss| {
        println!("epoch {epoch}/{} loss {loss:.4}", config.epochs);
    })?;
    println!(
        "trained {} epochs of batch {} in {:.1} s (waited {:.2} s for the loader)",
        config.epochs,
        config.batch,
        report.time.as_secs_f64(),
        report.loader_wait.as_secs_f64()
    );
    let weights = out.join(WEIGHTS);
    varmap.save(&weights)?;
    println!("saved {}", weights.display());
    let accuracy = candle_mnist::accuracy(&model, &stores, "test", &device)?;
    println!("total {:.1} s", start.elapsed().as_secs_f64());
    println!("test_accuracy={accuracy:.4}");
    Ok(())
}

fn serve(
    out: &std::path::Path,
    addr: &str,
    batch: BatchConfig,
    http: HttpConfig,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let device = Device::Cpu;
    let weights = out.join(WEIGHTS);
    if !weights.is_file() {
        return Err(format!(
            "{} is absent: run `candle_serve train MNIST_DIR --out {}` first",
            weights.display(),
            out.display()
        )
        .into());
    }
    let model = Mlp::load(&weights, &device)?;
    let images = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(StorePaths::new(out.join("stores")).path("test", "images"))?;
    let records = images.len();
    let predictor = StorePredictor::new(images, &device, move |x: Tensor| model.classify(&x))?;
    let batcher = Batcher::start(predictor, batch.clone())?;
    let server = HttpServer::start(addr, batcher, http)?;

    let (stop, stopped) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop.send(());
    })?;
    println!(
        "serving {records} MNIST test images on http://{} (max batch {}, max wait {} ms); Ctrl-C stops",
        server.local_addr(),
        batch.max_batch,
        batch.max_wait.as_secs_f64() * 1e3
    );
    println!(
        "  curl -s http://{}/predict -d '{{\"ids\": [0, 1, 2]}}'",
        server.local_addr()
    );
    let _ = stopped.recv();
    println!("shutting down: answering the requests already received");
    let batcher = server.batcher().clone();
    server.shutdown();
    let metrics = batcher.metrics().snapshot();
    println!(
        "served {} requests ({} failed, {} refused) in {} batches of {:.1} records on average; latency p50 {:.2} ms, p99 {:.2} ms",
        metrics.requests,
        metrics.failed,
        metrics.rejected,
        metrics.batches,
        metrics.mean_batch_size,
        metrics.latency_p50.as_secs_f64() * 1e3,
        metrics.latency_p99.as_secs_f64() * 1e3
    );
    Ok(())
}
