//! The exporter's thread against a small OTLP/HTTP receiver in the test:
//! a recorded session's spans go out in batches while it runs, every span
//! arrives (the session's span in the last request), and a receiver's
//! error is the exporter's.

use super::proto::tests::attr;
use super::{Exporter, Settings, BATCH_SPANS};
use crate::log::{Decision, Discard, EventBody, EventSink, Tapped};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

const ID: &str = "0123456789abcdef0123456789abcdef";

/// A receiver answering `status` to each POST, on its own threads; each
/// request's spans come out of the returned channel. Its URL.
fn receiver(status: u16) -> (String, Receiver<Vec<Span>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/v1/traces",
        listener.local_addr().expect("address")
    );
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut stream = stream;
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(n) = lower.strip_prefix("content-length:") {
                            length = n.trim().parse().expect("a length");
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).expect("a body");
                    let request = ExportTraceServiceRequest::decode(&body[..]).expect("protobuf");
                    let spans = request
                        .resource_spans
                        .into_iter()
                        .flat_map(|r| r.scope_spans)
                        .flat_map(|s| s.spans)
                        .collect();
                    let _ = tx.send(spans);
                    let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
                    stream.write_all(answer.as_bytes()).expect("answer");
                }
            });
        }
    });
    (url, rx)
}

fn exporter(url: &str) -> Exporter {
    Exporter::new(
        "lt run",
        &Settings {
            endpoint: url.to_string(),
            payloads: None,
        },
    )
    .expect("an exporter")
}

/// The events of call `i`, allowed and completed.
fn call(i: usize) -> [EventBody; 4] {
    let id = format!("n{i}");
    [
        EventBody::Proposed {
            call_id: id.clone(),
            tool: "lookup".into(),
            argument: json!(null),
        },
        EventBody::Decided {
            call_id: id.clone(),
            decision: Decision::Allow,
            rule: "default".into(),
            reason: "allowed by default".into(),
        },
        EventBody::Scheduled {
            call_id: id.clone(),
            tool: "lookup".into(),
            venue: "local".into(),
            idempotency_key: "k".into(),
        },
        EventBody::Completed {
            call_id: id,
            output: json!(null),
            result: json!({"Ok": 1}),
        },
    ]
}

/// A `session_started` of placeholder fields (the spans' tests read none).
pub(super) fn started() -> EventBody {
    EventBody::SessionStarted {
        lt_version: "0".into(),
        program: "p".into(),
        program_hash: "h".into(),
        profile: json!({}),
        registry_hash: "h".into(),
        limits: json!({}),
    }
}

fn ended() -> EventBody {
    EventBody::SessionEnded {
        status: "ok".into(),
        value: None,
        r#type: None,
        error: None,
        calls: 0,
        steps: 0,
    }
}

/// Long enough for any machine; a request that never comes fails the test
/// instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn a_sessions_spans_go_out_in_batches_as_it_runs_and_all_arrive() {
    let (url, requests) = receiver(200);
    let x = exporter(&url);
    let mut recorder = x.recorder();
    let calls = 2 * BATCH_SPANS + 76;
    let mut sink = Tapped::new(Box::new(Discard), &mut recorder, ID, 0);
    sink.append(started()).expect("append");
    for i in 0..=BATCH_SPANS {
        for e in call(i) {
            sink.append(e).expect("append");
        }
    }
    // The first batch is posted while the session still runs.
    let first = requests
        .recv_timeout(PATIENCE)
        .expect("a request before the session ended");
    assert_eq!(first.len(), BATCH_SPANS);
    for i in BATCH_SPANS + 1..calls {
        for e in call(i) {
            sink.append(e).expect("append");
        }
    }
    sink.append(ended()).expect("append");
    drop(sink);
    drop(recorder);
    x.shutdown().expect("exported");
    let rest: Vec<Vec<Span>> = requests.try_iter().collect();
    let sizes: Vec<usize> = rest.iter().map(Vec::len).collect();
    // Requests of BATCH_SPANS as the run goes, then the calls left and the
    // session's span.
    let left = calls - BATCH_SPANS;
    let mut expected = vec![BATCH_SPANS; left / BATCH_SPANS];
    expected.push(left % BATCH_SPANS + 1);
    assert_eq!(sizes, expected, "requests of at most BATCH_SPANS");
    let spans: Vec<&Span> = std::iter::once(&first).chain(&rest).flatten().collect();
    // Every call's span, once, each a child of the session's span, which
    // comes last.
    let root = spans.last().expect("spans");
    assert_eq!(root.name, "invoke_workflow");
    let ids: std::collections::HashSet<String> = spans[..calls]
        .iter()
        .map(|s| {
            assert_eq!(s.name, "execute_tool");
            assert_eq!(s.parent_span_id, root.span_id);
            attr(&s.attributes, "gen_ai.tool.call.id").expect("a call id")
        })
        .collect();
    assert_eq!(ids.len(), calls);
    assert_eq!(
        attr(&spans[calls - 1].attributes, "lt.log.seq"),
        Some((4 * calls).to_string())
    );
}

#[test]
fn the_spans_of_a_session_that_did_not_end_are_sent_at_shutdown() {
    let (url, requests) = receiver(200);
    let x = exporter(&url);
    let mut recorder = x.recorder();
    let mut sink = Tapped::new(Box::new(Discard), &mut recorder, ID, 0);
    sink.append(started()).expect("append");
    for i in 0..super::record::ROWS + 3 {
        for e in call(i) {
            sink.append(e).expect("append");
        }
    }
    drop(sink);
    drop(recorder);
    x.shutdown().expect("exported");
    let got: usize = requests.try_iter().map(|r| r.len()).sum();
    assert_eq!(got, super::record::ROWS + 3, "every call that ended");
}

#[test]
fn a_receivers_error_is_the_exporters() {
    let (url, _requests) = receiver(500);
    let x = exporter(&url);
    let mut recorder = x.recorder();
    let mut sink = Tapped::new(Box::new(Discard), &mut recorder, ID, 0);
    sink.append(started()).expect("append");
    for e in call(0) {
        sink.append(e).expect("append");
    }
    sink.append(ended()).expect("append");
    drop(sink);
    drop(recorder);
    let e = x.shutdown().expect_err("a failure");
    assert!(e.contains("500"), "{e}");
}
