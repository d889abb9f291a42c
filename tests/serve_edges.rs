//! `lt serve` at its edges, end to end (the real binary on 127.0.0.1, on
//! both stores): a session record the store cannot read, a `Last-Event-ID`
//! the server never sent, a waiting start whose client leaves, and SIGTERM
//! with tens of sessions running.
//!
//! The tools are small shell commands: `quick` answers at once, `nap`
//! sleeps first, `ask` runs on the client (a session calling it waits for
//! the client until it is cancelled).

#[macro_use]
#[path = "support/serve.rs"]
mod serve_support;

use serde_json::{json, Value};
use serve_support::{sha256_line, Backend, Scratch, Server};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const ACME: &str = "acme-dev-key";

const DECLS: &str = "tool quick: String -{Read}-> String;
tool nap: String -{Read}-> String;
tool ask: {question: String} -{Read}-> {yes: Bool};
";

fn program(tool: &str) -> String {
    format!("{DECLS}match exec tool {tool} \"hi\" {{ Ok(s) => s, Err(e) => \"failed: \" ++ e }}")
}

fn asking() -> String {
    format!(
        "{DECLS}match exec tool ask {{question = \"ok?\"}} {{ Ok(c) => if c.yes then \"yes\" else \"no\", Err(e) => e }}"
    )
}

/// A scratch folder with a serve.toml of one tenant (acme, profile `edge`),
/// `nap` sleeping `nap_s` seconds, and `server` as the `[server]` lines.
fn setup(backend: Backend, name: &str, nap_s: u32, server: &str) -> (Scratch, PathBuf, String) {
    let s = Scratch::new(name);
    let decls = s.write("tools.lt", DECLS);
    s.write(
        "tools.toml",
        &format!(
            "[tools.quick]\ncommand = [\"cat\"]\nidempotent = true\n\n\
             [tools.nap]\ncommand = [\"sh\", \"-c\", \"sleep {nap_s}; cat\"]\ntimeout_ms = 120000\nidempotent = true\n\n\
             [tools.ask]\nvenue = \"client\"\n"
        ),
    );
    let config = s.write(
        "serve.toml",
        &format!(
            "[server]\n{server}\n\n[tenants.acme]\nkeys = [\"{}\"]\ndeclarations = \"{}\"\nexecutors = \"tools.toml\"\n\
             [tenants.acme.profiles.edge]\nallow = [\"quick\", \"nap\", \"ask\"]\n",
            sha256_line(ACME),
            decls.display()
        ),
    );
    let store = backend.store(&s, name);
    (s, config, store)
}

/// Runs `sql` (one statement, `$1` the session id) on the store.
fn store_sql(store: &str, sql: &str, id: &str) {
    if let Some(path) = store.strip_prefix("sqlite:") {
        sqlite_by_hand(
            &format!("c.execute({:?}, (sys.argv[2],))", sql.replace("$1", "?")),
            path.as_ref(),
            &[id],
        );
    } else {
        let mut c = ::postgres::Client::connect(store, ::postgres::NoTls).expect("connect");
        c.execute(sql, &[&id]).expect("the statement");
    }
}

fn ids(v: &Value) -> Vec<String> {
    v["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn a_damaged_record_is_a_500_named_once_and_hides_no_other_session(backend: Backend) {
    let (_s, config, store) = setup(backend, "damaged", 0, "");
    let server = Server::start(&config, &store);
    // Created a few milliseconds apart: the list's order is theirs.
    let submit = || {
        std::thread::sleep(Duration::from_millis(5));
        server.submit(ACME, &program("quick"), "edge")
    };
    let (old, hurt, well) = (submit(), submit(), submit());
    for id in [&old, &hurt, &well] {
        assert_eq!(
            server.wait_final(ACME, id, Duration::from_secs(30))["value"],
            "hi"
        );
    }
    // A row changed past lt serve: its output is no longer JSON.
    store_sql(
        &store,
        "UPDATE sessions SET output = '{not json' WHERE id = $1",
        &hurt,
    );
    // The list leaves it out and shows the others.
    for _ in 0..2 {
        let (status, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
        assert_eq!(status, 200, "{v}");
        assert_eq!(ids(&v), [well.clone(), old.clone()], "{v}");
    }
    // Page by page, the page that would have held it reads on past it:
    // nothing older is lost behind it.
    let mut paged = Vec::new();
    let mut path = "/v1/sessions?limit=1".to_string();
    loop {
        let (status, v) = server.call("GET", &path, Some(ACME), None);
        assert_eq!(status, 200, "{v}");
        paged.extend(ids(&v));
        match v["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/sessions?limit=1&cursor={c}"),
            None => break,
        }
        assert!(paged.len() < 10, "paging does not end: {paged:?}");
    }
    assert_eq!(paged, [well.clone(), old.clone()]);
    for _ in 0..2 {
        let (status, v) = server.call("GET", &format!("/v1/sessions/{hurt}"), Some(ACME), None);
        assert_eq!(status, 500, "not a retryable 503: {v}");
        assert_eq!(v["error"]["code"], "record_damaged", "{v}");
        assert_eq!(v["error"]["session"], json!(hurt), "{v}");
        assert!(v["error"]["hint"].as_str().is_some(), "{v}");
    }
    let (status, v) = server.call("GET", &format!("/v1/sessions/{well}"), Some(ACME), None);
    assert_eq!((status, &v["value"]), (200, &json!("hi")), "{v}");
    // Named on stderr, once.
    let err = server.stderr_text();
    let named = err
        .lines()
        .filter(|l| l.contains("a damaged session record") && l.contains(&hurt))
        .count();
    assert_eq!(named, 1, "{err}");
}

fn a_damaged_log_line_ends_the_stream_with_a_failure_not_a_gap(backend: Backend) {
    let (_s, config, store) = setup(backend, "damaged-line", 0, "");
    let mut server = Server::start(&config, &store);
    let id = server.submit(ACME, &program("quick"), "edge");
    server.wait_final(ACME, &id, Duration::from_secs(30));
    // Event 2 of its log changed past lt serve; a restarted server reads
    // the log from the store (not from the lines it committed lately).
    store_sql(
        &store,
        "UPDATE events SET line = 'garbage' WHERE session = $1 AND seq = 2",
        &id,
    );
    server.kill9();
    let server = server.restart_here();
    for after in [None, Some("1")] {
        let mut stream = server.stream(ACME, &id, after);
        let mut got = Vec::new();
        while let Some(e) = stream.next_event() {
            got.push(e);
        }
        // Events 0 and 1 (or nothing new after 1), then the failure, and
        // nothing after it: no event 3, no output.
        let kinds: Vec<(&str, Option<&str>)> = got
            .iter()
            .map(|e| (e.event.as_str(), e.id.as_deref()))
            .collect();
        let expected: Vec<(&str, Option<&str>)> = match after {
            None => vec![("log", Some("0")), ("log", Some("1")), ("failure", None)],
            Some(_) => vec![("failure", None)],
        };
        assert_eq!(kinds, expected, "{got:?}");
        let v = got.last().expect("the failure").json();
        assert_eq!(v["error"]["code"], "record_damaged", "{v}");
        assert_eq!(v["error"]["session"], json!(id), "{v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("event 2"), "{v}");
        assert!(v["error"]["hint"].as_str().is_some(), "{v}");
    }
}

fn a_retried_start_whose_session_record_is_damaged_is_a_500_not_a_retryable_503(backend: Backend) {
    let (_s, config, store) = setup(backend, "damaged-retry", 0, "");
    let server = Server::start(&config, &store);
    let body = json!({"program": program("quick"), "profile": "edge"});
    let post = || {
        server.call_with(
            "POST",
            "/v1/sessions",
            Some(ACME),
            Some(&body),
            &[("Idempotency-Key", "retry-1")],
        )
    };
    let (status, v) = post();
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    server.wait_final(ACME, &id, Duration::from_secs(30));
    store_sql(
        &store,
        "UPDATE sessions SET output = '{not json' WHERE id = $1",
        &id,
    );
    // The retry names the session its key started, and says a retry will
    // not help: as GET /v1/sessions/{id} does.
    for _ in 0..2 {
        let (status, v) = post();
        assert_eq!(status, 500, "not a retryable 503: {v}");
        assert_eq!(v["error"]["code"], "record_damaged", "{v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(&id), "{v}");
        assert!(v["error"]["hint"].as_str().is_some(), "{v}");
    }
}

fn a_retried_start_is_answered_before_a_full_server_a_shutdown_or_the_check(backend: Backend) {
    let (_s, config, store) = setup(
        backend,
        "retry-first",
        3,
        "max_sessions = 1\nshutdown_grace_ms = 30000",
    );
    let server = Server::start(&config, &store);
    let post = |program: &str| {
        server.call_with(
            "POST",
            "/v1/sessions",
            Some(ACME),
            Some(&json!({"program": program, "profile": "edge"})),
            &[("Idempotency-Key", "nap-1")],
        )
    };
    let (status, v) = post(&program("nap"));
    assert_eq!(status, 201, "{v}");
    let id = v["id"].clone();
    // It holds the server's one place: a new start is refused as busy,
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"program": program("quick"), "profile": "edge"})),
    );
    assert_eq!((status, &v["error"]["code"]), (503, &json!("busy")), "{v}");
    // but its retry is answered with it,
    let (status, v) = post(&program("nap"));
    assert_eq!((status, &v["id"]), (200, &id), "{v}");
    // and the same key with a program the checker refuses is a reused key,
    // not a refusal (nothing is checked, nothing runs).
    let (status, v) = post("1 +");
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "idempotency_key_reused", "{v}");
    assert_eq!(v["id"], id, "{v}");
    // Shutting down, the retry is still answered with it.
    server.sigterm();
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = server.call("GET", "/healthz", None, None);
        if status == 503 || Instant::now() > until {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, v) = post(&program("nap"));
    assert_eq!((status, &v["id"]), (200, &id), "{v}");
}

fn a_last_event_id_the_server_never_sent_is_refused_with_a_hint(backend: Backend) {
    let (_s, config, store) = setup(backend, "event-ids", 0, "");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &program("quick"), "edge");
    let all = server.all_events(ACME, &id);
    let output = all.last().expect("events");
    assert_eq!(output.event, "output", "{all:?}");
    let last = output.id.clone().expect("an id");
    let path = format!("/v1/sessions/{id}/events");
    let get = |last_event_id: &str| {
        server.call_with(
            "GET",
            &path,
            Some(ACME),
            None,
            &[("Last-Event-ID", last_event_id)],
        )
    };
    // Ids it sent: a log event's seq, and the output's `N.1`.
    let (status, v) = get("1");
    assert_eq!(status, 200, "{v}");
    let (status, v) = get(&last);
    assert_eq!(status, 200, "{v}");
    // `N.1` of an event that has no `.1` (not a client_dispatched one, not
    // the last of a session that is over), spellings it never sends, ids
    // past the log's end (past any u64 too), and a huge one: each refused
    // with one code, one message shape and one hint (the break-it pass
    // found three shapes, the whole huge id repeated, and no reason given
    // for an N.1 past the end).
    let huge = "7".repeat(4000);
    let past_u64 = "9".repeat(25);
    let mut hint = None;
    for never in [
        "0.1",
        "1.1",
        "+1",
        "01",
        "1.2",
        "1.1.1",
        "1.",
        "-1",
        "abc",
        "99",
        "99.1",
        "18446744073709551615",
        "18446744073709551615.1",
        &past_u64,
        &format!("{past_u64}.1"),
        &huge,
    ] {
        let (status, v) = get(never);
        assert_eq!(status, 400, "Last-Event-ID {never:?}: {v}");
        assert_eq!(v["error"]["code"], "bad_request", "{v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with("Last-Event-ID \"")
                && message.contains("\" is not an id this server sent: "),
            "Last-Event-ID {never:?}: {v}"
        );
        assert!(message.len() < 400, "the id is cut short: {message}");
        if ["99", "99.1", "18446744073709551615"].contains(&never) || never == past_u64 {
            assert!(message.contains("past the end of the log"), "{message}");
        }
        let h = v["error"]["hint"].as_str().unwrap_or("").to_string();
        assert!(h.contains("N.1"), "Last-Event-ID {never:?}: {v}");
        assert_eq!(
            hint.get_or_insert_with(|| h.clone()),
            &h,
            "one hint for all"
        );
    }
    // An empty id is none: the whole log (an EventSource never sends one).
    let (status, v) = get("");
    assert_eq!(status, 200, "{v}");
}

/// `lt_waiting_starts{tenant="acme"}` in the server's metrics.
fn waiting_starts(server: &Server) -> Option<i64> {
    let (_, v) = server.call("GET", "/metrics", Some(ACME), None);
    let text = v["text"].as_str().unwrap_or("").to_string();
    text.lines()
        .find(|l| l.starts_with("lt_waiting_starts{tenant=\"acme\"}"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
}

/// Waits (up to `within`) until [`waiting_starts`] is `n`; whether it got there.
fn waiting_becomes(server: &Server, n: i64, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if waiting_starts(server) == Some(n) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn a_waiting_start_whose_client_leaves_waits_no_more(backend: Backend) {
    use std::io::Write;
    let (_s, config, store) = setup(backend, "wait-gone", 0, "");
    let server = Server::start(&config, &store);
    assert_eq!(waiting_starts(&server), Some(0));
    // A session that waits for the client (it never answers), started
    // with `Prefer: wait=60` on a connection of its own.
    let body = json!({"program": asking(), "profile": "edge", "capabilities": {"tools": ["ask"]}})
        .to_string();
    let addr = server.url.trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        conn,
        "POST /v1/sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ACME}\r\n\
         Prefer: wait=60\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("the request");
    assert!(
        waiting_becomes(&server, 1, Duration::from_secs(30)),
        "the start waits: {:?}",
        waiting_starts(&server)
    );
    // The client leaves: the wait ends long before its 60 s.
    drop(conn);
    assert!(
        waiting_becomes(&server, 0, Duration::from_secs(20)),
        "a wait whose client left is still counted: {:?}",
        waiting_starts(&server)
    );
    // Its session runs on, waiting for the client; cancelled, it ends.
    let (_, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
    let id = ids(&v).pop().expect("the session");
    let v = server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_client"
    });
    assert_eq!(v["status"], "waiting_client", "{v}");
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/cancel"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 202, "{v}");
    assert_eq!(
        server.wait_final(ACME, &id, Duration::from_secs(30))["status"],
        "cancelled"
    );
}

fn sigterm_with_tens_of_sessions_running_stops_soon_after_the_grace_and_leaves_them_resumable(
    backend: Backend,
) {
    const GRACE_MS: u64 = 500;
    const SESSIONS: usize = 40;
    let (_s, config, store) = setup(
        backend,
        "drain-many",
        6,
        &format!("shutdown_grace_ms = {GRACE_MS}"),
    );
    let mut server = Server::start(&config, &store);
    let ids: Vec<String> = (0..SESSIONS)
        .map(|_| server.submit(ACME, &program("nap"), "edge"))
        .collect();
    // Every session is in its call (`scheduled` is event 3).
    for id in &ids {
        server.wait_for(ACME, id, Duration::from_secs(60), |v| {
            v["events"].as_u64().is_some_and(|n| n >= 4)
        });
    }
    let sent = Instant::now();
    let status = server.terminate(Duration::from_secs(60)).expect("it stops");
    let took = sent.elapsed();
    assert!(status.success(), "{status:?}: {}", server.stderr_text());
    // Past the grace, the calls are abandoned at once: a bound a loaded
    // machine keeps (the grace and 3 s), not a measurement.
    eprintln!("stopped {took:?} after SIGTERM (grace {GRACE_MS} ms)");
    assert!(
        took < Duration::from_millis(GRACE_MS) + Duration::from_secs(3),
        "SIGTERM with {SESSIONS} sessions running took {took:?} (grace {GRACE_MS} ms): {}",
        server.stderr_text()
    );
    // Every one is resumed after a restart, and ends.
    let server = server.restart();
    let err = server.stderr_text();
    assert!(
        err.contains(&format!("{SESSIONS} unfinished sessions resumed")),
        "{err}"
    );
    for id in &ids {
        let v = server.wait_final(ACME, id, Duration::from_secs(120));
        assert_eq!(v["value"], "hi", "{v}");
    }
}

/// A body that never finishes (its `Content-Length` promises more than
/// comes) is answered 408 once the headers' deadline passes, and the
/// connection is not held: the break-it pass found it held past 120 s.
#[test]
fn a_request_body_that_never_finishes_is_answered_408_within_the_deadline() {
    use std::io::{Read, Write};
    let (_s, config, store) = setup(Backend::Sqlite, "slow-body", 0, "header_timeout_ms = 1000");
    let server = Server::start(&config, &store);
    let addr = server.url.trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(&addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let head = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ACME}\r\n\
         Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{{\"pro"
    );
    conn.write_all(head.as_bytes()).expect("send");
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_timeout"), "{answer}");
    // The server goes on serving.
    let (status, _) = server.call("GET", "/healthz", None, None);
    assert_eq!(status, 200);
}

/// An id that is not UTF-8 once percent-decoded (`%FF`) needs a key
/// first, then is a JSON 404 like any unknown id: the break-it pass found
/// axum's text/plain 400 answered before the key was looked at.
#[test]
fn an_id_that_is_not_utf8_needs_a_key_then_is_a_json_404() {
    let (_s, config, store) = setup(Backend::Sqlite, "bad-id", 0, "");
    let server = Server::start(&config, &store);
    let routes = [
        ("GET", "/v1/sessions/%FF"),
        ("GET", "/v1/sessions/%FF/events"),
        ("GET", "/v1/sessions/%FF/log"),
        ("POST", "/v1/sessions/%FF/cancel"),
        ("POST", "/v1/sessions/%FF/replay"),
    ];
    for (method, path) in routes {
        let (status, v) = server.call(method, path, None, None);
        assert_eq!(status, 401, "{method} {path} without a key: {v}");
        assert_eq!(v["error"]["code"], "unauthorized", "{v}");
        let (status, v) = server.call(method, path, Some(ACME), None);
        assert_eq!(status, 404, "{method} {path}: {v}");
        assert_eq!(v["error"]["code"], "not_found", "{v}");
        assert!(v["error"]["hint"].as_str().is_some(), "{v}");
    }
    // An approval id of a session that exists: no such request either.
    let id = server.submit(ACME, &program("quick"), "edge");
    let path = format!("/v1/sessions/{id}/approvals/a%FF");
    let (status, v) = server.call("POST", &path, None, Some(&json!({"decision": "allow"})));
    assert_eq!(status, 401, "{v}");
    let (status, v) = server.call(
        "POST",
        &path,
        Some(ACME),
        Some(&json!({"decision": "allow"})),
    );
    assert_eq!(status, 404, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("approval"),
        "{v}"
    );
}

/// A JSON body must say so (`Content-Type: application/json`, or another
/// `+json` type): another type, or none, is a 415 with a hint, and nothing
/// runs. The break-it pass found `text/plain` bodies accepted.
#[test]
fn a_body_that_is_not_said_to_be_json_is_a_415() {
    let (_s, config, store) = setup(Backend::Sqlite, "media-type", 0, "");
    let server = Server::start(&config, &store);
    let start = json!({"program": program("quick"), "profile": "edge"});
    let check = json!({"program": program("quick")});
    for (path, body) in [("/v1/sessions", &start), ("/v1/check", &check)] {
        for wrong in ["text/plain", "application/x-www-form-urlencoded"] {
            let (status, v) = server.call_with(
                "POST",
                path,
                Some(ACME),
                Some(body),
                &[("Content-Type", wrong)],
            );
            assert_eq!(status, 415, "{path} as {wrong}: {v}");
            assert_eq!(v["error"]["code"], "unsupported_media_type", "{v}");
            let hint = v["error"]["hint"].as_str().unwrap_or("");
            assert!(hint.contains("application/json"), "{v}");
        }
        // No Content-Type at all.
        let resp = ureq::post(&format!("{}{path}", server.url))
            .set("Authorization", &format!("Bearer {ACME}"))
            .send_string(&body.to_string());
        match resp {
            Err(ureq::Error::Status(415, r)) => {
                let v: Value =
                    serde_json::from_str(&r.into_string().unwrap_or_default()).unwrap_or_default();
                assert_eq!(v["error"]["code"], "unsupported_media_type", "{v}");
            }
            other => panic!("{path} without a Content-Type: {other:?}"),
        }
    }
    // Nothing was started; a JSON type with a charset is JSON.
    let (_, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
    assert_eq!(ids(&v), Vec::<String>::new(), "{v}");
    let (status, v) = server.call_with(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&start),
        &[("Content-Type", "application/json; charset=utf-8")],
    );
    assert_eq!(status, 201, "{v}");
    // A route that takes no body needs no Content-Type.
    let id = v["id"].as_str().unwrap_or("").to_string();
    server.wait_final(ACME, &id, Duration::from_secs(30));
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/replay"),
        Some(ACME),
        None,
    );
    assert_eq!(status, 200, "{v}");
}

/// `capabilities.tools` names only the tenant's client-venue tools: an
/// unknown tool, or one the server runs, is a 400 whose hint lists what
/// may be named, and nothing runs. The break-it pass found both accepted.
#[test]
fn capabilities_name_only_the_tenants_client_venue_tools() {
    let (_s, config, store) = setup(Backend::Sqlite, "capabilities", 0, "");
    let server = Server::start(&config, &store);
    let start = |tools: Value| {
        server.call(
            "POST",
            "/v1/sessions",
            Some(ACME),
            Some(&json!({"program": program("quick"), "profile": "edge", "capabilities": {"tools": tools}})),
        )
    };
    for (tools, why) in [
        (json!(["nope"]), "does not declare"),
        (json!(["ask", "quick"]), "server runs"),
    ] {
        let (status, v) = start(tools.clone());
        assert_eq!(status, 400, "{tools}: {v}");
        assert_eq!(v["error"]["code"], "bad_request", "{v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{tools}: {v}");
        let hint = v["error"]["hint"].as_str().unwrap_or("");
        assert!(
            hint.contains("ask") && !hint.contains("quick"),
            "{tools}: {v}"
        );
    }
    let (_, v) = server.call("GET", "/v1/sessions", Some(ACME), None);
    assert_eq!(ids(&v), Vec::<String>::new(), "nothing was started: {v}");
    // The client's own tool, or none, is taken.
    for tools in [json!(["ask"]), json!([])] {
        let (status, v) = start(tools.clone());
        assert_eq!(status, 201, "{tools}: {v}");
    }
}

/// During SIGTERM's grace `/healthz` answers 503 `shutting_down` (a load
/// balancer stops sending work here), while the running call finishes and
/// its session ends. The break-it pass found it answered 200 throughout.
#[test]
fn healthz_is_503_shutting_down_during_the_grace() {
    let (_s, config, store) = setup(
        Backend::Sqlite,
        "health-drain",
        3,
        "shutdown_grace_ms = 30000",
    );
    let mut server = Server::start(&config, &store);
    let (status, v) = server.call("GET", "/healthz", None, None);
    assert_eq!((status, &v["ok"]), (200, &json!(true)), "{v}");
    let id = server.submit(ACME, &program("nap"), "edge");
    // In its call (`scheduled` is event 3).
    server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["events"].as_u64().is_some_and(|n| n >= 4)
    });
    server.sigterm();
    let until = Instant::now() + Duration::from_secs(2);
    let (status, v) = loop {
        let (status, v) = server.call("GET", "/healthz", None, None);
        if status != 200 || Instant::now() > until {
            break (status, v);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], "shutting_down", "{v}");
    assert!(v["error"]["hint"].as_str().is_some(), "{v}");
    // The running session is still served, and finishes.
    let (status, v) = server.call("GET", &format!("/v1/sessions/{id}"), Some(ACME), None);
    assert_eq!((status, &v["status"]), (200, &json!("running")), "{v}");
    let status = server.terminate(Duration::from_secs(30)).expect("it stops");
    assert!(status.success(), "{status:?}: {}", server.stderr_text());
    let server = server.restart();
    let v = server.wait_final(ACME, &id, Duration::from_secs(10));
    assert_eq!(v["value"], "hi", "{v}");
    assert!(
        server
            .stderr_text()
            .contains("0 unfinished sessions resumed"),
        "it ended within the grace: {}",
        server.stderr_text()
    );
}

/// Sets the SQLite file's `PRAGMA user_version`, as a person would by hand.
fn set_user_version(file: &std::path::Path, version: i64) {
    sqlite_by_hand(
        &format!("c.execute('PRAGMA user_version = {version}')"),
        file,
        &[],
    );
}

/// Runs `statement` (Python, `c` the connection, `sys.argv[2..]` = `args`)
/// on the SQLite file `file` with Python's `sqlite3`, as a person would by
/// hand outside lt, and commits.
fn sqlite_by_hand(statement: &str, file: &std::path::Path, args: &[&str]) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], timeout=30); {statement}; c.commit()"
        ))
        .arg(file)
        .args(args)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `lt serve --migrate-only --store sqlite:FILE`: its exit code and stderr.
fn migrate_only(file: &std::path::Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(["serve", "--migrate-only", "--store"])
        .arg(format!("sqlite:{}", file.display()))
        .output()
        .expect("lt serve --migrate-only");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A real SQLite store whose `PRAGMA user_version` was lowered by hand is
/// refused at start with its file, the version found, the version its
/// tables have and what to do, and left alone; the break-it pass found a
/// raw SQL error (`table session_tools already exists`) instead.
#[test]
fn a_sqlite_store_whose_version_was_lowered_by_hand_is_refused_with_a_hint() {
    let s = Scratch::new("lowered-version");
    let file = s.path("data/lt.db");
    let (code, err) = migrate_only(&file);
    assert_eq!(code, Some(0), "{err}");
    let current = err
        .split("schema version ")
        .nth(1)
        .and_then(|t| t.trim().parse::<i64>().ok())
        .expect("the version it is at");
    for lowered in [1, 0] {
        set_user_version(&file, lowered);
        let (code, err) = migrate_only(&file);
        assert_eq!(code, Some(3), "user_version {lowered}: {err}");
        assert!(err.contains(&file.display().to_string()), "{err}");
        assert!(
            err.contains(&format!("user_version is {lowered}"))
                && err.contains(&format!("schema version {current}"))
                && err.contains(&format!("PRAGMA user_version = {current}")),
            "user_version {lowered}: {err}"
        );
        assert!(!err.contains("already exists"), "{err}");
    }
    // Set back as the hint says, the file opens as it was.
    set_user_version(&file, current);
    let (code, err) = migrate_only(&file);
    assert_eq!(code, Some(0), "{err}");
}

on_both_stores!(
    a_damaged_record_is_a_500_named_once_and_hides_no_other_session,
    a_damaged_log_line_ends_the_stream_with_a_failure_not_a_gap,
    a_retried_start_whose_session_record_is_damaged_is_a_500_not_a_retryable_503,
    a_retried_start_is_answered_before_a_full_server_a_shutdown_or_the_check,
    a_last_event_id_the_server_never_sent_is_refused_with_a_hint,
    a_waiting_start_whose_client_leaves_waits_no_more,
    sigterm_with_tens_of_sessions_running_stops_soon_after_the_grace_and_leaves_them_resumable,
);
