//! The `candle_serve` path end to end, in-process: train the digit
//! classifier from stores (synthetic digits; MNIST too when
//! `$ZRECORD_DATA/mnist` has it), save and reload its
//! weights as safetensors, serve it on an ephemeral loopback port and check
//! that every answer to concurrent requests equals offline batched
//! inference of the same ids.
//! Every socket has a timeout, so a hang fails instead of stalling. The
//! weights and the data order are seeded (`TrainConfig::seed`), so a run that
//! misses its accuracy is reproducible.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use candle_core::{Device, Tensor};
use serde_json::{Value, json};
use zrecord::DenseStore;
use zrecord_candle::http::{HttpConfig, HttpServer};
use zrecord_candle::{BatchConfig, Batcher, StorePredictor};
use zrecord_candle_examples::candle_mnist::{self, Mlp, StorePaths, TrainConfig, WEIGHTS};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A keep-alive HTTP/1.1 client: one connection, requests one after another.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect_timeout(&addr, TIMEOUT).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(TIMEOUT)).unwrap();
        Client {
            reader: BufReader::new(stream),
        }
    }

    fn post(&mut self, path: &str, body: &str) -> (u16, Value) {
        let stream = self.reader.get_mut();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut status_line = String::new();
        self.reader
            .read_line(&mut status_line)
            .expect("an answer before the timeout");
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }
}

/// Synthetic digit stores: 2048 to train on, 256 to test.
fn synthetic_stores(dir: &Path) -> StorePaths {
    let stores = StorePaths::new(dir.join("stores"));
    let (images, labels) = candle_mnist::synthetic_digits(2048, 1);
    candle_mnist::write_split(&stores, "train", &images, &labels).unwrap();
    let (images, labels) = candle_mnist::synthetic_digits(256, 2);
    candle_mnist::write_split(&stores, "test", &images, &labels).unwrap();
    stores
}

/// Serves `model` over `images` and checks `requests` sent concurrently
/// (`clients` keep-alive connections) against offline batched inference.
fn serve_and_check(model: Mlp, images: PathBuf, requests: &[Vec<u64>], clients: usize) {
    let device = Device::Cpu;
    let offline_store = DenseStore::<u8>::open(&images).unwrap();
    let all: Vec<u64> = requests.iter().flatten().copied().collect();
    let expected =
        candle_mnist::classify_records(&model, &offline_store, &all, 500, &device).unwrap();
    drop(offline_store); // one handle owns a store at a time

    let predictor = StorePredictor::new(
        DenseStore::<u8>::open(&images).unwrap(),
        &device,
        move |x: Tensor| model.classify(&x),
    )
    .unwrap();
    let config = BatchConfig::default()
        .with_max_batch(64)
        .with_max_wait(Duration::from_millis(2));
    let batcher = Batcher::start(predictor, config).unwrap();
    let server = HttpServer::start(
        "127.0.0.1:0",
        batcher,
        HttpConfig::default().with_threads(16),
    )
    .unwrap();
    let addr = server.local_addr();

    let per_client = requests.len().div_ceil(clients);
    let answers: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = requests
            .chunks(per_client)
            .map(|chunk| {
                s.spawn(move || {
                    let mut client = Client::connect(addr);
                    chunk
                        .iter()
                        .map(|ids| {
                            let (status, body) =
                                client.post("/predict", &json!({ "ids": ids }).to_string());
                            assert_eq!(status, 200, "{body}");
                            body
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut at = 0;
    for (ids, answer) in requests.iter().zip(&answers) {
        assert_eq!(
            answer["predictions"],
            json!(expected[at..at + ids.len()]),
            "ids {ids:?}"
        );
        at += ids.len();
    }
    let metrics = server.batcher().metrics().snapshot();
    assert_eq!(metrics.requests, requests.len() as u64);
    assert_eq!((metrics.failed, metrics.rejected), (0, 0));
    println!(
        "{} requests in {} batches (mean {:.1} records), p50 {:?}, p99 {:?}",
        metrics.requests,
        metrics.batches,
        metrics.mean_batch_size,
        metrics.latency_p50,
        metrics.latency_p99
    );
    server.shutdown();
}

#[test]
fn synthetic_digits_train_save_reload_and_serve_like_offline_inference() {
    let dir = tempfile::tempdir().unwrap();
    let stores = synthetic_stores(dir.path());
    let device = Device::Cpu;
    let config = TrainConfig {
        epochs: 2,
        batch: 64,
        hidden: 32,
        seed: 42,
        ..TrainConfig::default()
    };
    let (model, varmap, report) =
        candle_mnist::train(&stores, &config, &device, |_, _| {}).unwrap();
    assert!(
        report.epoch_loss[1] < report.epoch_loss[0],
        "{:?}",
        report.epoch_loss
    );
    let accuracy = candle_mnist::accuracy(&model, &stores, "test", &device).unwrap();
    println!(
        "seed {}: losses {:?}, test accuracy {accuracy}",
        config.seed, report.epoch_loss
    );
    assert!(accuracy > 0.9, "synthetic test accuracy {accuracy}");

    let weights = dir.path().join(WEIGHTS);
    varmap.save(&weights).unwrap();
    let reloaded = Mlp::load(&weights, &device).unwrap();
    let ids: Vec<u64> = (0..256).collect();
    let images = DenseStore::<u8>::open(stores.path("test", "images")).unwrap();
    assert_eq!(
        candle_mnist::classify_records(&reloaded, &images, &ids, 100, &device).unwrap(),
        candle_mnist::classify_records(&model, &images, &ids, 256, &device).unwrap(),
        "the reloaded weights predict what the trained ones did"
    );
    drop(images);

    // 96 requests of 1 to 8 ids from 12 keep-alive connections at once.
    let requests: Vec<Vec<u64>> = (0..96u64)
        .map(|k| (0..1 + k % 8).map(|j| (k * 37 + j * 101) % 256).collect())
        .collect();
    serve_and_check(reloaded, stores.path("test", "images"), &requests, 12);
}

#[test]
fn a_missing_or_damaged_weights_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Mlp::load(&dir.path().join("absent.safetensors"), &Device::Cpu).is_err());
    let bad = dir.path().join("bad.safetensors");
    std::fs::write(&bad, b"not safetensors").unwrap();
    assert!(Mlp::load(&bad, &Device::Cpu).is_err());
}

#[test]
fn mnist_test_split_trains_and_serves() {
    let data = std::env::var_os("ZRECORD_DATA")
        .map_or_else(|| "data".into(), std::path::PathBuf::from)
        .join("mnist");
    if !data.is_dir() {
        zrecord_testkit::skip(format!("{} is absent (set ZRECORD_DATA)", data.display()));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stores = StorePaths::new(dir.path().join("stores"));
    let (train, test) = candle_mnist::import_mnist(&data, &stores).unwrap();
    assert_eq!((train, test), (60_000, 10_000));
    // One short epoch over a slice of the training split is enough to
    // tell a working pipeline from a broken one.
    let config = TrainConfig {
        epochs: 1,
        batch: 256,
        hidden: 64,
        lr: 3e-3,
        seed: 42,
        ..TrainConfig::default()
    };
    let (model, _, _) = candle_mnist::train(&stores, &config, &Device::Cpu, |_, _| {}).unwrap();
    let accuracy = candle_mnist::accuracy(&model, &stores, "test", &Device::Cpu).unwrap();
    println!("seed {}: MNIST test accuracy {accuracy}", config.seed);
    assert!(
        accuracy > 0.85,
        "MNIST test accuracy after one epoch: {accuracy}"
    );
    let requests: Vec<Vec<u64>> = (0..32u64).map(|k| vec![k * 311 % 10_000, k]).collect();
    serve_and_check(model, stores.path("test", "images"), &requests, 8);
}
