//! The HTTP front end on an ephemeral loopback port: concurrent predictions
//! equal offline batched inference, and every bad request is a 4xx JSON
//! error after which the server still serves. Every socket has a timeout,
//! so a hang fails the test instead of stalling it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use candle_core::{D, Device, Tensor};
use serde_json::{Value, json};
use zrecord::{Codec, DenseStore};
use zrecord_candle::http::{HttpConfig, HttpServer};
use zrecord_candle::{BatchConfig, Batcher, StorePredictor};

const TIMEOUT: Duration = Duration::from_secs(20);

/// One request on a fresh connection: status, headers, body as JSON.
fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String, Value) {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(TIMEOUT)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("an answer before the timeout");
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .expect("a complete HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let json = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    (status, head.to_string(), json)
}

/// A server over 40 records of 3 floats: the model picks the largest feature.
fn server(
    dir: &std::path::Path,
) -> (
    HttpServer,
    StorePredictor<impl Fn(Tensor) -> candle_core::Result<Tensor> + Send + Sync + 'static>,
) {
    let features = DenseStore::<f32>::create(dir.join("f"), &[3], Codec::Zstd).unwrap();
    let values: Vec<f32> = (0..120).map(|i| ((i * 7919) % 97) as f32).collect();
    features.append(&values).unwrap();
    let store = std::sync::Arc::new(features.into_dyn());
    let forward = |x: Tensor| x.argmax(D::Minus1);
    let offline =
        StorePredictor::new(std::sync::Arc::clone(&store), &Device::Cpu, forward).unwrap();
    let predictor = StorePredictor::new(store, &Device::Cpu, forward).unwrap();
    let config = BatchConfig::default()
        .with_max_batch(16)
        .with_max_wait(Duration::from_millis(5));
    let batcher = Batcher::start(predictor, config).unwrap();
    let http = HttpServer::start(
        "127.0.0.1:0",
        batcher,
        HttpConfig::default().with_threads(8).with_max_body(4096),
    )
    .unwrap();
    (http, offline)
}

#[test]
fn concurrent_predictions_equal_offline_batched_inference() {
    use zrecord_candle::Predictor;
    let dir = tempfile::tempdir().unwrap();
    let (server, offline) = server(dir.path());
    let addr = server.local_addr();
    let requests: Vec<Vec<u64>> = (0..48u64)
        .map(|k| (0..1 + k % 4).map(|j| (k * 5 + j * 11) % 40).collect())
        .collect();
    let answers: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = requests
            .chunks(6)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|ids| {
                            let (status, _, body) =
                                call(addr, "POST", "/predict", &json!({ "ids": ids }).to_string());
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
    let all: Vec<u64> = requests.iter().flatten().copied().collect();
    let expected = offline.predict(&all).unwrap().to_vec1::<u32>().unwrap();
    let mut at = 0;
    for (ids, answer) in requests.iter().zip(&answers) {
        let want: Vec<u32> = expected[at..at + ids.len()].to_vec();
        at += ids.len();
        assert_eq!(answer["predictions"], json!(want), "ids {ids:?}");
    }
    let (status, _, metrics) = call(addr, "GET", "/metrics", "");
    assert_eq!(status, 200);
    assert_eq!(metrics["requests"], json!(48));
    assert_eq!(metrics["records"], json!(all.len()));
    assert!(metrics["batches"].as_u64().unwrap() <= 48);
    assert!(metrics["mean_batch_size"].as_f64().unwrap() >= 1.0);
    assert!(
        metrics["latency_ms"]["p99"].as_f64().unwrap()
            >= metrics["latency_ms"]["p50"].as_f64().unwrap()
    );
    server.shutdown();
    // When shutdown returns the port refuses connections (Linux; elsewhere
    // it closes once the server's accept thread ends).
    if cfg!(target_os = "linux") {
        let refused = TcpStream::connect_timeout(&addr, TIMEOUT);
        assert!(refused.is_err(), "the port still accepts after shutdown");
    }
}

#[test]
fn bad_requests_are_4xx_json_errors_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = server(dir.path());
    let addr = server.local_addr();
    let too_many = json!({ "ids": vec![0; 17] }).to_string();
    let huge = format!("{{\"ids\": [{}0]}}", "0, ".repeat(2000));
    let cases: &[(&str, &str, &str, u16, &str)] = &[
        (
            "POST",
            "/predict",
            r#"{"ids": [1, 40]}"#,
            422,
            "unknown_ids",
        ),
        ("POST", "/predict", r#"{"ids": [1, 2"#, 400, "bad_json"),
        ("POST", "/predict", r#"{"ids": [-1]}"#, 400, "bad_json"),
        ("POST", "/predict", r#"{"ids": [1.5]}"#, 400, "bad_json"),
        ("POST", "/predict", r#"{"id": [1]}"#, 400, "bad_json"),
        ("POST", "/predict", "", 400, "bad_json"),
        ("POST", "/predict", "\u{0}\u{1}binary", 400, "bad_json"),
        ("POST", "/predict", &too_many, 413, "too_many_ids"),
        ("POST", "/predict", &huge, 413, "body_too_large"),
        ("GET", "/predict", "", 405, "method_not_allowed"),
        ("DELETE", "/health", "", 405, "method_not_allowed"),
        ("POST", "/metrics", "{}", 405, "method_not_allowed"),
        ("GET", "/nope", "", 404, "not_found"),
        ("GET", "/", "", 404, "not_found"),
    ];
    for &(method, path, body, status, code) in cases {
        let (got, head, answer) = call(addr, method, path, body);
        assert_eq!(
            (got, answer["code"].as_str()),
            (status, Some(code)),
            "{method} {path} {body:.40}: {answer}"
        );
        assert!(answer["error"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/json")
        );
        if status == 405 {
            assert!(head.contains("Allow: "), "{head}");
        }
        // Still serving after each.
        let (ok, _, health) = call(addr, "GET", "/health", "");
        assert_eq!((ok, &health["status"]), (200, &json!("ok")));
    }
    let (_, _, unknown) = call(addr, "POST", "/predict", r#"{"ids": [41, 3, 99]}"#);
    assert_eq!(unknown["ids"], json!([41, 99]));
    let (status, _, empty) = call(addr, "POST", "/predict?verbose=1", r#"{"ids": []}"#);
    assert_eq!((status, &empty), (200, &json!({ "predictions": [] })));
    let (status, _, one) = call(addr, "POST", "/predict", r#"{"ids": [7]}"#);
    assert_eq!(status, 200);
    assert_eq!(one["predictions"].as_array().map(Vec::len), Some(1));
    let (_, _, metrics) = call(addr, "GET", "/metrics", "");
    assert_eq!(metrics["rejected"], json!(cases.len() + 1));
    assert_eq!(metrics["config"]["max_batch"], json!(16));
}
