//! A log as a readable timeline (what `lt log show` prints):
//!
//! ```text
//! session 0123456789abcdef0123456789abcdef, lt 0.1.0, started 2026-11-29T21:04:05.120Z
//! program sha256 1a2b3c4d5e6f… (12 lines), tools.toml sha256 9f86d081884c…
//! profile support: allow [lookup, refund], max_calls 20
//! limits {"max_calls":10000,"max_steps":100000000}
//! #0 21:04:05.120 session_started
//! #1 21:04:05.123 proposed n7[n3:2] lookup {"id":"c1"}
//! #2 21:04:05.123 decided n7[n3:2] allow (allowlist: tool is allowed)
//! #3 21:04:05.124 scheduled n7[n3:2] lookup on server (key 0123…:n7[n3:2])
//! #4 21:04:05.200 completed n7[n3:2] → Ok {"tier":"gold"}
//! …
//! #6 21:04:05.300 intent n9 "refund the duplicate charge"
//! #7 21:04:05.301   proposed n12 issue_refund {"amount":4999}
//! …
//! #11 21:04:05.390 end intent n9 ok (1 call: n12)
//! #5 21:04:05.201 session_ended ok
//! ended ok: {"tier":"gold"} : {tier : String} (1 call, 120 steps)
//! ```
//!
//! JSON values and messages are cut to about 100 characters and kept on
//! one line; the log itself has them whole.

use super::event::{sha256_hex, Event, EventBody};
use super::json::{abbreviate, cut};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// How many characters of a JSON value or message a line shows.
const SHOWN: usize = 100;

/// The events as a timeline: a session header, one line per event, and a
/// last line with how the session ended. Every line ends in `\n`.
pub fn timeline(events: &[Event]) -> String {
    let mut out = String::new();
    match events.first() {
        Some(first) => header(&mut out, first),
        None => out.push_str("(no events)\n"),
    }
    // Events inside an `@intent` annotation are indented under it.
    let mut depth = 0usize;
    for event in events {
        if matches!(event.body, EventBody::AnnotationEnded { .. }) {
            depth = depth.saturating_sub(1);
        }
        let _ = writeln!(
            out,
            "#{} {} {}{}",
            event.seq,
            time_of_day(&event.ts),
            "  ".repeat(depth.min(20)),
            describe(&event.body)
        );
        if matches!(event.body, EventBody::AnnotationStarted { .. }) {
            depth += 1;
        }
    }
    match events.last().map(|e| &e.body) {
        Some(EventBody::SessionEnded {
            status,
            value,
            r#type,
            error,
            calls,
            steps,
        }) => {
            let _ = write!(out, "ended {status}");
            if let Some(v) = value {
                let _ = write!(out, ": {}", abbreviate(v, SHOWN));
                if let Some(t) = r#type {
                    let _ = write!(out, " : {}", one_line(t));
                }
            }
            if let Some(e) = error {
                let _ = write!(out, ": {}", run_error(e));
            }
            let _ = writeln!(
                out,
                " ({}, {})",
                count(*calls, "call"),
                count(*steps, "step")
            );
        }
        Some(EventBody::AgentEnded {
            status,
            answer,
            reason,
            ..
        }) => {
            let _ = write!(
                out,
                "agent ended {}: {}",
                one_line(status),
                one_line(reason)
            );
            if let Json::String(a) = answer {
                let _ = write!(out, "; answer: {}", one_line(a));
            }
            out.push('\n');
        }
        Some(_)
            if matches!(
                events.first().map(|e| &e.body),
                Some(EventBody::AgentStarted { .. })
            ) =>
        {
            let _ = writeln!(
                out,
                "not ended: no agent_ended event after {} (the agent is running, or lt stopped)",
                count(events.len() as u64, "event")
            );
        }
        Some(_) => {
            let _ = writeln!(
                out,
                "not ended: no session_ended event after {} (the session is running, or lt stopped)",
                count(events.len() as u64, "event")
            );
        }
        None => {}
    }
    out
}

fn header(out: &mut String, first: &Event) {
    if let EventBody::AgentStarted {
        lt_version,
        settings,
        profile,
        ..
    } = &first.body
    {
        let _ = writeln!(
            out,
            "agent session {}, lt {}, started {}",
            first.session,
            one_line(lt_version),
            one_line(&first.ts)
        );
        let _ = writeln!(out, "profile {}", profile_summary(profile));
        let _ = writeln!(out, "settings {}", abbreviate(settings, SHOWN));
        return;
    }
    let EventBody::SessionStarted {
        lt_version,
        program,
        program_hash,
        profile,
        registry_hash,
        limits,
    } = &first.body
    else {
        let _ = writeln!(
            out,
            "session {} (the log does not start with session_started)",
            first.session
        );
        return;
    };
    let _ = writeln!(
        out,
        "session {}, lt {}, started {}",
        first.session,
        one_line(lt_version),
        one_line(&first.ts)
    );
    let registry = if *registry_hash == sha256_hex(b"") {
        "no tools.toml".to_string()
    } else {
        format!("tools.toml sha256 {}…", prefix(registry_hash, 12))
    };
    let _ = writeln!(
        out,
        "program sha256 {}… ({}), {registry}",
        prefix(program_hash, 12),
        count(program.lines().count() as u64, "line")
    );
    let _ = writeln!(out, "profile {}", profile_summary(profile));
    let _ = writeln!(out, "limits {}", abbreviate(limits, SHOWN));
}

/// `support: allow [a, b], max_calls 20, dry_run`: the name, then every
/// setting that is not null, false, empty or (`approvals "deny"`) the default.
fn profile_summary(profile: &Json) -> String {
    let Json::Object(fields) = profile else {
        return abbreviate(profile, SHOWN);
    };
    let name = match fields.get("name") {
        Some(Json::String(n)) => one_line(n),
        _ => "(unnamed)".to_string(),
    };
    let mut settings = Vec::new();
    for (key, value) in fields {
        if key == "name" {
            continue;
        }
        let shown = match value {
            Json::Null | Json::Bool(false) => continue,
            // The default: a session that asks nobody approves nothing.
            Json::String(a) if key == "approvals" && a == "deny" => continue,
            Json::Array(a) if a.is_empty() => continue,
            Json::Object(o) if o.is_empty() => continue,
            Json::Bool(true) => key.clone(),
            Json::Array(items) if items.iter().all(Json::is_string) => {
                let names: Vec<&str> = items.iter().filter_map(Json::as_str).collect();
                format!("{key} [{}]", cut(&names.join(", "), SHOWN, false))
            }
            other => format!("{key} {}", abbreviate(other, SHOWN)),
        };
        settings.push(shown);
    }
    if settings.is_empty() {
        format!("{name} (no restrictions)")
    } else {
        format!("{name}: {}", settings.join(", "))
    }
}

/// The event's line after `#seq time`.
fn describe(body: &EventBody) -> String {
    match body {
        EventBody::SessionStarted { .. } => "session_started".to_string(),
        EventBody::Proposed {
            call_id,
            tool,
            argument,
        } => format!(
            "proposed {} {} {}",
            one_line(call_id),
            one_line(tool),
            abbreviate(argument, SHOWN)
        ),
        EventBody::Decided {
            call_id,
            decision,
            rule,
            reason,
        } => format!(
            "decided {} {} ({}: {})",
            one_line(call_id),
            decision.as_str(),
            one_line(rule),
            one_line(reason)
        ),
        EventBody::Scheduled {
            call_id,
            tool,
            venue,
            idempotency_key,
        } => format!(
            "scheduled {} {} on {} (key {})",
            one_line(call_id),
            one_line(tool),
            one_line(venue),
            one_line(idempotency_key)
        ),
        EventBody::ClientDispatched { call_id } => {
            format!(
                "client_dispatched {} (waiting for the client)",
                one_line(call_id)
            )
        }
        EventBody::ClientReported { call_id, report } => format!(
            "client_reported {} {}",
            one_line(call_id),
            abbreviate(report, SHOWN)
        ),
        EventBody::ClientRejected { report, reason } => format!(
            "client_rejected {}: {}",
            abbreviate(report, SHOWN),
            one_line(reason)
        ),
        EventBody::ApprovalRequested {
            approval_id,
            tool,
            argument,
        } => format!(
            "approval_requested {} {} {}",
            one_line(approval_id),
            one_line(tool),
            abbreviate(argument, SHOWN)
        ),
        EventBody::ApprovalDecided {
            approval_id,
            decision,
            by,
            reason,
            ..
        } => format!(
            "approval_decided {} {} by {} ({})",
            one_line(approval_id),
            decision.as_str(),
            one_line(by),
            one_line(reason)
        ),
        EventBody::AnnotationStarted {
            annotation_id,
            intent,
            hypothesis,
            notes,
            ..
        } => {
            let mut line = format!(
                "intent {} {}",
                one_line(annotation_id),
                abbreviate(&Json::String(intent.clone()), SHOWN)
            );
            if let Json::String(h) = hypothesis {
                let _ = write!(
                    line,
                    " hypothesis {}",
                    abbreviate(&Json::String(h.clone()), SHOWN)
                );
            }
            if let Json::String(n) = notes {
                let _ = write!(
                    line,
                    " notes {}",
                    abbreviate(&Json::String(n.clone()), SHOWN)
                );
            }
            line
        }
        EventBody::AnnotationEnded {
            annotation_id,
            calls,
            outcome,
        } => {
            let ids: Vec<&str> = calls
                .as_array()
                .map(|a| a.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            let n = ids.len();
            format!(
                "end intent {} {} ({n} call{}{}{})",
                one_line(annotation_id),
                one_line(outcome),
                if n == 1 { "" } else { "s" },
                if n == 0 { "" } else { ": " },
                one_line(&ids.join(", "))
            )
        }
        EventBody::SessionResumed { dropped_bytes, .. } => {
            if *dropped_bytes == 0 {
                "session_resumed (replayed up to here, live from here)".to_string()
            } else {
                format!(
                    "session_resumed (replayed up to here, live from here; {} of a cut-short line dropped)",
                    count(*dropped_bytes, "byte")
                )
            }
        }
        EventBody::SessionInterrupted { reason, stopped } => {
            let calls: Vec<String> = stopped
                .as_array()
                .map(|a| a.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    let id = c.get("call_id").and_then(Json::as_str).unwrap_or("?");
                    match c.get("started").and_then(Json::as_bool) {
                        Some(false) => format!("{id} (not started)"),
                        _ => format!("{id} (may have acted)"),
                    }
                })
                .collect();
            if calls.is_empty() {
                format!(
                    "session_interrupted: {} (no call running)",
                    one_line(reason)
                )
            } else {
                format!(
                    "session_interrupted: {}; stopped {}",
                    one_line(reason),
                    one_line(&calls.join(", "))
                )
            }
        }
        EventBody::Completed {
            call_id,
            output,
            result,
        } => {
            let shown = result_text(result);
            if shown.starts_with("Ok ") {
                format!("completed {} → {shown}", one_line(call_id))
            } else {
                format!(
                    "completed {} output {} → {shown}",
                    one_line(call_id),
                    abbreviate(output, SHOWN)
                )
            }
        }
        EventBody::Failed {
            call_id,
            failure,
            message,
            stderr,
            ..
        } => format!(
            "failed {} {}: {}{}",
            one_line(call_id),
            one_line(failure),
            one_line(message),
            server_stderr(stderr.as_deref())
        ),
        EventBody::TimedOut {
            call_id,
            message,
            stderr,
            ..
        } => format!(
            "timed_out {}: {}{}",
            one_line(call_id),
            one_line(message),
            server_stderr(stderr.as_deref())
        ),
        EventBody::SessionEnded { status, .. } => format!("session_ended {}", one_line(status)),
        EventBody::AgentStarted { task, model, .. } => format!(
            "agent_started {} task {}",
            abbreviate(model, SHOWN),
            one_line(task)
        ),
        EventBody::TaskClassified {
            label,
            matched,
            profile,
            settings,
        } => format!(
            "task_classified {}{}: profile {}; settings {}",
            one_line(label),
            if *matched {
                ""
            } else {
                " (the default label: the classifier named no one rule, or failed)"
            },
            profile_summary(profile),
            abbreviate(settings, SHOWN)
        ),
        EventBody::ModelRequested {
            request_id,
            messages,
            sent,
            samples,
        } => {
            let last = messages
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m.get("content"))
                .and_then(Json::as_str)
                .unwrap_or("");
            format!(
                "model_requested {} ({}, {}) {}",
                one_line(request_id),
                count(*sent, "message"),
                count(*samples, "sample"),
                one_line(last)
            )
        }
        EventBody::ModelRetried {
            request_id,
            attempt,
            error,
            message,
            delay_ms,
        } => format!(
            "model_retried {} attempt {attempt} {}: {} (retry in {delay_ms} ms)",
            one_line(request_id),
            one_line(error),
            one_line(message)
        ),
        EventBody::ModelReplied {
            request_id, texts, ..
        } => {
            let first = texts
                .as_array()
                .and_then(|t| t.first())
                .and_then(Json::as_str)
                .unwrap_or("");
            format!("model_replied {} {}", one_line(request_id), one_line(first))
        }
        EventBody::ModelFailed {
            request_id,
            error,
            message,
            attempts,
        } => format!(
            "model_failed {} {} after {}: {}",
            one_line(request_id),
            one_line(error),
            count(*attempts, "attempt"),
            one_line(message)
        ),
        EventBody::ProgramChecked {
            request_id,
            sample,
            status,
            diagnostics,
            ..
        } => {
            let codes: Vec<&str> = diagnostics
                .as_array()
                .map(|d| d.iter().filter_map(|x| x.get("code")?.as_str()).collect())
                .unwrap_or_default();
            let mut text = format!(
                "program_checked {} sample {sample} {}",
                one_line(request_id),
                one_line(status)
            );
            if !codes.is_empty() {
                let _ = write!(text, " [{}]", one_line(&codes.join(", ")));
            }
            text
        }
        EventBody::ProgramAccepted {
            request_id,
            sample,
            votes,
            program_hash,
        } => format!(
            "program_accepted {} sample {sample} ({}) sha256 {}…",
            one_line(request_id),
            count(*votes, "vote"),
            prefix(program_hash, 12)
        ),
        EventBody::AgentEnded {
            status,
            reason,
            turns,
            requests,
            ..
        } => format!(
            "agent_ended {} ({}, {}): {}",
            one_line(status),
            count(*turns, "run"),
            count(*requests, "request"),
            one_line(reason)
        ),
    }
}

/// `Ok {…}` / `Err message` for `{"Ok": v}` / `{"Err": m}`; other JSON as is.
fn result_text(result: &Json) -> String {
    if let Json::Object(fields) = result {
        if fields.len() == 1 {
            if let Some(v) = fields.get("Ok") {
                return format!("Ok {}", abbreviate(v, SHOWN));
            }
            if let Some(e) = fields.get("Err") {
                return match e {
                    Json::String(m) => format!("Err {}", one_line(m)),
                    other => format!("Err {}", abbreviate(other, SHOWN)),
                };
            }
        }
    }
    abbreviate(result, SHOWN)
}

/// `step_limit: … at 3:7` from `{kind, message, line, column}`.
fn run_error(error: &Json) -> String {
    let field = |k: &str| error.get(k);
    match (field("kind"), field("message")) {
        (Some(Json::String(kind)), Some(Json::String(message))) => {
            let mut text = format!("{}: {}", one_line(kind), one_line(message));
            if let (Some(line), Some(column)) = (field("line"), field("column")) {
                if line.is_number() && column.is_number() {
                    let _ = write!(text, " at {line}:{column}");
                }
            }
            text
        }
        _ => abbreviate(error, SHOWN),
    }
}

/// `21:04:05.123` from `2026-11-29T21:04:05.123Z` (anything else as is).
fn time_of_day(ts: &str) -> String {
    match (ts.find('T'), ts.strip_suffix('Z')) {
        (Some(t), Some(rest)) if t < rest.len() => one_line(&rest[t + 1..]),
        _ => one_line(ts),
    }
}

/// `text` on one line (newlines shown as `⏎`), cut to [`SHOWN`] characters.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .take(SHOWN + 1)
        .map(|c| if c.is_control() { '⏎' } else { c })
        .collect();
    cut(&flat, SHOWN, false)
}

/// ` (server stderr: …)`, the end of what a tool's server wrote on stderr
/// (its last lines say the most), or nothing.
fn server_stderr(stderr: Option<&str>) -> String {
    let Some(text) = stderr else {
        return String::new();
    };
    let count = text.chars().count();
    let end: String = text.chars().skip(count.saturating_sub(SHOWN)).collect();
    let lead = if count > SHOWN { "…" } else { "" };
    format!(" (server stderr: {lead}{})", one_line(&end))
}

/// The first `n` characters of a digest (all of a shorter one).
fn prefix(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

/// `1 call`, `3 calls`.
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
