//! An HTTP front end for a [`Batcher`] (feature `http`): a small synchronous
//! server ([`tiny_http`]) with a pool of handler threads.
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /predict` with `{"ids": [3, 14, 15]}` | `200 {"predictions": [...]}`: the model's output rows for those records, in order (numbers, or arrays for outputs of rank > 1) |
//! | `GET /health` | `200 {"status": "ok", "records": N}` (`503` while shutting down) |
//! | `GET /metrics` | `200` with the [`MetricsSnapshot`](crate::MetricsSnapshot) as JSON: `requests`, `failed`, `rejected`, `batches`, `records`, `mean_batch_size`, `mean_batch_requests`, `latency_ms` (`p50`, `p99`, `max`, `window`), `busy_s`, `uptime_s`, and the batching `config` |
//!
//! Every error is JSON, `{"error": "<message>", "code": "<code>"}`, and never
//! stops the server:
//!
//! | status | code | when |
//! | --- | --- | --- |
//! | 400 | `bad_json` | the body is not `{"ids": [non-negative integers]}` |
//! | 404 | `not_found` | another path |
//! | 405 | `method_not_allowed` | another method on a known path (with `Allow`) |
//! | 413 | `too_many_ids` | more ids than [`BatchConfig::max_batch`](crate::BatchConfig::max_batch) |
//! | 413 | `body_too_large` | a body over [`HttpConfig::max_body`] bytes |
//! | 422 | `unknown_ids` | ids the store does not have (listed in `ids`) |
//! | 503 | `overloaded`, `shutting_down` | the queue is full (with `Retry-After: 1`), or the server is stopping |
//! | 500 | `model_error` | the model or the store failed on this request |
//!
//! ```
//! use std::io::{Read, Write};
//! use candle_core::{Device, Tensor};
//! use zrecord::{Codec, DenseStore};
//! use zrecord_candle::http::{HttpConfig, HttpServer};
//! use zrecord_candle::{BatchConfig, Batcher, StorePredictor};
//! # let dir = tempfile::tempdir()?;
//!
//! let features = DenseStore::<f32>::create(dir.path().join("f"), &[2], Codec::Raw)?;
//! features.append(&[1.0, 2.0, 3.0, 4.0])?;
//! let predictor = StorePredictor::new(features, &Device::Cpu, |x: Tensor| x.sum(1))?;
//! let batcher = Batcher::start(predictor, BatchConfig::default())?;
//! let server = HttpServer::start("127.0.0.1:0", batcher, HttpConfig::default())?; // an ephemeral port
//!
//! let mut stream = std::net::TcpStream::connect(server.local_addr())?;
//! let body = r#"{"ids": [1, 0]}"#;
//! write!(stream, "POST /predict HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len())?;
//! let mut answer = String::new();
//! stream.read_to_string(&mut answer)?;
//! assert!(answer.starts_with("HTTP/1.1 200"));
//! assert!(answer.ends_with(r#"{"predictions":[7.0,3.0]}"#));
//! server.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use candle_core::{DType, Tensor};
use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response};

use crate::{Batcher, Error, Result};

/// Settings of an [`HttpServer`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Handler threads. Each holds one request while it waits for its batch,
    /// so this bounds how many requests can share a batch. Default 64.
    pub threads: usize,
    /// Largest request body accepted, in bytes. Default 1 MiB.
    pub max_body: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            threads: 64,
            max_body: 1 << 20,
        }
    }
}

impl HttpConfig {
    /// Sets [`threads`](Self::threads).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets [`max_body`](Self::max_body).
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }
}

/// A running HTTP server over a [`Batcher`]; see the [module docs](self)
/// for the routes and errors.
///
/// [`shutdown`](Self::shutdown) (or dropping it) stops taking requests,
/// answers those already received, and joins its threads; on Linux the port
/// refuses connections from the moment it returns (elsewhere, once the
/// server's accept thread has ended). The batcher stops when its last clone
/// drops.
pub struct HttpServer {
    server: Arc<tiny_http::Server>,
    /// A second handle on the listening socket, to close the port at once on
    /// shutdown (the server's own handle lives in its accept thread).
    listener: Option<TcpListener>,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

struct Shared {
    batcher: Batcher,
    config: HttpConfig,
    stop: AtomicBool,
}

impl HttpServer {
    /// Listens on `addr` (`"127.0.0.1:0"` for an ephemeral port) and starts
    /// the handler threads.
    ///
    /// # Errors
    /// [`Error::Config`] for zero threads; [`Error::Io`] when the address
    /// cannot be bound or a thread cannot be started.
    pub fn start(
        addr: impl ToSocketAddrs,
        batcher: Batcher,
        config: HttpConfig,
    ) -> Result<HttpServer> {
        if config.threads == 0 {
            return Err(Error::Config("threads must be at least 1".into()));
        }
        let listener = TcpListener::bind(addr).map_err(|source| Error::Io {
            what: "cannot listen on the address".into(),
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| Error::Io {
            what: "cannot read the listening address".into(),
            source,
        })?;
        let second = listener.try_clone().map_err(|source| Error::Io {
            what: "cannot duplicate the listening socket".into(),
            source,
        })?;
        let server = tiny_http::Server::from_listener(listener, None).map_err(|e| Error::Io {
            what: format!("cannot start the HTTP server on {addr}"),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut server = HttpServer {
            server: Arc::new(server),
            listener: Some(second),
            shared: Arc::new(Shared {
                batcher,
                config,
                stop: AtomicBool::new(false),
            }),
            workers: Vec::new(),
            addr,
        };
        for k in 0..server.shared.config.threads {
            let (http, shared) = (Arc::clone(&server.server), Arc::clone(&server.shared));
            let worker = std::thread::Builder::new()
                .name(format!("zrecord-http-{k}"))
                .spawn(move || work(&http, &shared))
                .map_err(|source| Error::Io {
                    what: "cannot start an HTTP handler thread".into(),
                    source,
                })?; // dropping `server` stops the ones started
            server.workers.push(worker);
        }
        Ok(server)
    }

    /// The address it listens on (with the port chosen for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The batcher behind it.
    pub fn batcher(&self) -> &Batcher {
        &self.shared.batcher
    }

    /// Stops taking requests, answers those already received and joins the
    /// handler threads.
    pub fn shutdown(self) {
        drop(self);
    }

    fn stop(&mut self) {
        if let Some(listener) = self.listener.take() {
            // Shutting down a listening socket's reading side stops it
            // listening (Linux): new connections are refused from here on.
            // Elsewhere this may fail, and the port closes with the accept
            // thread instead.
            let _ = TcpStream::from(OwnedFd::from(listener)).shutdown(Shutdown::Read);
        }
        self.shared.stop.store(true, Ordering::Release);
        for _ in 0..self.workers.len() {
            self.server.unblock();
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .field("config", &self.shared.config)
            .field("batcher", &self.shared.batcher)
            .finish_non_exhaustive()
    }
}

/// A handler thread: take requests until stopped, then answer what is
/// already queued.
fn work(server: &tiny_http::Server, shared: &Shared) {
    while !shared.stop.load(Ordering::Acquire) {
        match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(request)) => handle_guarded(request, shared),
            Ok(None) => {}
            // An accept error reaches one handler; the server carries on.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    while let Ok(Some(request)) = server.try_recv() {
        handle_guarded(request, shared);
    }
}

fn handle_guarded(request: Request, shared: &Shared) {
    // Nothing a request does may take a handler down; a request dropped by
    // a panic is answered 500 by tiny_http.
    let _ = catch_unwind(AssertUnwindSafe(|| handle(request, shared)));
}

/// An answer: status, JSON body, extra headers.
struct Answer {
    status: u16,
    body: Value,
    headers: Vec<(&'static str, &'static str)>,
    /// A refusal the batcher has not counted (it counts its own).
    uncounted_refusal: bool,
}

impl Answer {
    fn ok(body: Value) -> Answer {
        Answer {
            status: 200,
            body,
            headers: Vec::new(),
            uncounted_refusal: false,
        }
    }

    fn error(status: u16, code: &str, message: impl std::fmt::Display) -> Answer {
        Answer {
            status,
            body: json!({ "error": message.to_string(), "code": code }),
            headers: Vec::new(),
            uncounted_refusal: (400..500).contains(&status),
        }
    }

    fn with_header(mut self, name: &'static str, value: &'static str) -> Answer {
        self.headers.push((name, value));
        self
    }
}

fn handle(mut request: Request, shared: &Shared) {
    let path = request.url().split('?').next().unwrap_or("");
    let answer = match (request.method(), path) {
        (Method::Post, "/predict") => predict(&mut request, shared),
        (Method::Get, "/health") => health(shared),
        (Method::Get, "/metrics") => Answer::ok(metrics(&shared.batcher)),
        (_, "/predict") => method_not_allowed("POST"),
        (_, "/health" | "/metrics") => method_not_allowed("GET"),
        _ => Answer::error(404, "not_found", format!("no route {path:?}")),
    };
    if answer.uncounted_refusal {
        shared.batcher.metrics().count_rejected();
    }
    respond(request, answer);
}

fn method_not_allowed(allow: &'static str) -> Answer {
    Answer::error(
        405,
        "method_not_allowed",
        format!("this path takes {allow}"),
    )
    .with_header("Allow", allow)
}

fn health(shared: &Shared) -> Answer {
    if shared.stop.load(Ordering::Acquire) || shared.batcher.is_shut_down() {
        let mut answer = Answer::error(503, "shutting_down", "the server is shutting down");
        answer.body["status"] = json!("shutting_down");
        return answer;
    }
    Answer::ok(json!({ "status": "ok", "records": shared.batcher.records() }))
}

/// The `/metrics` document.
pub fn metrics(batcher: &Batcher) -> Value {
    let m = batcher.metrics().snapshot();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let config = batcher.config();
    json!({
        "requests": m.requests,
        "failed": m.failed,
        "rejected": m.rejected,
        "batches": m.batches,
        "records": m.records,
        "mean_batch_size": m.mean_batch_size,
        "mean_batch_requests": m.mean_batch_requests,
        "latency_ms": {
            "p50": ms(m.latency_p50),
            "p99": ms(m.latency_p99),
            "max": ms(m.latency_max),
            "window": m.latency_window,
        },
        "busy_s": m.busy.as_secs_f64(),
        "uptime_s": m.uptime.as_secs_f64(),
        "config": {
            "max_batch": config.max_batch,
            "max_wait_ms": ms(config.max_wait),
            "max_requests": config.max_requests,
            "queue": config.queue,
        },
    })
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PredictBody {
    ids: Vec<u64>,
}

fn predict(request: &mut Request, shared: &Shared) -> Answer {
    let limit = shared.config.max_body;
    let too_large = || {
        Answer::error(
            413,
            "body_too_large",
            format!("the body may be at most {limit} bytes"),
        )
    };
    if request.body_length().is_some_and(|n| n > limit) {
        return too_large();
    }
    let mut body = Vec::new();
    let read = request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body);
    if let Err(e) = read {
        return Answer::error(400, "bad_request", format!("cannot read the body: {e}"));
    }
    if body.len() > limit {
        return too_large();
    }
    let ids = match serde_json::from_slice::<PredictBody>(&body) {
        Ok(body) => body.ids,
        Err(e) => {
            return Answer::error(
                400,
                "bad_json",
                format!("expected {{\"ids\": [non-negative integers]}}: {e}"),
            );
        }
    };
    if ids.is_empty() {
        return Answer::ok(json!({ "predictions": [] }));
    }
    match shared.batcher.predict(ids) {
        Ok(output) => match tensor_json(&output) {
            Ok(predictions) => Answer::ok(json!({ "predictions": predictions })),
            Err(e) => Answer::error(500, "model_error", e),
        },
        Err(e) => error_answer(e),
    }
}

fn error_answer(error: Error) -> Answer {
    let mut answer = match &error {
        Error::TooManyIds { .. } => Answer::error(413, "too_many_ids", &error),
        Error::UnknownIds { ids, .. } => {
            let mut answer = Answer::error(422, "unknown_ids", &error);
            answer.body["ids"] = json!(ids);
            answer
        }
        Error::Overloaded { .. } => {
            Answer::error(503, "overloaded", &error).with_header("Retry-After", "1")
        }
        Error::ShuttingDown => Answer::error(503, "shutting_down", &error),
        _ => Answer::error(500, "model_error", &error),
    };
    answer.uncounted_refusal = false; // the batcher counted it
    answer
}

fn respond(request: Request, answer: Answer) {
    let body = answer.body.to_string().into_bytes();
    let mut response = Response::from_data(body).with_status_code(answer.status);
    let headers = std::iter::once(("Content-Type", "application/json")).chain(answer.headers);
    for (name, value) in headers {
        if let Ok(header) = Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    // A client that has gone away is no error of the server's.
    let _ = request.respond(response);
}

/// A tensor as JSON: a number per element, arrays nested by its shape
/// (axis 0 outermost). Integers stay integers; floats become `f64`
/// (non-finite values become `null`).
///
/// # Errors
/// [`Error::Candle`] when the tensor cannot be read back.
pub fn tensor_json(tensor: &Tensor) -> Result<Value> {
    let flat = tensor.flatten_all()?;
    let values: Vec<Value> = match tensor.dtype() {
        DType::U8 => flat.to_vec1::<u8>()?.into_iter().map(Value::from).collect(),
        DType::U32 => flat
            .to_vec1::<u32>()?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::I16 => flat
            .to_vec1::<i16>()?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::I32 => flat
            .to_vec1::<i32>()?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::I64 => flat
            .to_vec1::<i64>()?
            .into_iter()
            .map(Value::from)
            .collect(),
        _ => flat
            .to_dtype(DType::F64)?
            .to_vec1::<f64>()?
            .into_iter()
            .map(Value::from)
            .collect(),
    };
    Ok(nest(values, tensor.dims()))
}

/// Nests row-major `values` by `dims`.
fn nest(values: Vec<Value>, dims: &[usize]) -> Value {
    match dims {
        [] => values.into_iter().next().unwrap_or(Value::Null),
        [_] => Value::Array(values),
        [_, rest @ ..] => {
            let row: usize = rest.iter().product();
            if row == 0 {
                return Value::Array((0..dims[0]).map(|_| nest(Vec::new(), rest)).collect());
            }
            let mut values = values.into_iter();
            Value::Array(
                (0..dims[0])
                    .map(|_| nest(values.by_ref().take(row).collect(), rest))
                    .collect(),
            )
        }
    }
}
