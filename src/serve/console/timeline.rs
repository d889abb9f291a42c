//! A session's log as a waterfall: one row per tool call (from `proposed`
//! to its outcome: `completed`, `failed`, `timed_out`, or a denying
//! `decided`), per approval request (`approval_requested` to
//! `approval_decided`) and, in an agent session, per model request
//! (`model_requested` to `model_replied` or `model_failed`, with the
//! programs it proposed and their diagnostics). Times come from the events'
//! `ts` (informative, as `docs/log-format.md` says); rows are in the order
//! their first event was logged.
//!
//! The rows are built by `log::timeline` (the OTLP exporter reads the
//! same rows); this file draws them.

use super::html::esc;
pub use crate::log::timeline::{build, Kind, Timeline};

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
