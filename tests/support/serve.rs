//! A real `lt serve` for the server's tests: the binary started on a free
//! port of 127.0.0.1 with a real store, driven over HTTP (ureq), killed
//! with SIGKILL or stopped with SIGTERM.
//!
//! Each test runs on both stores ([`on_both_stores!`]): a SQLite file in a
//! fresh folder, and a fresh database on the PostgreSQL server that
//! `LT_TEST_POSTGRES_URL` names. Without that variable the PostgreSQL
//! variant prints that it is skipped; under CI (`CI=true`) it fails.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A folder of its own under the system's temp folder, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!("lt-serve-{name}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).expect("scratch folder");
        Scratch(p)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("folder");
        }
        std::fs::write(&p, text).expect("write");
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The store a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Whether the test `name` can run on this store (PostgreSQL: the
    /// test server is named; otherwise this prints SKIPPED, or panics
    /// under CI).
    pub fn available(self, name: &str) -> bool {
        match self {
            Backend::Sqlite => true,
            Backend::Postgres => lt::serve::store::postgres::scratch::test_server(name).is_some(),
        }
    }

    /// A fresh store for the test `name`: its `--store` URL (a file in
    /// `s`, or a new database on the test server).
    pub fn store(self, s: &Scratch, name: &str) -> String {
        match self {
            Backend::Sqlite => format!("sqlite:{}", s.path("data/lt.db").display()),
            Backend::Postgres => {
                use lt::serve::store::postgres::scratch::{fresh_database, test_server};
                let server = test_server(name).expect("the PostgreSQL test server");
                fresh_database(&server, name).unwrap_or_else(|e| panic!("{name}: {e}"))
            }
        }
    }
}

/// Declares `#[test]`s `sqlite::NAME` and `postgres::NAME` for each
/// `fn NAME(backend: Backend)` of the test file.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    super::$name(super::serve_support::Backend::Sqlite)
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    let b = super::serve_support::Backend::Postgres;
                    if b.available(stringify!($name)) {
                        super::$name(b)
                    }
                }
            )*
        }
    };
}

pub fn sha256_line(key: &str) -> String {
    use sha2::Digest;
    format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(key.as_bytes()))
    )
}

/// A running server.
pub struct Server {
    pub child: Child,
    pub url: String,
    /// Everything it wrote on stderr, read by a thread.
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
    pub config: PathBuf,
    /// The `--store` URL.
    pub store: String,
}

impl Server {
    /// Starts `lt serve --config CONFIG --store STORE --listen 127.0.0.1:0`.
    pub fn start(config: &Path, store: &str) -> Server {
        Server::start_on(config, store, "127.0.0.1:0")
    }

    /// The same configuration and store, started again on the same address
    /// (after [`Server::kill9`]: a client that reconnects finds it there).
    pub fn restart_here(&self) -> Server {
        Server::start_on(
            &self.config,
            &self.store,
            self.url.trim_start_matches("http://"),
        )
    }

    /// Starts `lt serve --config CONFIG --store STORE --listen LISTEN`.
    pub fn start_on(config: &Path, store: &str, listen: &str) -> Server {
        Server::start_args(config, store, listen, &[])
    }

    /// [`Server::start`] with more flags.
    pub fn start_with(config: &Path, store: &str, extra: &[&str]) -> Server {
        Server::start_args(config, store, "127.0.0.1:0", extra)
    }

    fn start_args(config: &Path, store: &str, listen: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lt"))
            .arg("serve")
            .args(extra)
            .arg("--config")
            .arg(config)
            .arg("--store")
            .arg(store)
            .arg("--listen")
            .arg(listen)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lt serve starts");
        let err = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let keep = std::sync::Arc::clone(&text);
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                // Kept before the address is told, so that the line is in
                // the text by the time the test reads it.
                {
                    let mut t = keep.lock().expect("the stderr text");
                    t.push_str(&line);
                    t.push('\n');
                }
                if !sent {
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                        let _ = tx.send(addr);
                        sent = true;
                    }
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "lt serve did not start: {}",
                    text.lock().expect("the stderr text")
                );
            }
        };
        Server {
            child,
            url: format!("http://{addr}"),
            stderr: text,
            config: config.to_path_buf(),
            store: store.to_string(),
        }
    }

    /// The same configuration and store, started again.
    pub fn restart(&self) -> Server {
        Server::start(&self.config, &self.store)
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM, and returns at once.
    pub fn sigterm(&self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
    }

    /// SIGTERM, then the exit status (waits up to `within`).
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        self.sigterm();
        let until = Instant::now() + within;
        while Instant::now() < until {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().expect("the stderr text").clone()
    }

    /// A request: `(status, body as JSON or {"text": …})`.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        self.call_with(method, path, key, body, &[])
    }

    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let raw = body.map(|b| b.to_string());
        self.raw(method, path, key, raw.as_deref(), headers)
    }

    pub fn raw(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut req =
            ureq::request(method, &format!("{}{path}", self.url)).timeout(Duration::from_secs(60));
        if let Some(k) = key {
            req = req.set("Authorization", &format!("Bearer {k}"));
        }
        for (h, v) in headers {
            req = req.set(h, v);
        }
        // JSON unless the test names another Content-Type.
        let typed = headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case("content-type"));
        let resp = match body {
            Some(b) if typed => req.send_string(b),
            Some(b) => req.set("Content-Type", "application/json").send_string(b),
            None => req.call(),
        };
        let resp = match resp {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let text = resp.into_string().unwrap_or_default();
        let v = serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text}));
        (status, v)
    }

    /// Starts a session; its id (panics unless 201).
    pub fn submit(&self, key: &str, program: &str, profile: &str) -> String {
        let (status, v) = self.call(
            "POST",
            "/v1/sessions",
            Some(key),
            Some(&json!({"program": program, "profile": profile})),
        );
        assert_eq!(status, 201, "{v}");
        v["id"].as_str().expect("id").to_string()
    }

    /// Opens the session's event stream.
    pub fn stream(&self, key: &str, id: &str, last_event_id: Option<&str>) -> Sse {
        let mut req = ureq::get(&format!("{}/v1/sessions/{id}/events", self.url))
            .set("Authorization", &format!("Bearer {key}"))
            .timeout(Duration::from_secs(120));
        if let Some(l) = last_event_id {
            req = req.set("Last-Event-ID", l);
        }
        let resp = req.call().expect("the stream opens");
        Sse {
            lines: BufReader::new(Box::new(resp.into_reader())),
        }
    }

    /// Every event of a session's stream to its end.
    pub fn all_events(&self, key: &str, id: &str) -> Vec<SseEvent> {
        let mut s = self.stream(key, id, None);
        let mut out = Vec::new();
        while let Some(e) = s.next_event() {
            out.push(e);
        }
        out
    }

    /// Waits until the session's status is final; the session's JSON.
    pub fn wait_final(&self, key: &str, id: &str, within: Duration) -> Value {
        let until = Instant::now() + within;
        loop {
            let (status, v) = self.call("GET", &format!("/v1/sessions/{id}"), Some(key), None);
            assert_eq!(status, 200, "{v}");
            let s = v["status"].as_str().unwrap_or("");
            if ["ended", "failed", "cancelled"].contains(&s) {
                return v;
            }
            assert!(Instant::now() < until, "session {id} still {s}: {v}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Waits (30 s at most) until the session waits for an approval; the
    /// id of the first approval it waits for.
    pub fn pending_approval(&self, key: &str, id: &str) -> String {
        let v = self.wait_for(key, id, Duration::from_secs(30), |v| {
            v["status"] == "waiting_approval"
        });
        v["pending_approvals"][0]
            .as_str()
            .expect("a pending approval")
            .to_string()
    }

    /// Waits until `pred` holds for the session's JSON.
    pub fn wait_for(
        &self,
        key: &str,
        id: &str,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let until = Instant::now() + within;
        loop {
            let (_, v) = self.call("GET", &format!("/v1/sessions/{id}"), Some(key), None);
            if pred(&v) {
                return v;
            }
            assert!(
                Instant::now() < until,
                "session {id}: condition not met: {v}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One Server-Sent Event.
#[derive(Clone, Debug, PartialEq)]
pub struct SseEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }
}

/// A stream being read.
pub struct Sse {
    lines: BufReader<Box<dyn Read + Send + Sync>>,
}

impl Sse {
    /// The next event (`None`: the stream ended). Comments are skipped.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        let mut event = String::from("message");
        let mut id = None;
        let mut data: Vec<String> = Vec::new();
        let mut any = false;
        loop {
            let mut line = String::new();
            match self.lines.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if any {
                    return Some(SseEvent {
                        event,
                        id,
                        data: data.join("\n"),
                    });
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            any = true;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = value.to_string(),
                "id" => id = Some(value.to_string()),
                "data" => data.push(value.to_string()),
                _ => {}
            }
        }
    }
}
