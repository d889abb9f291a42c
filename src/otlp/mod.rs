//! A session's log exported as an OpenTelemetry trace over OTLP/HTTP
//! (JSON), with the `opentelemetry` crates: what `lt run`, `lt agent` and
//! `lt serve` do with `--otlp-endpoint URL`. The spans are built from the
//! log's lines once the log is over (`log::timeline`'s rows), so the
//! session engine is not touched:
//!
//! ```text
//! invoke_workflow  the session: first event ─▶ last; lt.session.id,
//!                  lt.log.seq and lt.log.hash of its last event; approvals
//!                  as span events
//!  ├ execute_tool  one per call: proposed ─▶ outcome; gen_ai.tool.name,
//!  │               gen_ai.tool.call.id, lt.call.outcome, lt.call.venue,
//!  │               lt.log.seq and lt.log.hash of its last event; a denial
//!  │               as a span event and an error status; with payloads,
//!  │               gen_ai.tool.call.arguments and gen_ai.tool.call.result
//!  └ chat          one per model request of an agent session
//! ```
//!
//! Times are the events' `ts`. Arguments and results are exported only
//! when asked ([`Settings::payloads`]), each cut to a size limit.

use crate::log::timeline::{self, Kind};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The size limit of an exported argument or result when none is given
/// (`--otlp-payload-limit`), in bytes.
pub const DEFAULT_PAYLOAD_LIMIT: usize = 4096;

/// What the command line asks of the exporter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The URL spans are posted to, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: String,
    /// `Some(limit)`: export each call's argument and result as attributes,
    /// each cut to `limit` bytes (`--otlp-payloads`); `None`: never.
    pub payloads: Option<usize>,
}

/// An exporter: a tracer provider posting to one endpoint.
#[derive(Clone)]
pub struct Exporter {
    provider: SdkTracerProvider,
    payloads: Option<usize>,
    endpoint: String,
}

impl Exporter {
    /// The exporter of `settings`, its spans' resource named `service`
    /// (`lt run`, `lt agent`, `lt serve`). Errors: a message naming the
    /// endpoint.
    pub fn new(service: &'static str, settings: &Settings) -> Result<Exporter, String> {
        let endpoint = &settings.endpoint;
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(format!(
                "--otlp-endpoint {endpoint:?} is not an http:// or https:// URL"
            ));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpJson)
            .with_endpoint(endpoint.as_str())
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
            .with_service_name(service)
            .build();
        Ok(Exporter {
            provider: SdkTracerProvider::builder()
                .with_span_processor(batch)
                .with_resource(resource)
                .build(),
            payloads: settings.payloads,
            endpoint: endpoint.clone(),
        })
    }

    /// Sends what is buffered and stops the exporter (a command does this
    /// before it exits). Errors: why the spans could not be sent.
    pub fn shutdown(&self) -> Result<(), String> {
        // A flush says whether the export failed; a shutdown does not.
        let flushed = self.provider.force_flush();
        let shut = self.provider.shutdown();
        flushed
            .and(shut)
            .map_err(|e| format!("cannot export the trace to {}: {e}", self.endpoint))
    }

    /// Exports the trace of session `id` from its log `lines`, if its log
    /// is over (an agent's log: at `agent_ended`, not at its runs' ends).
    /// Returns whether it did.
    pub fn export(&self, id: &str, lines: &[String]) -> bool {
        export(self, id, lines)
    }
}

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// `s` cut to at most `limit` bytes (on a character boundary), with `…`
/// after a cut.
pub fn cut(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn export(x: &Exporter, id: &str, lines: &[String]) -> bool {
    let events: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return false;
    };
    let agent = first["kind"] == "agent_started";
    let over = if agent {
        "agent_ended"
    } else {
        "session_ended"
    };
    if last["kind"] != over {
        return false;
    }
    let hashes: std::collections::HashMap<u64, &str> = events
        .iter()
        .filter_map(|e| Some((e["seq"].as_u64()?, e["hash"].as_str()?)))
        .collect();
    let hash_of = |seq: u64| -> String { hashes.get(&seq).copied().unwrap_or("").to_string() };
    let t = timeline::build(lines);
    let tracer = x.provider.tracer("lt");
    let last_seq = last["seq"].as_u64().unwrap_or(0);
    // `ok`/`error` (session_ended), `answered`/`gave_up`/`error` (agent_ended).
    let status = last["status"].as_str().unwrap_or("");
    let root_attrs = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_workflow"),
        KeyValue::new("lt.session.id", id.to_string()),
        KeyValue::new("lt.log.seq", last_seq as i64),
        KeyValue::new("lt.log.hash", hash_of(last_seq)),
        KeyValue::new("lt.session.status", status.to_string()),
    ];
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
    let detail = |r: &timeline::Row, key: &str| -> Option<String> {
        r.details
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
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
        if let (Some(limit), Kind::Call) = (x.payloads, r.kind) {
            for (key, attr) in [
                ("argument", "gen_ai.tool.call.arguments"),
                ("result", "gen_ai.tool.call.result"),
            ] {
                if let Some(v) = detail(r, key) {
                    attrs.push(KeyValue::new(attr, cut(&v, limit)));
                }
            }
        }
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(at(r.start))
            .with_attributes(attrs)
            .start_with_context(&tracer, &cx);
        if let Some(d) = detail(r, "decision") {
            span.add_event_with_timestamp(
                "decision",
                at(r.start),
                vec![KeyValue::new("lt.decision", d)],
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
        let mut attrs = vec![
            KeyValue::new("gen_ai.tool.name", a.name.clone()),
            KeyValue::new("lt.approval.id", a.id.clone()),
            KeyValue::new("lt.approval.outcome", a.outcome.clone()),
            KeyValue::new("lt.log.seq", a.seqs.1 as i64),
            KeyValue::new("lt.log.hash", hash_of(a.seqs.1)),
        ];
        if let (Some(limit), Some(v)) = (x.payloads, detail(a, "argument")) {
            attrs.push(KeyValue::new("gen_ai.tool.call.arguments", cut(&v, limit)));
        }
        root.add_event_with_timestamp("approval".to_string(), at(a.end.unwrap_or(a.start)), attrs);
    }
    root.end_with_timestamp(at(t.span.1));
    true
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn a_payload_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("aé", 2), "a…");
        assert_eq!(cut("", 0), "");
    }
}
