//! A log as a timeline: the rows the console's waterfall
//! (`serve/console/timeline.rs`) draws and the OTLP exporter (`otlp.rs`)
//! turns into spans: one row per tool call (from `proposed`
//! to its outcome: `completed`, `failed`, `timed_out`, or a denying
//! `decided`), per approval request (`approval_requested` to
//! `approval_decided`) and, in an agent session, per model request
//! (`model_requested` to `model_replied` or `model_failed`, with the
//! programs it proposed and their diagnostics). Times come from the events'
//! `ts` (informative, as `docs/log-format.md` says); rows are in the order
//! their first event was logged.
//!
//! Pure: log lines in, rows out; no I/O.

use serde_json::Value;

/// What a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tool call.
    Call,
    /// An approval request.
    Approval,
    /// A model request (agent sessions).
    Model,
}

/// One row of the waterfall.
#[derive(Clone, Debug)]
pub struct Row {
    /// What it is.
    pub kind: Kind,
    /// Its id in the log (`call_id`, `approval_id`, `request_id`).
    pub id: String,
    /// The tool's name (or the model request's id).
    pub name: String,
    /// `client` for a client-venue call.
    pub venue: Option<String>,
    /// When it started (ms since the epoch).
    pub start: i64,
    /// When it ended; `None`: still open.
    pub end: Option<i64>,
    /// `running`, `ok`, `err`, `denied`, `failed`, `timed_out`,
    /// `approved`, `refused`, `answered`.
    pub outcome: String,
    /// The `seq` of its first and last event.
    pub seqs: (u64, u64),
    /// What to show when it is opened: argument, decision, result.
    pub details: Vec<(String, String)>,
}

/// The rows of a log, and its time span.
#[derive(Debug, Default)]
pub struct Timeline {
    /// The rows, in the order their first event was logged.
    pub rows: Vec<Row>,
    /// The first and the last event's time.
    pub span: (i64, i64),
}

fn ms(ts: &Value) -> Option<i64> {
    let t = humantime::parse_rfc3339(ts.as_str()?).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// The timeline of `lines` (a log's lines; one that is not JSON is passed
/// over: verification reports it).
pub fn build(lines: &[String]) -> Timeline {
    let mut t = Timeline::default();
    let mut first: Option<i64> = None;
    let mut last = 0i64;
    for line in lines {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(at) = ms(&e["ts"]) else { continue };
        first.get_or_insert(at);
        last = last.max(at);
        let seq = e["seq"].as_u64().unwrap_or(0);
        let kind = e["kind"].as_str().unwrap_or("");
        let find = |rows: &mut Vec<Row>, k: Kind, id: &str| -> Option<usize> {
            rows.iter().rposition(|r| r.kind == k && r.id == id)
        };
        let open = |k: Kind, id: &Value, name: String| Row {
            kind: k,
            id: text(id),
            name,
            venue: None,
            start: at,
            end: None,
            outcome: "running".into(),
            seqs: (seq, seq),
            details: Vec::new(),
        };
        match kind {
            "proposed" => {
                let mut r = open(Kind::Call, &e["call_id"], text(&e["tool"]));
                r.details
                    .push(("argument".into(), e["argument"].to_string()));
                t.rows.push(r);
            }
            "approval_requested" => {
                let mut r = open(Kind::Approval, &e["approval_id"], text(&e["tool"]));
                r.details
                    .push(("argument".into(), e["argument"].to_string()));
                r.outcome = "waiting".into();
                t.rows.push(r);
            }
            "model_requested" => {
                t.rows.push(open(
                    Kind::Model,
                    &e["request_id"],
                    format!("model request {}", text(&e["request_id"])),
                ));
            }
            _ => {}
        }
        let (k, id) = if let Some(id) = e["call_id"].as_str() {
            (Kind::Call, id)
        } else if let Some(id) = e["approval_id"].as_str() {
            (Kind::Approval, id)
        } else if let Some(id) = e["request_id"].as_str() {
            (Kind::Model, id)
        } else {
            continue;
        };
        let Some(i) = find(&mut t.rows, k, id) else {
            continue;
        };
        let r = &mut t.rows[i];
        r.seqs.1 = seq;
        let close = |r: &mut Row, outcome: &str| {
            r.end = Some(at);
            r.outcome = outcome.into();
        };
        match kind {
            "decided" => {
                r.details.push((
                    "decision".into(),
                    format!(
                        "{} ({}: {})",
                        text(&e["decision"]),
                        text(&e["rule"]),
                        text(&e["reason"])
                    ),
                ));
                if e["decision"] == "deny" {
                    close(r, "denied");
                }
            }
            "scheduled" => r.venue = e["venue"].as_str().map(str::to_string),
            "client_dispatched" => r
                .details
                .push(("client".into(), "handed to the client".into())),
            "client_reported" => r.details.push(("client".into(), e["report"].to_string())),
            "completed" => {
                let outcome = if e["result"].get("Err").is_some() {
                    "err"
                } else {
                    "ok"
                };
                r.details.push(("result".into(), e["result"].to_string()));
                close(r, outcome);
            }
            "failed" | "timed_out" => {
                r.details.push(("result".into(), text(&e["message"])));
                close(r, kind);
            }
            "approval_decided" => {
                let outcome = if e["decision"] == "allow" {
                    "approved"
                } else {
                    "refused"
                };
                r.details.push((
                    "answer".into(),
                    format!(
                        "{} by {}: {}",
                        text(&e["decision"]),
                        text(&e["by"]),
                        text(&e["reason"])
                    ),
                ));
                close(r, outcome);
            }
            "model_replied" => close(r, "answered"),
            "model_failed" => {
                r.details.push(("error".into(), text(&e["message"])));
                close(r, "failed");
            }
            "program_checked" => {
                let diags: Vec<String> = e["diagnostics"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|d| {
                                format!(
                                    "{} {}:{} {}",
                                    text(&d["code"]),
                                    d["line"],
                                    d["column"],
                                    text(&d["message"])
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                r.details.push((
                    format!("program {} ({})", text(&e["sample"]), text(&e["status"])),
                    text(&e["program"]),
                ));
                if !diags.is_empty() {
                    r.details.push(("diagnostics".into(), diags.join("\n")));
                }
            }
            _ => {}
        }
    }
    t.span = (first.unwrap_or(0), last);
    t
}
