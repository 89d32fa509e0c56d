//! A fault-injecting HTTP proxy between the client and the server: the
//! ranged GETs it is told to spoil get a 503, a dropped connection, a stall
//! or a truncated body; everything else passes through.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What happens to a spoiled request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// `503 Service Unavailable`, the connection kept.
    Unavailable,
    /// The connection closed without an answer.
    Drop,
    /// No answer for this long, then the connection closed.
    Stall(Duration),
    /// The right status and length header, half the body, then closed.
    Truncate,
}

#[derive(Default)]
struct Script {
    next: VecDeque<Fault>,
    always: Option<Fault>,
    applied: usize,
    ranged_gets: usize,
    /// Every ranged GET's path and `Range` header, in arrival order.
    log: Vec<(String, String)>,
    /// Uploads (PUT and POST requests) let through before the rest are dropped.
    uploads_allowed: Option<usize>,
    uploads: usize,
    /// Ranged GETs being answered now: an id, the path and the bytes.
    in_flight: Vec<(usize, String, std::ops::Range<u64>)>,
    /// Pairs of ranged GETs of overlapping bytes of one object that were in
    /// flight at the same time.
    overlapping: Vec<String>,
}

/// `bytes=a-b` as `a..b + 1`.
fn parse_range(range: &str) -> Option<std::ops::Range<u64>> {
    let (start, end) = range.trim().strip_prefix("bytes=")?.split_once('-')?;
    Some(start.parse().ok()?..end.parse::<u64>().ok()? + 1)
}

/// A running proxy; it serves until the test process ends.
pub(crate) struct Proxy {
    /// `http://127.0.0.1:port` of the proxy.
    pub(crate) endpoint: String,
    script: Arc<Mutex<Script>>,
}

impl Proxy {
    /// Starts a proxy in front of the server at `upstream` (`http://host:port`).
    pub(crate) fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_string();
        let script = Arc::new(Mutex::new(Script::default()));
        let shared = Arc::clone(&script);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (upstream, script) = (upstream.clone(), Arc::clone(&shared));
                std::thread::spawn(move || serve(client, &upstream, &script));
            }
        });
        Proxy { endpoint, script }
    }

    /// Spoils the next ranged GETs, one fault each, in order.
    pub(crate) fn then(&self, faults: &[Fault]) {
        self.script.lock().unwrap().next.extend(faults);
    }

    /// Spoils every ranged GET once the queued faults are used (`None`: none).
    pub(crate) fn always(&self, fault: Option<Fault>) {
        self.script.lock().unwrap().always = fault;
    }

    /// Lets `n` more uploads (PUT and POST requests) through, then drops
    /// every later one (`None`: no limit).
    pub(crate) fn allow_uploads(&self, n: Option<usize>) {
        let mut script = self.script.lock().unwrap();
        script.uploads_allowed = n.map(|n| script.uploads + n);
    }

    /// Faults applied so far.
    pub(crate) fn applied(&self) -> usize {
        self.script.lock().unwrap().applied
    }

    /// Ranged GETs seen so far, spoiled or not.
    pub(crate) fn ranged_gets(&self) -> usize {
        self.script.lock().unwrap().ranged_gets
    }

    /// Each ranged GET from the `from`-th on: the object's path (bucket
    /// first) and the bytes asked for.
    pub(crate) fn ranges_since(&self, from: usize) -> Vec<(String, std::ops::Range<u64>)> {
        let script = self.script.lock().unwrap();
        script.log[from.min(script.log.len())..]
            .iter()
            .filter_map(|(path, range)| Some((path.clone(), parse_range(range)?)))
            .collect()
    }

    /// Ranged GETs of overlapping bytes of one object whose paths end with
    /// `suffix` that were in flight at the same time, described.
    pub(crate) fn overlapping(&self, suffix: &str) -> Vec<String> {
        let script = self.script.lock().unwrap();
        script
            .overlapping
            .iter()
            .filter(|o| o.contains(suffix))
            .cloned()
            .collect()
    }
}

fn serve(mut client: TcpStream, upstream: &str, script: &Mutex<Script>) {
    loop {
        let Some((head, body)) = read_request(&mut client) else {
            return;
        };
        let range = head.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case("range")
                .then(|| value.to_string())
        });
        let ranged_get = head.starts_with("GET ") && range.is_some();
        if head.starts_with("PUT ") || head.starts_with("POST ") {
            let mut s = script.lock().unwrap();
            s.uploads += 1;
            if s.uploads_allowed.is_some_and(|allowed| s.uploads > allowed) {
                return;
            }
        }
        let fault = if ranged_get {
            let mut s = script.lock().unwrap();
            s.ranged_gets += 1;
            let path = head.split_whitespace().nth(1).unwrap_or_default();
            let path = path.split('?').next().unwrap_or_default().to_string();
            s.log.push((path, range.unwrap_or_default()));
            let fault = s.next.pop_front().or(s.always);
            s.applied += usize::from(fault.is_some());
            fault
        } else {
            None
        };
        match fault {
            Some(Fault::Unavailable) => {
                let answer = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
                if client.write_all(answer).is_err() {
                    return;
                }
            }
            Some(Fault::Drop) => return,
            Some(Fault::Stall(d)) => {
                std::thread::sleep(d);
                return;
            }
            Some(Fault::Truncate) => {
                let Some((head, body)) = forward(upstream, &head, &body) else {
                    return;
                };
                let _ = client.write_all(head.as_bytes());
                let _ = client.write_all(&body[..body.len() / 2]);
                return;
            }
            None => {
                let flight = ranged_get.then(|| begin_flight(script, &head));
                let answered = forward(upstream, &head, &body);
                if let Some((head, body)) = &answered {
                    let _ = client.write_all(head.as_bytes());
                    let _ = client.write_all(body);
                }
                if let Some(Some(id)) = flight {
                    script.lock().unwrap().in_flight.retain(|(i, ..)| *i != id);
                }
                return; // the answer says `Connection: close`
            }
        }
    }
}

/// Registers a ranged GET as in flight, noting any overlapping one already
/// in flight; returns its id.
fn begin_flight(script: &Mutex<Script>, head: &str) -> Option<usize> {
    let path = head
        .split_whitespace()
        .nth(1)?
        .split('?')
        .next()?
        .to_string();
    let range = head.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case("range")
            .then(|| parse_range(value))?
    })?;
    let mut s = script.lock().unwrap();
    let id = s.ranged_gets;
    let clashes: Vec<String> = s
        .in_flight
        .iter()
        .filter(|(_, p, r)| *p == path && r.start < range.end && range.start < r.end)
        .map(|(_, p, r)| format!("{p}: {r:?} and {range:?} at once"))
        .collect();
    s.overlapping.extend(clashes);
    s.in_flight.push((id, path, range));
    Some(id)
}

/// One request's head (up to the blank line) and body; `None` at the end.
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let length = header(&head, "content-length").unwrap_or(0);
    let mut body = data[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

fn header(head: &str, name: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().parse().ok())?
    })
}

/// Sends the request to `upstream` on a connection of its own and returns
/// the answer's head (with `Connection: close`) and body.
fn forward(upstream: &str, head: &str, body: &[u8]) -> Option<(String, Vec<u8>)> {
    let mut server = TcpStream::connect(upstream).ok()?;
    server.write_all(with_close(head).as_bytes()).ok()?;
    server.write_all(body).ok()?;
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).ok()?;
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&answer[..end]).to_string();
    Some((with_close(&head), answer[end..].to_vec()))
}

/// `head` with its `Connection` header replaced by `Connection: close`.
fn with_close(head: &str) -> String {
    let mut out: String = head
        .trim_end()
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    out.push_str("Connection: close\r\n\r\n");
    out
}
