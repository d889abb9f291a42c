//! `--otlp-endpoint URL`: a session of the support example exported as an
//! OpenTelemetry trace over OTLP/HTTP (protobuf) by `lt serve`, `lt run`
//! and `lt agent`, received by a small HTTP server in this test that
//! decodes what arrives (with `opentelemetry-proto` and `prost`, into the
//! shape of OTLP/JSON, which the checks read): the span names, their parents, the GenAI attributes, the
//! log's seq and hash that link each span to the verifiable log, and the
//! arguments and results only with `--otlp-payloads`, cut to the limit.

#[path = "support/console.rs"]
mod console_support;
#[path = "support/serve.rs"]
mod serve_support;
#[path = "support/mod.rs"]
mod support;

use console_support::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use prost::Message;
use serde_json::{json, Value};
use serve_support::Server;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The attributes as OTLP/JSON writes them.
fn attributes(kvs: &[KeyValue]) -> Value {
    kvs.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => json!({"stringValue": s}),
                Some(any_value::Value::IntValue(n)) => json!({"intValue": n.to_string()}),
                other => json!({"other": format!("{other:?}")}),
            };
            json!({"key": kv.key, "value": value})
        })
        .collect()
}

/// A protobuf request in the shape of OTLP/JSON (ids in hex).
fn to_json(r: &ExportTraceServiceRequest) -> Value {
    let spans = |ss: &opentelemetry_proto::tonic::trace::v1::ScopeSpans| -> Value {
        ss.spans
            .iter()
            .map(|s| {
                json!({
                    "traceId": hex(&s.trace_id),
                    "spanId": hex(&s.span_id),
                    "parentSpanId": hex(&s.parent_span_id),
                    "name": s.name,
                    "kind": s.kind,
                    "startTimeUnixNano": s.start_time_unix_nano.to_string(),
                    "endTimeUnixNano": s.end_time_unix_nano.to_string(),
                    "attributes": attributes(&s.attributes),
                    "events": s.events.iter().map(|e| json!({
                        "name": e.name,
                        "timeUnixNano": e.time_unix_nano.to_string(),
                        "attributes": attributes(&e.attributes),
                    })).collect::<Vec<_>>(),
                    "status": s.status.as_ref().map(|st| json!({"code": st.code, "message": st.message})),
                })
            })
            .collect()
    };
    json!({"resourceSpans": r.resource_spans.iter().map(|rs| json!({
        "resource": {"attributes": rs.resource.as_ref().map(|r| attributes(&r.attributes))},
        "scopeSpans": rs.scope_spans.iter().map(|ss| json!({"spans": spans(ss)})).collect::<Vec<_>>(),
    })).collect::<Vec<_>>()})
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP receiver: every body posted to it (protobuf), as OTLP/JSON.
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("addr"));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let keep = Arc::clone(&keep);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let mut length = 0usize;
                        let mut protobuf = false;
                        loop {
                            let mut h = String::new();
                            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                                return;
                            }
                            let h = h.trim_end();
                            if h.is_empty() {
                                break;
                            }
                            if let Some((k, v)) = h.split_once(':') {
                                if k.eq_ignore_ascii_case("content-length") {
                                    length = v.trim().parse().unwrap_or(0);
                                }
                                if k.eq_ignore_ascii_case("content-type") {
                                    protobuf = v.trim() == "application/x-protobuf";
                                }
                            }
                        }
                        let mut body = vec![0u8; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let v = match ExportTraceServiceRequest::decode(body.as_slice()) {
                            Ok(r) if protobuf => to_json(&r),
                            Ok(_) => {
                                json!({"undecodable": "not application/x-protobuf", "request": line})
                            }
                            Err(e) => json!({"undecodable": e.to_string(), "request": line}),
                        };
                        keep.lock().expect("lock").push(v);
                        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
                    }
                });
            }
        });
        Receiver { url, bodies }
    }

    /// The `service.name` of every resource received so far.
    fn services(&self) -> Vec<String> {
        let mut out = Vec::new();
        for b in self.bodies.lock().expect("lock").iter() {
            assert!(b.get("undecodable").is_none(), "{b}");
            for rs in b["resourceSpans"].as_array().into_iter().flatten() {
                out.extend(attr(&rs["resource"], "service.name"));
            }
        }
        out
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for b in self.bodies.lock().expect("lock").iter() {
            assert!(b.get("undecodable").is_none(), "{b}");
            for rs in b["resourceSpans"].as_array().into_iter().flatten() {
                for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                    out.extend(ss["spans"].as_array().into_iter().flatten().cloned());
                }
            }
        }
        out
    }
}

/// The value of attribute `key` of a span (or an event), as a string.
fn attr(span: &Value, key: &str) -> Option<String> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| {
            let v = &a["value"];
            v["stringValue"]
                .as_str()
                .map(str::to_string)
                .or_else(|| v["intValue"].as_str().map(str::to_string))
                .unwrap_or_else(|| v["intValue"].to_string())
        })
}

#[test]
fn a_session_is_exported_as_a_trace_linked_to_its_log() {
    let receiver = Receiver::start();
    let (_s, config, store) = setup("otlp");
    let mut server = Server::start_with(&config, &store, &["--otlp-endpoint", &receiver.url]);
    let id = server.submit(ACME, &support_program(), "support");
    server.wait_final(ACME, &id, Duration::from_secs(60));
    let until = Instant::now() + Duration::from_secs(30);
    let spans = loop {
        let spans = receiver.spans();
        if spans.iter().any(|s| s["name"] == "invoke_workflow") {
            break spans;
        }
        assert!(
            Instant::now() < until,
            "no trace arrived: {spans:?} {}",
            server.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let (_, log) = server.call("GET", &format!("/v1/sessions/{id}/log"), Some(ACME), None);
    let events: Vec<Value> = log["text"]
        .as_str()
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect();
    let hash_at = |seq: &str| -> String {
        let seq: u64 = seq.parse().expect("seq");
        events[seq as usize]["hash"]
            .as_str()
            .expect("hash")
            .to_string()
    };
    let root = spans
        .iter()
        .find(|s| s["name"] == "invoke_workflow")
        .expect("root");
    assert_eq!(attr(root, "lt.session.id").as_deref(), Some(id.as_str()));
    assert_eq!(
        attr(root, "gen_ai.operation.name").as_deref(),
        Some("invoke_workflow")
    );
    let seq = attr(root, "lt.log.seq").expect("seq");
    assert_eq!(seq, (events.len() - 1).to_string());
    assert_eq!(attr(root, "lt.log.hash"), Some(hash_at(&seq)));
    let tools: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "execute_tool")
        .collect();
    let names: Vec<String> = tools
        .iter()
        .filter_map(|s| attr(s, "gen_ai.tool.name"))
        .collect();
    assert_eq!(
        names,
        ["lookup_account", "issue_refund", "send_reply"],
        "{tools:?}"
    );
    for t in &tools {
        assert_eq!(t["traceId"], root["traceId"], "one trace");
        assert_eq!(t["parentSpanId"], root["spanId"], "a child of the session");
        let call = attr(t, "gen_ai.tool.call.id").expect("call id");
        let seq = attr(t, "lt.log.seq").expect("seq");
        let e = &events[seq.parse::<usize>().expect("seq")];
        assert_eq!(
            e["call_id"],
            call.as_str(),
            "the seq is the call's outcome: {e}"
        );
        assert_eq!(e["kind"], "completed");
        assert_eq!(attr(t, "lt.log.hash"), Some(hash_at(&seq)));
        assert_eq!(attr(t, "lt.call.outcome").as_deref(), Some("ok"));
        let start: u64 = t["startTimeUnixNano"].as_str().map_or_else(
            || t["startTimeUnixNano"].as_u64().unwrap_or(0),
            |s| s.parse().unwrap_or(0),
        );
        let end: u64 = t["endTimeUnixNano"].as_str().map_or_else(
            || t["endTimeUnixNano"].as_u64().unwrap_or(0),
            |s| s.parse().unwrap_or(0),
        );
        assert!(start > 0 && end >= start, "{t}");
    }
    assert_eq!(
        server
            .terminate(Duration::from_secs(20))
            .and_then(|s| s.code()),
        Some(0)
    );
}

/// The log's events (a JSON Lines text).
fn events_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect()
}

/// The root span and the spans named `name`, each checked to be the
/// root's child in its trace.
fn children<'a>(spans: &'a [Value], name: &str) -> (&'a Value, Vec<&'a Value>) {
    let root = spans
        .iter()
        .find(|s| s["name"] == "invoke_workflow")
        .unwrap_or_else(|| panic!("no root span: {spans:?}"));
    let kids: Vec<&Value> = spans.iter().filter(|s| s["name"] == name).collect();
    for k in &kids {
        assert_eq!(k["traceId"], root["traceId"], "one trace");
        assert_eq!(k["parentSpanId"], root["spanId"], "a child of the session");
    }
    (root, kids)
}

fn lt_run(dir: &support::TempDir, extra: &[&str]) -> support::Out {
    let repo = repo();
    let tools = repo.join("examples/support_desk/tools.toml");
    let program = repo.join("examples/support_desk/program.lt");
    let (tools, program) = (tools.display().to_string(), program.display().to_string());
    let db = dir.path("example.db");
    let mut args = vec!["run", "--executors", &tools, &program];
    args.extend_from_slice(extra);
    support::lt_in(&dir.0, &args, &[("LT_EXAMPLE_DB", &db)])
}

#[test]
fn lt_run_exports_the_support_example_as_a_trace_linked_to_its_log() {
    let receiver = Receiver::start();
    let dir = support::TempDir::new("otlp", "run");
    let out = lt_run(
        &dir,
        &["--otlp-endpoint", &receiver.url, "--log", "run.jsonl"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("refund tx_000001 processed"), "{out:?}");
    // Sent before lt exits: nothing to wait for.
    let spans = receiver.spans();
    assert_eq!(receiver.services(), ["lt run"]);
    let events = events_of(&std::fs::read_to_string(dir.path("run.jsonl")).expect("log"));
    let (root, tools) = children(&spans, "execute_tool");
    assert_eq!(
        attr(root, "lt.session.id").as_deref(),
        events[0]["session"].as_str()
    );
    assert_eq!(attr(root, "lt.session.status").as_deref(), Some("ok"));
    let last = events.len() - 1;
    assert_eq!(attr(root, "lt.log.seq"), Some(last.to_string()));
    assert_eq!(
        attr(root, "lt.log.hash").as_deref(),
        events[last]["hash"].as_str()
    );
    let names: Vec<String> = tools
        .iter()
        .filter_map(|s| attr(s, "gen_ai.tool.name"))
        .collect();
    assert_eq!(names, ["lookup_account", "issue_refund", "send_reply"]);
    for t in &tools {
        let seq: usize = attr(t, "lt.log.seq")
            .expect("seq")
            .parse()
            .expect("a number");
        assert_eq!(events[seq]["kind"], "completed");
        assert_eq!(
            attr(t, "gen_ai.tool.call.id").as_deref(),
            events[seq]["call_id"].as_str()
        );
        assert_eq!(
            attr(t, "lt.log.hash").as_deref(),
            events[seq]["hash"].as_str()
        );
        // Not asked for: no argument, no result.
        assert_eq!(attr(t, "gen_ai.tool.call.arguments"), None, "{t}");
        assert_eq!(attr(t, "gen_ai.tool.call.result"), None, "{t}");
    }
}

/// The seq, the name, the call id and the hash (if any) of each
/// `execute_tool` span, the root's seq and hash, and the parents checked.
#[allow(clippy::type_complexity)]
fn links(
    spans: &[Value],
) -> (
    Vec<(String, String, String, Option<String>)>,
    (String, Option<String>),
) {
    let (root, tools) = children(spans, "execute_tool");
    let calls = tools
        .iter()
        .map(|t| {
            (
                attr(t, "lt.log.seq").expect("seq"),
                attr(t, "gen_ai.tool.name").expect("tool"),
                attr(t, "gen_ai.tool.call.id").expect("call id"),
                attr(t, "lt.log.hash"),
            )
        })
        .collect();
    (
        calls,
        (
            attr(root, "lt.log.seq").expect("seq"),
            attr(root, "lt.log.hash"),
        ),
    )
}

#[test]
fn without_a_log_the_spans_carry_the_seq_the_log_would_have_and_no_hash() {
    // With a log: the seqs and hashes of its events.
    let receiver = Receiver::start();
    let dir = support::TempDir::new("otlp", "seq-logged");
    let out = lt_run(
        &dir,
        &["--otlp-endpoint", &receiver.url, "--log", "run.jsonl"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let events = events_of(&std::fs::read_to_string(dir.path("run.jsonl")).expect("log"));
    let (logged, (root_seq, root_hash)) = links(&receiver.spans());
    assert_eq!(logged.len(), 3, "{logged:?}");
    for (seq, tool, call, hash) in &logged {
        let e = &events[seq.parse::<usize>().expect("a number")];
        assert_eq!(e["kind"], "completed", "{e}");
        assert_eq!(e["call_id"].as_str(), Some(call.as_str()));
        assert_eq!(hash.as_deref(), e["hash"].as_str(), "{tool}");
    }
    assert_eq!(root_seq, (events.len() - 1).to_string());
    assert_eq!(
        root_hash.as_deref(),
        events[events.len() - 1]["hash"].as_str()
    );
    // Without: the same calls at the same seqs, and no hash anywhere.
    let receiver = Receiver::start();
    let dir = support::TempDir::new("otlp", "seq-unlogged");
    let out = lt_run(&dir, &["--otlp-endpoint", &receiver.url]);
    assert_eq!(out.code, 0, "{out:?}");
    let spans = receiver.spans();
    assert_eq!(receiver.services(), ["lt run"]);
    let (unlogged, (seq, hash)) = links(&spans);
    let strip = |v: &[(String, String, String, Option<String>)]| -> Vec<(String, String, String)> {
        v.iter()
            .map(|(s, t, c, _)| (s.clone(), t.clone(), c.clone()))
            .collect()
    };
    assert_eq!(strip(&unlogged), strip(&logged));
    assert!(
        unlogged.iter().all(|(_, _, _, h)| h.is_none()),
        "{unlogged:?}"
    );
    assert_eq!((seq, hash), (root_seq, None));
    for s in &spans {
        assert_eq!(attr(s, "lt.log.hash"), None, "{s}");
        for e in s["events"].as_array().into_iter().flatten() {
            assert_eq!(attr(e, "lt.log.hash"), None, "{e}");
        }
    }
    let (root, _) = children(&spans, "execute_tool");
    assert_eq!(attr(root, "lt.session.status").as_deref(), Some("ok"));
    assert_eq!(
        attr(root, "gen_ai.operation.name").as_deref(),
        Some("invoke_workflow")
    );
}

#[test]
fn arguments_and_results_are_exported_only_when_asked_and_cut_to_the_limit() {
    let receiver = Receiver::start();
    let dir = support::TempDir::new("otlp", "payloads");
    let out = lt_run(
        &dir,
        &[
            "--otlp-endpoint",
            &receiver.url,
            "--otlp-payloads",
            "--otlp-payload-limit",
            "8",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let spans = receiver.spans();
    let (_, tools) = children(&spans, "execute_tool");
    assert_eq!(tools.len(), 3, "{spans:?}");
    let lookup = tools
        .iter()
        .find(|t| attr(t, "gen_ai.tool.name").as_deref() == Some("lookup_account"))
        .expect("lookup_account");
    // The argument's JSON text, "cust_12345" (12 bytes), cut to 8.
    assert_eq!(
        attr(lookup, "gen_ai.tool.call.arguments").as_deref(),
        Some("\"cust_12…")
    );
    for t in &tools {
        for key in ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"] {
            let v = attr(t, key).unwrap_or_else(|| panic!("{key} missing: {t}"));
            assert!(v.trim_end_matches('…').len() <= 8, "{key}: {v}");
        }
    }
    // A limit large enough keeps the whole argument.
    let receiver = Receiver::start();
    let dir = support::TempDir::new("otlp", "payloads-whole");
    let out = lt_run(&dir, &["--otlp-endpoint", &receiver.url, "--otlp-payloads"]);
    assert_eq!(out.code, 0, "{out:?}");
    let spans = receiver.spans();
    let (_, tools) = children(&spans, "execute_tool");
    assert_eq!(
        attr(tools[0], "gen_ai.tool.call.arguments").as_deref(),
        Some("\"cust_12345\"")
    );
    assert!(
        attr(tools[0], "gen_ai.tool.call.result").is_some_and(|r| r.contains("ada@example.com"))
    );
}

#[test]
fn lt_agent_exports_the_models_rounds_and_the_runs_calls() {
    let receiver = Receiver::start();
    let dir = support::TempDir::new("otlp", "agent");
    dir.write(
        "decls.lt",
        "tool lookup_account: String -{Read}-> {id: String, email: String};\n",
    );
    dir.write(
        "tools.toml",
        "[tools.lookup_account]\nfixed = { ok = { id = \"acc_1\", email = \"ada@example.com\" } }\n",
    );
    let program = "```lt\ntool lookup_account: String -{Read}-> {id: String, email: String};\nmatch exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => e }\n```";
    let model = support::fake_model::FakeModel::start(vec![
        serde_json::json!({"text": program}),
        serde_json::json!({"text": "The email is ada@example.com."}),
    ]);
    let url = model.base_url_openai();
    let out = support::lt_in(
        &dir.0,
        &[
            "agent",
            "Find the email of acc_1",
            "--tools",
            "decls.lt",
            "--executors",
            "tools.toml",
            "--model",
            "m",
            "--base-url",
            &url,
            "--max-retries",
            "0",
            "--otlp-endpoint",
            &receiver.url,
        ],
        &[("OPENAI_API_KEY", "test")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let spans = receiver.spans();
    assert_eq!(receiver.services(), ["lt agent"]);
    let (root, chats) = children(&spans, "chat");
    assert_eq!(attr(root, "lt.session.status").as_deref(), Some("answered"));
    assert_eq!(chats.len(), 2, "{spans:?}");
    let (_, tools) = children(&spans, "execute_tool");
    let names: Vec<String> = tools
        .iter()
        .filter_map(|s| attr(s, "gen_ai.tool.name"))
        .collect();
    assert_eq!(names, ["lookup_account"]);
}

#[test]
fn an_unreachable_receiver_is_a_note_and_a_bad_url_a_usage_error() {
    let dir = support::TempDir::new("otlp", "unreachable");
    dir.write("one.lt", "1 + 1");
    // Port 9 (discard) on loopback: nothing listens.
    let out = support::lt_in(
        &dir.0,
        &[
            "run",
            "one.lt",
            "--otlp-endpoint",
            "http://127.0.0.1:9/v1/traces",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains('2'), "{out:?}");
    assert!(
        out.stderr.contains("lt: otlp: cannot export the trace"),
        "{out:?}"
    );
    let out = support::lt_in(
        &dir.0,
        &["run", "one.lt", "--otlp-endpoint", "ftp://x"],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("not an http:// or https:// URL"),
        "{out:?}"
    );
    let out = support::lt_in(&dir.0, &["run", "one.lt", "--otlp-payloads"], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--otlp-endpoint"), "{out:?}");
}
