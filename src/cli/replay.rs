//! `lt replay LOG [--program FILE] [--profile FILE]`: re-runs a session
//! from its event log without calling any tool, and checks that the
//! program issues exactly the recorded calls and reaches the recorded value.
//!
//! Exit codes: 0 the replay matches the log; 1 it does not (non-determinism,
//! a different value, a log that does not verify or ends early, a program
//! the checker rejects); 2 the log or a file cannot be read.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::control::profile::Profile;
use crate::control::session::recorded_limits;
use crate::control::session::replay::{replay, Recorded, Verdict};
use crate::ir::lower::lower;
use crate::log::{EventBody, EventStore, JsonlFile, Loaded};
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
    let Loaded { events, report } = match JsonlFile::new(&opts.log).load("") {
        Ok(loaded) => loaded,
        Err(e) => {
            return fail(
                opts,
                EXIT_USAGE,
                "usage",
                &format!("cannot read {}: {e}", opts.log),
            )
        }
    };
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
    let Some(recorded) = Recorded::from_events(&events) else {
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
        None => (format!("{} (recorded program)", opts.log), recorded.program),
    };
    let profile = match &opts.profile {
        Some(path) => match Profile::load(Path::new(path)) {
            Ok(p) => p,
            Err(e) => return fail(opts, EXIT_USAGE, "usage", &e.to_string()),
        },
        None => match Profile::from_json(&recorded.profile) {
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
            super::diagnostics::print_diagnostics(&file, &analysis, false);
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
    let limits = match recorded_limits(&recorded.limits) {
        Ok(l) => l,
        Err(e) => {
            return fail(
                opts,
                EXIT_DIAGNOSTICS,
                "log",
                &format!("the recorded limits are invalid: {e}"),
            )
        }
    };
    let verdict = replay(&events, &ir, profile, limits);
    match &verdict {
        Verdict::MatchesUntilStopped { calls, cancelled } => {
            let why = if *cancelled {
                "was cancelled"
            } else {
                "timed out"
            };
            if opts.json {
                out!("{}", verdict.to_json());
            } else {
                out!(
                    "replay matches the log up to where the run {why}: {calls} calls, the same decisions and outcomes"
                );
            }
            EXIT_OK
        }
        Verdict::Matches { calls, shown, .. } => {
            if opts.json {
                out!("{}", verdict.to_json());
            } else {
                out!(
                    "replay matches the log: {calls} calls, the same decisions and outcomes, value {shown}"
                );
            }
            EXIT_OK
        }
        Verdict::Differs {
            difference,
            message,
        } => fail(opts, EXIT_DIAGNOSTICS, difference.as_str(), message),
    }
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
    let (replayed, json) = match crate::agent::replay::judge(events) {
        Ok(x) => x,
        Err(("log", e)) => {
            return fail(opts, EXIT_DIAGNOSTICS, "log", &format!("{}: {e}", opts.log))
        }
        Err((kind, msg)) => return fail(opts, EXIT_DIAGNOSTICS, kind, &msg),
    };
    let o = &replayed.outcome;
    if opts.json {
        out!("{}", json);
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
