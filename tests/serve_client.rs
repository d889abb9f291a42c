//! `lt run --server`: the thick client against the real `lt serve` (a free
//! port of 127.0.0.1, a real SQLite store). The tenant declares a
//! server-venue tool (`lookup`) and a client-venue one (`apply_note`); the
//! client runs `apply_note` with a local.toml, and its output, exit code
//! and `--verbose` lines are those of a local `lt run` of the same program
//! with both tools in one tools.toml.

#[macro_use]
#[path = "support/serve.rs"]
mod serve_support;

use serde_json::{json, Value};
use serve_support::{sha256_line, Backend, Scratch, Server};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEY: &str = "acme-dev-key";

const DECLS: &str = "tool lookup: {id: String} -{Read}-> {name: String, credit: Int};
tool apply_note: {id: String, text: String} -{Write}-> {saved: Bool, chars: Int};
";

fn program() -> String {
    format!(
        "{DECLS}
match exec tool lookup {{id = \"c42\"}} {{
  Ok(a) =>
    match exec tool apply_note {{id = \"c42\", text = \"hello \" ++ a.name}} {{
      Ok(r) => {{name = a.name, credit = a.credit, chars = r.chars, saved = r.saved}},
      Err(e) => {{name = e, credit = 0, chars = 0, saved = false}}
    }},
  Err(e) => {{name = e, credit = 0, chars = 0, saved = false}}
}}
"
    )
}

/// The tools' scripts: each call appends `{"arg", "key"}` to `$RECORD`.
const LOOKUP_PY: &str = r#"import json, os, sys
arg = json.load(sys.stdin)
with open(os.environ["RECORD"], "a") as f:
    f.write(json.dumps({"arg": arg, "key": os.environ.get("LT_IDEMPOTENCY_KEY")}) + "\n")
print(json.dumps({"name": arg["id"].upper(), "credit": 15}))
"#;

const NOTE_PY: &str = r#"import json, os, sys, time
arg = json.load(sys.stdin)
with open(os.environ["RECORD"], "a") as f:
    f.write(json.dumps({"arg": arg, "key": os.environ.get("LT_IDEMPOTENCY_KEY")}) + "\n")
time.sleep(float(os.environ.get("SLEEP", "0")))
print(json.dumps({"saved": True, "chars": len(arg["text"])}))
"#;

fn tool(name: &str, script: &Path, record: &Path, extra_env: &str) -> String {
    format!(
        "[tools.{name}]\ncommand = [\"python3\", \"{}\"]\nenv = {{ RECORD = \"{}\"{extra_env} }}\ntimeout_ms = 20000\n\n",
        script.display(),
        record.display()
    )
}

/// A scratch folder with the server's configuration (tenant acme: profiles
/// `default` and `readonly`), the client's local.toml, the combined
/// tools.toml of a local run, and the program.
struct Setup {
    s: Scratch,
    config: PathBuf,
    store: String,
    program: PathBuf,
    local_toml: PathBuf,
    combined_toml: PathBuf,
}

impl Setup {
    fn new(backend: Backend, name: &str, note_sleep_s: u32) -> Setup {
        Setup::with(backend, name, note_sleep_s, false)
    }

    /// `idempotent`: the tenant declares apply_note idempotent.
    fn with(backend: Backend, name: &str, note_sleep_s: u32, idempotent: bool) -> Setup {
        let s = Scratch::new(name);
        let lookup = s.write("lookup.py", LOOKUP_PY);
        let note = s.write("note.py", NOTE_PY);
        let sleep = format!(", SLEEP = \"{note_sleep_s}\"");
        s.write("decls.lt", DECLS);
        s.write(
            "tenant-tools.toml",
            &format!(
                "{}[tools.apply_note]\nvenue = \"client\"\ntimeout_ms = 60000\nidempotent = {idempotent}\n",
                tool("lookup", &lookup, &s.path("server-lookup.jsonl"), "")
            ),
        );
        let local_toml = s.write(
            "local.toml",
            &tool("apply_note", &note, &s.path("client-notes.jsonl"), &sleep),
        );
        let combined_toml = s.write(
            "combined.toml",
            &format!(
                "{}{}",
                tool("lookup", &lookup, &s.path("local-lookup.jsonl"), ""),
                tool("apply_note", &note, &s.path("local-notes.jsonl"), "")
            ),
        );
        let config = s.write(
            "serve.toml",
            &format!(
                r#"
[tenants.acme]
keys = ["{k}"]
declarations = "decls.lt"
executors = "tenant-tools.toml"
[tenants.acme.profiles.default]
allow = ["lookup", "apply_note"]
[tenants.acme.profiles.readonly]
allow = ["lookup"]
"#,
                k = sha256_line(KEY)
            ),
        );
        s.write(
            "readonly.toml",
            "[profile]\nname = \"readonly\"\nallow = [\"lookup\"]\n",
        );
        let program = s.write("note.lt", &program());
        let store = backend.store(&s, name);
        Setup {
            s,
            config,
            store,
            program,
            local_toml,
            combined_toml,
        }
    }

    fn records(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.s.path(name))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a recorded call"))
            .collect()
    }

    fn p(&self, path: &Path) -> String {
        path.to_str().expect("path").to_string()
    }
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `lt ARGS` with `LT_API_KEY` set to `key` (unset: `None`), bounded in time.
fn lt(args: &[&str], key: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lt"));
    cmd.args(args).env_remove("LT_API_KEY").stdin(Stdio::null());
    if let Some(k) = key {
        cmd.env("LT_API_KEY", k);
    }
    let started = Instant::now();
    let out = cmd.output().expect("lt runs");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "lt {args:?} took {:?}",
        started.elapsed()
    );
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `--verbose` lines without their times (`in 12 ms`, `, 40 ms`).
fn untimed(stderr: &str) -> String {
    stderr
        .lines()
        .map(|l| {
            let mut words: Vec<&str> = l.split(' ').collect();
            for i in 1..words.len() {
                if words[i].starts_with("ms") && words[i - 1].chars().all(|c| c.is_ascii_digit()) {
                    words[i - 1] = "_";
                }
            }
            words.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The newest session of the tenant.
fn newest(server: &Server) -> Value {
    let (status, v) = server.call("GET", "/v1/sessions", Some(KEY), None);
    assert_eq!(status, 200, "{v}");
    v["sessions"][0].clone()
}

fn kinds_of(log: &str, call: &str) -> Vec<String> {
    log.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a log line"))
        .filter(|e| e["call_id"] == call)
        .map(|e| e["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

fn a_client_venue_session_prints_what_a_local_run_prints_and_the_server_logs_it_all(
    backend: Backend,
) {
    let t = Setup::new(backend, "client", 0);
    let server = Server::start(&t.config, &t.store);
    let (prog, local, combined) = (t.p(&t.program), t.p(&t.local_toml), t.p(&t.combined_toml));
    let copy = t.s.path("copy.jsonl");
    let copy = t.p(&copy);

    let here = lt(&["run", &prog, "--executors", &combined, "-v"], None);
    assert_eq!(here.code, 0, "{}", here.stderr);
    assert_eq!(
        here.stdout,
        "{name = \"C42\", credit = 15, chars = 9, saved = true}\n"
    );
    let there = lt(
        &[
            "run",
            &prog,
            "--server",
            &server.url,
            "--executors",
            &local,
            "-v",
            "--log",
            &copy,
        ],
        Some(KEY),
    );
    assert_eq!(
        (there.code, &there.stdout),
        (here.code, &here.stdout),
        "{}",
        there.stderr
    );
    assert_eq!(untimed(&there.stderr), untimed(&here.stderr));

    // The client tool ran once, here, with the server's idempotency key;
    // the server tool ran on the server.
    let session = newest(&server);
    let id = session["id"].as_str().expect("id").to_string();
    assert_eq!(session["status"], "ended", "{session}");
    let notes = t.records("client-notes.jsonl");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["arg"], json!({"id": "c42", "text": "hello C42"}));
    let key = notes[0]["key"].as_str().expect("a key");
    assert!(key.starts_with(&format!("{id}:")), "{key}");
    assert_eq!(t.records("server-lookup.jsonl").len(), 1);

    // The server's log holds the client call's whole story, and verifies.
    let (status, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(KEY), None);
    assert_eq!(status, 200);
    let text = log["text"].as_str().expect("JSONL").to_string();
    let call = key.split_once(':').expect("session:call").1;
    assert_eq!(
        kinds_of(&text, call),
        [
            "proposed",
            "decided",
            "scheduled",
            "client_dispatched",
            "client_reported",
            "completed"
        ]
    );
    assert!(text.contains("\"venue\":\"client\""), "{text}");
    let file = t.s.write("server.jsonl", &text);
    let verified = lt(&["log", "verify", &t.p(&file)], None);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    // --log: the same log, copied here when the session ended.
    assert_eq!(std::fs::read_to_string(&copy).expect("the copy"), text);

    // --json: the same object as a local run's.
    let here = lt(&["run", &prog, "--executors", &combined, "--json"], None);
    let there = lt(
        &[
            "run",
            &prog,
            "--server",
            &server.url,
            "--executors",
            &local,
            "--json",
        ],
        Some(KEY),
    );
    assert_eq!(here.code, 0, "{}", here.stderr);
    assert_eq!(
        (there.code, &there.stdout, &there.stderr),
        (0, &here.stdout, &here.stderr)
    );
    assert_eq!(t.records("client-notes.jsonl").len(), 2);
}

fn a_program_with_errors_is_reported_as_a_local_run_reports_it_and_not_sent(backend: Backend) {
    let t = Setup::new(backend, "rejected", 0);
    let server = Server::start(&t.config, &t.store);
    let bad = t.s.write("bad.lt", &format!("{DECLS}\n1 + \"a\"\n"));
    let bad = t.p(&bad);
    let local = t.p(&t.local_toml);
    for json in [false, true] {
        let mut args = vec!["run", bad.as_str(), "--color", "never"];
        if json {
            args.push("--json");
        }
        let here = lt(&args, None);
        args.extend(["--server", &server.url, "--executors", &local]);
        let there = lt(&args, Some(KEY));
        assert_eq!(here.code, 1);
        assert_eq!(
            (there.code, &there.stdout, &there.stderr),
            (1, &here.stdout, &here.stderr)
        );
    }
    let (_, v) = server.call("GET", "/v1/sessions", Some(KEY), None);
    assert_eq!(v["sessions"], json!([]), "nothing was sent: {v}");
}

fn a_program_the_server_refuses_prints_the_servers_diagnostics_and_exits_1(backend: Backend) {
    let t = Setup::new(backend, "refused", 0);
    let server = Server::start(&t.config, &t.store);
    let (prog, local) = (t.p(&t.program), t.p(&t.local_toml));
    // Profile readonly does not allow apply_note: the server's static check
    // (E0701) refuses it, rendered here as `lt check --profile` renders it.
    let readonly = t.p(&t.s.path("readonly.toml"));
    let check = lt(
        &["check", &prog, "--profile", &readonly, "--color", "never"],
        None,
    );
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert!(check.stderr.contains("E0701"), "{}", check.stderr);
    let base = [
        "run",
        prog.as_str(),
        "--server",
        &server.url,
        "--executors",
        &local,
        "--color",
        "never",
    ];
    let there = lt(&[&base[..], &["--profile", "readonly"]].concat(), Some(KEY));
    assert_eq!(
        (there.code, &there.stdout, &there.stderr),
        (1, &String::new(), &check.stderr)
    );
    // --json: lt run --json's rejection, the diagnostics naming this file.
    let there = lt(
        &[&base[..], &["--profile", "readonly", "--json"]].concat(),
        Some(KEY),
    );
    assert_eq!(there.code, 1, "{}", there.stderr);
    let v: Value = serde_json::from_str(&there.stdout).expect("JSON");
    assert_eq!(
        (&v["ok"], &v["stage"]),
        (&json!(false), &json!("check")),
        "{v}"
    );
    assert_eq!(v["diagnostics"][0]["code"], "E0701", "{v}");
    assert_eq!(v["diagnostics"][0]["file"], json!(prog), "{v}");
    // A tool declared otherwise than the tenant declares it: E0704.
    let lie = t.s.write(
        "lie.lt",
        &program().replacen("-{Read}->", "-{Read, Write}->", 1),
    );
    let there = lt(
        &[
            "run",
            &t.p(&lie),
            "--server",
            &server.url,
            "--executors",
            &local,
        ],
        Some(KEY),
    );
    assert_eq!(there.code, 1, "{}", there.stderr);
    assert!(there.stderr.contains("E0704"), "{}", there.stderr);
    // A profile the tenant does not have: the server's 400, exit 2.
    let there = lt(&[&base[..], &["--profile", "nope"]].concat(), Some(KEY));
    assert_eq!(there.code, 2, "{}", there.stderr);
    assert!(
        there.stderr.contains("no profile \"nope\""),
        "{}",
        there.stderr
    );
    assert!(
        there.stderr.contains("default, readonly"),
        "{}",
        there.stderr
    );
    // Without local executors the client does not run apply_note: refused.
    let there = lt(&["run", &prog, "--server", &server.url], Some(KEY));
    assert_eq!(there.code, 2, "{}", there.stderr);
    assert!(
        there.stderr.contains("this client does not run it"),
        "{}",
        there.stderr
    );
    assert!(t.records("client-notes.jsonl").is_empty());
    let (_, v) = server.call("GET", "/v1/sessions", Some(KEY), None);
    assert_eq!(v["sessions"], json!([]), "nothing was recorded: {v}");
}

fn a_missing_or_wrong_api_key_is_a_clear_error_with_exit_2(backend: Backend) {
    let t = Setup::new(backend, "key", 0);
    let server = Server::start(&t.config, &t.store);
    let (prog, local) = (t.p(&t.program), t.p(&t.local_toml));
    let args = [
        "run",
        prog.as_str(),
        "--server",
        &server.url,
        "--executors",
        &local,
    ];
    for key in [None, Some("")] {
        let out = lt(&args, key);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.starts_with(
                "error: lt run --server needs an API key: set the environment variable LT_API_KEY"
            ),
            "{}",
            out.stderr
        );
    }
    let out = lt(&args, Some("acme-dev-ke"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("error: the server refused the API key (HTTP 401 unauthorized)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("= help: set LT_API_KEY to a key of your tenant"),
        "{}",
        out.stderr
    );
    let out = lt(&[&args[..], &["--json"]].concat(), Some("acme-dev-ke"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["stage"], "server", "{v}");
    assert_eq!(v["error"]["kind"], "server", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap_or("").contains("401"),
        "{v}"
    );
    // Flags that only a local run takes, a URL that is not one.
    let out = lt(&[&args[..], &["--max-calls", "5"]].concat(), Some(KEY));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--max-calls applies to a local run"),
        "{}",
        out.stderr
    );
    let out = lt(&["run", &prog, "--server", "localhost:8080"], Some(KEY));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("is not an http:// or https:// URL"),
        "{}",
        out.stderr
    );
    assert!(t.records("client-notes.jsonl").is_empty());
    let (_, v) = server.call("GET", "/v1/sessions", Some(KEY), None);
    assert_eq!(v["sessions"], json!([]), "nothing was recorded: {v}");
}

fn an_unreachable_server_is_a_clear_error_not_a_hang(backend: Backend) {
    let t = Setup::new(backend, "unreachable", 0);
    let prog = t.p(&t.program);
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("a port")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let out = lt(&["run", &prog, "--server", &url], Some(KEY));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with(&format!("error: cannot reach the server at {url}")),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("= help: is `lt serve` running at that address?"),
        "{}",
        out.stderr
    );
    // A port that takes connections and closes them at once.
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for c in listener.incoming() {
            drop(c);
        }
    });
    let started = Instant::now();
    let out = lt(&["run", &prog, "--server", &url, "--json"], Some(KEY));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        (&v["stage"], &v["error"]["kind"]),
        (&json!("server"), &json!("server")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("cannot reach the server"),
        "{v}"
    );
}

/// A TCP proxy to `upstream` that cuts the first event stream (`GET
/// …/events`) where `cut` says, given the stream's bytes so far (headers
/// and chunked framing included); every other connection is passed
/// through. The URL, and how many event streams were opened.
fn cutting_proxy(upstream: &str, cut: fn(&[u8]) -> Option<usize>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let upstream = upstream.trim_start_matches("http://").to_string();
    let streams = Arc::new(AtomicUsize::new(0));
    let opened = Arc::clone(&streams);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let marked = Arc::new(AtomicBool::new(false));
            let (mut c_in, mut s_out) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            let (m, o) = (Arc::clone(&marked), Arc::clone(&opened));
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if text.starts_with("GET /v1/sessions/") && text.contains("/events") {
                        // The first stream is cut; the others pass.
                        m.store(o.fetch_add(1, Ordering::SeqCst) == 0, Ordering::SeqCst);
                    }
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(std::net::Shutdown::Write);
            });
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                let mut seen: Vec<u8> = Vec::new();
                while let Ok(n) = s_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let chunk = &buf[..n];
                    if marked.load(Ordering::SeqCst) {
                        let before = seen.len();
                        seen.extend_from_slice(chunk);
                        if let Some(at) = cut(&seen) {
                            let keep = at.saturating_sub(before).min(chunk.len());
                            let _ = c_out.write_all(&chunk[..keep]);
                            let _ = c_out.shutdown(std::net::Shutdown::Both);
                            let _ = s_in.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                    }
                    if c_out.write_all(chunk).is_err() {
                        break;
                    }
                }
                let _ = c_out.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (url, streams)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Just before the tool_call event: the client must get it after reconnecting.
fn before_the_call(seen: &[u8]) -> Option<usize> {
    find(seen, b"event: tool_call")
}

/// A few bytes into the event after the tool_call: it must not come twice.
fn after_the_call(seen: &[u8]) -> Option<usize> {
    let at = find(seen, b"event: tool_call")?;
    let end = find(&seen[at..], b"\n\n")? + at + 2;
    (seen.len() >= end + 4).then_some(end + 4)
}

fn a_dropped_stream_is_reopened_after_the_last_event_and_the_call_runs_once(backend: Backend) {
    let t = Setup::new(backend, "reconnect", 0);
    let server = Server::start(&t.config, &t.store);
    let (prog, local, combined) = (t.p(&t.program), t.p(&t.local_toml), t.p(&t.combined_toml));
    let here = lt(&["run", &prog, "--executors", &combined, "-v"], None);
    for (n, cut) in [
        before_the_call as fn(&[u8]) -> Option<usize>,
        after_the_call,
    ]
    .into_iter()
    .enumerate()
    {
        let (url, streams) = cutting_proxy(&server.url, cut);
        let there = lt(
            &["run", &prog, "--server", &url, "--executors", &local, "-v"],
            Some(KEY),
        );
        assert_eq!(
            (there.code, &there.stdout),
            (0, &here.stdout),
            "{}",
            there.stderr
        );
        assert!(
            there.stderr.contains("the event stream dropped"),
            "{}",
            there.stderr
        );
        assert!(there.stderr.contains("reconnecting"), "{}", there.stderr);
        // Every event seen once: the --verbose lines are a local run's.
        let calls: String = there
            .stderr
            .lines()
            .filter(|l| !l.contains("the event stream dropped"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(untimed(&calls), untimed(&here.stderr));
        assert_eq!(
            streams.load(Ordering::SeqCst),
            2,
            "one cut stream, one reopened"
        );
        assert_eq!(
            t.records("client-notes.jsonl").len(),
            n + 1,
            "the client tool ran once"
        );
        let id = newest(&server)["id"].as_str().expect("id").to_string();
        let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(KEY), None);
        let text = log["text"].as_str().expect("log");
        assert_eq!(
            text.matches("\"kind\":\"client_reported\"").count(),
            1,
            "{text}"
        );
        assert!(!text.contains("client_rejected"), "{text}");
    }
}

fn an_interrupted_client_cancels_its_session_on_the_server(backend: Backend) {
    let t = Setup::new(backend, "interrupt", 30);
    let server = Server::start(&t.config, &t.store);
    let (prog, local) = (t.p(&t.program), t.p(&t.local_toml));
    let mut child = Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(["run", &prog, "--server", &server.url, "--executors", &local])
        .env("LT_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lt runs");
    // Wait until the client runs apply_note (it sleeps 30 s).
    let until = Instant::now() + Duration::from_secs(30);
    while t.records("client-notes.jsonl").is_empty() {
        assert!(Instant::now() < until, "the client tool never started");
        std::thread::sleep(Duration::from_millis(25));
    }
    let started = Instant::now();
    let _ = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "lt did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    assert!(err.contains("cancelled on the server"), "{err}");
    let id = newest(&server)["id"].as_str().expect("id").to_string();
    let v = server.wait_final(KEY, &id, Duration::from_secs(30));
    assert_eq!(v["status"], "cancelled", "{v}");
}

fn a_server_killed_while_the_client_runs_a_call_finishes_the_session_after_its_restart(
    backend: Backend,
) {
    for idempotent in [true, false] {
        let t = Setup::with(backend, &format!("restart-{idempotent}"), 3, idempotent);
        let mut server = Server::start(&t.config, &t.store);
        let (prog, local, combined) = (t.p(&t.program), t.p(&t.local_toml), t.p(&t.combined_toml));
        let child = Command::new(env!("CARGO_BIN_EXE_lt"))
            .args([
                "run",
                &prog,
                "--server",
                &server.url,
                "--executors",
                &local,
                "-v",
            ])
            .env("LT_API_KEY", KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lt runs");
        // Kill the server while the client runs apply_note (it sleeps 3 s).
        let until = Instant::now() + Duration::from_secs(30);
        while t.records("client-notes.jsonl").is_empty() {
            assert!(Instant::now() < until, "the client tool never started");
            std::thread::sleep(Duration::from_millis(25));
        }
        server.kill9();
        let server = server.restart_here();
        let out = child.wait_with_output().expect("lt ends");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("reconnecting"), "{stderr}");
        if idempotent {
            // Resumed, the call handed over again: answered with the
            // outcome of the one run, not run twice.
            let here = lt(&["run", &prog, "--executors", &combined], None);
            assert_eq!(stdout, here.stdout, "{stderr}");
        } else {
            assert!(stdout.contains("outcome unknown"), "{stdout}{stderr}");
        }
        assert_eq!(
            t.records("client-notes.jsonl").len(),
            1,
            "the client tool ran once"
        );
        let id = newest(&server)["id"].as_str().expect("id").to_string();
        let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(KEY), None);
        let text = log["text"].as_str().expect("log");
        assert!(text.contains("\"kind\":\"session_resumed\""), "{text}");
        let file = t.s.write("resumed.jsonl", text);
        let verified = lt(&["log", "verify", &t.p(&file)], None);
        assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    }
}

/// A client tool that fails keeps its failure kind on the server: the
/// client posts `kind` with the error, and the server logs `timed_out`
/// (not a plain `failed`) as a local run of the same tools logs it.
fn a_client_tool_that_times_out_is_logged_timed_out_on_the_server(backend: Backend) {
    let t = Setup::new(backend, "client-timeout", 5);
    // apply_note sleeps 5 s and may take 300 ms, here and there.
    for path in [&t.local_toml, &t.combined_toml] {
        let text = std::fs::read_to_string(path).expect("tools");
        let (before, note) = text.split_at(text.find("[tools.apply_note]").expect("apply_note"));
        let note = note
            .replace("timeout_ms = 20000", "timeout_ms = 300")
            .replace(
                "local-notes.jsonl\" }",
                "local-notes.jsonl\", SLEEP = \"5\" }",
            );
        std::fs::write(path, format!("{before}{note}")).expect("tools");
    }
    let server = Server::start(&t.config, &t.store);
    let (prog, local, combined) = (t.p(&t.program), t.p(&t.local_toml), t.p(&t.combined_toml));
    let here_log = t.s.path("here.jsonl");
    let here = lt(
        &[
            "run",
            &prog,
            "--executors",
            &combined,
            "--log",
            &t.p(&here_log),
        ],
        None,
    );
    let there = lt(
        &["run", &prog, "--server", &server.url, "--executors", &local],
        Some(KEY),
    );
    // The program sees the same Err here and there.
    assert_eq!(
        (there.code, &there.stdout),
        (here.code, &here.stdout),
        "{}",
        there.stderr
    );
    assert!(
        here.stdout
            .contains("tool apply_note timed out after 300 ms"),
        "{}",
        here.stdout
    );
    let id = newest(&server)["id"].as_str().expect("id").to_string();
    let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(KEY), None);
    let text = log["text"].as_str().expect("log").to_string();
    let ended = |log: &str| -> Vec<String> {
        log.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a log line"))
            .filter(|e| {
                ["completed", "failed", "timed_out"].contains(&e["kind"].as_str().unwrap_or(""))
            })
            .map(|e| e["kind"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let local_log = std::fs::read_to_string(&here_log).expect("the local log");
    assert_eq!(ended(&local_log), ["completed", "timed_out"], "{local_log}");
    assert_eq!(ended(&text), ended(&local_log), "{text}");
    assert!(text.contains("\"kind\":\"timed_out\""), "{text}");
    let file = t.s.write("server.jsonl", &text);
    let verified = lt(&["log", "verify", &t.p(&file)], None);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    // A kind the client may not report is refused with 400, naming the kinds.
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/outcomes"),
        Some(KEY),
        Some(&json!({"call_id": "n1", "error": "no", "kind": "denied"})),
    );
    assert_eq!(status, 400, "{v}");
    assert!(v.to_string().contains("timed_out"), "{v}");
}

on_both_stores!(
    a_client_venue_session_prints_what_a_local_run_prints_and_the_server_logs_it_all,
    a_program_with_errors_is_reported_as_a_local_run_reports_it_and_not_sent,
    a_program_the_server_refuses_prints_the_servers_diagnostics_and_exits_1,
    a_missing_or_wrong_api_key_is_a_clear_error_with_exit_2,
    an_unreachable_server_is_a_clear_error_not_a_hang,
    a_dropped_stream_is_reopened_after_the_last_event_and_the_call_runs_once,
    an_interrupted_client_cancels_its_session_on_the_server,
    a_server_killed_while_the_client_runs_a_call_finishes_the_session_after_its_restart,
    a_client_tool_that_times_out_is_logged_timed_out_on_the_server,
);
