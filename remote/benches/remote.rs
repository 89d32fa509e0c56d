//! Remote gathers against their limits, side by side in one run, on an
//! S3-compatible server on loopback (`ZRECORD_S3_ENDPOINT`, or a
//! `moto_server` started here):
//!
//! - cold remote gathers (no cache, and an empty cache) against raw
//!   `object_store` `get_range` calls for the same records at the same
//!   concurrency — each record fetched from a flat object, as from an
//!   `.npy` file with an offsets array;
//! - warm cache against a local store read cold with `Io::Direct`;
//! - block-shuffled batches against iid ones;
//! - the loader at two workers against a bare gather loop;
//! - the merge gap, swept.
//!
//! ```text
//! cargo bench -p zrecord-remote --bench remote [-- --quick]
//! ```
//!
//! The workloads are prefixes of the benchmark data sets (`benches/DATA.md`),
//! sized for a server that keeps everything in memory.

#[path = "../tests/support/mod.rs"]
mod support;

use support::proxy::Proxy;

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use zrecord::storage::{Io, IoStats, page_cache};
use zrecord::{Codec, DenseStore, DynDenseStore, OpenOptions, RaggedBatch, RaggedStore};
use zrecord_benches::{DENSE_A, DENSE_B, RaggedTokens};
use zrecord_loader::Loader;
use zrecord_remote::{Remote, RemoteOptions};
use zsampler::{Mode, Sampler};

const CONCURRENCY: usize = 32;

/// One workload as the bench uses it.
struct Workload {
    name: &'static str,
    records: u64,
    batch: u64,
    batches: u64,
    /// Each record's (offset, length) in the flat object.
    spans: Vec<(u64, u64)>,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let endpoint = match support::endpoint() {
        Ok(endpoint) => endpoint,
        Err(reason) => {
            eprintln!("skipped: no S3-compatible server: {reason}");
            return;
        }
    };
    let scale = if quick { 10 } else { 1 };
    let work = tempfile::tempdir().expect("temp dir");
    let bucket = support::bucket(endpoint, "bench");
    let raw = Arc::new(raw_store(endpoint, &bucket));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    println!(
        "server: {endpoint} (moto), {CONCURRENCY} requests in flight; MiB/s of records gathered"
    );
    println!();
    println!("| workload | system | requests / batch | MiB/s | × limit |");
    println!("| --- | --- | --: | --: | --: |");

    let a = dense(
        work.path(),
        endpoint,
        &bucket,
        DENSE_A.name,
        &DENSE_A.generate(100 / scale),
        DENSE_A.record_bytes(),
        16,
        8,
    );
    let b = dense(
        work.path(),
        endpoint,
        &bucket,
        DENSE_B.name,
        &DENSE_B.generate(20_000 / scale),
        DENSE_B.record_bytes(),
        256,
        8,
    );
    let c = ragged(
        work.path(),
        endpoint,
        &bucket,
        10_000 / scale as usize,
        64,
        8,
    );

    for w in [&a, &b, &c] {
        let plan: Vec<Vec<u64>> = (0..w.batches).map(|s| iid(w, s)).collect();
        let useful: u64 = plan.iter().flatten().map(|&i| w.spans[i as usize].1).sum();
        let mib = |t: Duration| useful as f64 / t.as_secs_f64() / (1 << 20) as f64;
        let url = format!("s3://{bucket}/stores/{}", w.name);

        // The requests zrecord makes for each batch, seen by a proxy.
        let proxy = Proxy::start(endpoint);
        let logged = gatherer(w, &url, support::s3_options(&proxy.endpoint));
        let requests: Vec<Vec<(ObjectPath, Range<u64>)>> = plan
            .iter()
            .map(|batch| {
                let from = proxy.ranged_gets();
                logged(batch);
                proxy
                    .ranges_since(from)
                    .into_iter()
                    .map(|(path, range)| (object_path(&path, &bucket), range))
                    .collect()
            })
            .collect();
        let per_batch = |n: usize| n as f64 / w.batches as f64;
        let zrecord_requests = per_batch(requests.iter().map(Vec::len).sum());

        // The limit: the same requests, made by object_store directly.
        let limit = time(|| {
            requests
                .iter()
                .for_each(|r| get_ranges(&runtime, &raw, r.clone()))
        });
        let flat = ObjectPath::from(format!("flat/{}", w.name));
        let naive = time(|| {
            for batch in &plan {
                let spans = batch.iter().map(|&i| w.spans[i as usize]);
                get_ranges(
                    &runtime,
                    &raw,
                    spans.map(|(o, n)| (flat.clone(), o..o + n)).collect(),
                );
            }
        });
        let gather = gatherer(w, &url, support::s3_options(endpoint));
        let cold = time(|| plan.iter().for_each(|batch| gather(batch)));
        let row = |system: &str, requests: Option<f64>, t: Duration, ratio: Option<f64>| {
            let ratio = ratio.map_or(String::new(), |r| format!("{r:.2}"));
            let requests = requests.map_or("–".into(), |r| format!("{r:.0}"));
            println!(
                "| ({}) | {system} | {requests} | {:.1} | {ratio} |",
                w.name,
                mib(t)
            );
        };
        let x = |t: Duration| Some(limit.as_secs_f64() / t.as_secs_f64());
        row(
            "object_store get_range, zrecord's requests (the limit)",
            Some(zrecord_requests),
            limit,
            None,
        );
        row(
            "object_store get_range, one per record (flat file)",
            Some(w.batch as f64),
            naive,
            x(naive),
        );
        row(
            "zrecord remote, no cache",
            Some(zrecord_requests),
            cold,
            x(cold),
        );

        let cache = tempfile::tempdir().expect("temp dir");
        let cached = || support::s3_options(endpoint).cache(cache.path(), 4 << 30);
        let gather = gatherer(w, &url, cached());
        row(
            "zrecord remote, empty cache (1 MiB blocks)",
            None,
            time(|| plan.iter().for_each(|batch| gather(batch))),
            None,
        );
        let gather = gatherer(w, &url, cached());
        let warm = time(|| plan.iter().for_each(|batch| gather(batch)));

        let local = work.path().join(w.name);
        page_cache::evict(&local).expect("evict");
        let gather = local_gatherer(w, &local);
        let local_cold = time(|| plan.iter().for_each(|batch| gather(batch)));
        row("local store, cold, `Io::Direct`", None, local_cold, None);
        let ratio = local_cold.as_secs_f64() / warm.as_secs_f64();
        row(
            "zrecord remote, warm cache (× local cold)",
            None,
            warm,
            Some(ratio),
        );
    }

    // Block-shuffled batches of (b): runs of neighbours merge into few requests.
    let url = format!("s3://{bucket}/stores/b");
    let gather = gatherer(&b, &url, support::s3_options(endpoint));
    let iid_plan: Vec<Vec<u64>> = (0..b.batches).map(|s| iid(&b, s)).collect();
    let sampler = Sampler::builder(b.records, b.batch)
        .seed(1)
        .mode(Mode::Block {
            block_size: 1024,
            window_blocks: 4,
        })
        .build()
        .expect("sampler");
    let block_plan: Vec<Vec<u64>> = (0..b.batches).map(|s| sampler.batch_at(s)).collect();
    let t_iid = time(|| iid_plan.iter().for_each(|batch| gather(batch)));
    let t_block = time(|| block_plan.iter().for_each(|batch| gather(batch)));
    println!();
    println!(
        "(b) block shuffle (blocks of 1,024, windows of 4) ÷ iid, no cache: {:.1}× ({:?} against {:?})",
        t_iid.as_secs_f64() / t_block.as_secs_f64(),
        t_block,
        t_iid
    );

    // The loader at two workers against a bare loop, (a), no cache.
    let url = format!("s3://{bucket}/stores/a");
    let store = remote_dense(&url, support::s3_options(endpoint));
    let steps = a.batches * 2;
    let sampler = Sampler::builder(a.records, a.batch)
        .seed(3)
        .mode(Mode::Iid)
        .build()
        .expect("sampler");
    let mut out = vec![0u8; (a.batch * a.spans[0].1) as usize];
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let bare = time(|| {
            for s in 0..steps {
                store
                    .gather_into(&sampler.batch_at(s), &mut out)
                    .expect("gather");
            }
        });
        let mut loader = Loader::builder(a.batch)
            .stream("image", remote_dense(&url, support::s3_options(endpoint)))
            .seed(3)
            .mode(Mode::Iid)
            .workers(2)
            .build()
            .expect("loader");
        let looped = time(|| {
            for batch in loader.steps(steps) {
                batch.expect("batch");
            }
        });
        ratios.push(bare.as_secs_f64() / looped.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "(a) loader, 2 workers ÷ bare gather loop, no cache, three rounds: {:.2}× / {:.2}× / {:.2}× (median {:.2}×)",
        ratios[0], ratios[1], ratios[2], ratios[1]
    );

    // The merge gap, on (b) and (c) iid without a cache.
    println!();
    println!(
        "| merge gap | (b) ms/batch | (b) bytes fetched ÷ record bytes | (c) ms/batch | (c) bytes fetched ÷ record bytes |"
    );
    println!("| --: | --: | --: | --: | --: |");
    for gap in [0u64, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20] {
        let mut cells = Vec::new();
        for (w, name) in [(&b, "b"), (&c, "c")] {
            let url = format!("s3://{bucket}/stores/{name}");
            let gather = gatherer(w, &url, support::s3_options(endpoint).merge_gap(gap));
            let batches = 4;
            let plan: Vec<Vec<u64>> = (0..batches).map(|s| iid(w, s + 100)).collect();
            let useful: u64 = plan.iter().flatten().map(|&i| w.spans[i as usize].1).sum();
            let before = IoStats::this_thread();
            let t = time(|| plan.iter().for_each(|batch| gather(batch)));
            let fetched = IoStats::this_thread().since(&before).fetched_bytes;
            cells.push(format!(
                "{:.1} | {:.1}",
                t.as_secs_f64() * 1e3 / batches as f64,
                fetched as f64 / useful as f64
            ));
        }
        println!("| {} KiB | {} | {} |", gap >> 10, cells[0], cells[1]);
    }
}

/// Writes a raw dense store and its flat twin, uploads both.
#[allow(clippy::too_many_arguments)]
fn dense(
    dir: &Path,
    endpoint: &str,
    bucket: &str,
    name: &'static str,
    bytes: &[u8],
    record: usize,
    batch: u64,
    batches: u64,
) -> Workload {
    let path = dir.join(name);
    let store = DenseStore::<u8>::create(&path, &[record], Codec::Raw).expect("create");
    store.append(bytes).expect("append");
    drop(store);
    support::upload(endpoint, bucket, &format!("stores/{name}"), &path);
    put(endpoint, bucket, &format!("flat/{name}"), bytes);
    let records = (bytes.len() / record) as u64;
    let spans = (0..records)
        .map(|r| (r * record as u64, record as u64))
        .collect();
    Workload {
        name,
        records,
        batch,
        batches,
        spans,
    }
}

/// Writes a raw ragged store of (c)'s first `records` records and its flat twin.
fn ragged(
    dir: &Path,
    endpoint: &str,
    bucket: &str,
    records: usize,
    batch: u64,
    batches: u64,
) -> Workload {
    let tokens = RaggedTokens::generate(records);
    let path = dir.join("c");
    let store = RaggedStore::<i32>::create(&path, Codec::Raw).expect("create");
    let all: Vec<&[i32]> = (0..records).map(|r| tokens.record(r)).collect();
    store.append_slices(&all).expect("append");
    drop(store);
    support::upload(endpoint, bucket, "stores/c", &path);
    put(
        endpoint,
        bucket,
        "flat/c",
        bytemuck::cast_slice(&tokens.tokens),
    );
    let spans = (0..records)
        .map(|r| (tokens.offsets[r] as u64 * 4, tokens.lengths[r] as u64 * 4))
        .collect();
    Workload {
        name: "c",
        records: records as u64,
        batch,
        batches,
        spans,
    }
}

fn put(endpoint: &str, bucket: &str, key: &str, body: &[u8]) {
    assert_eq!(
        support::http(endpoint, "PUT", &format!("/{bucket}/{key}"), body),
        200,
        "upload {key}"
    );
}

fn iid(w: &Workload, step: u64) -> Vec<u64> {
    Sampler::builder(w.records, w.batch)
        .seed(9)
        .mode(Mode::Iid)
        .build()
        .expect("sampler")
        .batch_at(step)
}

fn remote_dense(url: &str, options: RemoteOptions) -> DenseStore<u8> {
    let remote = Arc::new(Remote::open(url, options).expect("open remote"));
    OpenOptions::new()
        .read_only(true)
        .open::<DynDenseStore>(remote)
        .expect("open store")
        .typed::<u8>()
        .expect("u8")
}

/// Gathers one batch (into a buffer it keeps).
type Gather = Box<dyn Fn(&[u64])>;

/// A gather of one batch from the remote store at `url`.
fn gatherer(w: &Workload, url: &str, options: RemoteOptions) -> Gather {
    if w.name == "c" {
        let remote = Arc::new(Remote::open(url, options).expect("open remote"));
        let store = OpenOptions::new()
            .read_only(true)
            .open::<zrecord::DynRaggedStore>(remote)
            .expect("open store")
            .typed::<i32>()
            .expect("i32");
        let out = std::cell::RefCell::new(RaggedBatch::<i32>::new());
        Box::new(move |batch| {
            store
                .gather_into(batch, &mut out.borrow_mut())
                .expect("gather")
        })
    } else {
        let store = remote_dense(url, options);
        let out = std::cell::RefCell::new(vec![0u8; (w.batch * w.spans[0].1) as usize]);
        Box::new(move |batch| {
            store
                .gather_into(batch, &mut out.borrow_mut())
                .expect("gather")
        })
    }
}

/// A gather of one batch from the local store at `path`, read with `Io::Direct`.
fn local_gatherer(w: &Workload, path: &Path) -> Gather {
    let options = OpenOptions::new().read_only(true).io(Io::Direct);
    if w.name == "c" {
        let store = options.open::<RaggedStore<i32>>(path).expect("open");
        let out = std::cell::RefCell::new(RaggedBatch::<i32>::new());
        Box::new(move |batch| {
            store
                .gather_into(batch, &mut out.borrow_mut())
                .expect("gather")
        })
    } else {
        let store = options.open::<DenseStore<u8>>(path).expect("open");
        let out = std::cell::RefCell::new(vec![0u8; (w.batch * w.spans[0].1) as usize]);
        Box::new(move |batch| {
            store
                .gather_into(batch, &mut out.borrow_mut())
                .expect("gather")
        })
    }
}

/// The raw client the baseline uses, with the server's test credentials.
fn raw_store(endpoint: &str, bucket: &str) -> impl ObjectStore {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_bucket_name(bucket)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_region("us-east-1")
        .build()
        .expect("S3 client")
}

/// Makes each request with one `get_range`, `CONCURRENCY` in flight.
fn get_ranges(
    runtime: &tokio::runtime::Runtime,
    store: &Arc<impl ObjectStore>,
    requests: Vec<(ObjectPath, Range<u64>)>,
) {
    runtime.block_on(async {
        let answers: Vec<_> = futures::stream::iter(requests)
            .map(|(path, range)| async move { store.get_range(&path, range).await })
            .buffered(CONCURRENCY)
            .try_collect()
            .await
            .expect("get_range");
        std::hint::black_box(answers);
    });
}

/// The object path of a request path `/bucket/key`.
fn object_path(request: &str, bucket: &str) -> ObjectPath {
    let key = request
        .trim_start_matches('/')
        .trim_start_matches(bucket)
        .trim_start_matches('/');
    ObjectPath::from(key)
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}
