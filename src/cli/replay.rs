//! `lt replay LOG [--program FILE] [--profile FILE]`: re-runs a session
//! from its event log without calling any tool, and checks that the
//! program issues exactly the recorded calls and reaches the recorded value.
//!
//! Exit codes: 0 the replay matches the log; 1 it does not (non-determinism,
//! a different value, a log that does not verify or ends early, a program
//! the checker rejects); 2 the log or a file cannot be read.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::control::profile::Profile;
use crate::control::replay::ReplayHost;
use crate::ir::lower::lower;
use crate::log::{read_prefix, EventBody};
use crate::runtime::eval;
use crate::runtime::limits::Limits;
use crate::source::SourceFile;
use crate::types::check_source;
use serde_json::json;
use std::path::Path;

/// The options of `lt replay`.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The event log.
    pub log: String,
    /// Replay this program instead of the recorded one.
    pub program: Option<String>,
    /// Replay under this profile instead of the recorded one.
    pub profile: Option<String>,
    /// Print a JSON report.
    pub json: bool,
}

fn fail(opts: &ReplayOptions, code: u8, kind: &str, message: &str) -> u8 {
    if opts.json {
        out!("{}", json!({"ok": false, "kind": kind, "message": message}));
    } else {
        err!("error: {message}");
    }
    code
}

/// Runs `lt replay` and returns the exit code.
pub fn run(opts: &ReplayOptions) -> u8 {
    let text = match std::fs::read(&opts.log) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            return fail(
                opts,
                EXIT_USAGE,
                "usage",
                &format!("cannot read {}: {e}", opts.log),
            )
        }
    };
    let (events, report) = read_prefix(&text);
    if let Some(p) = &report.problem {
        let msg = format!("{}: the log does not verify: {p}", opts.log);
        return fail(opts, EXIT_DIAGNOSTICS, "log", &msg);
    }
    if matches!(
        events.first().map(|e| &e.body),
        Some(EventBody::AgentStarted { .. })
    ) {
        return replay_agent(opts, events);
    }
    let Some(EventBody::SessionStarted {
        program,
        profile,
        limits,
        ..
    }) = events.first().map(|e| &e.body)
    else {
        return fail(
            opts,
            EXIT_DIAGNOSTICS,
            "log",
            &format!("{}: no session_started event", opts.log),
        );
    };
    let (name, source) = match &opts.program {
        Some(path) => match super::read_source(path) {
            Ok(x) => x,
            Err(msg) => return fail(opts, EXIT_USAGE, "usage", &msg),
        },
        None => (format!("{} (recorded program)", opts.log), program.clone()),
    };
    let profile = match &opts.profile {
        Some(path) => match Profile::load(Path::new(path)) {
            Ok(p) => p,
            Err(e) => return fail(opts, EXIT_USAGE, "usage", &e.to_string()),
        },
        None => match Profile::from_json(profile) {
            Ok(p) => p,
            Err(e) => {
                return fail(
                    opts,
                    EXIT_DIAGNOSTICS,
                    "log",
                    &format!("the recorded profile is invalid: {e}"),
                )
            }
        },
    };
    let file = SourceFile::new(name, source);
    let analysis = check_source(&file.text);
    if !analysis.is_ok() {
        if opts.json {
            out!("{}", super::check::report_json(&file, &analysis, None));
        } else {
            super::check::print_diagnostics(&file, &analysis, false);
        }
        return EXIT_DIAGNOSTICS;
    }
    let Ok(checked) = analysis.into_checked() else {
        return EXIT_DIAGNOSTICS;
    };
    let ir = match lower(&checked) {
        Ok(ir) => ir,
        Err(e) => {
            return fail(
                opts,
                EXIT_DIAGNOSTICS,
                "internal",
                &format!("lowering failed: {}", e.message),
            )
        }
    };
    // Replay calls no tool: the wall clock is not part of the session (a
    // session the clock stopped is compared up to that point).
    let limits = match recorded_limits(limits) {
        Ok(l) => Limits { timeout: None, ..l },
        Err(e) => {
            return fail(
                opts,
                EXIT_DIAGNOSTICS,
                "log",
                &format!("the recorded limits are invalid: {e}"),
            )
        }
    };
    let mut host = ReplayHost::new(&events, profile, &ir.tools).with_limits(limits.clone());
    let (result, stats) = eval::run(&ir, &mut host, &limits);
    let ended = events.iter().find_map(|e| match &e.body {
        EventBody::SessionEnded {
            status,
            value,
            error,
            ..
        } => Some((status.clone(), value.clone(), error.clone())),
        _ => None,
    });
    // A session the wall clock stopped cannot be replayed past that point
    // (replay has no clock): it matches when every recorded call was made.
    let timed_out = ended.as_ref().is_some_and(|(_, _, e)| {
        e.as_ref()
            .and_then(|e| e.get("kind"))
            .and_then(|k| k.as_str())
            == Some("timeout")
    });
    let all_made = host.remaining().iter().all(|e| {
        matches!(
            e.body,
            EventBody::SessionEnded { .. }
                | EventBody::SessionResumed { .. }
                | EventBody::AnnotationStarted { .. }
                | EventBody::AnnotationEnded { .. }
        )
    });
    if timed_out && (all_made || host.divergence().is_some_and(|d| d.log_ended)) {
        if opts.json {
            out!(
                "{}",
                json!({"ok": true, "calls": host.calls(), "status": "error", "timed_out": true})
            );
        } else {
            out!(
                "replay matches the log up to where the run timed out: {} calls, the same decisions and outcomes",
                host.calls()
            );
        }
        return EXIT_OK;
    }
    if let Some(d) = host.divergence() {
        let kind = if d.log_ended && ended.is_none() {
            "incomplete"
        } else {
            "non_determinism"
        };
        let msg = if kind == "incomplete" {
            format!("the log ends before the session did (it was cut short, e.g. by a crash): {d}")
        } else {
            format!("non-determinism {d}")
        };
        return fail(opts, EXIT_DIAGNOSTICS, kind, &msg);
    }
    // An error session is compared by its error's kind and message.
    let ended = ended.map(|(status, value, error)| {
        let value = if status == "ok" {
            value
        } else {
            error.map(|e| json!({"kind": e.get("kind"), "message": e.get("message")}))
        };
        (status, value)
    });
    let replayed = match &result {
        Ok(v) => ("ok".to_string(), Some(v.to_json())),
        Err(e) => (
            "error".to_string(),
            Some(json!({"kind": e.kind.as_str(), "message": e.message})),
        ),
    };
    match ended {
        None => fail(
            opts,
            EXIT_DIAGNOSTICS,
            "incomplete",
            &format!(
                "replayed {} calls, but the log ends before the session did (it was cut short); the replayed run ended {}",
                host.calls(),
                replayed.0
            ),
        ),
        Some((status, value)) if status == replayed.0 && value == replayed.1 => {
            if opts.json {
                out!(
                    "{}",
                    json!({
                        "ok": true,
                        "calls": host.calls(),
                        "steps": stats.steps,
                        "status": status,
                        "value": value,
                    })
                );
            } else {
                let shown = match &result {
                    Ok(v) => v.to_string(),
                    Err(e) => format!("error: {}", e.message),
                };
                out!(
                    "replay matches the log: {} calls, the same decisions and outcomes, value {shown}",
                    host.calls()
                );
            }
            EXIT_OK
        }
        Some((status, value)) => fail(
            opts,
            EXIT_DIAGNOSTICS,
            "different_value",
            &format!(
                "the replay issued the recorded calls but ended differently: the log has {status} {}, the replay gave {} {}",
                value.map(|v| v.to_string()).unwrap_or_default(),
                replayed.0,
                replayed.1.map(|v| v.to_string()).unwrap_or_default()
            ),
        ),
    }
}

/// The limits a `session_started` event records (`limits`), with the
/// defaults for any it lacks; `timeout_ms` null, absent or 0 is no timeout.
/// Errors: not an object, an unknown key, a value that is not a
/// non-negative integer (naming the key).
pub(crate) fn recorded_limits(limits: &serde_json::Value) -> Result<Limits, String> {
    const KEYS: [&str; 7] = [
        "max_calls",
        "max_steps",
        "timeout_ms",
        "max_list_len",
        "max_string_bytes",
        "max_value_nodes",
        "max_string_total_bytes",
    ];
    let Some(map) = limits.as_object() else {
        return Err("limits: not an object".to_string());
    };
    if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("limits.{k}: not a limit"));
    }
    let recorded = |key: &str| -> Result<Option<u64>, String> {
        match map.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or(format!("limits.{key}: not a non-negative integer")),
        }
    };
    let defaults = Limits::default();
    let size = |key: &str, default: usize| -> Result<usize, String> {
        Ok(match recorded(key)? {
            Some(n) => usize::try_from(n).map_err(|_| format!("limits.{key}: too large"))?,
            None => default,
        })
    };
    Ok(Limits {
        max_calls: recorded("max_calls")?.unwrap_or(defaults.max_calls),
        max_steps: recorded("max_steps")?.unwrap_or(defaults.max_steps),
        timeout: recorded("timeout_ms")?
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis),
        max_list_len: size("max_list_len", defaults.max_list_len)?,
        max_string_bytes: size("max_string_bytes", defaults.max_string_bytes)?,
        max_value_nodes: size("max_value_nodes", defaults.max_value_nodes)?,
        max_string_total_bytes: size("max_string_total_bytes", defaults.max_string_total_bytes)?,
    })
}

/// Replays an agent session (`lt agent --log`): the recorded model replies
/// answer the requests, the recorded outcomes answer the calls.
fn replay_agent(opts: &ReplayOptions, events: Vec<crate::log::Event>) -> u8 {
    if opts.program.is_some() || opts.profile.is_some() {
        return fail(
            opts,
            EXIT_USAGE,
            "usage",
            "--program and --profile do not apply to an agent session's log: its programs are the model's, replayed as recorded",
        );
    }
    let ended = events
        .iter()
        .any(|e| matches!(e.body, EventBody::AgentEnded { .. }));
    let replayed = match crate::agent::replay::replay_agent(events) {
        Ok(r) => r,
        Err(e) => return fail(opts, EXIT_DIAGNOSTICS, "log", &format!("{}: {e}", opts.log)),
    };
    let o = &replayed.outcome;
    if let Some(d) = &replayed.divergence {
        let kind = if ended {
            "non_determinism"
        } else {
            "incomplete"
        };
        let msg = if ended {
            format!("non-determinism: {d}")
        } else {
            format!("the log ends before the agent session did (it was cut short): {d}")
        };
        return fail(opts, EXIT_DIAGNOSTICS, kind, &msg);
    }
    if opts.json {
        out!(
            "{}",
            json!({
                "ok": true,
                "agent": true,
                "status": o.status.as_str(),
                "answer": o.answer,
                "turns": o.turns,
                "requests": o.requests,
            })
        );
    } else {
        out!(
            "replay matches the log: {} model request{}, {} run{}, the same checks, calls and outcomes; the agent {}",
            o.requests,
            if o.requests == 1 { "" } else { "s" },
            o.turns,
            if o.turns == 1 { "" } else { "s" },
            match &o.answer {
                Some(a) => format!("answered: {}", crate::agent::feedback::clip(a, 200)),
                None => format!("ended {}: {}", o.status.as_str(), o.reason),
            }
        );
    }
    EXIT_OK
}
