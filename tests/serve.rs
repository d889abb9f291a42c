//! `lt serve` end to end: the real binary on a free port of 127.0.0.1, on
//! both stores (SQLite; PostgreSQL when LT_TEST_POSTGRES_URL is set), the support-desk tools on real SQLite databases
//! (one per tenant), driven over HTTP.

#[macro_use]
#[path = "support/serve.rs"]
mod serve_support;

use serde_json::{json, Value};
use serve_support::{sha256_line, Backend, Scratch, Server, SseEvent};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ACME: &str = "acme-dev-key";
const GLOBEX: &str = "globex-dev-key";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn support_program() -> String {
    std::fs::read_to_string(repo().join("examples/support_desk/program.lt")).expect("program")
}

/// A tools.toml with the support desk's tools on `db`; `slow_reply`: the
/// reply tool sleeps 3 s first (a call a kill can land in).
fn tools_toml(db: &Path, slow_reply: bool) -> String {
    tools_toml_sleeping(db, if slow_reply { 3 } else { 0 })
}

/// As [`tools_toml`], the reply tool sleeping `secs` first.
fn tools_toml_sleeping(db: &Path, secs: u32) -> String {
    let slow_reply = secs > 0;
    let tools = repo().join("examples/support_desk/tools");
    let mut out = String::new();
    for (name, idem) in [
        ("lookup_account", true),
        ("issue_refund", false),
        ("send_reply", false),
    ] {
        let script = tools.join(format!("{name}.py"));
        let command = if slow_reply && name == "send_reply" {
            format!(
                "[\"sh\", \"-c\", \"sleep {secs}; exec python3 {}\"]",
                script.display()
            )
        } else {
            format!("[\"python3\", \"{}\"]", script.display())
        };
        out.push_str(&format!(
            "[tools.{name}]\ncommand = {command}\nenv = {{ LT_EXAMPLE_DB = \"{}\" }}\ntimeout_ms = 20000\nidempotent = {idem}\n\n",
            db.display()
        ));
    }
    out
}

/// A scratch folder with a serve.toml of two tenants (acme, globex), each
/// with the support desk's tools on a database of its own, and `extra`
/// appended (more profiles).
fn setup(
    backend: Backend,
    name: &str,
    slow_reply: bool,
    extra: &str,
) -> (Scratch, PathBuf, String) {
    setup_with(backend, name, if slow_reply { 3 } else { 0 }, "", extra)
}

/// As [`setup`], the reply tool sleeping `secs`, and `server` as the
/// `[server]` table's lines.
fn setup_with(
    backend: Backend,
    name: &str,
    secs: u32,
    server: &str,
    extra: &str,
) -> (Scratch, PathBuf, String) {
    let s = Scratch::new(name);
    let decls = repo().join("examples/serve/tools.lt");
    for t in ["acme", "globex"] {
        s.write(
            &format!("{t}-tools.toml"),
            &tools_toml_sleeping(&s.path(&format!("{t}.db")), secs),
        );
    }
    let config = s.write(
        "serve.toml",
        &format!(
            r#"
[server]
{server}

[tenants.acme]
keys = ["{ak}"]
declarations = "{d}"
executors = "acme-tools.toml"
[tenants.acme.profiles.support]
allow = ["lookup_account", "issue_refund", "send_reply"]

[tenants.globex]
keys = ["{gk}"]
declarations = "{d}"
executors = "globex-tools.toml"
[tenants.globex.profiles.support]
allow = ["lookup_account", "issue_refund", "send_reply"]
{extra}
"#,
            ak = sha256_line(ACME),
            gk = sha256_line(GLOBEX),
            d = decls.display(),
        ),
    );
    let store = backend.store(&s, name);
    (s, config, store)
}

fn rows(db: &Path, table: &str) -> usize {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select count(*) from {table}').fetchone()[0])"
        ))
        .arg(db)
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(usize::MAX)
}

fn lt(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(args)
        .output()
        .expect("lt runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const REFUNDED: &str = "refund tx_000001 processed and ada@example.com notified";

fn a_server_venue_session_runs_end_to_end_and_its_log_verifies_and_replays(backend: Backend) {
    let (s, config, store) = setup(backend, "e2e", false, "");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    assert_eq!(id.len(), 32);
    let events = server.all_events(ACME, &id);
    let last = events.last().expect("events");
    assert_eq!(last.event, "output", "{events:?}");
    assert_eq!(last.json()["value"], json!(REFUNDED), "{}", last.data);
    let kinds: Vec<String> = events
        .iter()
        .filter(|e| e.event == "log")
        .map(|e| e.json()["kind"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("session_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("session_ended"));
    assert_eq!(
        kinds.iter().filter(|k| *k == "scheduled").count(),
        3,
        "{kinds:?}"
    );
    // Ids are the log's seq, in order, without gaps.
    for (i, e) in events.iter().filter(|e| e.event == "log").enumerate() {
        assert_eq!(e.id.as_deref(), Some(i.to_string().as_str()));
    }
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["status"], "ended");
    assert_eq!(v["value"], json!(REFUNDED));
    assert_eq!(v["calls"], 3);
    assert_eq!(rows(&s.path("acme.db"), "refunds"), 1);
    assert_eq!(rows(&s.path("acme.db"), "replies"), 1);
    // The log, exactly as a file: lt log verify and lt replay accept it.
    let (status, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    assert_eq!(status, 200);
    let text = log["text"].as_str().expect("JSONL text");
    assert_eq!(text.lines().count(), kinds.len());
    let file = s.write("session.jsonl", text);
    let f = file.to_str().expect("path");
    let (code, out, err) = lt(&["log", "verify", f]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = lt(&["replay", f, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).expect("json")["value"],
        json!(REFUNDED)
    );
    // Replayed on the server: the same verdict.
    let (status, r) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/replay"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["value"], json!(REFUNDED));
    // The other tenant's database was not touched.
    assert!(!s.path("globex.db").exists());
}

fn a_tenant_cannot_see_or_touch_another_tenants_session(backend: Backend) {
    let (_s, config, store) = setup(backend, "isolation", false, "");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    server.wait_final(ACME, &id, Duration::from_secs(30));
    for (method, path) in [
        ("GET", format!("/v1/sessions/{id}")),
        ("GET", format!("/v1/sessions/{id}/events")),
        ("GET", format!("/v1/sessions/{id}/log")),
        ("POST", format!("/v1/sessions/{id}/cancel")),
        ("POST", format!("/v1/sessions/{id}/replay")),
    ] {
        let (status, v) = server.call(method, &path, Some(GLOBEX), None);
        assert_eq!(status, 404, "{method} {path}: {v}");
    }
    let (status, _) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/outcomes"),
        Some(GLOBEX),
        Some(&json!({"call_id": "n1", "ok": 1})),
    );
    assert_eq!(status, 404);
    let (status, _) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/approvals/n1"),
        Some(GLOBEX),
        Some(&json!({"decision": "allow"})),
    );
    assert_eq!(status, 404);
    let (status, v) = server.call("GET", "/v1/sessions", Some(GLOBEX), None);
    assert_eq!(status, 200);
    assert_eq!(v["sessions"], json!([]), "{v}");
    let (_, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
    assert_eq!(v["sessions"][0]["id"], json!(id), "{v}");
    // A NUL byte matches no session on either store (PostgreSQL's text
    // holds none; it answered 503 with the server's encoding error).
    for path in ["/v1/sessions/a%00b", "/v1/sessions/a%00b/log"] {
        let (status, v) = server.call("GET", path, Some(ACME), None);
        assert_eq!(status, 404, "{path}: {v}");
    }
    for query in ["tool=a%00b", "profile=a%00b"] {
        let (status, v) = server.call("GET", &format!("/v1/sessions?{query}"), Some(ACME), None);
        assert_eq!(status, 200, "{query}: {v}");
        assert_eq!(v["sessions"], json!([]), "{query}: {v}");
    }
    // No key, a wrong key: 401 everywhere but /healthz.
    for key in [None, Some("acme-dev-ke"), Some("")] {
        let (status, v) = server.call("GET", &format!("/v1/sessions/{id}"), key, None);
        assert_eq!(status, 401, "{v}");
        let (status, _) = server.call("GET", "/metrics", key, None);
        assert_eq!(status, 401);
    }
    let (status, v) = server.call("GET", "/healthz", None, None);
    assert_eq!((status, v["ok"].clone()), (200, json!(true)));
    // It names the store, never with a password.
    let kind = if backend == Backend::Postgres {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(v["store"]["kind"], json!(kind), "{v}");
    assert_eq!(v["store"]["reachable"], json!(true), "{v}");
    assert!(
        v["store"]["name"].as_str().is_some_and(|n| !n.is_empty()),
        "{v}"
    );
}

fn an_idempotency_key_returns_the_same_session_and_runs_it_once(backend: Backend) {
    let (s, config, store) = setup(backend, "idem", false, "");
    let server = Server::start(&config, &store);
    let body = json!({"program": support_program(), "profile": "support"});
    let h = [("Idempotency-Key", "order-77")];
    let (s1, a) = server.call_with("POST", "/v1/sessions", Some(ACME), Some(&body), &h);
    let (s2, b) = server.call_with("POST", "/v1/sessions", Some(ACME), Some(&body), &h);
    assert_eq!((s1, s2), (201, 200), "{a} {b}");
    assert_eq!(a["id"], b["id"]);
    let id = a["id"].as_str().expect("id");
    server.wait_final(ACME, id, Duration::from_secs(30));
    let (s3, c) = server.call_with("POST", "/v1/sessions", Some(ACME), Some(&body), &h);
    assert_eq!((s3, &c["id"]), (200, &a["id"]));
    // The same key with another request is refused, naming the session.
    let other = json!({"program": format!("{}\n", support_program()), "profile": "support"});
    let (s5, e) = server.call_with("POST", "/v1/sessions", Some(ACME), Some(&other), &h);
    assert_eq!(s5, 422, "{e}");
    assert_eq!(e["error"]["code"], "idempotency_key_reused", "{e}");
    assert_eq!(e["id"], a["id"], "{e}");
    assert_eq!(rows(&s.path("acme.db"), "refunds"), 1);
    // The same key from another tenant is another session.
    let (s4, d) = server.call_with("POST", "/v1/sessions", Some(GLOBEX), Some(&body), &h);
    assert_eq!(s4, 201, "{d}");
    assert_ne!(d["id"], a["id"]);
}

fn bad_requests_get_a_status_and_an_error_naming_the_problem(backend: Backend) {
    let (_s, config, store) = setup(backend, "bad", false, "");
    let server = Server::start(&config, &store);
    let cases: Vec<(&str, u16, &str)> = vec![
        ("{", 400, "not a valid request"),
        ("[]", 400, "not a valid request"),
        (
            r#"{"program": "1", "profile": "support", "colour": 1}"#,
            400,
            "unknown field `colour`",
        ),
        (
            r#"{"program": "1", "profile": "nope"}"#,
            400,
            "no profile \"nope\"",
        ),
        (r#"{"profile": "support"}"#, 400, "needs a `program`"),
        (
            r#"{"program": 7, "profile": "support"}"#,
            400,
            "invalid type",
        ),
    ];
    for (body, want, says) in cases {
        let (status, v) = server.raw("POST", "/v1/sessions", Some(ACME), Some(body), &[]);
        assert_eq!(status, want, "{body}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains(says), "{body}: {msg}");
    }
    // Over the body limit (1 MiB).
    let big = json!({"program": "x".repeat(2 * 1024 * 1024), "profile": "support"}).to_string();
    let answer = post_reading_early(&server.url, "/v1/sessions", ACME, &big);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A program the checker refuses: 422 with the diagnostics, nothing recorded.
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"program": "1 + \"a\"", "profile": "support"})),
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["output"]["ok"], false);
    assert!(
        v["output"]["diagnostics"][0]["code"].as_str().is_some(),
        "{v}"
    );
    // A tool declared otherwise than the tenant does: E0704.
    let lie = support_program().replace("-{Write}-> {tx_id: String}", "-{Read}-> {tx_id: String}");
    let (status, v) = server.call(
        "POST",
        "/v1/check",
        Some(ACME),
        Some(&json!({"program": lie})),
    );
    assert_eq!(status, 200);
    assert_eq!(v["ok"], false);
    assert_eq!(v["diagnostics"][0]["code"], "E0704", "{v}");
    let (_, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
    assert_eq!(v["sessions"], json!([]), "nothing was recorded: {v}");
    // Query and header input.
    let (status, _) = server.call("GET", "/v1/sessions?status=sleeping", Some(ACME), None);
    assert_eq!(status, 400);
    let (status, _) = server.call("GET", "/v1/sessions?limit=0", Some(ACME), None);
    assert_eq!(status, 400);
    let (status, _) = server.call("GET", "/v1/sessions/0123/events", Some(ACME), None);
    assert_eq!(status, 404);
    let (status, _) = server.call("GET", "/v1/nowhere", Some(ACME), None);
    assert_eq!(status, 404);
    // A method a route does not take: 405 with a JSON error, not an empty body.
    let (status, v) = server.call("DELETE", "/v1/sessions", Some(ACME), None);
    assert_eq!(status, 405, "{v}");
    assert_eq!(v["error"]["code"], "method_not_allowed", "{v}");
    // The server is still well.
    let (status, _) = server.call("GET", "/healthz", None, None);
    assert_eq!(status, 200);
    let id = server.submit(ACME, &support_program(), "support");
    assert_eq!(
        server.wait_final(ACME, &id, Duration::from_secs(30))["status"],
        "ended"
    );
}

fn a_reconnecting_stream_misses_nothing_and_repeats_nothing(backend: Backend) {
    let (_s, config, store) = setup(backend, "reconnect", false, "");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    let all = server.all_events(ACME, &id);
    assert!(all.len() > 10, "{all:?}");
    for cut in [1, 5, all.len() - 2, all.len() - 1] {
        let mut seen: Vec<SseEvent> = all[..cut].to_vec();
        let last = seen.last().and_then(|e| e.id.clone()).expect("an id");
        let mut s = server.stream(ACME, &id, Some(&last));
        while let Some(e) = s.next_event() {
            seen.push(e);
        }
        assert_eq!(
            seen, all,
            "reconnected after {cut} events (Last-Event-ID {last})"
        );
    }
    // After the output: nothing more.
    let last = all.last().and_then(|e| e.id.clone()).expect("id");
    let mut s = server.stream(ACME, &id, Some(&last));
    assert_eq!(s.next_event(), None);
    let (status, _) = server.call_with(
        "GET",
        &format!("/v1/sessions/{id}/events"),
        Some(ACME),
        None,
        &[("Last-Event-ID", "soon")],
    );
    assert_eq!(status, 400);
    // An id past the log's end was never sent: 400, not an empty stream.
    let (status, v) = server.call_with(
        "GET",
        &format!("/v1/sessions/{id}/events"),
        Some(ACME),
        None,
        &[("Last-Event-ID", "999")],
    );
    assert_eq!(status, 400, "{v}");
    assert!(v.to_string().contains("past the end of the log"), "{v}");
}

fn a_session_killed_with_sigkill_is_resumed_after_restart_and_refunds_once(backend: Backend) {
    let (s, config, store) = setup(backend, "kill9", true, "");
    let mut server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    // Kill the server while send_reply runs (its tool sleeps 3 s first):
    // the refund is committed, the reply's outcome is not.
    let mut stream = server.stream(ACME, &id, None);
    loop {
        let e = stream
            .next_event()
            .expect("the stream goes on until the reply is scheduled");
        let v = e.json();
        if v["kind"] == "scheduled" && v["tool"] == "send_reply" {
            break;
        }
    }
    server.kill9();
    let server = server.restart();
    let v = server.wait_final(ACME, &id, Duration::from_secs(60));
    assert_eq!(v["status"], "ended", "{v}");
    let value = v["value"].as_str().unwrap_or("");
    assert!(
        value.starts_with("refund tx_000001 succeeded but notification failed: outcome unknown"),
        "{value}"
    );
    assert_eq!(
        rows(&s.path("acme.db"), "refunds"),
        1,
        "the refund ran once"
    );
    let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    let text = log["text"].as_str().expect("log");
    assert!(text.contains("\"kind\":\"session_resumed\""), "{text}");
    // Its calls count those ended before the kill too.
    let ended = [
        "\"kind\":\"completed\"",
        "\"kind\":\"failed\"",
        "\"kind\":\"timed_out\"",
    ]
    .iter()
    .map(|k| text.matches(k).count())
    .sum::<usize>();
    assert_eq!(v["calls"].as_u64(), Some(ended as u64), "{v}");
    let file = s.write("resumed.jsonl", text);
    let (code, out, err) = lt(&["log", "verify", file.to_str().expect("path")]);
    assert_eq!(code, 0, "{out}{err}");
    let (status, r) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/replay"),
        Some(ACME),
        None,
    );
    assert_eq!((status, r["ok"].clone()), (200, json!(true)), "{r}");
}

fn an_approval_waits_for_the_api_and_the_granted_call_runs(backend: Backend) {
    let extra = r#"
[tenants.acme.profiles.supervised]
allow = ["lookup_account", "issue_refund", "send_reply", "delete_file"]
approvals = "api"
"#;
    let (s, config, store) = setup(backend, "approval", false, extra);
    // A tenant tool that needs an approval token: it records each call.
    let calls = s.path("deleted.txt");
    s.write(
        "acme-tools.toml",
        &format!(
            "{}[tools.delete_file]\ncommand = [\"sh\", \"-c\", \"cat >> {}; echo; echo '{{\\\"deleted\\\": \\\"ok\\\"}}'\"]\n",
            tools_toml(&s.path("acme.db"), false),
            calls.display()
        ),
    );
    let decls = s.write(
        "decls.lt",
        &format!(
            "{}\neffect Delete;\ntool delete_file: {{path: String, approval: !Approval}} -{{Delete}}-> {{deleted: String}};\n",
            std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("decls")
        ),
    );
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        text.replacen(
            &format!(
                "declarations = \"{}\"",
                repo().join("examples/serve/tools.lt").display()
            ),
            &format!("declarations = \"{}\"", decls.display()),
            1,
        ),
    )
    .expect("config");
    let program = r#"effect Delete;
tool delete_file: {path: String, approval: !Approval} -{Delete}-> {deleted: String};
match approve tool delete_file {path = "tmp/a.log"} {
  Ok(a) => match exec tool delete_file {path = "tmp/a.log", approval = a} {
    Ok(d) => "deleted " ++ d.deleted,
    Err(e) => "delete failed: " ++ e
  },
  Err(why) => "not approved: " ++ why
}"#;
    let mut first = Server::start(&config, &store);
    let id = first.submit(ACME, program, "supervised");
    first.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_approval"
    });
    // Killed and restarted: the session waits again, and says so (its
    // request comes from the log, which logs no new one).
    first.kill9();
    let server = first.restart();
    let v = server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_approval" && v["pending_approvals"][0].is_string()
    });
    assert_eq!(v["status"], "waiting_approval", "{v}");
    let approval = v["pending_approvals"][0]
        .as_str()
        .expect("a pending approval")
        .to_string();
    // The request shows from the log at once; the approval posted below may
    // come before the resumed session asks again, and is kept for it.
    let (_, listed) = server.call(
        "GET",
        "/v1/sessions?status=waiting_approval",
        Some(ACME),
        None,
    );
    assert_eq!(listed["sessions"][0]["id"], id.as_str(), "{listed}");
    assert!(!calls.exists(), "nothing ran before the approval");
    let path = format!("/v1/sessions/{id}/approvals/{}", urlencode(&approval));
    let (status, r) = server.call(
        "POST",
        &path,
        Some(GLOBEX),
        Some(&json!({"decision": "allow"})),
    );
    assert_eq!(status, 404, "another tenant cannot approve: {r}");
    let (status, r) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"decision": "allow"})),
    );
    assert_eq!(status, 202, "{r}");
    let (status, r) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"decision": "deny"})),
    );
    assert!(
        status == 409 || status == 404,
        "answered twice: {status} {r}"
    );
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["value"], json!("deleted ok"), "{v}");
    let recorded = std::fs::read_to_string(&calls).expect("the tool ran");
    assert_eq!(
        recorded.lines().filter(|l| !l.is_empty()).count(),
        1,
        "{recorded}"
    );
    let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    let text = log["text"].as_str().expect("log");
    assert!(text.contains("\"by\":\"api\""), "{text}");
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Waits for the stream to show `scheduled` of `tool`.
fn wait_scheduled(server: &Server, key: &str, id: &str, tool: &str) {
    let mut stream = server.stream(key, id, None);
    loop {
        let e = stream
            .next_event()
            .expect("the stream goes on until the call is scheduled");
        let v = e.json();
        if v["kind"] == "scheduled" && v["tool"] == tool {
            return;
        }
    }
}

fn a_cancelled_session_stops_its_running_tool_and_ends_cancelled(backend: Backend) {
    let (s, config, store) = setup_with(backend, "cancel", 30, "", "");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    wait_scheduled(&server, ACME, &id, "send_reply");
    let started = std::time::Instant::now();
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/cancel"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 202, "{v}");
    let v = server.wait_final(ACME, &id, Duration::from_secs(20));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the 30 s tool was stopped"
    );
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["output"]["error"]["kind"], "cancelled", "{v}");
    assert_eq!(
        rows(&s.path("acme.db"), "replies"),
        0,
        "the reply tool was killed before it wrote"
    );
    let (status, _) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/cancel"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 409, "a session that is over cannot be cancelled");
    // The tenant's other sessions are unaffected by that cancel (its tools
    // still start: the cancel stopped only the cancelled session's).
    let lookup = r#"tool lookup_account: String -{Read}-> {id: String, subscription_tier: String,
                                       email: String, last_charge_cents: Int};
match exec tool lookup_account "cust_12345" { Ok(a) => a.email, Err(e) => "failed: " ++ e }"#;
    let id2 = server.submit(ACME, lookup, "support");
    let v2 = server.wait_final(ACME, &id2, Duration::from_secs(30));
    assert_eq!(v2["value"], "ada@example.com", "{v2}");
}

fn sigterm_lets_a_running_call_finish_then_stops(backend: Backend) {
    let (s, config, store) = setup_with(backend, "drain", 2, "shutdown_grace_ms = 20000", "");
    let mut server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    wait_scheduled(&server, ACME, &id, "send_reply");
    let status = server
        .terminate(Duration::from_secs(30))
        .expect("it stops within the grace");
    assert!(status.success(), "{status:?}: {}", server.stderr_text());
    // The session finished before the server stopped.
    let server = server.restart();
    let v = server.wait_final(ACME, &id, Duration::from_secs(10));
    assert_eq!(v["value"], json!(REFUNDED), "{v}");
    assert_eq!(rows(&s.path("acme.db"), "replies"), 1);
    assert!(
        server
            .stderr_text()
            .contains("0 unfinished sessions resumed"),
        "{}",
        server.stderr_text()
    );
}

fn sigterm_past_the_grace_leaves_the_session_resumable(backend: Backend) {
    let (s, config, store) = setup_with(backend, "abandon", 3, "shutdown_grace_ms = 200", "");
    let mut server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    wait_scheduled(&server, ACME, &id, "send_reply");
    let status = server.terminate(Duration::from_secs(30)).expect("it stops");
    assert!(status.success(), "{status:?}");
    let server = server.restart();
    assert!(
        server
            .stderr_text()
            .contains("1 unfinished sessions resumed"),
        "{}",
        server.stderr_text()
    );
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["status"], "ended", "{v}");
    assert!(
        v["value"]
            .as_str()
            .unwrap_or("")
            .contains("outcome unknown"),
        "the abandoned reply is not run twice: {v}"
    );
    assert_eq!(rows(&s.path("acme.db"), "refunds"), 1);
}

const CLIENT_PROGRAM: &str = r#"tool lookup_account: String -{Read}-> {id: String, subscription_tier: String,
                                       email: String, last_charge_cents: Int};
tool confirm: {question: String} -{Read}-> {yes: Bool};
match exec tool lookup_account "cust_12345" {
  Ok(a) => match exec tool confirm {question = "refund " ++ a.email ++ "?"} {
    Ok(c) => if c.yes then "confirmed" else "declined",
    Err(e) => "no answer: " ++ e
  },
  Err(e) => e
}"#;

fn a_client_venue_call_is_streamed_and_its_outcome_applied_once(backend: Backend) {
    let (s, config, store) = setup(backend, "client", false, "");
    let tools = s.path("acme-tools.toml");
    let text = std::fs::read_to_string(&tools).expect("tools");
    std::fs::write(
        &tools,
        format!("{text}[tools.confirm]\nvenue = \"client\"\n"),
    )
    .expect("tools");
    let decls = s.write(
        "decls.lt",
        &format!(
            "{}\ntool confirm: {{question: String}} -{{Read}}-> {{yes: Bool}};\n",
            std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("decls")
        ),
    );
    let cfg = std::fs::read_to_string(&config)
        .expect("config")
        .replacen(
            &format!(
                "declarations = \"{}\"",
                repo().join("examples/serve/tools.lt").display()
            ),
            &format!("declarations = \"{}\"", decls.display()),
            1,
        )
        .replacen(
            "allow = [\"lookup_account\", \"issue_refund\", \"send_reply\"]",
            "allow = [\"lookup_account\", \"issue_refund\", \"send_reply\", \"confirm\"]",
            1,
        );
    std::fs::write(&config, cfg).expect("config");
    let server = Server::start(&config, &store);
    // Without the capability the program is refused: the client does not run it.
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"program": CLIENT_PROGRAM, "profile": "support"})),
    );
    assert_eq!(status, 422, "{v}");
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"program": CLIENT_PROGRAM, "profile": "support", "capabilities": {"tools": ["confirm"]}})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let mut stream = server.stream(ACME, &id, None);
    let call = loop {
        let e = stream.next_event().expect("a tool_call comes");
        if e.event == "tool_call" {
            break e.json();
        }
    };
    assert_eq!(call["tool"], "confirm");
    assert_eq!(
        call["argument"],
        json!({"question": "refund ada@example.com?"})
    );
    assert!(call["idempotency_key"]
        .as_str()
        .unwrap_or("")
        .ends_with(call["call_id"].as_str().unwrap_or("?")));
    let v = server.wait_for(ACME, &id, Duration::from_secs(10), |v| {
        v["status"] == "waiting_client"
    });
    assert_eq!(v["status"], "waiting_client");
    // A session that has not ended is not replayed ("cut short" it is not).
    let (status, r) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/replay"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 409, "{r}");
    assert!(r.to_string().contains("has not ended"), "{r}");
    let path = format!("/v1/sessions/{id}/outcomes");
    let (status, _) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"call_id": "n999", "ok": {"yes": true}})),
    );
    assert_eq!(status, 409, "an unknown call id");
    let (status, _) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"call_id": call["call_id"], "ok": {"yes": true}, "extra": 1})),
    );
    assert_eq!(status, 400, "an unknown field");
    let (status, r) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"call_id": call["call_id"], "ok": {"yes": true}})),
    );
    assert_eq!(status, 202, "{r}");
    let (status, _) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"call_id": call["call_id"], "ok": {"yes": false}})),
    );
    assert_eq!(status, 409, "an outcome is applied once");
    let mut last = None;
    while let Some(e) = stream.next_event() {
        last = Some(e);
    }
    let out = last.expect("output");
    assert_eq!(out.event, "output");
    assert_eq!(out.json()["value"], "confirmed", "{}", out.data);
    let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    let text = log["text"].as_str().expect("log");
    assert_eq!(
        text.matches("\"kind\":\"client_reported\"").count(),
        1,
        "{text}"
    );
    // The refused outcome is logged as the stdio venue logs it, not applied.
    let rejected: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"client_rejected\""))
        .collect();
    assert!(
        rejected.first().is_some_and(|l| l.contains("n999")),
        "{text}"
    );
    let file = s.write("client.jsonl", text);
    let (code, out, err) = lt(&["log", "verify", file.to_str().expect("path")]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A log longer than a page (and than the ring of lately committed lines)
/// streams whole, page after page from the store, in order, once each.
fn a_long_log_streams_whole_page_after_page(backend: Backend) {
    let (_s, config, store) = setup(backend, "long-stream", false, "");
    let server = Server::start(&config, &store);
    let decls = std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("decls");
    let program = format!(
        "{decls}\nmatch traverse (fn i: Int => exec tool lookup_account \"cust_12345\") (range 0 80) {{ Ok(xs) => length xs, Err(e) => 0 }}"
    );
    let id = server.submit(ACME, &program, "support");
    let v = server.wait_final(ACME, &id, Duration::from_secs(120));
    assert_eq!(v["status"], "ended", "{v}");
    let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    let lines = log["text"].as_str().expect("log").lines().count();
    assert!(lines > 300, "{lines} lines: not longer than a page");
    let mut stream = server.stream(ACME, &id, None);
    let mut seqs = Vec::new();
    let mut output = None;
    while let Some(e) = stream.next_event() {
        match e.event.as_str() {
            "log" => seqs.push(e.json()["seq"].as_u64().expect("seq")),
            "output" => output = Some(e.json()),
            _ => {}
        }
    }
    assert_eq!(seqs, (0..lines as u64).collect::<Vec<_>>());
    assert_eq!(output.expect("the output")["value"], json!(80));
}

fn metrics_count_what_the_log_records(backend: Backend) {
    let extra = r#"
[tenants.acme.profiles.one_call]
max_calls = 1
"#;
    let (_s, config, store) = setup(backend, "metrics", false, extra);
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    server.wait_final(ACME, &id, Duration::from_secs(30));
    let id = server.submit(ACME, &support_program(), "one_call");
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert!(
        v["value"]
            .as_str()
            .unwrap_or("")
            .contains("denied: session_budget"),
        "{v}"
    );
    let (status, m) = server.call("GET", "/metrics", Some(ACME), None);
    assert_eq!(status, 200);
    let text = m["text"].as_str().expect("text");
    for line in [
        "lt_sessions_started_total{tenant=\"acme\"} 2",
        "lt_sessions_finished_total{status=\"ended\",tenant=\"acme\"} 2",
        "lt_tool_calls_total{outcome=\"completed\",tenant=\"acme\",tool=\"lookup_account\"} 2",
        "lt_tool_calls_total{outcome=\"completed\",tenant=\"acme\",tool=\"issue_refund\"} 1",
        "lt_tool_calls_total{outcome=\"completed\",tenant=\"acme\",tool=\"send_reply\"} 1",
        "lt_decision_denials_total{rule=\"session_budget\",tenant=\"acme\"} 1",
        "lt_tool_call_duration_seconds_count{tenant=\"acme\",tool=\"lookup_account\"} 2",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(
        text.contains("lt_store_commit_duration_seconds_count"),
        "{text}"
    );
    // Another tenant sees its own series and the store's, none of acme's.
    let (status, m) = server.call("GET", "/metrics", Some(GLOBEX), None);
    assert_eq!(status, 200);
    let text = m["text"].as_str().expect("text");
    assert!(!text.contains("acme"), "{text}");
    assert!(!text.contains("lookup_account"), "{text}");
    assert!(
        text.lines()
            .any(|l| l == "lt_sessions_started_total{tenant=\"globex\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("lt_store_commit_duration_seconds_count"),
        "{text}"
    );
}

fn past_max_sessions_a_new_session_is_refused_with_retry_after(backend: Backend) {
    let (_s, config, store) = setup_with(backend, "busy", 3, "max_sessions = 1", "");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    wait_scheduled(&server, ACME, &id, "send_reply");
    let resp = ureq::post(&format!("{}/v1/sessions", server.url))
        .set("Authorization", &format!("Bearer {ACME}"))
        .set("Content-Type", "application/json")
        .send_string(&json!({"program": support_program(), "profile": "support"}).to_string());
    match resp {
        Err(ureq::Error::Status(503, r)) => {
            assert_eq!(r.header("Retry-After"), Some("2"));
            let v: Value =
                serde_json::from_str(&r.into_string().unwrap_or_default()).unwrap_or_default();
            assert_eq!(v["error"]["code"], "busy", "{v}");
        }
        other => panic!("expected 503, got {other:?}"),
    }
    // A body that can never start is refused for what it is, busy or not.
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"profile": "support"})),
    );
    assert_eq!(status, 400, "{v}");
    server.wait_final(ACME, &id, Duration::from_secs(30));
    let id2 = server.submit(ACME, &support_program(), "support");
    assert_eq!(
        server.wait_final(ACME, &id2, Duration::from_secs(30))["status"],
        "ended"
    );
    // Starts sent at once: the last place is taken once (the check and
    // the count were apart: 60 of 120 got in under max_sessions = 50).
    let body = json!({"program": support_program(), "profile": "support"}).to_string();
    let url = format!("{}/v1/sessions", server.url);
    let answers: Vec<u16> = std::thread::scope(|scope| {
        let posts: Vec<_> = (0..12)
            .map(|_| {
                scope.spawn(|| {
                    match ureq::post(&url)
                        .set("Authorization", &format!("Bearer {ACME}"))
                        .set("Content-Type", "application/json")
                        .send_string(&body)
                    {
                        Ok(r) => r.status(),
                        Err(ureq::Error::Status(code, _)) => code,
                        Err(e) => panic!("POST: {e}"),
                    }
                })
            })
            .collect();
        posts
            .into_iter()
            .map(|p| p.join().expect("a post"))
            .collect()
    });
    assert_eq!(
        answers.iter().filter(|c| **c == 201).count(),
        1,
        "{answers:?}"
    );
    assert_eq!(
        answers.iter().filter(|c| **c == 503).count(),
        11,
        "{answers:?}"
    );
}

fn a_program_accepted_under_one_profile_is_still_checked_under_another(backend: Backend) {
    // The server keeps programs it lowered; the profile's static check
    // (E0701: a tool outside `allow`) must still refuse the same text.
    let extra = r#"
[tenants.acme.profiles.lookups]
allow = ["lookup_account"]
"#;
    let (_s, config, store) = setup(backend, "profile-cache", false, extra);
    let server = Server::start(&config, &store);
    for _ in 0..3 {
        let id = server.submit(ACME, &support_program(), "support");
        let v = server.wait_final(ACME, &id, Duration::from_secs(30));
        assert_eq!(v["status"], "ended", "{v}");
        let (status, v) = server.call(
            "POST",
            "/v1/sessions",
            Some(ACME),
            Some(&json!({"program": support_program(), "profile": "lookups"})),
        );
        assert_eq!(status, 422, "{v}");
        assert!(v.to_string().contains("E0701"), "{v}");
    }
}

/// `POST /v1/sessions` with `Prefer: wait=N` as raw HTTP: status, the
/// `Preference-Applied` header, the body.
fn post_waiting(
    server: &Server,
    key: &str,
    prefer: &str,
    body: &Value,
    idempotency_key: Option<&str>,
) -> (u16, Option<String>, Value) {
    let mut req = ureq::post(&format!("{}/v1/sessions", server.url))
        .timeout(Duration::from_secs(90))
        .set("Authorization", &format!("Bearer {key}"))
        .set("Prefer", prefer);
    if let Some(k) = idempotency_key {
        req = req.set("Idempotency-Key", k);
    }
    let req = req.set("Content-Type", "application/json");
    let resp = match req.send_string(&body.to_string()) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST /v1/sessions: {e}"),
    };
    let status = resp.status();
    let applied = resp.header("Preference-Applied").map(str::to_string);
    let v = serde_json::from_str(&resp.into_string().unwrap_or_default()).unwrap_or(Value::Null);
    (status, applied, v)
}

fn prefer_wait_answers_with_the_session_once_over_or_its_status_when_the_wait_runs_out(
    backend: Backend,
) {
    // The reply tool sleeps 3 s: a 1 s wait runs out, a 60 s one does not.
    let (s, config, store) = setup(backend, "prefer-wait", true, "");
    let server = Server::start(&config, &store);
    let body = json!({"program": support_program(), "profile": "support"});
    let (status, applied, v) = post_waiting(&server, ACME, "wait=1", &body, None);
    assert_eq!((status, applied.as_deref()), (201, Some("wait=1")), "{v}");
    assert_eq!(v["status"], "running", "{v}");
    assert!(v.get("value").is_none(), "{v}");
    let first = v["id"].as_str().expect("id").to_string();
    // Other preferences beside it are ignored; the answer is the view of
    // the ended session, as GET /v1/sessions/{id} shows it (another
    // tenant: its own database, where nothing was refunded yet).
    let (status, applied, v) = post_waiting(
        &server,
        GLOBEX,
        "respond-async, wait=60",
        &body,
        Some("order-9"),
    );
    assert_eq!((status, applied.as_deref()), (201, Some("wait=60")), "{v}");
    assert_eq!(v["status"], "ended", "{v}");
    assert_eq!(v["value"], json!(REFUNDED), "{v}");
    assert_eq!(v["calls"], 3, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    // Exactly what the store holds (the server tells it without a read).
    let (_, shown) = server.call("GET", &format!("/v1/sessions/{id}"), Some(GLOBEX), None);
    assert_eq!(shown, v);
    // The same Idempotency-Key: 200, the same session, not run again.
    let (status, _, again) = post_waiting(&server, GLOBEX, "wait=60", &body, Some("order-9"));
    assert_eq!(
        (status, &again["id"], &again["status"]),
        (200, &v["id"], &v["status"])
    );
    // A wait that is not seconds is refused before anything runs.
    for bad in ["wait=soon", "wait", "wait=-1"] {
        let (status, _, e) = post_waiting(&server, ACME, bad, &body, None);
        assert_eq!(status, 400, "{bad}: {e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("wait"),
            "{e}"
        );
    }
    let v = server.wait_final(ACME, &first, Duration::from_secs(30));
    assert_eq!(v["value"], json!(REFUNDED), "{v}");
    assert_eq!(rows(&s.path("acme.db"), "refunds"), 1);
    assert_eq!(rows(&s.path("globex.db"), "refunds"), 1);
}

on_both_stores!(
    a_server_venue_session_runs_end_to_end_and_its_log_verifies_and_replays,
    prefer_wait_answers_with_the_session_once_over_or_its_status_when_the_wait_runs_out,
    a_tenant_cannot_see_or_touch_another_tenants_session,
    an_idempotency_key_returns_the_same_session_and_runs_it_once,
    bad_requests_get_a_status_and_an_error_naming_the_problem,
    a_reconnecting_stream_misses_nothing_and_repeats_nothing,
    a_session_killed_with_sigkill_is_resumed_after_restart_and_refunds_once,
    an_approval_waits_for_the_api_and_the_granted_call_runs,
    a_cancelled_session_stops_its_running_tool_and_ends_cancelled,
    sigterm_lets_a_running_call_finish_then_stops,
    sigterm_past_the_grace_leaves_the_session_resumable,
    a_client_venue_call_is_streamed_and_its_outcome_applied_once,
    a_long_log_streams_whole_page_after_page,
    metrics_count_what_the_log_records,
    past_max_sessions_a_new_session_is_refused_with_retry_after,
    a_program_accepted_under_one_profile_is_still_checked_under_another,
);

/// `lt serve --config EMPTY ARGS…` as a process: its exit code and stderr.
fn serve_exit(s: &Scratch, args: &[&str]) -> (i32, String) {
    serve_with(&s.write("empty-serve.toml", ""), args)
}

/// `lt serve --config CONFIG ARGS…` as a process: its exit code and stderr.
fn serve_with(config: &Path, args: &[&str]) -> (i32, String) {
    let mut all = vec!["serve", "--config", config.to_str().expect("path")];
    all.extend_from_slice(args);
    let (code, _, err) = lt(&all);
    (code, err)
}

#[test]
fn a_client_that_never_finishes_its_headers_is_cut_off_and_frees_its_slot() {
    let (_s, config, store) = setup_with(
        Backend::Sqlite,
        "slowloris",
        0,
        "max_connections = 2\nheader_timeout_ms = 500\n",
        "",
    );
    let server = Server::start(&config, &store);
    let addr = server.url.trim_start_matches("http://").to_string();
    // Two connections that never finish their headers hold both slots.
    let stalled: Vec<std::net::TcpStream> = (0..2)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&addr).expect("connect");
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                .expect("write");
            c
        })
        .collect();
    let started = Instant::now();
    // A third client is served once the timeout has closed one of them.
    let (status, v) = server.call("GET", "/healthz", None, None);
    assert_eq!(status, 200, "{v}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "served at once: {waited:?}"
    );
    // Each stalled connection was closed by the server.
    for mut c in stalled {
        c.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut rest = Vec::new();
        let read = c.read_to_end(&mut rest);
        assert!(read.is_ok(), "not closed: {read:?}");
    }
    // One key under two tenants is a configuration error, not the first
    // tenant silently.
    let (_s3, config, _) = setup(Backend::Sqlite, "shared-key", false, "");
    let text = std::fs::read_to_string(&config).expect("config");
    let shared = text.replace(&sha256_line(GLOBEX), &sha256_line(ACME));
    std::fs::write(&config, shared).expect("config");
    let (code, err) = serve_with(&config, &["--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a key of tenant acme is also a key of tenant globex"),
        "{err}"
    );
    // A zero cap is a configuration error naming the key and its line.
    let (_s2, config, _) = setup_with(Backend::Sqlite, "zero-cap", 0, "max_connections = 0\n", "");
    let (code, err) = serve_with(&config, &["--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("server.max_connections = 0"), "{err}");
}

/// `[server]`'s lease and pool settings out of range are configuration
/// errors (exit 2) naming the key, its line and the range: a lease of
/// 100 ms to an hour (a worker that dies keeps its sessions' leases from
/// every other worker that long), renewed at least twice, a pool of 1 to 64.
#[test]
fn lease_and_pool_settings_out_of_range_are_refused_naming_their_line() {
    let s = Scratch::new("lease-range");
    for (body, says) in [
        (
            "lease_ms = 99",
            "serve.toml:2: server.lease_ms = 99 is too short",
        ),
        (
            "lease_ms = 3600001",
            "serve.toml:2: server.lease_ms = 3600001 is longer than an hour",
        ),
        (
            "pool_size = 4\nlease_ms = 9223372036854775807",
            "serve.toml:3: server.lease_ms = 9223372036854775807 is longer than an hour",
        ),
        (
            "lease_ms = 1000\nlease_renew_ms = 501",
            "serve.toml:3: server.lease_renew_ms = 501 must be above 0 and at most half",
        ),
        (
            "lease_renew_ms = 0",
            "serve.toml:2: server.lease_renew_ms = 0 must be above 0",
        ),
        (
            "pool_size = 65",
            "serve.toml:2: server.pool_size = 65 is not between 1 and 64",
        ),
    ] {
        let config = s.write("serve.toml", &format!("[server]\n{body}\n"));
        // `--migrate-only`: a setting let through exits 0 instead of serving.
        let (code, err) = serve_with(&config, &["--migrate-only"]);
        assert_eq!(code, 2, "{body}: {err}");
        assert!(err.contains(says), "{body}: {err}");
        assert!(err.contains("help: "), "{body}: {err}");
    }
}

#[test]
fn a_store_url_of_another_scheme_is_refused_not_taken_as_a_path() {
    let s = Scratch::new("store-schemes");
    let db = s.path("same.db");
    let file = format!("file:{}", db.display());
    let sqlite_file = format!("sqlite:file:{}", db.display());
    for (url, says) in [
        (file.as_str(), "`file:` is not a store lt knows"),
        (sqlite_file.as_str(), "`file:` is not a store lt knows"),
        (
            "mysql://lt@127.0.0.1/lt",
            "`mysql:` is not a store lt knows",
        ),
        ("sqlite://abs.db", "sqlite:// is not a form lt reads"),
    ] {
        let (code, err) = serve_exit(&s, &["--store", url, "--listen", "127.0.0.1:0"]);
        assert_eq!(code, 2, "{url}: {err}");
        assert!(err.contains(says), "{url}: {err}");
        assert!(err.contains("help:"), "{url}: {err}");
    }
    assert!(!db.exists(), "nothing was created at {}", db.display());
}

#[test]
fn a_bad_store_url_from_serve_toml_is_named_as_its_setting_not_as_the_flag() {
    let s = Scratch::new("store-from-config");
    for (url, says) in [
        (
            "mysql://lt@127.0.0.1/lt",
            "`mysql:` is not a store lt knows",
        ),
        (
            "postgres://lt@127.0.0.1:notaport/db",
            "not a PostgreSQL URL",
        ),
    ] {
        let config = s.write("serve.toml", &format!("[server]\nstore = {url:?}\n"));
        for args in [&["--migrate-only"][..], &["--listen", "127.0.0.1:0"][..]] {
            let (code, err) = serve_with(&config, args);
            assert_eq!(code, 2, "{url} {args:?}: {err}");
            assert!(err.contains(says), "{url} {args:?}: {err}");
            assert!(
                err.contains("serve.toml: server.store"),
                "{url} {args:?}: {err}"
            );
            assert!(!err.contains("--store"), "{url} {args:?}: {err}");
        }
        // The flag, given, is what the error names.
        let (code, err) = serve_with(&config, &["--store", url, "--migrate-only"]);
        assert_eq!(code, 2, "{url}: {err}");
        assert!(err.contains("--store"), "{url}: {err}");
        assert!(!err.contains("server.store"), "{url}: {err}");
    }
}

#[test]
fn a_bad_or_unreachable_postgres_url_is_a_clear_error_without_the_password() {
    let s = Scratch::new("pg-bad-url");
    let (code, err) = serve_exit(
        &s,
        &[
            "--store",
            "postgres://lt:hunter2@127.0.0.1:notaport/db",
            "--migrate-only",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a PostgreSQL URL"), "{err}");
    assert!(err.contains("help:"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    // Nothing listens on port 1: refused at once, with a hint.
    let (code, err) = serve_exit(
        &s,
        &[
            "--store",
            "postgres://lt:hunter2@127.0.0.1:1/db",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("cannot connect to the store postgres://lt@127.0.0.1:1/db"),
        "{err}"
    );
    assert!(err.contains("is PostgreSQL running there"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn postgres_migrate_only_then_a_newer_schema_or_a_wrong_password_is_refused() {
    if !Backend::Postgres.available("postgres_migrate_only") {
        return;
    }
    let s = Scratch::new("pg-migrate");
    let url = Backend::Postgres.store(&s, "pg_migrate");
    let (code, err) = serve_exit(&s, &["--store", &url, "--migrate-only"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("schema migrated from version 0 to 6"), "{err}");
    let (code, err) = serve_exit(&s, &["--store", &url, "--migrate-only"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("at schema version 6 (nothing to do)"), "{err}");
    let mut c = ::postgres::Client::connect(&url, ::postgres::NoTls).expect("connect");
    c.execute("UPDATE lt_schema SET version = version + 1", &[])
        .expect("bump");
    let (code, err) = serve_exit(&s, &["--store", &url, "--listen", "127.0.0.1:0"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("a newer lt migrated it"), "{err}");
    // The role cluster.sh makes log in with a password (docs/testing.md).
    c.batch_execute(
        "DO $$ BEGIN
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'lt_password_test') THEN
             CREATE ROLE lt_password_test LOGIN PASSWORD 'the-right-one';
           END IF;
         END $$",
    )
    .expect("role");
    let wrong = url.replacen("://lt@", "://lt_password_test:Wr0ng-Pa55word@", 1);
    assert!(wrong.contains("Wr0ng-Pa55word"), "{wrong}");
    let (code, err) = serve_exit(&s, &["--store", &wrong, "--migrate-only"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("check the user and the password"), "{err}");
    assert!(!err.contains("Wr0ng-Pa55word"), "{err}");
}

/// POSTs `body` over a plain TCP connection while reading the answer on
/// another thread, and returns the answer's text. A server that refuses a
/// body too large answers before reading it and closes: a client that
/// reads only once it has written (ureq) may meet "broken pipe" first and
/// never see the answer.
fn post_reading_early(url: &str, path: &str, key: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut reader = stream.try_clone().expect("clone");
    let answer = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // Until the server closes, or the head of its answer is in.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if got.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        String::from_utf8_lossy(&got).into_owned()
    });
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // The server may stop reading (and close) part-way: a failed write is
    // expected here; the answer tells what it did.
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()));
    answer.join().expect("the reader")
}
