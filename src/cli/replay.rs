//! `lt replay LOG [--program FILE] [--profile FILE]`: re-runs a session
//! from its event log without calling any tool, and checks that the
//! program issues exactly the recorded calls and reaches the recorded value.
//!
//! Exit codes: 0 the replay matches the log; 1 it does not (non-determinism,
//! a different value, a log that does not verify or ends early, a program
//! the checker rejects); 2 the log or a file cannot be read.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::control::profile::Profile;
use crate::control::session::replay::{replay_log, ReplaySetupError, Verdict};
use crate::log::{EventBody, EventStore, JsonlFile, Loaded};
use crate::source::SourceFile;
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
    let program = match &opts.program {
        Some(path) => match super::read_source(path) {
            Ok((name, source)) => Some(SourceFile::new(name, source)),
            Err(msg) => return fail(opts, EXIT_USAGE, "usage", &msg),
        },
        None => None,
    };
    let profile = match &opts.profile {
        Some(path) => match Profile::load(Path::new(path)) {
            Ok(p) => Some(p),
            Err(e) => return fail(opts, EXIT_USAGE, "usage", &e.to_string()),
        },
        None => None,
    };
    let verdict = match replay_log(&events, &opts.log, program, profile) {
        Ok(v) => v,
        Err(ReplaySetupError::Log(msg)) => return fail(opts, EXIT_DIAGNOSTICS, "log", &msg),
        Err(ReplaySetupError::Internal(msg)) => {
            return fail(
                opts,
                EXIT_DIAGNOSTICS,
                "internal",
                &format!("lowering failed: {msg}"),
            )
        }
        Err(ReplaySetupError::Rejected(file, analysis)) => {
            if opts.json {
                out!("{}", super::check::report_json(&file, &analysis, None));
            } else {
                super::diagnostics::print_diagnostics(&file, &analysis, false);
            }
            return EXIT_DIAGNOSTICS;
        }
    };
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
