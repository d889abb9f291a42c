//! `lt serve` and the ids a client makes up, end to end (the real binary
//! on 127.0.0.1, SQLite): a refusal repeats a client's id cut and quoted,
//! in its answer and on the server's stderr, never a 100,000-character id
//! or a terminal's escape sequence as sent.
//!
//! The tenant has one tool, `ask`, run by the client: a session calling
//! it waits for an outcome, which the test posts under ids of its own, or
//! which `lt run --server` posts from its local executor; and `deep`, run
//! by the server, answers JSON nested as deep as its argument says.

#[path = "support/console.rs"]
mod console_support;
#[macro_use]
#[path = "support/serve.rs"]
mod serve_support;

use serde_json::{json, Value};
use serve_support::{sha256_line, Scratch, Server};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ACME: &str = "acme-dev-key";

const DECLS: &str = "tool ask: {question: String} -{Read}-> {yes: Bool};
tool deep: String -{Read}-> Json;
";

/// A scratch folder with a serve.toml of one tenant (acme, profile `edge`)
/// whose one tool, `ask`, runs on the client.
fn setup(name: &str) -> (Scratch, Server) {
    let s = Scratch::new(name);
    let decls = s.write("tools.lt", DECLS);
    s.write(
        "tools.toml",
        "[tools.ask]\nvenue = \"client\"\n\n[tools.deep]\n\
         command = [\"python3\", \"-c\", \"import json, sys; n = int(json.load(sys.stdin)); print('[' * n + ']' * n)\"]\n",
    );
    let config = s.write(
        "serve.toml",
        &format!(
            "[tenants.acme]\nkeys = [\"{}\"]\ndeclarations = \"{}\"\nexecutors = \"tools.toml\"\n\
             [tenants.acme.profiles.edge]\nallow = [\"ask\", \"deep\"]\n",
            sha256_line(ACME),
            decls.display()
        ),
    );
    let store = format!("sqlite:{}", s.path("lt.db").display());
    let server = Server::start(&config, &store);
    (s, server)
}

fn asking() -> String {
    format!(
        "{DECLS}match exec tool ask {{question = \"ok?\"}} {{ Ok(c) => if c.yes then \"yes\" else \"no\", Err(e) => \"err: \" ++ e }}"
    )
}

/// An id no session, call or approval has: long, with an escape sequence
/// (clear the screen) and a NUL in it.
fn made_up_id() -> String {
    format!("n1\u{1b}[2J\u{0}{}", "x".repeat(100_000))
}

/// A refusal's message is short, and repeats no control character.
fn assert_short_and_clean(what: &str, status: u16, v: &Value, expected: u16) {
    assert_eq!(status, expected, "{what}: {}", v.to_string().len());
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.chars().count() < 300,
        "{what}: a message of {} characters: {}…",
        message.chars().count(),
        message.chars().take(120).collect::<String>()
    );
    assert!(
        !message.chars().any(|c| c.is_control()),
        "{what}: a control character in {message:?}"
    );
    assert!(message.contains("n1"), "{what}: the id is named: {message}");
    assert_hint(what, v);
}

/// A refusal says what to do about it.
fn assert_hint(what: &str, v: &Value) {
    let hint = v["error"]["hint"].as_str().unwrap_or("");
    assert!(!hint.is_empty(), "{what}: no hint: {v}");
}

/// Each refusal has a hint (the break-it pass found none on these 404s
/// and 409s). The break-it pass found the outcome route's 409 and the
/// server's stderr line repeating a 100,000-character `call_id` whole (and its escape
/// sequences raw, written to the operator's terminal), and so the 404s of
/// an approval id or a session id in the path.
#[test]
fn a_made_up_id_is_repeated_cut_and_quoted() {
    let (_s, server) = setup("inputs-ids");
    let program = asking();
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"program": program, "profile": "edge", "capabilities": {"tools": ["ask"]}})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_client"
    });
    let made_up = made_up_id();

    // An outcome for a call that is not waiting: 409.
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/outcomes"),
        Some(ACME),
        Some(&json!({"call_id": made_up, "ok": {"yes": true}})),
    );
    assert_short_and_clean("an unknown call", status, &v, 409);

    // The waiting call answered, then answered again: 409.
    let outcome = json!({"call_id": "n1", "ok": {"yes": true}});
    let path = format!("/v1/sessions/{id}/outcomes");
    let (status, v) = server.call("POST", &path, Some(ACME), Some(&outcome));
    assert_eq!(status, 202, "{v}");
    let (status, v) = server.call("POST", &path, Some(ACME), Some(&outcome));
    assert_eq!(status, 409, "{v}");
    assert_hint("a repeated outcome", &v);

    // An approval id, and a session id, that do not exist: 404.
    let long = format!("n1{}", "x".repeat(10_000));
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/approvals/{long}"),
        Some(ACME),
        Some(&json!({"decision": "allow"})),
    );
    assert_short_and_clean("an unknown approval", status, &v, 404);
    let (status, v) = server.call("GET", &format!("/v1/sessions/n1{long}"), Some(ACME), None);
    assert_short_and_clean("an unknown session", status, &v, 404);

    // Once it is over, a cancel is refused, and so is an outcome.
    server.wait_final(ACME, &id, Duration::from_secs(30));
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/cancel"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 409, "{v}");
    assert_hint("a cancel of an ended session", &v);
    let (status, v) = server.call("POST", &path, Some(ACME), Some(&outcome));
    assert_eq!(status, 409, "{v}");
    assert_hint("an outcome for an ended session", &v);
    // The server noted the refusal in one short line, with no escape.
    let err = server.stderr_text();
    assert!(err.contains("outcome refused"), "{err}");
    for line in err.lines() {
        assert!(
            line.chars().count() < 400,
            "a stderr line of {} characters: {}…",
            line.chars().count(),
            line.chars().take(120).collect::<String>()
        );
        assert!(!line.contains('\u{1b}'), "an escape on stderr: {line:?}");
    }
}

/// An outcome nested deeper than serde_json reads by default (128) is the
/// client's as it would be over the stdio venue (which takes 10,000
/// levels): the break-it pass found it refused, 400 "recursion limit
/// exceeded". One nested past 10,000 is refused with a message that says so.
#[test]
fn an_outcome_nested_deep_is_taken_as_the_stdio_venue_takes_it() {
    let (_s, server) = setup("inputs-deep-outcome");
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"program": asking(), "profile": "edge", "capabilities": {"tools": ["ask"]}})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_client"
    });
    let path = format!("/v1/sessions/{id}/outcomes");
    let body = |depth: usize| {
        format!(
            "{{\"call_id\": \"n1\", \"ok\": {{\"yes\": true, \"pad\": {}{}}}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    let (status, v) = server.raw("POST", &path, Some(ACME), Some(&body(10_001)), &[]);
    assert_eq!(status, 400, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("nested more than 10001 levels"), "{v}");
    let (status, v) = server.raw("POST", &path, Some(ACME), Some(&body(300)), &[]);
    assert_eq!(status, 202, "{v}");
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["value"], "yes", "{v}");
}

/// The break-it pass found `lt run --server` hanging for good when the
/// server refused its local executor's outcome as a body: larger than
/// `max_body_bytes` (413), or nested deeper than the server read JSON
/// (400, at 129 levels; a local run takes it). The client noted it and
/// waited, and the session waited for the client. Now the client posts a
/// `bad_output` failure in place of a refused outcome (the program
/// receives `Err`, and the run ends), and the deep one is taken, as a
/// local run takes it.
#[test]
fn an_outcome_the_server_refuses_as_a_body_is_posted_as_a_failure() {
    let (s, server) = setup("inputs-big-outcome");
    let program = s.write("ask.lt", &asking());
    let outputs = [
        ("'a' * 2000000", "larger than the server takes"),
        ("'[' * 300 + ']' * 300", "\"yes\""),
    ];
    for (n, (pad, why)) in outputs.iter().enumerate() {
        let local = s.write(
            &format!("local{n}.toml"),
            &format!(
                "[tools.ask]\ncommand = [\"python3\", \"-c\", \"import json, sys; pad = {pad}; \
                 sys.stdout.write('{{\\\"yes\\\": true, \\\"pad\\\": ' + (pad if pad.startswith('[') else json.dumps(pad)) + '}}')\"]\n"
            ),
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_lt"))
            .args([
                "run",
                program.to_str().expect("a UTF-8 path"),
                "--server",
                &server.url,
            ])
            .args([
                "--executors",
                local.to_str().expect("a UTF-8 path"),
                "--profile",
                "edge",
            ])
            .env("LT_API_KEY", ACME)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lt run --server");
        let until = Instant::now() + Duration::from_secs(30);
        while child.try_wait().expect("wait").is_none() {
            if Instant::now() > until {
                let _ = child.kill();
                let out = child.wait_with_output().expect("output");
                panic!(
                    "{pad}: lt run --server still runs after 30 s: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{pad}: {stdout}{stderr}");
        if !why.starts_with('"') {
            assert!(stdout.starts_with("\"err: "), "{pad}: {stdout}{stderr}");
        }
        assert!(stdout.contains(why), "{pad}: {stdout}");
        // The session is over.
        let (_, v) = server.call("GET", "/v1/sessions?limit=1", Some(ACME), None);
        assert_eq!(v["sessions"][0]["status"], "ended", "{v}");
    }
}

/// The break-it pass found a session whose value is JSON nested deeper
/// than serde_json reads by default (128; lt takes 10,000) ended, and was
/// then a "damaged record" for good: `GET /v1/sessions/{id}`, its log and
/// its replay answered 500 `record_damaged` ("the store was changed past
/// lt serve"), and lists left it out.
#[test]
fn a_session_whose_value_nests_deep_is_read_back_whole() {
    a_value_nested(300);
}

/// As deep as lt takes a tool's output (10,000 levels): the break-it pass
/// found the server aborting ("thread 'lt-store-answer' has overflowed its
/// stack") once a session that deep ended, taking every tenant's sessions
/// down with it.
#[test]
fn a_session_whose_value_nests_as_deep_as_lt_takes_does_not_stop_the_server() {
    a_value_nested(9_990);
}

/// `lt run --server` of such a session prints its value as a local run
/// does: the break-it pass found it refusing the server's `output` event
/// ("the server's answer is not lt serve's API: … recursion limit
/// exceeded", exit 2) past 128 levels.
#[test]
fn the_thick_client_prints_a_value_nested_deep() {
    let (s, server) = setup("inputs-deep-client");
    let program = s.write(
        "deep.lt",
        &format!("{DECLS}match exec tool deep \"300\" {{ Ok(j) => [j], Err(e) => []: Json }}"),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_lt"))
        .args([
            "run",
            program.to_str().expect("a UTF-8 path"),
            "--server",
            &server.url,
        ])
        .args(["--profile", "edge"])
        .env("LT_API_KEY", ACME)
        .stdin(Stdio::null())
        .output()
        .expect("lt run --server");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let value = format!("[{}{}]", "[".repeat(300), "]".repeat(300));
    assert_eq!(stdout.trim(), value, "{stderr}");
}

/// A session whose value is `[j]`, `j` the `deep` tool's output nested
/// `depth` levels: it ends, and is shown, listed, logged, replayed,
/// streamed and shown in the console whole.
fn a_value_nested(depth: usize) {
    let (s, server) = setup(&format!("inputs-deep-{depth}"));
    let program =
        format!("{DECLS}match exec tool deep \"{depth}\" {{ Ok(j) => [j], Err(e) => []: Json }}");
    let id = server.submit(ACME, &program, "edge");
    // The answers are read as text: the test's serde_json reads 128 deep.
    let text = |path: &str| {
        let (status, v) = server.call("GET", path, Some(ACME), None);
        (
            status,
            v["text"]
                .as_str()
                .map(str::to_string)
                .unwrap_or(v.to_string()),
        )
    };
    let value = format!("[{}{}]", "[".repeat(depth), "]".repeat(depth));
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = text(&format!("/v1/sessions/{id}"));
        assert_eq!(status, 200, "{}", &body[..body.len().min(400)]);
        if body.contains("\"status\":\"ended\"") {
            assert!(body.contains(&format!("\"value\":{value}")), "{body}");
            break;
        }
        assert!(Instant::now() < until, "{body}");
        std::thread::sleep(Duration::from_millis(25));
    }
    let (status, body) = text("/v1/sessions");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&id),
        "listed: {}",
        &body[..body.len().min(400)]
    );
    // Its log verifies and replays, here and on the server.
    let (status, log) = text(&format!("/v1/sessions/{id}/log"));
    assert_eq!(status, 200, "{}", &log[..log.len().min(400)]);
    let file = s.write("deep.jsonl", &log);
    let verify = Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(["log", "verify", file.to_str().expect("a UTF-8 path")])
        .output()
        .expect("lt log verify");
    assert!(verify.status.success(), "{verify:?}");
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/replay"),
        Some(ACME),
        None,
    );
    let body = v["text"]
        .as_str()
        .map(str::to_string)
        .unwrap_or(v.to_string());
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"ok\":true"), "{body}");
    // Its event stream shows every event, then the output.
    let events = server.all_events(ACME, &id);
    let seqs: Vec<_> = events
        .iter()
        .filter(|e| e.event == "log")
        .map(|e| e.id.clone())
        .collect();
    let n = log.lines().count();
    assert_eq!(seqs.len(), n, "{seqs:?}");
    let last = events.last().expect("events");
    assert_eq!(last.event, "output", "{seqs:?}");
    assert!(last.data.contains(&value), "{}", last.data);
    // The console's page shows it, not indented level by level: the
    // break-it pass found a 20 kB value shown on a 200 MB page.
    let page = console_support::login(&server, ACME).get(&server, &format!("/sessions/{id}"));
    assert_eq!(page.status, 200);
    // (The test's HTTP client reads at most 10 MB: a larger page is "".)
    assert!(page.body.contains("id=\"value\""), "a page read whole");
    assert!(
        page.body.len() < 1_000_000 + 40 * value.len(),
        "a page of {} bytes for a value of {}",
        page.body.len(),
        value.len()
    );
    assert!(page.body.contains(&value), "the value shown whole");
}
