//! zrecord-candle, measured: the cost of batch → tensor conversion next to
//! the gather it follows, and a bounded load generator against the HTTP
//! server with dynamic batching on and off.
//!
//! ```text
//! cargo bench -p zrecord-integration-benches --bench serve_load -- [--quick] [--requests N] [--rounds R] [--ids K]
//! ```
//!
//! **Conversion.** Workload (b) of `benches/DATA.md` (MNIST-like `u8[28][28]`)
//! and (c) (ragged `i32` tokens), prefixes, batch 256 from plan (b)/(c):
//! per batch it times a gather into a reused buffer (what the loader does),
//! a gather into a fresh buffer (what the loader does after a converter
//! took the last one), and the conversion of that buffer to a candle
//! tensor; it prints medians and the ratios. Then a real loader whose
//! transform converts, and its counters' transform / gather time.
//!
//! **Serving.** A store of 20,000 (b) records, a 784-128-10 perceptron
//! (random weights: the arithmetic is what costs), the HTTP server on
//! 127.0.0.1 with 64 handler threads, and 1, 16 or 64 client threads on
//! keep-alive connections sending `N` requests of `K` random ids in all.
//! Each configuration runs `R` rounds (interleaved); the table shows the
//! medians over rounds of requests/s and of the client-side p50 / p99
//! latency, and the mean batch the model saw.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use candle_core::{D, DType as CDType, Device, Tensor};
use candle_nn::{Module, VarBuilder, VarMap};
use zrecord::{Codec, DType, DenseStore, DynDenseStore, DynRaggedBatch, DynVec, RaggedStore};
use zrecord_benches::compare::measure::median;
use zrecord_benches::plans::{BATCH, plan};
use zrecord_benches::workloads::{DENSE_B, RaggedTokens};
use zrecord_candle::http::{HttpConfig, HttpServer};
use zrecord_candle::{
    BatchConfig, Batcher, StorePredictor, dense_tensor, pad_records, tensor_from_vec,
};
use zrecord_loader::Loader;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// zrecord-candle measured: batch → tensor conversion, and HTTP serving
/// with dynamic batching on and off.
#[derive(clap::Parser)]
struct Options {
    /// 4,000 records, 20 batches, 300 requests, one round: a smoke test.
    #[arg(long, alias = "test")]
    quick: bool,
    /// Passed by `cargo bench`.
    #[arg(long = "bench", hide = true)]
    _bench: bool,
    /// Requests per serving run [default: 2000, quick 300].
    #[arg(long)]
    requests: Option<usize>,
    /// Interleaved rounds of every serving configuration [default: 3, quick 1].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    rounds: Option<u16>,
    /// Record ids per request.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    ids: u16,
}

impl Options {
    fn requests(&self) -> usize {
        self.requests.unwrap_or(if self.quick { 300 } else { 2000 })
    }

    fn rounds(&self) -> usize {
        self.rounds
            .map_or(if self.quick { 1 } else { 3 }, usize::from)
    }
}

fn main() -> Result<(), BoxError> {
    let options = <Options as clap::Parser>::parse();
    let dir = tempfile::tempdir()?;
    let records = if options.quick { 4_000 } else { 20_000 };
    println!(
        "# zrecord-candle: {} cores, candle on the CPU",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    conversion(dir.path(), records, if options.quick { 20 } else { 200 })?;
    serving(dir.path(), records, &options)?;
    Ok(())
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Times gather (reused buffer), gather (fresh buffer) and conversion of
/// one dense store over `batches` plan batches; prints one table row.
fn dense_row(label: &str, store: &DynDenseStore, batches: &[Vec<u64>]) -> Result<(), BoxError> {
    let cpu = Device::Cpu;
    let mut shape = vec![BATCH];
    shape.extend_from_slice(store.item_shape());
    let mut reused = DynVec::new(store.dtype());
    let (mut reuse, mut fresh, mut convert) = (Vec::new(), Vec::new(), Vec::new());
    // The fresh-buffer gathers read other records (another plan), so neither
    // pass finds the other's records in the CPU caches.
    let others = plan(99, batches.len(), BATCH, store.len());
    for (ids, other) in batches.iter().zip(&others) {
        let t = Instant::now();
        store.gather_into(ids, &mut reused)?;
        reuse.push(micros(t.elapsed()));

        let t = Instant::now();
        let mut buffer = DynVec::new(store.dtype());
        store.gather_into(other, &mut buffer)?;
        fresh.push(micros(t.elapsed()));
        let t = Instant::now();
        let tensor = tensor_from_vec(buffer, &shape, &cpu)?;
        convert.push(micros(t.elapsed()));
        std::hint::black_box(&tensor);
    }
    let (reuse, fresh, convert) = (median(&reuse), median(&fresh), median(&convert));
    println!(
        "| {label} | {reuse:.1} | {fresh:.1} | {convert:.2} | {:.2} % | {:+.1} % |",
        100.0 * convert / reuse,
        100.0 * (fresh - reuse) / reuse
    );
    Ok(())
}

fn conversion(dir: &std::path::Path, records: usize, nb: usize) -> Result<(), BoxError> {
    println!("\n## batch → tensor, batch {BATCH}, median of {nb} batches (µs)\n");
    println!(
        "| stream | gather, reused buffer | gather, fresh buffer | to tensor | to tensor / gather | fresh vs reused |"
    );
    println!("| --- | --: | --: | --: | --: | --: |");
    let pixels = DENSE_B.generate(records);
    let batches = plan(DENSE_B.plan_seed, nb, BATCH, records as u64);
    for (name, codec) in [("zstd", Codec::Zstd), ("raw", Codec::Raw)] {
        let store =
            DenseStore::<u8>::create(dir.join(format!("b-u8-{name}")), &DENSE_B.shape, codec)?;
        store.append(&pixels)?;
        store.gather(&batches[0])?; // warm the page cache
        dense_row(&format!("(b) u8 28×28 {name}"), store.as_dyn(), &batches)?;
    }
    let floats: Vec<f32> = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
    let store = DenseStore::<f32>::create(dir.join("b-f32-raw"), &DENSE_B.shape, Codec::Raw)?;
    store.append(&floats)?;
    dense_row("(b) as f32 28×28 raw", store.as_dyn(), &batches)?;
    let wide: Vec<u16> = pixels.iter().map(|&p| u16::from(p) * 257).collect();
    let store = DenseStore::<u16>::create(dir.join("b-u16-raw"), &DENSE_B.shape, Codec::Raw)?;
    store.append(&wide)?;
    dense_row(
        "(b) as u16 28×28 raw (widened to u32)",
        store.as_dyn(),
        &batches,
    )?;

    // Ragged: gather into a reused packed batch, then pad.
    let tokens = RaggedTokens::generate(records);
    let store = RaggedStore::<i32>::create(dir.join("c-zstd"), Codec::Zstd)?;
    let slices: Vec<&[i32]> = (0..tokens.len()).map(|r| tokens.record(r)).collect();
    store.append_slices(&slices)?;
    let store = store.into_dyn();
    let batches = plan(7, nb, BATCH, records as u64);
    let mut packed = DynRaggedBatch::new(DType::I32);
    let (mut gather, mut pad) = (Vec::new(), Vec::new());
    for ids in &batches {
        let t = Instant::now();
        store.gather_into(ids, &mut packed)?;
        gather.push(micros(t.elapsed()));
        let values = packed.values().as_slice::<i32>().ok_or("not i32")?;
        let t = Instant::now();
        let padded = pad_records(values, packed.layout(), 0, &Device::Cpu)?;
        pad.push(micros(t.elapsed()));
        std::hint::black_box(&padded);
    }
    let (gather, pad) = (median(&gather), median(&pad));
    println!(
        "| (c) i32 tokens zstd, padded + mask | {gather:.1} | — | {pad:.1} | {:.1} % | — |",
        100.0 * pad / gather
    );

    // The loader end to end: the transform converts on the worker threads.
    let store = DenseStore::<u8>::open(dir.join("b-u8-zstd"))?;
    let cpu = Device::Cpu;
    let mut loader = Loader::builder(BATCH as u64)
        .stream("image", store)
        .seed(1)
        .workers(2)
        .transform(move |mut batch| dense_tensor(&mut batch, "image", &cpu))
        .build()?;
    for batch in loader.steps(nb as u64) {
        std::hint::black_box(batch??);
    }
    let c = loader.counters().snapshot();
    println!(
        "\nLoader over (b) zstd, {nb} steps, transform = `dense_tensor`: gather {:.1} ms, transform {:.2} ms in all → transform / gather = {:.2} %",
        c.gather_time.as_secs_f64() * 1e3,
        c.transform_time.as_secs_f64() * 1e3,
        100.0 * c.transform_time.as_secs_f64() / c.gather_time.as_secs_f64()
    );
    Ok(())
}

/// The served model: u8 images → 784-128-10 → class.
fn model()
-> Result<impl Fn(Tensor) -> candle_core::Result<Tensor> + Send + Sync + 'static, BoxError> {
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, CDType::F32, &Device::Cpu);
    let fc1 = candle_nn::linear(784, 128, vb.pp("fc1"))?;
    let fc2 = candle_nn::linear(128, 10, vb.pp("fc2"))?;
    Ok(move |x: Tensor| {
        let x = x
            .to_dtype(CDType::F32)?
            .affine(1.0 / 255.0, 0.0)?
            .flatten_from(1)?;
        fc2.forward(&fc1.forward(&x)?.relu()?)?.argmax(D::Minus1)
    })
}

/// A keep-alive client: sends a request, reads the whole answer.
struct Client {
    reader: BufReader<TcpStream>,
    body: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Result<Client, BoxError> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            reader: BufReader::new(stream),
            body: Vec::new(),
        })
    }

    fn predict(&mut self, body: &str) -> Result<(), BoxError> {
        let request = format!(
            "POST /predict HTTP/1.1\r\nHost: bench\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.reader.get_mut().write_all(request.as_bytes())?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        if !line.starts_with("HTTP/1.1 200") {
            return Err(format!("unexpected answer {line:?}").into());
        }
        let mut length = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body)?;
        Ok(())
    }
}

/// One run: `clients` threads send `requests` in all; returns (req/s,
/// p50 ms, p99 ms, mean batch records).
fn run(
    store: &Arc<DynDenseStore>,
    config: BatchConfig,
    clients: usize,
    requests: &[String],
) -> Result<(f64, f64, f64, f64), BoxError> {
    let predictor = StorePredictor::new(Arc::clone(store), &Device::Cpu, model()?)?;
    let batcher = Batcher::start(predictor, config)?;
    let server = HttpServer::start(
        "127.0.0.1:0",
        batcher,
        HttpConfig::default().with_threads(64),
    )?;
    let addr = server.local_addr();
    let per = requests.len().div_ceil(clients).max(1);
    let barrier = Barrier::new(requests.chunks(per).count() + 1);
    let (wall, mut latencies) = std::thread::scope(|s| -> Result<_, BoxError> {
        let handles: Vec<_> = requests
            .chunks(per)
            .map(|chunk| {
                let barrier = &barrier;
                s.spawn(move || -> Result<Vec<f64>, String> {
                    let mut client = Client::connect(addr).map_err(|e| e.to_string());
                    barrier.wait();
                    let client = client.as_mut().map_err(|e| e.clone())?;
                    let mut latencies = Vec::with_capacity(chunk.len());
                    for body in chunk {
                        let t = Instant::now();
                        client.predict(body).map_err(|e| e.to_string())?;
                        latencies.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    Ok(latencies)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut latencies = Vec::with_capacity(requests.len());
        for h in handles {
            latencies.extend(h.join().map_err(|_| "a client panicked")??);
        }
        Ok((start.elapsed(), latencies))
    })?;
    let metrics = server.batcher().metrics().snapshot();
    server.shutdown();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| {
        latencies[((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1]
    };
    Ok((
        requests.len() as f64 / wall.as_secs_f64(),
        at(0.5),
        at(0.99),
        metrics.mean_batch_size,
    ))
}

fn serving(dir: &std::path::Path, records: usize, o: &Options) -> Result<(), BoxError> {
    let store = DenseStore::<u8>::create(dir.join("serve"), &DENSE_B.shape, Codec::Zstd)?;
    store.append(&DENSE_B.generate(records))?;
    let store = Arc::new(store.into_dyn());
    let ids = plan(11, o.requests(), usize::from(o.ids), records as u64);
    let requests: Vec<String> = ids
        .iter()
        .map(|ids| format!("{{\"ids\": {ids:?}}}"))
        .collect();
    let modes: [(&str, BatchConfig); 3] = [
        (
            "off (one request per pass)",
            BatchConfig::default().unbatched(),
        ),
        (
            "on, max wait 0",
            BatchConfig::default()
                .with_max_batch(256)
                .with_max_wait(Duration::ZERO),
        ),
        (
            "on, max wait 2 ms",
            BatchConfig::default()
                .with_max_batch(256)
                .with_max_wait(Duration::from_millis(2)),
        ),
    ];
    let concurrency = [1usize, 16, 64];
    // results[mode][c] = per-round tuples
    let mut results = vec![vec![Vec::new(); concurrency.len()]; modes.len()];
    for _round in 0..o.rounds() {
        for (c, &clients) in concurrency.iter().enumerate() {
            for (m, (_, config)) in modes.iter().enumerate() {
                results[m][c].push(run(&store, config.clone(), clients, &requests)?);
            }
        }
    }
    println!(
        "\n## serving: {} requests of {} ids per run, median of {} rounds\n",
        o.requests(),
        o.ids,
        o.rounds()
    );
    println!("| batching | clients | requests/s | p50 ms | p99 ms | mean batch (records) |");
    println!("| --- | --: | --: | --: | --: | --: |");
    let mut throughput = vec![vec![0.0; concurrency.len()]; modes.len()];
    for (m, (label, _)) in modes.iter().enumerate() {
        for (c, &clients) in concurrency.iter().enumerate() {
            let runs = &results[m][c];
            let pick = |f: fn(&(f64, f64, f64, f64)) -> f64| {
                median(&runs.iter().map(f).collect::<Vec<_>>())
            };
            throughput[m][c] = pick(|r| r.0);
            println!(
                "| {label} | {clients} | {:.0} | {:.2} | {:.2} | {:.1} |",
                throughput[m][c],
                pick(|r| r.1),
                pick(|r| r.2),
                pick(|r| r.3)
            );
        }
    }
    println!();
    for (c, &clients) in concurrency.iter().enumerate() {
        println!(
            "{clients} clients: batching on (wait 0) / off = {:.2}×, on (wait 2 ms) / off = {:.2}×",
            throughput[1][c] / throughput[0][c],
            throughput[2][c] / throughput[0][c]
        );
    }
    Ok(())
}
