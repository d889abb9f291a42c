//! `lt serve --otlp-endpoint URL`: every session exported as an
//! OpenTelemetry trace over OTLP/HTTP (JSON), with the `opentelemetry`
//! crates, once its log ends. The spans are built from the committed log
//! (the store's commit notices say when a `session_ended` or
//! `agent_ended` commits), so the session engine is not touched:
//!
//! ```text
//! invoke_workflow  the session: first event ─▶ last; lt.session.id,
//!                  lt.log.seq and lt.log.hash of its last event; approvals
//!                  as span events
//!  ├ execute_tool  one per call: proposed ─▶ outcome; gen_ai.tool.name,
//!  │               gen_ai.tool.call.id, lt.call.outcome, lt.call.venue,
//!  │               lt.log.seq and lt.log.hash of its last event; a denial
//!  │               as a span event and an error status
//!  └ chat          one per model request of a task session
//! ```
//!
//! Times are the events' `ts`. Arguments and results are not exported.
//! A receiver that falls behind the commit notices (`Lagged`) loses the
//! traces of the sessions that ended meanwhile (noted on stderr).

use super::console::timeline::{self, Kind};
use super::store::ServerStore;
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The exporter's provider for `endpoint` (the full URL spans are posted
/// to, e.g. `http://127.0.0.1:4318/v1/traces`). Errors: a message.
pub fn provider(endpoint: &str) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot set up the OTLP exporter for {endpoint}: {e}"))?;
    let batch = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_scheduled_delay(Duration::from_millis(500))
                .build(),
        )
        .build();
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("lt serve")
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(batch)
        .with_resource(resource)
        .build())
}

/// Follows the store's commits and exports each session that ends.
pub async fn follow(store: Arc<dyn ServerStore>, provider: SdkTracerProvider) {
    let mut rx = store.subscribe();
    loop {
        match rx.recv().await {
            Ok(c) => {
                let line: &str = &c.line;
                if !(line.contains("\"kind\":\"session_ended\"")
                    || line.contains("\"kind\":\"agent_ended\""))
                {
                    continue;
                }
                let (store, provider) = (Arc::clone(&store), provider.clone());
                let id = c.session.clone();
                tokio::task::spawn_blocking(move || match store.events_after(&id, None) {
                    Ok(lines) => export(&provider, &id, &lines),
                    Err(e) => eprintln!("lt serve: otlp: cannot read session {id}: {e}"),
                });
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                eprintln!("lt serve: otlp: {n} commit notices missed; the traces of sessions that ended meanwhile are not exported");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
}

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Exports the trace of session `id` from its log `lines`, if its log is
/// over (an agent log: at `agent_ended`, not at its runs' ends).
pub fn export(provider: &SdkTracerProvider, id: &str, lines: &[String]) {
    let events: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return;
    };
    let agent = first["kind"] == "agent_started";
    let over = if agent {
        "agent_ended"
    } else {
        "session_ended"
    };
    if last["kind"] != over {
        return;
    }
    let hash_of = |seq: u64| -> String {
        events
            .iter()
            .find(|e| e["seq"].as_u64() == Some(seq))
            .and_then(|e| e["hash"].as_str())
            .unwrap_or("")
            .to_string()
    };
    let t = timeline::build(lines);
    let tracer = provider.tracer("lt");
    let last_seq = last["seq"].as_u64().unwrap_or(0);
    let mut root_attrs = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_workflow"),
        KeyValue::new("lt.session.id", id.to_string()),
        KeyValue::new("lt.log.seq", last_seq as i64),
        KeyValue::new("lt.log.hash", hash_of(last_seq)),
    ];
    // `ok`/`error` (session_ended), `answered`/`gave_up`/`error` (agent_ended).
    let status = last["status"].as_str().unwrap_or("");
    root_attrs.push(KeyValue::new("lt.session.status", status.to_string()));
    let mut root = tracer
        .span_builder("invoke_workflow")
        .with_kind(SpanKind::Internal)
        .with_start_time(at(t.span.0))
        .with_attributes(root_attrs)
        .start(&tracer);
    if status == "error" || status == "gave_up" {
        root.set_status(Status::error(format!(
            "the session ended with status {status}"
        )));
    }
    let mut approvals = Vec::new();
    let cx = Context::current_with_span(root);
    for r in &t.rows {
        if r.kind == Kind::Approval {
            approvals.push(r);
            continue;
        }
        let (name, mut attrs) = match r.kind {
            Kind::Call => (
                "execute_tool",
                vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", r.name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", r.id.clone()),
                    KeyValue::new("gen_ai.tool.type", "function"),
                    KeyValue::new(
                        "lt.call.venue",
                        r.venue.clone().unwrap_or_else(|| "none".into()),
                    ),
                ],
            ),
            _ => (
                "chat",
                vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("lt.model.request_id", r.id.clone()),
                ],
            ),
        };
        attrs.push(KeyValue::new("lt.call.outcome", r.outcome.clone()));
        attrs.push(KeyValue::new("lt.log.seq", r.seqs.1 as i64));
        attrs.push(KeyValue::new("lt.log.hash", hash_of(r.seqs.1)));
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(at(r.start))
            .with_attributes(attrs)
            .start_with_context(&tracer, &cx);
        if let Some((_, d)) = r.details.iter().find(|(k, _)| k == "decision") {
            span.add_event_with_timestamp(
                "decision",
                at(r.start),
                vec![KeyValue::new("lt.decision", d.clone())],
            );
        }
        if matches!(
            r.outcome.as_str(),
            "err" | "failed" | "timed_out" | "denied"
        ) {
            span.set_status(Status::error(r.outcome.clone()));
        }
        span.end_with_timestamp(at(r.end.unwrap_or(t.span.1)));
    }
    let root = cx.span();
    for a in approvals {
        root.add_event_with_timestamp(
            "approval".to_string(),
            at(a.end.unwrap_or(a.start)),
            vec![
                KeyValue::new("gen_ai.tool.name", a.name.clone()),
                KeyValue::new("lt.approval.id", a.id.clone()),
                KeyValue::new("lt.approval.outcome", a.outcome.clone()),
                KeyValue::new("lt.log.seq", a.seqs.1 as i64),
                KeyValue::new("lt.log.hash", hash_of(a.seqs.1)),
            ],
        );
    }
    root.end_with_timestamp(at(t.span.1));
}
