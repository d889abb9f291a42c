//! A session's log as a waterfall: one row per tool call (from `proposed`
//! to its outcome: `completed`, `failed`, `timed_out`, or a denying
//! `decided`), per approval request (`approval_requested` to
//! `approval_decided`) and, in an agent session, per model request
//! (`model_requested` to `model_replied` or `model_failed`, with the
//! programs it proposed and their diagnostics). Times come from the events'
//! `ts` (informative, as `docs/log-format.md` says); rows are in the order
//! their first event was logged.

use super::html::esc;
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
    /// When it started and ended (ms since the epoch); no end: still open.
    pub start: i64,
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

/// The waterfall as an HTML table: each row's start (after the first
/// event), duration, outcome, and a bar on the session's time scale (SVG,
/// so the page needs no inline style).
pub fn render(t: &Timeline) -> String {
    if t.rows.is_empty() {
        return "<p class=\"note\" id=\"no-calls\">No tool call, approval or model request in this log.</p>".into();
    }
    let (t0, t1) = t.span;
    let width = (t1 - t0).max(1) as f64;
    let mut out = String::from(
        "<table class=\"timeline\" id=\"timeline\"><thead><tr><th>seq</th><th>what</th><th>start</th><th>duration</th><th>outcome</th><th class=\"waterfall\">waterfall</th></tr></thead><tbody>",
    );
    for r in &t.rows {
        let end = r.end.unwrap_or(t1);
        let x = (r.start - t0) as f64 / width * 1000.0;
        let w = ((end - r.start) as f64 / width * 1000.0).max(4.0);
        let what = match r.kind {
            Kind::Call => format!(
                "call <b>{}</b> <code>{}</code>{}",
                esc(&r.name),
                esc(&r.id),
                if r.venue.as_deref() == Some("client") {
                    " <span class=\"badge client\">client venue</span>"
                } else {
                    ""
                }
            ),
            Kind::Approval => format!(
                "<span class=\"badge approval\">approval</span> <b>{}</b> <code>{}</code>",
                esc(&r.name),
                esc(&r.id)
            ),
            Kind::Model => format!("<span class=\"badge model\">model</span> {}", esc(&r.name)),
        };
        let details: String = r
            .details
            .iter()
            .map(|(k, v)| format!("<dt>{}</dt><dd><pre>{}</pre></dd>", esc(k), esc(v)))
            .collect();
        let duration = match r.end {
            Some(e) => format!("{} ms", e - r.start),
            None => "…".into(),
        };
        out.push_str(&format!(
            "<tr class=\"row {cls}\" data-kind=\"{kind:?}\" data-outcome=\"{o}\" data-venue=\"{venue}\">\
             <td>{s0}–{s1}</td><td><details><summary>{what}</summary><dl>{details}</dl></details></td>\
             <td>+{start} ms</td><td>{duration}</td><td><span class=\"badge {o}\">{o}</span></td>\
             <td class=\"waterfall\"><svg viewBox=\"0 0 1010 12\" preserveAspectRatio=\"none\" class=\"bar\">\
             <rect x=\"{x:.1}\" y=\"1\" width=\"{w:.1}\" height=\"10\" class=\"{o}\"></rect></svg></td></tr>",
            cls = if r.venue.as_deref() == Some("client") { "client" } else { "server" },
            kind = r.kind,
            o = esc(&r.outcome),
            venue = esc(r.venue.as_deref().unwrap_or("")),
            s0 = r.seqs.0,
            s1 = r.seqs.1,
            start = r.start - t0,
        ));
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64, ms: u32, body: &str) -> String {
        format!("{{\"seq\":{seq},\"ts\":\"2026-12-05T10:00:00.{ms:03}Z\",{body}}}")
    }

    #[test]
    fn calls_denials_and_approvals_become_rows() {
        let lines = vec![
            ev(0, 0, "\"kind\":\"session_started\""),
            ev(1, 10, "\"kind\":\"proposed\",\"call_id\":\"n1\",\"tool\":\"look\",\"argument\":\"<x>\""),
            ev(2, 11, "\"kind\":\"decided\",\"call_id\":\"n1\",\"decision\":\"allow\",\"rule\":\"r\",\"reason\":\"ok\""),
            ev(3, 12, "\"kind\":\"scheduled\",\"call_id\":\"n1\",\"tool\":\"look\",\"venue\":\"client\""),
            ev(4, 50, "\"kind\":\"completed\",\"call_id\":\"n1\",\"output\":1,\"result\":{\"Ok\":1}"),
            ev(5, 60, "\"kind\":\"proposed\",\"call_id\":\"n2\",\"tool\":\"pay\",\"argument\":{}"),
            ev(6, 61, "\"kind\":\"decided\",\"call_id\":\"n2\",\"decision\":\"deny\",\"rule\":\"effects\",\"reason\":\"no\""),
            ev(7, 70, "\"kind\":\"approval_requested\",\"approval_id\":\"n3\",\"tool\":\"rm\",\"argument\":{}"),
            ev(8, 90, "\"kind\":\"approval_decided\",\"approval_id\":\"n3\",\"decision\":\"allow\",\"by\":\"api\",\"reason\":\"r\",\"token\":null"),
        ];
        let t = build(&lines);
        assert_eq!(t.span.1 - t.span.0, 90);
        let outcomes: Vec<&str> = t.rows.iter().map(|r| r.outcome.as_str()).collect();
        assert_eq!(outcomes, ["ok", "denied", "approved"]);
        assert_eq!(t.rows[0].end, Some(t.rows[0].start + 40));
        assert_eq!(t.rows[0].venue.as_deref(), Some("client"));
        let html = render(&t);
        assert!(html.contains("client venue"), "{html}");
        assert!(
            html.contains("&lt;x&gt;") && !html.contains("<x>"),
            "{html}"
        );
    }
}
