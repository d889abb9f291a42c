//! The thick client (seed 001's Cursor-style execution, `lt run --server`):
//! a program sent to `lt serve` as a session, the calls the server routes
//! to the client venue run here with local executors, their outcomes
//! posted back, and the session's final output returned.
//!
//! ```text
//! submit ── POST /v1/sessions {program, profile, capabilities.tools}
//!   ├─▶ 201/200 {id}
//!   └─▶ 422 {output}: refused before it ran (lt run --json's rejection)
//! follow ── GET …/events (SSE), Last-Event-ID after a drop
//!   event: log        ──▶ the watcher (--verbose)
//!   event: tool_call  ──▶ a task: ExecutorHost::call_async ──▶ POST …/outcomes
//!   event: output     ──▶ the final output; calls still running are dropped
//!                         (their tools killed)
//!   event: failure    ──▶ a damaged record: the error (exit as for a 500);
//!                         a failed store: reconnect, as below
//!   stream ends or stalls ──▶ reconnect, at most RECONNECTS times in a row
//! ```
//!
//! Invariant: a call id is run at most once here, whatever the stream
//! repeats; an outcome is posted for each call run (retried while the
//! server cannot be reached, never after it answered). A call the server
//! hands over again under a new event id (a restarted server resuming the
//! session re-dispatches an idempotent client call) gets the outcome
//! already known, or the one of the run still going: never a second run.
//!
//! Everything is async on the caller's tokio runtime, which must be
//! multi-thread (the executor host's requirement).

use crate::exec::ExecutorHost;
use crate::runtime::deep_json::parse_str;
use crate::runtime::host::FailureKind;
use serde_json::{json, Value as Json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How many times in a row a dropped event stream is reopened.
pub const RECONNECTS: u32 = 6;

/// How long the stream may stay silent (the server sends a comment every
/// 15 s) before it counts as dropped.
pub const STREAM_IDLE: Duration = Duration::from_secs(45);

/// How long a request other than the stream may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting to the server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the client could not get a session's output.
#[derive(Debug)]
pub enum ClientError {
    /// The settings are wrong (the URL, the key).
    Usage {
        /// What is wrong.
        message: String,
        /// How to fix it.
        help: Option<String>,
    },
    /// The server could not be reached (or stopped answering).
    Unreachable {
        /// What failed, with the URL.
        message: String,
    },
    /// The server answered with an error status.
    Status {
        /// The HTTP status.
        status: u16,
        /// The error's `code` (empty when the body had none).
        code: String,
        /// The error's `message` (or the body's start).
        message: String,
        /// The error's `hint`.
        hint: Option<String>,
    },
    /// The server's answer was not what the API says.
    Protocol(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Usage { message, .. } => f.write_str(message),
            ClientError::Unreachable { message } => f.write_str(message),
            ClientError::Status {
                status,
                code,
                message,
                ..
            } => {
                let what = match status {
                    401 => "the server refused the API key",
                    404 => "the server has no such session or route",
                    s if *s >= 500 => "the server failed",
                    _ => "the server refused the request",
                };
                if code.is_empty() {
                    write!(f, "{what} (HTTP {status}): {message}")
                } else {
                    write!(f, "{what} (HTTP {status} {code}): {message}")
                }
            }
            ClientError::Protocol(m) => write!(f, "the server's answer is not lt serve's API: {m}"),
        }
    }
}

impl ClientError {
    /// How to fix it, when there is something to say.
    pub fn help(&self) -> Option<String> {
        match self {
            ClientError::Usage { help, .. } => help.clone(),
            ClientError::Unreachable { .. } => {
                Some("is `lt serve` running at that address? check --server".into())
            }
            ClientError::Status {
                status: 401, hint, ..
            } => Some(match hint {
                Some(h) => format!("set LT_API_KEY to a key of your tenant ({h})"),
                None => "set LT_API_KEY to a key of your tenant".into(),
            }),
            ClientError::Status { hint, .. } => hint.clone(),
            ClientError::Protocol(_) => Some("check that --server names an lt serve".into()),
        }
    }
}

/// What starting a session gave.
#[derive(Debug)]
pub enum Submitted {
    /// The session's id.
    Started(String),
    /// The server refused the program before it ran (HTTP 422): `lt run
    /// --json`'s rejection (or refusal) object.
    Refused(Json),
}

/// One Server-Sent Event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `event:` (`message` when not given).
    pub event: String,
    /// `id:`, when given.
    pub id: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Reads Server-Sent Events from chunks of bytes as they arrive: lines
/// `event:`, `id:`, `data:` (one space after the colon dropped), `:`
/// comments skipped, a blank line ends an event; `\n`, `\r\n` or `\r` end
/// a line.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The last byte was `\r` (a `\n` right after it ends nothing more).
    after_cr: bool,
    current: SseEvent,
    any: bool,
    data: Vec<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds `bytes`; the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            match b {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    let line = std::mem::take(&mut self.line);
                    if let Some(e) = self.line_ended(&String::from_utf8_lossy(&line)) {
                        out.push(e);
                    }
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    fn line_ended(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if !std::mem::take(&mut self.any) {
                return None;
            }
            let mut e = std::mem::take(&mut self.current);
            e.data = std::mem::take(&mut self.data).join("\n");
            if e.event.is_empty() {
                e.event = "message".into();
            }
            return Some(e);
        }
        if line.starts_with(':') {
            return None;
        }
        self.any = true;
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.current.event = value.to_string(),
            "id" => self.current.id = Some(value.to_string()),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }
}

/// What the client tells its caller as the session goes.
pub trait Watcher {
    /// A log event, as committed (`event: log`).
    fn log(&mut self, _event: &Json) {}
    /// Something worth a line on `--verbose`: a reconnection, an outcome
    /// the server did not take.
    fn notice(&mut self, _message: &str) {}
}

/// A watcher that is told nothing.
pub struct Quiet;

impl Watcher for Quiet {}

/// A connection to one server, for one tenant (its API key).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: String,
}

/// The chain of causes of an error, `: `-separated.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

impl Client {
    /// A client of the server at `url` (`http://HOST:PORT` or `https://…`,
    /// a trailing `/` allowed) with API key `key`. Errors: a URL that is
    /// not http(s), an empty key.
    pub fn new(url: &str, key: &str) -> Result<Client, ClientError> {
        let base = url.trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base).map_err(|e| ClientError::Usage {
            message: format!("--server {url} is not a URL: {e}"),
            help: Some("e.g. --server http://127.0.0.1:8080".into()),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(ClientError::Usage {
                message: format!("--server {url} is not an http:// or https:// URL"),
                help: Some("e.g. --server http://127.0.0.1:8080".into()),
            });
        }
        if key.is_empty() {
            return Err(ClientError::Usage {
                message: "the API key is empty".into(),
                help: Some("set LT_API_KEY to a key of your tenant".into()),
            });
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Usage {
                message: format!("cannot build the HTTP client: {}", chain(&e)),
                help: None,
            })?;
        Ok(Client {
            http,
            base,
            key: key.to_string(),
        })
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key)
    }

    fn unreachable(&self, e: &reqwest::Error) -> ClientError {
        ClientError::Unreachable {
            message: format!("cannot reach the server at {}: {}", self.base, chain(e)),
        }
    }

    /// Sends a request with a JSON body (or none); `(status, body text)`.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Json>,
        headers: &[(&str, &str)],
    ) -> Result<(u16, String), reqwest::Error> {
        let mut req = self.request(method, path).timeout(REQUEST_TIMEOUT);
        for (h, v) in headers {
            req = req.header(*h, *v);
        }
        if let Some(b) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let text = resp.text().await?;
        Ok((status, text))
    }

    /// Starts a session from `program` under the tenant's profile
    /// `profile`, saying the client runs `tools`. A request that may have
    /// reached the server is retried with the same `Idempotency-Key`, so
    /// the session starts once.
    pub async fn submit(
        &self,
        program: &str,
        profile: &str,
        tools: &[String],
    ) -> Result<Submitted, ClientError> {
        let body = json!({
            "program": program,
            "profile": profile,
            "capabilities": {"tools": tools},
        });
        let key = crate::log::new_session_id();
        let mut attempt = 0;
        let (status, text) = loop {
            match self
                .send(
                    reqwest::Method::POST,
                    "/v1/sessions",
                    Some(&body),
                    &[("Idempotency-Key", &key)],
                )
                .await
            {
                Ok(answer) => break answer,
                // Nothing was sent: the server is not there.
                Err(e) if e.is_connect() || attempt >= 2 => return Err(self.unreachable(&e)),
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(300 * attempt)).await;
                }
            }
        };
        let v: Json = serde_json::from_str(&text).unwrap_or(Json::Null);
        match status {
            200 | 201 => match v.get("id").and_then(Json::as_str) {
                Some(id) => Ok(Submitted::Started(id.to_string())),
                None => Err(ClientError::Protocol(format!(
                    "POST /v1/sessions answered {status} without an id: {}",
                    excerpt(&text)
                ))),
            },
            422 => match v.get("output") {
                Some(out) if out.is_object() => Ok(Submitted::Refused(out.clone())),
                _ => Err(status_error(status, &text)),
            },
            _ => Err(status_error(status, &text)),
        }
    }

    /// Asks the server to cancel session `id` (best effort: a session that
    /// is over is left as it is).
    pub async fn cancel(&self, id: &str) -> Result<(), ClientError> {
        let (status, text) = self
            .send(
                reqwest::Method::POST,
                &format!("/v1/sessions/{id}/cancel"),
                None,
                &[],
            )
            .await
            .map_err(|e| self.unreachable(&e))?;
        match status {
            202 | 409 => Ok(()),
            _ => Err(status_error(status, &text)),
        }
    }

    /// Session `id`'s log, as JSON Lines (`GET …/log`).
    pub async fn log(&self, id: &str) -> Result<String, ClientError> {
        let (status, text) = self
            .send(
                reqwest::Method::GET,
                &format!("/v1/sessions/{id}/log"),
                None,
                &[],
            )
            .await
            .map_err(|e| self.unreachable(&e))?;
        match status {
            200 => Ok(text),
            _ => Err(status_error(status, &text)),
        }
    }

    /// Follows session `id` to its end: runs each client-venue call the
    /// server hands over with `host` (none: every such call fails as
    /// unavailable), posts its outcome, tells `watcher` of each log event,
    /// and returns the final output (`lt run --json`'s object). Calls still
    /// running when the output arrives are dropped (their tools killed).
    pub async fn follow(
        &self,
        id: &str,
        host: Option<ExecutorHost>,
        watcher: &mut dyn Watcher,
    ) -> Result<Json, ClientError> {
        let mut last_id: Option<String> = None;
        let mut seen = HashSet::new();
        let outcomes = Arc::new(Mutex::new(HashMap::new()));
        let mut calls = tokio::task::JoinSet::new();
        let (notices, mut noticed) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut failures = 0u32;
        loop {
            let mut progressed = false;
            let ended = self
                .stream_once(
                    id,
                    &mut last_id,
                    &mut progressed,
                    &mut StreamState {
                        host: host.as_ref(),
                        seen: &mut seen,
                        outcomes: &outcomes,
                        calls: &mut calls,
                        notices: &notices,
                        noticed: &mut noticed,
                    },
                    watcher,
                )
                .await;
            while let Ok(n) = noticed.try_recv() {
                watcher.notice(&n);
            }
            let why = match ended {
                Ok(Some(output)) => {
                    calls.abort_all();
                    return Ok(output);
                }
                Ok(None) => "the event stream ended before the session's output".to_string(),
                Err(Stop::Fatal(e)) => return Err(e),
                Err(Stop::Retry(why)) => why,
            };
            if progressed {
                failures = 0;
            }
            failures += 1;
            if failures > RECONNECTS {
                return Err(ClientError::Unreachable {
                    message: format!(
                        "lost session {id}'s event stream at {} and could not reopen it ({RECONNECTS} attempts): {why}",
                        self.base
                    ),
                });
            }
            let wait = Duration::from_millis(250 << (failures - 1).min(4));
            watcher.notice(&format!(
                "the event stream dropped ({why}); reconnecting in {} ms (attempt {failures} of {RECONNECTS}{})",
                wait.as_millis(),
                last_id
                    .as_deref()
                    .map(|l| format!(", after event {l}"))
                    .unwrap_or_default()
            ));
            tokio::time::sleep(wait).await;
        }
    }

    /// Opens the stream once (after `last_id`) and reads it until the
    /// output, its end, or a failure.
    async fn stream_once(
        &self,
        id: &str,
        last_id: &mut Option<String>,
        progressed: &mut bool,
        st: &mut StreamState<'_>,
        watcher: &mut dyn Watcher,
    ) -> Result<Option<Json>, Stop> {
        let mut req = self
            .request(reqwest::Method::GET, &format!("/v1/sessions/{id}/events"))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(l) = last_id.as_deref() {
            req = req.header("Last-Event-ID", l);
        }
        let opened = tokio::time::timeout(REQUEST_TIMEOUT, req.send()).await;
        let mut resp = match opened {
            Err(_) => return Err(Stop::Retry("the server did not answer".into())),
            Ok(Err(e)) => return Err(Stop::Retry(chain(&e))),
            Ok(Ok(r)) => r,
        };
        let status = resp.status().as_u16();
        if status != 200 {
            let text = resp.text().await.unwrap_or_default();
            let e = status_error(status, &text);
            // A server restarting or shutting down answers 503 for a while.
            return Err(if status >= 500 {
                Stop::Retry(e.to_string())
            } else {
                Stop::Fatal(e)
            });
        }
        let mut parser = SseParser::new();
        loop {
            let chunk = tokio::time::timeout(STREAM_IDLE, resp.chunk()).await;
            while let Ok(n) = st.noticed.try_recv() {
                watcher.notice(&n);
            }
            let bytes = match chunk {
                Err(_) => {
                    return Err(Stop::Retry(format!(
                        "nothing came for {} s",
                        STREAM_IDLE.as_secs()
                    )))
                }
                Ok(Err(e)) => return Err(Stop::Retry(chain(&e))),
                Ok(Ok(None)) => return Ok(None),
                Ok(Ok(Some(b))) => b,
            };
            for e in parser.feed(&bytes) {
                *progressed = true;
                if let Some(i) = &e.id {
                    *last_id = Some(i.clone());
                }
                match e.event.as_str() {
                    "log" => {
                        if let Ok(v) = parse_str(&e.data, false) {
                            watcher.log(&v);
                        }
                    }
                    "tool_call" => {
                        let v: Json = parse_str(&e.data, false).map_err(|err| {
                            Stop::Fatal(ClientError::Protocol(format!(
                                "a tool_call event is not JSON ({err}): {}",
                                excerpt(&e.data)
                            )))
                        })?;
                        self.dispatch(id, e.id.as_deref(), v, st);
                    }
                    "output" => {
                        let v: Json = parse_str(&e.data, false).map_err(|err| {
                            Stop::Fatal(ClientError::Protocol(format!(
                                "the output event is not JSON ({err}): {}",
                                excerpt(&e.data)
                            )))
                        })?;
                        return Ok(Some(v));
                    }
                    // The server cannot go on with the stream: a damaged
                    // record is final, a failed store may come back.
                    "failure" => {
                        let v: Json = serde_json::from_str(&e.data).unwrap_or(Json::Null);
                        let damaged = v["error"]["code"] == "record_damaged";
                        let e = status_error(if damaged { 500 } else { 503 }, &e.data);
                        return Err(if damaged {
                            Stop::Fatal(e)
                        } else {
                            Stop::Retry(e.to_string())
                        });
                    }
                    _ => {}
                }
            }
        }
    }

    /// Starts a task that runs one client-venue call and posts its outcome
    /// (or, for a call handed over again, posts the outcome it had).
    fn dispatch(&self, id: &str, event_id: Option<&str>, call: Json, st: &mut StreamState<'_>) {
        let field = |k: &str| call.get(k).and_then(Json::as_str).unwrap_or("").to_string();
        let (call_id, tool, key) = (field("call_id"), field("tool"), field("idempotency_key"));
        if call_id.is_empty() {
            return;
        }
        if let Some(e) = event_id {
            if !st.seen.insert(e.to_string()) {
                return;
            }
        }
        let client = self.clone();
        let notices = st.notices.clone();
        let session = id.to_string();
        {
            let mut known = st.outcomes.lock().unwrap_or_else(PoisonError::into_inner);
            match known.get(&call_id) {
                // Running: its outcome is posted when it ends.
                Some(None) => return,
                Some(Some(body)) => {
                    let body = body.clone();
                    st.calls.spawn(async move {
                        if let Some(n) = client.post_outcome(&session, &call_id, &body).await {
                            let _ = notices.send(n);
                        }
                    });
                    return;
                }
                None => {
                    known.insert(call_id.clone(), None);
                }
            }
        }
        let argument = call.get("argument").cloned().unwrap_or(Json::Null);
        let host = st.host.cloned();
        let outcomes = Arc::clone(st.outcomes);
        st.calls.spawn(async move {
            let outcome = match &host {
                Some(h) => {
                    let key = (!key.is_empty()).then_some(key.as_str());
                    h.call_async(&tool, &argument, None, key).await
                }
                None => Err(crate::runtime::host::ToolFailure {
                    stderr: None,
                    kind: FailureKind::Unavailable,
                    message: format!(
                        "tool {tool} has no executor here (lt run --server without --executors)"
                    ),
                }),
            };
            let body = match outcome {
                Ok(v) => json!({"call_id": call_id, "ok": v}),
                Err(f) => {
                    // The server takes the kinds an executor can find.
                    let kind = match FailureKind::CLIENT_REPORTABLE.contains(&f.kind) {
                        true => f.kind,
                        false => FailureKind::Failed,
                    };
                    json!({"call_id": call_id, "error": f.message, "kind": kind.as_str()})
                }
            };
            outcomes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(call_id.clone(), Some(body.clone()));
            if let Some(n) = client.post_outcome(&session, &call_id, &body).await {
                let _ = notices.send(n);
            }
        });
    }

    /// Posts one outcome, retrying while the server cannot be reached or
    /// fails (5xx). An outcome the server refuses as a body (413: larger
    /// than it takes; 400: nested deeper than it reads) is posted as a
    /// `bad_output` failure in its place, so that the session does not
    /// wait for the client for good. `Some`: a notice for the
    /// watcher.
    async fn post_outcome(&self, id: &str, call_id: &str, body: &Json) -> Option<String> {
        let path = format!("/v1/sessions/{id}/outcomes");
        let mut attempt = 0u32;
        let mut smaller: Option<Json> = None;
        loop {
            let sent = smaller.as_ref().unwrap_or(body);
            let why = match self
                .send(reqwest::Method::POST, &path, Some(sent), &[])
                .await
            {
                Ok((202, _)) => return None,
                Ok((status @ (400 | 413), text)) if smaller.is_none() => {
                    let what = match status {
                        413 => "is larger than the server takes",
                        _ => {
                            "is not one the server reads (nested too deep?): the server refused it"
                        }
                    };
                    smaller = Some(json!({
                        "call_id": call_id,
                        "error": format!(
                            "the outcome ({} bytes of JSON) {what}: {}",
                            body.to_string().len(),
                            status_error(status, &text)
                        ),
                        "kind": FailureKind::BadOutput.as_str(),
                    }));
                    continue;
                }
                Ok((status, text)) if status < 500 => {
                    return Some(format!(
                        "the server did not take the outcome of call {call_id}: {}",
                        status_error(status, &text)
                    ))
                }
                Ok((status, text)) => status_error(status, &text).to_string(),
                Err(e) => chain(&e),
            };
            attempt += 1;
            if attempt > RECONNECTS {
                return Some(format!(
                    "the outcome of call {call_id} could not be posted ({RECONNECTS} attempts): {why}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(250 << (attempt - 1).min(4))).await;
        }
    }
}

/// What the stream reader shares with the call tasks.
struct StreamState<'a> {
    host: Option<&'a ExecutorHost>,
    /// The event ids of the tool_call events handled.
    seen: &'a mut HashSet<String>,
    /// Each call run here: `None` while it runs, then the outcome posted.
    outcomes: &'a Arc<Mutex<HashMap<String, Option<Json>>>>,
    calls: &'a mut tokio::task::JoinSet<()>,
    notices: &'a tokio::sync::mpsc::UnboundedSender<String>,
    noticed: &'a mut tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// Why a stream stopped before the output.
enum Stop {
    /// Worth reopening (the connection, a 5xx).
    Retry(String),
    /// Not (401, 404, a broken answer).
    Fatal(ClientError),
}

/// At most 300 characters of `text`, on one line.
fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(300).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s.replace(['\n', '\r'], " ")
}

/// The error of an answer with status `status` and body `text` (`{"error":
/// {code, message, hint}}`, or anything).
fn status_error(status: u16, text: &str) -> ClientError {
    let v: Json = serde_json::from_str(text).unwrap_or(Json::Null);
    let e = &v["error"];
    let s = |k: &str| e.get(k).and_then(Json::as_str).map(str::to_string);
    ClientError::Status {
        status,
        code: s("code").unwrap_or_default(),
        message: s("message").unwrap_or_else(|| {
            if text.trim().is_empty() {
                "(no body)".to_string()
            } else {
                excerpt(text)
            }
        }),
        hint: s("hint"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_reads_events_across_chunks_and_line_endings() {
        let text = b": hello\n\nevent: log\nid: 0\ndata: {\"a\":1}\n\nevent: tool_call\r\nid: 1.1\r\ndata:x\r\ndata: y\r\n\r\ndata: z\r\r";
        for split in 0..text.len() {
            let mut p = SseParser::new();
            let mut got = p.feed(&text[..split]);
            got.extend(p.feed(&text[split..]));
            assert_eq!(
                got,
                vec![
                    SseEvent {
                        event: "log".into(),
                        id: Some("0".into()),
                        data: "{\"a\":1}".into()
                    },
                    SseEvent {
                        event: "tool_call".into(),
                        id: Some("1.1".into()),
                        data: "x\ny".into()
                    },
                    SseEvent {
                        event: "message".into(),
                        id: None,
                        data: "z".into()
                    },
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_url_must_be_http_and_a_key_not_empty() {
        assert!(Client::new("http://127.0.0.1:1/", "k").is_ok());
        assert!(matches!(
            Client::new("127.0.0.1:8080", "k"),
            Err(ClientError::Usage { .. })
        ));
        assert!(matches!(
            Client::new("ftp://x", "k"),
            Err(ClientError::Usage { .. })
        ));
        assert!(matches!(
            Client::new("http://x", ""),
            Err(ClientError::Usage { .. })
        ));
    }
}
