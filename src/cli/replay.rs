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
    let recorded = |key: &str| limits.get(key).and_then(serde_json::Value::as_u64);
    let defaults = Limits::default();
    let limits = Limits {
        max_calls: recorded("max_calls").unwrap_or(defaults.max_calls),
        max_steps: recorded("max_steps").unwrap_or(defaults.max_steps),
        // Replay calls no tool: the wall clock is not part of the session.
        timeout: None,
        ..defaults
    };
    let mut host = ReplayHost::new(&events, profile, &ir.tools);
    let (result, stats) = eval::run(&ir, &mut host, &limits);
    if let Some(d) = host.divergence() {
        return fail(opts, EXIT_DIAGNOSTICS, "non_determinism", &d.to_string());
    }
    let ended = host.remaining().iter().find_map(|e| match &e.body {
        EventBody::SessionEnded { status, value, .. } => Some((status.clone(), value.clone())),
        _ => None,
    });
    let replayed = match &result {
        Ok(v) => ("ok".to_string(), Some(v.to_json())),
        Err(e) => ("error".to_string(), Some(json!(e.message))),
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
        Some((status, value)) if status == replayed.0 && (status != "ok" || value == replayed.1) => {
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
