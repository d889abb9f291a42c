//! Load generator for `lt serve` (issue 23), driven by `bench/serve.py`.
//!
//! ```text
//! serve_load --url http://127.0.0.1:PORT --key KEY --program FILE --profile P
//!            --clients N --seconds S            # N clients in a loop for S seconds
//!            [--sequential --runs R]            # or R sessions one at a time
//!            [--warmup W] [--expect JSON] [--pid PID]... [--threads T]
//!            [--wait]                           # one POST with `Prefer: wait=60`
//! serve_load --call URL --body JSON ...         # a durable call answered when done (Restate)
//! ```
//!
//! A *session* is `POST /v1/sessions` (`{"program", "profile"}`), then
//! `GET /v1/sessions/{id}/events` read as Server-Sent Events until `event:
//! output`; its latency runs from the POST's submission to that event. With
//! `--wait` a session is one `POST /v1/sessions` with `Prefer: wait=60`,
//! answered with the ended session's view (`status`, `value`): the
//! request/response a service consumer makes, as Restate's ingress is. With
//! `--call URL` a session is one `POST URL` answered when the work is done
//! (Restate's ingress), so a peer is driven by the same client.
//!
//! Each of the N clients loops until the window closes; a session started
//! in the window is waited for and counted, and `seconds` runs to the last
//! one's end. Before the window each client runs W warm-up sessions (default
//! 2; 20 in all with `--sequential`), which are not counted.
//!
//! Prints one JSON object: `{mode, clients, sessions, seconds,
//! sessions_per_s, p50_ms, p99_ms, mean_ms, max_ms, errors, first_errors,
//! created_p50_ms, events_per_session, client_cpu_s, server_cpu_s}`
//! (`created_p50_ms`: submission to the answer of the POST, null for
//! `--call`). `client_cpu_s` is this
//! process's user + system time over the window (from `/proc/self/stat`),
//! to show the generator is not the bottleneck; `server_cpu_s` the same for
//! the processes given by `--pid`. An error is a failed connection, a
//! non-2xx answer, a stream that ends without its output, an output with
//! `ok` not `true`, or (with `--expect`) another value. Any error: the JSON
//! is printed all the same, then the exit code is 1.
//!
//! Without `--url` or `--call` (as under a plain `cargo bench`) it prints
//! its usage and exits 0: it needs a running server.

use serde_json::{json, Value as Json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: serve_load --url URL --key KEY --program FILE --profile P \
[--clients N --seconds S | --sequential --runs R] [--warmup W] [--expect JSON] [--pid PID]... \
[--threads T] [--timeout-s T] [--wait]\n       serve_load --call URL --body JSON [same options]\n\
(bench/serve.py starts a server and runs this against it)";

/// Stop a run after this many errors: the server is down or refusing.
const MAX_ERRORS: u64 = 1000;
/// First error messages kept for the report.
const KEPT_ERRORS: usize = 5;

enum Protocol {
    /// `lt serve`: POST a session, follow its events to the output.
    Session {
        url: String,
        key: String,
        body: Vec<u8>,
        /// One POST with `Prefer: wait=60` instead of a POST and a stream.
        wait: bool,
    },
    /// One POST answered when the work is done.
    Call { url: String, body: Vec<u8> },
}

struct Args {
    protocol: Protocol,
    clients: usize,
    seconds: f64,
    sequential: bool,
    runs: usize,
    warmup: Option<usize>,
    expect: Option<Json>,
    pids: Vec<u32>,
    threads: usize,
    timeout: Duration,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut url = None;
    let mut call = None;
    let mut key = String::new();
    let mut program = None;
    let mut profile = None;
    let mut body = None;
    let mut wait = false;
    let mut args = Args {
        protocol: Protocol::Call {
            url: String::new(),
            body: Vec::new(),
        },
        clients: 1,
        seconds: 15.0,
        sequential: false,
        runs: 300,
        warmup: None,
        expect: None,
        pids: Vec::new(),
        threads: 1,
        timeout: Duration::from_secs(60),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        // `cargo bench` passes `--bench` to a harness-less bench.
        if flag == "--bench" {
            continue;
        }
        if flag == "--sequential" {
            args.sequential = true;
            continue;
        }
        if flag == "--wait" {
            wait = true;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| -> Result<usize, String> {
            v.parse()
                .map_err(|_| format!("{flag}: {v:?} is not a number"))
        };
        match flag.as_str() {
            "--url" => url = Some(value.trim_end_matches('/').to_string()),
            "--call" => call = Some(value),
            "--key" => key = value,
            "--program" => {
                program = Some(
                    std::fs::read_to_string(&value)
                        .map_err(|e| format!("--program {value}: {e}"))?,
                )
            }
            "--profile" => profile = Some(value),
            "--body" => body = Some(value),
            "--clients" => args.clients = number(&value)?.max(1),
            "--seconds" => {
                args.seconds = value
                    .parse()
                    .map_err(|_| format!("--seconds: {value:?} is not a number"))?
            }
            "--runs" => args.runs = number(&value)?.max(1),
            "--warmup" => args.warmup = Some(number(&value)?),
            "--threads" => args.threads = number(&value)?.max(1),
            "--timeout-s" => args.timeout = Duration::from_secs(number(&value)? as u64),
            "--pid" => args.pids.push(
                value
                    .parse()
                    .map_err(|_| format!("--pid: {value:?} is not a process id"))?,
            ),
            "--expect" => {
                args.expect = Some(
                    serde_json::from_str(&value).map_err(|e| format!("--expect: not JSON: {e}"))?,
                )
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    args.protocol = match (url, call) {
        (None, None) => return Ok(None),
        (Some(url), None) => {
            let program = program.ok_or("--url needs --program FILE")?;
            let profile = profile.ok_or("--url needs --profile P")?;
            let body = json!({"program": program, "profile": profile}).to_string();
            Protocol::Session {
                url,
                key,
                body: body.into_bytes(),
                wait,
            }
        }
        (None, Some(url)) => Protocol::Call {
            url,
            body: body.unwrap_or_else(|| "null".into()).into_bytes(),
        },
        (Some(_), Some(_)) => return Err("give --url or --call, not both".into()),
    };
    Ok(Some(args))
}

/// What one session gave.
struct Done {
    /// From submission to the final event.
    latency: Duration,
    /// From submission to the answer of `POST /v1/sessions` (`None` for `--call`).
    created: Option<Duration>,
    /// Log events streamed.
    events: usize,
}

type SessionResult = Result<Done, String>;

/// One Server-Sent Event.
#[derive(Default)]
struct SseEvent {
    event: String,
    data: String,
}

/// Splits a byte stream into events (`\n` or `\r\n` line ends).
#[derive(Default)]
struct SseParser {
    buf: Vec<u8>,
    current: SseEvent,
    has_field: bool,
}

impl SseParser {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(nl) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + nl;
            let line = &self.buf[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if self.has_field {
                    out.push(std::mem::take(&mut self.current));
                    self.has_field = false;
                }
            } else if line[0] != b':' {
                let text = String::from_utf8_lossy(line);
                let (field, value) = match text.split_once(':') {
                    Some((f, v)) => (f.to_string(), v.strip_prefix(' ').unwrap_or(v).to_string()),
                    None => (text.to_string(), String::new()),
                };
                match field.as_str() {
                    "event" => self.current.event = value,
                    "data" => {
                        if !self.current.data.is_empty() {
                            self.current.data.push('\n');
                        }
                        self.current.data.push_str(&value);
                    }
                    _ => {}
                }
                self.has_field = true;
            }
            start = end + 1;
        }
        self.buf.drain(..start);
    }
}

fn check_value(value: Option<&Json>, expect: Option<&Json>) -> Result<(), String> {
    match (value, expect) {
        (_, None) => Ok(()),
        (Some(v), Some(e)) if v == e => Ok(()),
        (v, Some(e)) => Err(format!(
            "value {} is not the expected {e}",
            v.unwrap_or(&Json::Null)
        )),
    }
}

/// `POST /v1/sessions` (with `Prefer: prefer` when given): the answer's
/// JSON. Errors: no answer, a non-2xx status, a body that is not JSON.
async fn post_session(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: &[u8],
    prefer: Option<&str>,
) -> Result<Json, String> {
    let mut req = client
        .post(format!("{url}/v1/sessions"))
        .bearer_auth(key)
        .header("content-type", "application/json");
    if let Some(p) = prefer {
        req = req.header("prefer", p);
    }
    let resp = req
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| format!("POST /v1/sessions: {e}"))?;
    let status = resp.status();
    let text = resp
        .bytes()
        .await
        .map_err(|e| format!("POST /v1/sessions: reading the answer: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "POST /v1/sessions: {status}: {}",
            String::from_utf8_lossy(&text[..text.len().min(300)])
        ));
    }
    serde_json::from_slice(&text)
        .map_err(|e| format!("POST /v1/sessions: the answer is not JSON: {e}"))
}

/// A session: with `wait`, one `POST /v1/sessions` with `Prefer: wait=60`
/// whose answer is the ended session's view; else a POST, then its event
/// stream to `event: output`.
async fn lt_session(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: &[u8],
    expect: Option<&Json>,
    wait: bool,
) -> SessionResult {
    let t0 = Instant::now();
    if wait {
        let view = post_session(client, url, key, body, Some("wait=60")).await?;
        return waited(view, t0.elapsed(), expect);
    }
    let created = post_session(client, url, key, body, None).await?;
    let created_at = t0.elapsed();
    let id = created
        .get("id")
        .and_then(Json::as_str)
        .ok_or_else(|| format!("POST /v1/sessions: no id in {created}"))?;
    let mut stream = client
        .get(format!("{url}/v1/sessions/{id}/events"))
        .bearer_auth(key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("GET events of {id}: {e}"))?;
    if !stream.status().is_success() {
        return Err(format!("GET events of {id}: {}", stream.status()));
    }
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut logged = 0;
    let mut done: Option<Duration> = None;
    while let Some(chunk) = stream
        .chunk()
        .await
        .map_err(|e| format!("events of {id}: {e}"))?
    {
        parser.feed(&chunk, &mut events);
        for ev in events.drain(..) {
            match ev.event.as_str() {
                "log" => logged += 1,
                "output" if done.is_none() => {
                    let at = t0.elapsed();
                    let out: Json = serde_json::from_str(&ev.data)
                        .map_err(|e| format!("events of {id}: the output is not JSON: {e}"))?;
                    if out.get("ok") != Some(&Json::Bool(true)) {
                        return Err(format!("session {id} did not end ok: {}", ev.data));
                    }
                    check_value(out.get("value"), expect)
                        .map_err(|e| format!("session {id}: {e}"))?;
                    done = Some(at);
                }
                _ => {}
            }
        }
    }
    // Read to the stream's end, so that the connection goes back to the pool.
    done.map(|latency| Done {
        latency,
        created: Some(created_at),
        events: logged,
    })
    .ok_or_else(|| format!("the events of {id} ended without an output"))
}

/// The session a `Prefer: wait` answer shows, answered `at` after its
/// submission: done if it ended with the expected value.
fn waited(view: Json, at: Duration, expect: Option<&Json>) -> SessionResult {
    if view.get("status").and_then(Json::as_str) != Some("ended") {
        return Err(format!("the session did not end within the wait: {view}"));
    }
    check_value(view.get("value"), expect)?;
    Ok(Done {
        latency: at,
        created: Some(at),
        events: view.get("events").and_then(Json::as_u64).unwrap_or(0) as usize,
    })
}

async fn call_session(
    client: &reqwest::Client,
    url: &str,
    body: &[u8],
    expect: Option<&Json>,
) -> SessionResult {
    let t0 = Instant::now();
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = resp.status();
    let text = resp
        .bytes()
        .await
        .map_err(|e| format!("POST {url}: reading the answer: {e}"))?;
    let at = t0.elapsed();
    if !status.is_success() {
        return Err(format!(
            "POST {url}: {status}: {}",
            String::from_utf8_lossy(&text[..text.len().min(300)])
        ));
    }
    if expect.is_some() {
        let value: Json = serde_json::from_slice(&text)
            .map_err(|e| format!("POST {url}: the answer is not JSON: {e}"))?;
        check_value(Some(&value), expect)?;
    }
    Ok(Done {
        latency: at,
        created: None,
        events: 0,
    })
}

async fn one(client: &reqwest::Client, args: &Args) -> SessionResult {
    let work = async {
        match &args.protocol {
            Protocol::Session {
                url,
                key,
                body,
                wait,
            } => lt_session(client, url, key, body, args.expect.as_ref(), *wait).await,
            Protocol::Call { url, body } => {
                call_session(client, url, body, args.expect.as_ref()).await
            }
        }
    };
    match tokio::time::timeout(args.timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(format!("no final event within {:?}", args.timeout)),
    }
}

/// What the clients gathered.
#[derive(Default)]
struct Tally {
    latencies_ms: Vec<f64>,
    created_ms: Vec<f64>,
    events: usize,
    errors: u64,
    first_errors: Vec<String>,
}

impl Tally {
    fn add(&mut self, r: SessionResult) {
        match r {
            Ok(done) => {
                self.latencies_ms.push(done.latency.as_secs_f64() * 1000.0);
                if let Some(c) = done.created {
                    self.created_ms.push(c.as_secs_f64() * 1000.0);
                }
                self.events += done.events;
            }
            Err(e) => {
                self.errors += 1;
                if self.first_errors.len() < KEPT_ERRORS {
                    self.first_errors.push(e);
                }
            }
        }
    }
}

/// User + system CPU seconds of a process (all its threads), from
/// `/proc/PID/stat` (fields 14 and 15, in USER_HZ = 100 ticks per second on
/// Linux). `None` if it cannot be read.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn cpu_of(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|p| cpu_seconds(&p.to_string())).sum()
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn round(x: f64, places: i32) -> Json {
    let f = 10f64.powi(places);
    if x.is_finite() {
        json!((x * f).round() / f)
    } else {
        Json::Null
    }
}

async fn run(args: Arc<Args>) -> Json {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients.max(1) * 2)
        .tcp_nodelay(true)
        .build()
        .expect("an HTTP client");
    let tally = Arc::new(Mutex::new(Tally::default()));
    let warm = Arc::new(Mutex::new(Tally::default()));
    let cpu0;
    let server0;
    let t0;
    if args.sequential {
        for _ in 0..args.warmup.unwrap_or(20) {
            let r = one(&client, &args).await;
            warm.lock().expect("tally").add(r);
        }
        cpu0 = cpu_seconds("self");
        server0 = cpu_of(&args.pids);
        t0 = Instant::now();
        for _ in 0..args.runs {
            let r = one(&client, &args).await;
            let mut t = tally.lock().expect("tally");
            t.add(r);
            if t.errors >= MAX_ERRORS {
                break;
            }
        }
    } else {
        // Warm-up: every client at once, W sessions each.
        let per_client = args.warmup.unwrap_or(2);
        let mut tasks = Vec::new();
        for _ in 0..args.clients {
            let (client, args, warm) = (client.clone(), args.clone(), warm.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..per_client {
                    let r = one(&client, &args).await;
                    warm.lock().expect("tally").add(r);
                }
            }));
        }
        for t in tasks {
            t.await.expect("a warm-up client");
        }
        cpu0 = cpu_seconds("self");
        server0 = cpu_of(&args.pids);
        t0 = Instant::now();
        let deadline = t0 + Duration::from_secs_f64(args.seconds);
        let errors = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for _ in 0..args.clients {
            let (client, args, tally, errors) =
                (client.clone(), args.clone(), tally.clone(), errors.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < deadline && errors.load(Ordering::Relaxed) < MAX_ERRORS {
                    let r = one(&client, &args).await;
                    if r.is_err() {
                        errors.fetch_add(1, Ordering::Relaxed);
                        // No hot loop against a server that refuses.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    tally.lock().expect("tally").add(r);
                }
            }));
        }
        for t in tasks {
            t.await.expect("a client");
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let client_cpu = cpu_seconds("self").zip(cpu0).map(|(a, b)| a - b);
    let server_cpu = cpu_of(&args.pids).zip(server0).map(|(a, b)| a - b);
    let mut t = std::mem::take(&mut *tally.lock().expect("tally"));
    let w = std::mem::take(&mut *warm.lock().expect("tally"));
    let mut first_errors = w.first_errors.clone();
    first_errors.extend(t.first_errors.iter().cloned());
    first_errors.truncate(KEPT_ERRORS);
    t.latencies_ms.sort_by(f64::total_cmp);
    t.created_ms.sort_by(f64::total_cmp);
    let n = t.latencies_ms.len();
    let mean = t.latencies_ms.iter().sum::<f64>() / n.max(1) as f64;
    json!({
        "mode": if args.sequential { "sequential" } else { "concurrent" },
        "clients": if args.sequential { 1 } else { args.clients },
        "sessions": n,
        "seconds": round(seconds, 3),
        "sessions_per_s": round(n as f64 / seconds, 1),
        "p50_ms": round(percentile(&t.latencies_ms, 50.0), 3),
        "p99_ms": round(percentile(&t.latencies_ms, 99.0), 3),
        "mean_ms": round(mean, 3),
        "max_ms": round(t.latencies_ms.last().copied().unwrap_or(f64::NAN), 3),
        "errors": t.errors + w.errors,
        "warmup_errors": w.errors,
        "first_errors": first_errors,
        "created_p50_ms": round(percentile(&t.created_ms, 50.0), 3),
        "events_per_session": round(t.events as f64 / n.max(1) as f64, 2),
        "client_cpu_s": client_cpu.map_or(Json::Null, |c| round(c, 2)),
        "server_cpu_s": server_cpu.map_or(Json::Null, |c| round(c, 2)),
    })
}

fn main() {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("serve_load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let runtime = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    }
    .expect("a tokio runtime");
    let report = runtime.block_on(run(Arc::new(args)));
    println!("{report}");
    let errors = report["errors"].as_u64().unwrap_or(0);
    if errors > 0 {
        eprintln!(
            "serve_load: FAILED: {errors} sessions failed; first: {}",
            report["first_errors"]
        );
        std::process::exit(1);
    }
}
