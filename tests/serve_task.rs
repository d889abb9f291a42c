//! `lt serve`'s sessions from a task (`POST /v1/sessions {"task": …}`):
//! the real binary with a real SQLite store, the support desk's tools on
//! real SQLite databases, and the fake model server of the agent tests
//! (`tests/fixtures/fake_model/server.py`) as the tenant's provider. The
//! agent log the server keeps must be the one `lt agent --log` writes:
//! `lt log verify` and `lt replay` accept it.

#[macro_use]
#[path = "support/serve.rs"]
mod serve_support;
#[path = "support/mod.rs"]
mod support;

use serde_json::{json, Value};
use serve_support::{sha256_line, Backend, Scratch, Server};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::fake_model::FakeModel;

const ACME: &str = "acme-dev-key";
const GLOBEX: &str = "globex-dev-key";
const TASK: &str = "cust_12345 was charged twice: refund the last charge and tell them.";
const REFUNDED: &str = "refund tx_000001 processed and ada@example.com notified";
const ANSWER: &str =
    "I refunded the last charge of cust_12345 (tx_000001) and told ada@example.com.";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The support desk's program, as a model replies with it.
fn program_reply() -> String {
    let decls = std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("tools.lt");
    let program = std::fs::read_to_string(repo().join("examples/support_desk/program.lt"))
        .expect("program.lt");
    let body = &program[program.find("match exec").expect("the expression")..];
    format!("Here is the program:\n```lt\n{decls}\n{body}```")
}

/// The support desk's tools on `db`.
fn tools_toml(db: &Path) -> String {
    let tools = repo().join("examples/support_desk/tools");
    let mut out = String::new();
    for (name, idem) in [
        ("lookup_account", true),
        ("issue_refund", false),
        ("send_reply", false),
    ] {
        out.push_str(&format!(
            "[tools.{name}]\ncommand = [\"python3\", \"{}\"]\nenv = {{ LT_EXAMPLE_DB = \"{}\" }}\ntimeout_ms = 20000\nidempotent = {idem}\n\n",
            tools.join(format!("{name}.py")).display(),
            db.display()
        ));
    }
    out
}

/// A serve.toml of two tenants with the support desk's tools, acme with
/// the fake model as its provider (`model_extra`: more keys of its model
/// table), globex without a model.
fn setup(backend: Backend, name: &str, model: &FakeModel, model_extra: &str) -> (Scratch, Server) {
    setup_with(backend, name, model, model_extra, ("", ""), "")
}

/// [`setup`], with `acme_extra` (declarations, tools.toml tables) added to
/// acme's tools and `config_extra` appended to serve.toml.
fn setup_with(
    backend: Backend,
    name: &str,
    model: &FakeModel,
    model_extra: &str,
    acme_extra: (&str, &str),
    config_extra: &str,
) -> (Scratch, Server) {
    let s = Scratch::new(name);
    for t in ["acme", "globex"] {
        let extra = if t == "acme" { acme_extra.1 } else { "" };
        s.write(
            &format!("{t}-tools.toml"),
            &format!("{}{extra}", tools_toml(&s.path(&format!("{t}.db")))),
        );
    }
    let decls = std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("tools.lt");
    let acme_decls = s.write("acme.lt", &format!("{decls}{}", acme_extra.0));
    let config = s.write(
        "serve.toml",
        &format!(
            r#"
[tenants.acme]
keys = ["{ak}"]
declarations = "{ad}"
executors = "acme-tools.toml"
[tenants.acme.profiles.support]
allow = ["lookup_account", "issue_refund", "send_reply"]
[tenants.acme.model]
provider = "openai"
model = "fake-model"
base_url = "{url}"
max_retries = 0
{model_extra}

[tenants.globex]
keys = ["{gk}"]
declarations = "{d}"
executors = "globex-tools.toml"
[tenants.globex.profiles.support]
allow = ["lookup_account", "issue_refund", "send_reply"]
{config_extra}
"#,
            ad = acme_decls.display(),
            ak = sha256_line(ACME),
            gk = sha256_line(GLOBEX),
            d = repo().join("examples/serve/tools.lt").display(),
            url = model.base_url_openai(),
        ),
    );
    let server = Server::start(&config, &backend.store(&s, name));
    (s, server)
}

fn submit_task(server: &Server, key: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    server.call_with(
        "POST",
        "/v1/sessions",
        Some(key),
        Some(&json!({"task": TASK, "profile": "support"})),
        headers,
    )
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

/// The session's log, fetched over the API and written to a file.
fn fetch_log(server: &Server, s: &Scratch, id: &str) -> (PathBuf, Vec<Value>) {
    let (status, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    assert_eq!(status, 200, "{log}");
    let text = log["text"].as_str().expect("JSONL text").to_string();
    let events = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a log line is JSON"))
        .collect();
    (s.write(&format!("{id}.jsonl"), &text), events)
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or(""))
        .collect()
}

fn a_task_session_runs_the_agent_loop_and_ends_with_the_models_answer(backend: Backend) {
    let model = FakeModel::start(vec![
        json!({"text": program_reply()}),
        json!({"text": ANSWER}),
    ]);
    let (s, server) = setup(backend, "task-e2e", &model, "");
    let h = [("Idempotency-Key", "ticket-9")];
    let (status, v) = submit_task(&server, ACME, &h);
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    // A retried POST is the same session, and asks the model nothing more.
    let (status, again) = submit_task(&server, ACME, &h);
    assert_eq!((status, &again["id"]), (200, &v["id"]), "{again}");
    let events = server.all_events(ACME, &id);
    let last = events.last().expect("events");
    assert_eq!(last.event, "output", "{events:?}");
    assert_eq!(last.json()["answer"], json!(ANSWER), "{}", last.data);
    let v = server.wait_final(ACME, &id, Duration::from_secs(60));
    assert_eq!(v["status"], "ended", "{v}");
    assert_eq!(v["value"], json!(ANSWER), "{v}");
    // The output is lt agent --json's object: the answer, and the last
    // run's value.
    assert_eq!(v["output"]["status"], "answered", "{v}");
    assert_eq!(v["output"]["turns"], 1, "{v}");
    assert_eq!(v["output"]["value"], json!(REFUNDED), "{v}");
    assert_eq!(v["calls"], 3, "{v}");
    assert_eq!(rows(&s.path("acme.db"), "refunds"), 1);
    assert_eq!(rows(&s.path("acme.db"), "replies"), 1);
    assert!(!s.path("globex.db").exists());
    // The model was asked twice, with the task and then the run's result.
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0]["body"]["model"], "fake-model");
    let first = requests[0]["body"]["messages"].to_string();
    assert!(first.contains("cust_12345 was charged twice"), "{first}");
    // The log: the agent's, with the run inside, as lt agent --log writes it.
    let (file, logged) = fetch_log(&server, &s, &id);
    let k = kinds(&logged);
    assert_eq!(k.first(), Some(&"agent_started"), "{k:?}");
    assert_eq!(k.last(), Some(&"agent_ended"), "{k:?}");
    for kind in [
        "model_requested",
        "model_replied",
        "program_accepted",
        "session_started",
        "session_ended",
    ] {
        assert!(k.contains(&kind), "{kind}: {k:?}");
    }
    assert_eq!(k.iter().filter(|x| **x == "completed").count(), 3, "{k:?}");
    assert_eq!(logged[0]["session"], json!(id), "{}", logged[0]);
    assert_eq!(logged[0]["task"], json!(TASK), "{}", logged[0]);
    let sse_kinds: Vec<String> = events
        .iter()
        .filter(|e| e.event == "log")
        .map(|e| e.json()["kind"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(sse_kinds, k, "the stream shows every logged event");
    let f = file.to_str().expect("path");
    let (code, out, err) = lt(&["log", "verify", f]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = lt(&["replay", f, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let r: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        (&r["agent"], &r["answer"]),
        (&json!(true), &json!(ANSWER)),
        "{r}"
    );
    // Replayed on the server: the same verdict.
    let (status, r) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/replay"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        (&r["ok"], &r["answer"]),
        (&json!(true), &json!(ANSWER)),
        "{r}"
    );
    // The metrics count it as any session.
    let (_, m) = server.call("GET", "/metrics", Some(ACME), None);
    let m = m["text"].as_str().unwrap_or("");
    assert!(
        m.contains("lt_sessions_finished_total{status=\"ended\",tenant=\"acme\"} 1"),
        "{m}"
    );
    assert!(
        m.contains(
            "lt_tool_calls_total{outcome=\"completed\",tenant=\"acme\",tool=\"issue_refund\"} 1"
        ),
        "{m}"
    );
}

fn a_tenant_cannot_see_another_tenants_task_session(backend: Backend) {
    let model = FakeModel::start(vec![
        json!({"text": program_reply()}),
        json!({"text": ANSWER}),
    ]);
    let (_s, server) = setup(backend, "task-isolation", &model, "");
    let (status, v) = submit_task(&server, ACME, &[]);
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    server.wait_final(ACME, &id, Duration::from_secs(60));
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
    let (_, v) = server.call("GET", "/v1/sessions", Some(GLOBEX), None);
    assert_eq!(v["sessions"], json!([]), "{v}");
    let (_, v) = server.call("GET", "/v1/sessions?status=ended", Some(ACME), None);
    assert_eq!(v["sessions"][0]["id"], json!(id), "{v}");
    assert_eq!(v["sessions"][0]["value"], json!(ANSWER), "{v}");
}

fn a_task_is_refused_without_a_model_and_when_malformed(backend: Backend) {
    let model = FakeModel::start(vec![]);
    let (_s, server) = setup(backend, "task-refused", &model, "");
    // globex has no model.
    let (status, v) = submit_task(&server, GLOBEX, &[]);
    assert_eq!(status, 501, "{v}");
    assert_eq!(v["error"]["code"], "no_model", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("tenant globex has no model"),
        "{v}"
    );
    assert!(
        v["error"]["hint"]
            .as_str()
            .unwrap_or("")
            .contains("[tenants.globex.model]"),
        "{v}"
    );
    // A task that could never start is a 400 before the model is looked
    // for (docs/api.md: an empty task is a 400).
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(GLOBEX),
        Some(&json!({"task": " ", "profile": "support"})),
    );
    assert_eq!(
        (status, &v["error"]["code"]),
        (400, &json!("bad_request")),
        "{v}"
    );
    let (_, v) = server.call("GET", "/v1/sessions", Some(GLOBEX), None);
    assert_eq!(v["sessions"], json!([]), "nothing was recorded: {v}");
    for (body, says) in [
        (
            json!({"task": "  ", "profile": "support"}),
            "the task is empty",
        ),
        (
            json!({"task": TASK, "profile": "support", "capabilities": {"tools": ["send_reply"]}}),
            "capabilities",
        ),
        (
            json!({"task": TASK, "profile": "support", "capabilities": {"tools": []}}),
            "capabilities",
        ),
        (
            json!({"task": TASK, "program": "1", "profile": "support"}),
            "not both",
        ),
        (json!({"task": TASK, "profile": "nope"}), "no profile"),
    ] {
        let (status, v) = server.call("POST", "/v1/sessions", Some(ACME), Some(&body));
        assert_eq!(status, 400, "{body}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap_or("").contains(says),
            "{body}: {v}"
        );
    }
    let (_, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
    assert_eq!(v["sessions"], json!([]), "{v}");
    assert!(model.requests().is_empty());
}

fn the_tenants_agent_table_applies_and_a_session_that_gives_up_fails(backend: Backend) {
    // One attempt per turn: a program that does not check ends the session.
    let model = FakeModel::start(vec![
        json!({"text": "```lt\nexec tool no_such_tool 1\n```"}),
    ]);
    let (s, server) = setup(
        backend,
        "task-gave-up",
        &model,
        "[tenants.acme.model.agent]\nmax_attempts = 1\n",
    );
    let (status, v) = submit_task(&server, ACME, &[]);
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let v = server.wait_final(ACME, &id, Duration::from_secs(60));
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["output"]["status"], "gave_up", "{v}");
    assert!(v.get("value").is_none(), "{v}");
    assert_eq!(model.requests().len(), 1);
    let (file, logged) = fetch_log(&server, &s, &id);
    assert_eq!(logged[0]["settings"]["max_attempts"], 1, "{}", logged[0]);
    let (code, out, err) = lt(&["replay", file.to_str().expect("path")]);
    assert_eq!(code, 0, "{out}{err}");
}

fn cancelling_a_task_session_ends_the_model_request_in_flight(backend: Backend) {
    let model = FakeModel::start(vec![json!({"text": program_reply(), "delay_ms": 30000})]);
    let (s, server) = setup(backend, "task-cancel", &model, "");
    let (status, v) = submit_task(&server, ACME, &[]);
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    // The request is out once model_requested is committed.
    server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["events"].as_u64() >= Some(2)
    });
    let started = std::time::Instant::now();
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/cancel"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 202, "{v}");
    let v = server.wait_final(ACME, &id, Duration::from_secs(10));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(v["status"], "cancelled", "{v}");
    let reason = v["output"]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("cancelled through the API"), "{v}");
    assert!(!s.path("acme.db").exists(), "no tool ran");
    let (file, logged) = fetch_log(&server, &s, &id);
    let k = kinds(&logged);
    assert_eq!(
        k,
        [
            "agent_started",
            "model_requested",
            "model_failed",
            "agent_ended"
        ],
        "{k:?}"
    );
    let f = file.to_str().expect("path");
    let (code, out, err) = lt(&["log", "verify", f]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = lt(&["replay", f]);
    assert_eq!(code, 0, "{out}{err}");
}

fn a_task_session_cut_by_a_restart_is_failed_not_run_again(backend: Backend) {
    let model = FakeModel::start(vec![
        json!({"text": program_reply(), "delay_ms": 30000}),
        json!({"text": program_reply()}),
    ]);
    let (s, mut server) = setup(backend, "task-restart", &model, "");
    let (status, v) = submit_task(&server, ACME, &[]);
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["events"].as_u64() >= Some(2)
    });
    // `model_requested` commits before the request is sent: wait for the
    // model to have it, so "not run again" counts from one.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while model.requests().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill9();
    let server = server.restart();
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["status"], "failed", "{v}");
    assert_eq!(v["output"]["error"]["kind"], "not_resumable", "{v}");
    let message = v["output"]["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("task sessions are not resumed"), "{v}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(model.requests().len(), 1, "the task was not run again");
    // What the log holds still verifies.
    let (file, logged) = fetch_log(&server, &s, &id);
    assert_eq!(kinds(&logged), ["agent_started", "model_requested"]);
    let (code, out, err) = lt(&["log", "verify", file.to_str().expect("path")]);
    assert_eq!(code, 0, "{out}{err}");
}

fn an_approval_asked_by_a_task_sessions_run_is_answered_through_the_api(backend: Backend) {
    let program = r#"```lt
effect Delete;
tool delete_file: {path: String, approval: !Approval} -{Delete}-> {deleted: String};
match approve tool delete_file {path = "tmp/a.log"} {
  Ok(a) => match exec tool delete_file {path = "tmp/a.log", approval = a} {
    Ok(d) => "deleted " ++ d.deleted,
    Err(e) => "delete failed: " ++ e
  },
  Err(why) => "not approved: " ++ why
}
```"#;
    let model = FakeModel::start(vec![
        json!({"text": program}),
        json!({"text": "Deleted tmp/a.log."}),
    ]);
    let s0 = Scratch::new("task-approval-calls");
    let calls = s0.path("deleted.txt");
    let tool = format!(
        "[tools.delete_file]\ncommand = [\"sh\", \"-c\", \"cat >> {}; echo; echo '{{\\\"deleted\\\": \\\"ok\\\"}}'\"]\n",
        calls.display()
    );
    let (s, server) = setup_with(
        backend,
        "task-approval",
        &model,
        "",
        (
            "\neffect Delete;\ntool delete_file: {path: String, approval: !Approval} -{Delete}-> {deleted: String};\n",
            &tool,
        ),
        "[tenants.acme.profiles.supervised]\nallow = [\"lookup_account\", \"issue_refund\", \"send_reply\", \"delete_file\"]\napprovals = \"api\"\n",
    );
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"task": "Delete tmp/a.log", "profile": "supervised"})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let approval = server.pending_approval(ACME, &id);
    assert!(!calls.exists(), "nothing ran before the approval");
    let encoded: String = approval
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let path = format!("/v1/sessions/{id}/approvals/{encoded}");
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
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["status"], "ended", "{v}");
    assert_eq!(v["output"]["value"], json!("deleted ok"), "{v}");
    assert!(calls.exists(), "the approved call ran");
    let (file, logged) = fetch_log(&server, &s, &id);
    assert!(
        logged
            .iter()
            .any(|e| e["kind"] == "approval_decided" && e["by"] == "api"),
        "{logged:?}"
    );
    let (code, out, err) = lt(&["replay", file.to_str().expect("path")]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `lt serve ARGS`, expected to stop at once: its exit code (`None`: it
/// was still running after 20 s, and was killed) and its stderr.
fn serve_exit(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lt"))
        .arg("serve")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lt serve starts");
    let until = std::time::Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.code();
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    (code, err)
}

/// serve.toml's model table is checked at start: the line and a hint.
#[test]
fn a_bad_model_table_stops_the_server_with_its_line_and_a_hint() {
    let s = Scratch::new("task-config");
    s.write("tools.toml", &tools_toml(&s.path("t.db")));
    let decls = repo().join("examples/serve/tools.lt");
    let head = format!(
        "[tenants.acme]\nkeys = [\"{}\"]\ndeclarations = \"{}\"\n",
        sha256_line(ACME),
        decls.display()
    );
    let cases: Vec<(String, usize, &str, &str)> = vec![
        (
            "executors = \"tools.toml\"\n[tenants.acme.model]\nprovider = \"openai\"\nmodel = \"m\"\napi_key = \"sk-abc\"\n".into(),
            8,
            "an API key is never written in serve.toml",
            "api_key_env",
        ),
        (
            "executors = \"tools.toml\"\n[tenants.acme.model]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"sk-abc\"\n".into(),
            8,
            "not the name of an environment variable",
            "the key itself never goes in this file",
        ),
        (
            "executors = \"tools.toml\"\n[tenants.acme.model]\nprovider = \"mistral\"\nmodel = \"m\"\n".into(),
            6,
            "unknown provider `mistral`",
            "\"anthropic\"",
        ),
        (
            "executors = \"tools.toml\"\n[tenants.acme.model]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"LT_TEST_UNSET_KEY_4B1\"\n".into(),
            8,
            "no API key",
            "set LT_TEST_UNSET_KEY_4B1 in lt serve's environment",
        ),
        (
            "executors = \"tools.toml\"\n[tenants.acme.model]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[tenants.acme.model.agent]\nmax_attempts = 0\n".into(),
            9,
            "max_attempts = 0",
            "[agent] keys",
        ),
        (
            "[tenants.acme.model]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n".into(),
            5,
            "needs `executors`",
            "tools.toml",
        ),
    ];
    for (i, (tail, line, says, hint)) in cases.into_iter().enumerate() {
        let config = s.write(&format!("serve{i}.toml"), &format!("{head}{tail}"));
        let (code, err) = serve_exit(&[
            "--config",
            config.to_str().expect("path"),
            "--listen",
            "127.0.0.1:0",
            "--store",
            &format!("sqlite:{}", s.path("data.db").display()),
        ]);
        assert_eq!(code, Some(2), "case {i}: {err}");
        let at = format!("serve{i}.toml:{line}:");
        assert!(err.contains(&at), "case {i}: expected {at} in {err}");
        assert!(err.contains(says), "case {i}: expected {says:?} in {err}");
        assert!(
            err.contains(hint),
            "case {i}: expected hint {hint:?} in {err}"
        );
        assert!(
            !err.contains("sk-abc"),
            "case {i}: the key is never echoed: {err}"
        );
    }
}

on_both_stores!(
    an_approval_asked_by_a_task_sessions_run_is_answered_through_the_api,
    a_task_session_runs_the_agent_loop_and_ends_with_the_models_answer,
    a_tenant_cannot_see_another_tenants_task_session,
    a_task_is_refused_without_a_model_and_when_malformed,
    the_tenants_agent_table_applies_and_a_session_that_gives_up_fails,
    cancelling_a_task_session_ends_the_model_request_in_flight,
    a_task_session_cut_by_a_restart_is_failed_not_run_again,
);
