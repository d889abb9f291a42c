//! `lt serve --otlp-endpoint URL`: a session of the support example
//! exported as an OpenTelemetry trace over OTLP/HTTP (JSON), received by a
//! small HTTP server in this test that decodes what arrives: the span
//! names, their parents, the GenAI attributes, and the log's seq and hash
//! that link each span to the verifiable log.

#[path = "support/console.rs"]
mod console_support;
#[path = "support/serve.rs"]
mod serve_support;

use console_support::*;
use serde_json::Value;
use serve_support::Server;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An OTLP/HTTP receiver: every body posted to it, as JSON.
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
                            }
                        }
                        let mut body = vec![0u8; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let v: Value = serde_json::from_slice(&body).unwrap_or_else(
                            |e| serde_json::json!({"undecodable": e.to_string(), "request": line}),
                        );
                        keep.lock().expect("lock").push(v);
                        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
                    }
                });
            }
        });
        Receiver { url, bodies }
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
