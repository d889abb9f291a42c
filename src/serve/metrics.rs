//! `GET /metrics`: Prometheus text exposition (the `prometheus` crate).
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `lt_sessions` | gauge | `tenant`, `status` (running, waiting_client, waiting_approval): live sessions |
//! | `lt_sessions_started_total` | counter | `tenant` |
//! | `lt_sessions_finished_total` | counter | `tenant`, `status` (ended, failed, cancelled) |
//! | `lt_tool_calls_total` | counter | `tenant`, `tool`, `outcome` (completed, failed, timed_out) |
//! | `lt_decision_denials_total` | counter | `tenant`, `rule` |
//! | `lt_tool_call_duration_seconds` | histogram | `tenant`, `tool`: from `scheduled` to the outcome |
//! | `lt_store_commit_duration_seconds` | histogram | one per group commit, fsync included |
//! | `lt_store_commit_events` | histogram | events per group commit |
//! | `lt_waiting_starts` | gauge | `tenant`: `POST /v1/sessions` requests waiting for their session's end (`Prefer: wait`) |
//!
//! Every value is counted where the events pass (the session's sink), so
//! it counts what the log records, nothing else. A tenant's key reads its
//! own series only ([`Metrics::render`]): another tenant's tools, rules
//! and counts are not shown to it; the store's series have no tenant.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    /// Live sessions by status.
    pub sessions: IntGaugeVec,
    /// Sessions started (new, not resumed).
    pub started: IntCounterVec,
    /// Sessions over, by final status.
    pub finished: IntCounterVec,
    /// Tool calls by tool and outcome kind.
    pub calls: IntCounterVec,
    /// Denied decisions by rule.
    pub denials: IntCounterVec,
    /// Call latency by tool.
    pub call_seconds: HistogramVec,
    /// Group commit latency.
    pub commit_seconds: Histogram,
    /// Events per group commit.
    pub commit_events: Histogram,
    /// Start requests waiting for their session's end (`Prefer: wait`).
    pub waiting: IntGaugeVec,
}

fn buckets() -> Vec<f64> {
    vec![
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0, 30.0,
    ]
}

impl Metrics {
    /// Registers every metric. Errors: a registration failed (a bug).
    pub fn new() -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new();
        let sessions = IntGaugeVec::new(
            Opts::new("lt_sessions", "Live sessions by status"),
            &["tenant", "status"],
        )?;
        let started = IntCounterVec::new(
            Opts::new("lt_sessions_started_total", "Sessions started"),
            &["tenant"],
        )?;
        let finished = IntCounterVec::new(
            Opts::new(
                "lt_sessions_finished_total",
                "Sessions over, by final status",
            ),
            &["tenant", "status"],
        )?;
        let calls = IntCounterVec::new(
            Opts::new("lt_tool_calls_total", "Tool calls by tool and outcome"),
            &["tenant", "tool", "outcome"],
        )?;
        let denials = IntCounterVec::new(
            Opts::new(
                "lt_decision_denials_total",
                "Calls denied by the pipeline, by rule",
            ),
            &["tenant", "rule"],
        )?;
        let call_seconds = HistogramVec::new(
            HistogramOpts::new(
                "lt_tool_call_duration_seconds",
                "From a call's scheduled event to its outcome",
            )
            .buckets(buckets()),
            &["tenant", "tool"],
        )?;
        let commit_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "lt_store_commit_duration_seconds",
                "One group commit of the store, fsync included",
            )
            .buckets(buckets()),
        )?;
        let commit_events = Histogram::with_opts(
            HistogramOpts::new("lt_store_commit_events", "Events per group commit").buckets(vec![
                1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 1024.0,
            ]),
        )?;
        let waiting = IntGaugeVec::new(
            Opts::new(
                "lt_waiting_starts",
                "Start requests waiting for their session's end (Prefer: wait)",
            ),
            &["tenant"],
        )?;
        registry.register(Box::new(sessions.clone()))?;
        registry.register(Box::new(started.clone()))?;
        registry.register(Box::new(finished.clone()))?;
        registry.register(Box::new(calls.clone()))?;
        registry.register(Box::new(denials.clone()))?;
        registry.register(Box::new(call_seconds.clone()))?;
        registry.register(Box::new(commit_seconds.clone()))?;
        registry.register(Box::new(commit_events.clone()))?;
        registry.register(Box::new(waiting.clone()))?;
        Ok(Metrics {
            registry,
            sessions,
            started,
            finished,
            calls,
            denials,
            call_seconds,
            commit_seconds,
            commit_events,
            waiting,
        })
    }

    /// Shows `tenant`'s series from the start (its live sessions by
    /// status at 0, none started), before it has any.
    pub fn add_tenant(&self, tenant: &str) {
        for s in ["running", "waiting_client", "waiting_approval"] {
            self.sessions.with_label_values(&[tenant, s]).set(0);
        }
        self.started.with_label_values(&[tenant]).inc_by(0);
        self.waiting.with_label_values(&[tenant]).set(0);
    }

    /// The text exposition format of what `tenant` may see: its own
    /// series and the store's (which have no tenant label).
    pub fn render(&self, tenant: &str) -> String {
        let mut families = self.registry.gather();
        for family in &mut families {
            family.mut_metric().retain(|m| {
                let label = m.get_label().iter().find(|l| l.name() == "tenant");
                label.is_none_or(|l| l.value() == tenant)
            });
        }
        families.retain(|f| !f.get_metric().is_empty());
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&families, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}
