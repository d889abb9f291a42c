//! `lt resume LOG --executors tools.toml`: continues a session that stopped
//! without `session_ended` (see `src/control/resume.rs` for the rules).
//!
//! The recorded program runs again under the recorded profile and limits;
//! the calls the log holds are answered from it, then the session goes live
//! and appends to the same file. Output and exit codes are those of
//! `lt run` (0 value, 1 the program no longer checks or diverges from the
//! log, 2 the log or tools.toml cannot be used, 3 the run stopped).
//!
//! The wall-clock limit (`timeout_ms`) starts again for the resumed run.

use super::run::{
    check_and_lower, client_timeouts, fail_usage, finish, prepare_executors, run_program, Failure,
    RunOptions,
};
use super::EXIT_DIAGNOSTICS;
use crate::control::profile::Profile;
use crate::control::replay::ReplayHost;
use crate::control::resume::ResumeHost;
use crate::control::ClientChannel;
use crate::control::ControlPlane;
use crate::exec::ExecutorHost;
use crate::log::{sha256_hex, EventBody, EventSink, LogWriter, ReopenError};
use crate::source::SourceFile;
use serde_json::json;
use std::time::Instant;

/// The options of `lt resume`.
#[derive(Clone, Debug)]
pub struct ResumeOptions {
    /// The event log of the session to continue.
    pub log: String,
    /// The executors file (tools are not recorded in the log).
    pub executors: Option<String>,
    /// Print `{ok, value, …}` as JSON, as `lt run --json`.
    pub json: bool,
    /// A line per tool call on stderr.
    pub verbose: bool,
    /// Colour diagnostics.
    pub color: bool,
}

/// Runs `lt resume` and returns the exit code.
pub fn run(opts: &ResumeOptions) -> u8 {
    // Until the recorded limits are known, failures print with run's options.
    let mut run_opts = RunOptions {
        file: opts.log.clone(),
        executors: opts.executors.clone(),
        json: opts.json,
        verbose: opts.verbose,
        color: opts.color,
        limits: Default::default(),
        profile: None,
        log: Some(opts.log.clone()),
    };
    let reopened = match LogWriter::reopen(&opts.log) {
        Ok(r) => r,
        Err(e) => {
            let (kind, help) = match &e {
                ReopenError::Ended => (
                    "ended",
                    "a finished session can be replayed (`lt replay`), not resumed",
                ),
                ReopenError::Problem(_) => (
                    "log",
                    "`lt log verify` shows the problem; only an intact log can be continued",
                ),
                ReopenError::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock => (
                    "log",
                    "another lt is writing this session; resume it once that process has ended",
                ),
                _ => ("log", "pass the log written by `lt run --log FILE`"),
            };
            let line = match &e {
                ReopenError::Problem(p) => Some(p.line),
                _ => None,
            };
            return fail_usage(
                &run_opts,
                &Failure {
                    help: Some(help.to_string()),
                    file: line.map(|_| opts.log.clone()),
                    line,
                    ..Failure::new("log", kind, format!("cannot resume {}: {e}", opts.log))
                },
            );
        }
    };
    let events = reopened.events;
    if matches!(
        events.first().map(|e| &e.body),
        Some(EventBody::AgentStarted { .. })
    ) {
        return fail_usage(
            &run_opts,
            &Failure {
                help: Some(
                    "run `lt replay` on it to see how far it got, and start `lt agent` again"
                        .into(),
                ),
                ..Failure::new(
                    "log",
                    "log",
                    format!(
                        "{} is an agent session's log; lt resume continues `lt run` sessions only",
                        opts.log
                    ),
                )
            },
        );
    }
    let Some(EventBody::SessionStarted {
        program,
        profile,
        limits,
        registry_hash,
        ..
    }) = events.first().map(|e| &e.body)
    else {
        return fail_usage(
            &run_opts,
            &Failure::new(
                "log",
                "log",
                format!("{}: no session_started event", opts.log),
            ),
        );
    };
    let profile = match Profile::from_json(profile) {
        Ok(p) => p,
        Err(e) => {
            return fail_usage(
                &run_opts,
                &Failure::new(
                    "log",
                    "log",
                    format!("{}: the recorded profile is invalid: {e}", opts.log),
                ),
            )
        }
    };
    run_opts.limits = match super::replay::recorded_limits(limits) {
        Ok(l) => l,
        Err(e) => {
            return fail_usage(
                &run_opts,
                &Failure::new(
                    "log",
                    "log",
                    format!("{}: the recorded limits are invalid: {e}", opts.log),
                ),
            )
        }
    };
    let file = SourceFile::new(format!("{} (recorded program)", opts.log), program.clone());
    let ir = match check_and_lower(&run_opts, &file) {
        Ok(ir) => ir,
        Err(code) => return code,
    };
    let registry_text = match &opts.executors {
        Some(path) => match crate::exec::read_config_bytes(std::path::Path::new(path)) {
            Ok(b) => b,
            Err(e) => {
                return fail_usage(
                    &run_opts,
                    &Failure::new("executors", "usage", format!("cannot read {path}: {e}")),
                )
            }
        },
        None => Vec::new(),
    };
    let now_hash = sha256_hex(&registry_text);
    if now_hash != *registry_hash {
        err!(
            "[lt] note: {} differs from the tools.toml the session started with (hash {}…, now {}…)",
            opts.executors.as_deref().unwrap_or("the executors file"),
            &registry_hash[..registry_hash.len().min(12)],
            &now_hash[..12]
        );
    }
    let (registry, runtime) = match prepare_executors(&run_opts, &file, &ir) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let (venues, idempotent) = registry.tool_traits();
    // `run_opts.file` names the log, never `-`: stdin is free for a client.
    let client = match client_timeouts(&run_opts, &file, &ir, &registry) {
        Ok(c) => c,
        Err(f) => return fail_usage(&run_opts, &f),
    };
    let host = ExecutorHost::new(registry, runtime.handle().clone());
    // Kept to end the session's MCP servers once the program has run.
    let executors = host.clone();
    let session = reopened.writer.session().to_string();
    let sink: Box<dyn EventSink> = Box::new(reopened.writer);
    let mut live = ControlPlane::new(host, profile.clone(), &ir.tools, sink, session)
        .with_limits(run_opts.limits.clone())
        .with_tool_traits(venues, idempotent);
    if let Some(timeouts) = client {
        live = live.with_client(ClientChannel::stdio().with_timeouts(timeouts));
    }
    let replay = ReplayHost::new(&events, profile, &ir.tools)
        .with_limits(run_opts.limits.clone())
        .resuming();
    let marker = EventBody::SessionResumed {
        lt_version: env!("CARGO_PKG_VERSION").to_string(),
        registry_hash: now_hash,
        dropped_bytes: reopened.dropped_bytes,
    };
    let mut host = ResumeHost::new(replay, live, marker);
    if reopened.dropped_bytes > 0 {
        host = host.after_torn_line();
    }
    let started = Instant::now();
    let (result, stats) = run_program(&run_opts, &ir, &mut host);
    let elapsed = started.elapsed();
    executors.shutdown();
    let divergence = host
        .divergence()
        .map(|d| format!("non-determinism {d}"))
        .or_else(|| {
            // The program ended while the log still had calls for it.
            let rest = host.unreplayed()?;
            let e = rest.iter().find(|e| e.body.call_id().is_some())?;
            Some(format!(
                "the program ended, but the log goes on with a {} event (#{}) for {}",
                e.kind(),
                e.seq,
                e.body.call_id().unwrap_or_default()
            ))
        });
    if let Some(message) = divergence {
        // The client channel (if any) is closed before anything is printed.
        drop(host);
        return diverged(opts, &message);
    }
    if let Err(msg) = host.go_live() {
        return fail_usage(&run_opts, &Failure::new("log", "log", msg));
    }
    let replayed = host.replayed();
    let Some(mut plane) = host.into_live() else {
        return fail_usage(
            &run_opts,
            &Failure::new("log", "log", "the session could not go live".to_string()),
        );
    };
    let _ = plane.record(super::session::ended(&file, &ir, &result, stats));
    let log_error = plane.log_error().map(str::to_string);
    drop(plane);
    if opts.verbose {
        err!("[lt] resumed: {replayed} calls replayed from the log, the rest ran live");
    }
    finish(
        &run_opts, &file, &ir, result, stats, elapsed, log_error, runtime,
    )
}

/// The program and the log disagree: nothing was run live, nothing appended.
fn diverged(opts: &ResumeOptions, message: &str) -> u8 {
    let message = format!(
        "cannot resume {}: {message}; nothing was run live and nothing was appended to the log",
        opts.log
    );
    if opts.json {
        out!(
            "{}",
            json!({"ok": false, "stage": "resume", "error": {"kind": "non_determinism", "message": message}})
        );
    } else {
        err!("error: {message}");
    }
    EXIT_DIAGNOSTICS
}
