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

use super::run::{check_and_lower, command_session, fail_usage, finish, RunOptions, Verbose};
use super::EXIT_DIAGNOSTICS;
use crate::control::client::StdoutHandoff;
use crate::control::report::{
    Diverged, DivergedError, RunOutput, Stage, StartErrorKind, StartFailure,
};
use crate::control::session::replay::Recorded;
use crate::control::session::ProfileSource;
use crate::log::{sha256_hex, EventBody, EventStore, JsonlFile, ReopenError, StoreError};

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
        tools: None,
        json: opts.json,
        verbose: opts.verbose,
        color: opts.color,
        limits: Default::default(),
        profile: None,
        log: Some(opts.log.clone()),
        force: false,
        otlp: None,
    };
    let log_failure = |message: String| StartFailure::new(Stage::Log, StartErrorKind::Log, message);
    let reopened = match JsonlFile::new(&opts.log).reopen("") {
        Ok(r) => r,
        Err(StoreError::Reopen(e)) => return fail_usage(&run_opts, &reopen_failure(opts, &e)),
        Err(e) => {
            return fail_usage(
                &run_opts,
                &StartFailure::new(
                    Stage::Log,
                    StartErrorKind::Log,
                    format!("cannot resume {}: {e}", opts.log),
                )
                .with_help("pass the log written by `lt run --log FILE`"),
            )
        }
    };
    if matches!(
        reopened.events.first().map(|e| &e.body),
        Some(EventBody::AgentStarted { .. })
    ) {
        return fail_usage(
            &run_opts,
            &log_failure(format!(
                "{} is an agent session's log; lt resume continues `lt run` sessions only",
                opts.log
            ))
            .with_help("run `lt replay` on it to see how far it got, and start `lt agent` again"),
        );
    }
    let Some(recorded) = Recorded::from_events(&reopened.events) else {
        return fail_usage(
            &run_opts,
            &log_failure(format!("{}: no session_started event", opts.log)),
        );
    };
    let profile = match recorded.profile() {
        Ok(p) => p,
        Err(e) => {
            return fail_usage(
                &run_opts,
                &log_failure(format!(
                    "{}: the recorded profile is invalid: {e}",
                    opts.log
                )),
            )
        }
    };
    run_opts.limits = match recorded.limits() {
        Ok(l) => l,
        Err(e) => {
            return fail_usage(
                &run_opts,
                &log_failure(format!(
                    "{}: the recorded limits are invalid: {e}",
                    opts.log
                )),
            )
        }
    };
    let file = recorded.program_file(format!("{} (recorded program)", opts.log));
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
                    &StartFailure::new(
                        Stage::Executors,
                        StartErrorKind::Usage,
                        format!("cannot read {path}: {e}"),
                    ),
                )
            }
        },
        None => Vec::new(),
    };
    let now_hash = sha256_hex(&registry_text);
    let registry_hash = &recorded.registry_hash;
    if now_hash != *registry_hash {
        err!(
            "[lt] note: {} differs from the tools.toml the session started with (hash {}…, now {}…)",
            opts.executors.as_deref().unwrap_or("the executors file"),
            &registry_hash[..registry_hash.len().min(12)],
            &now_hash[..12]
        );
    }
    let mut verbose = Verbose {
        ir: &ir,
        limits: &run_opts.limits,
    };
    let stdout = StdoutHandoff::new();
    // `run_opts.file` names the log, never `-`: stdin is free for a client.
    let (session, runtime, cancel) = match command_session(
        &run_opts,
        &file,
        &ir,
        ProfileSource::Given(profile),
        &stdout,
        &mut verbose,
    ) {
        Ok(s) => s,
        Err(f) => return fail_usage(&run_opts, &f),
    };
    let report = match session.resume(&ir, reopened) {
        Ok(r) => r,
        Err(f) => return fail_usage(&run_opts, &f),
    };
    if let Some(message) = &report.divergence {
        return diverged(opts, message);
    }
    if opts.verbose {
        err!(
            "[lt] resumed: {} calls replayed from the log, the rest ran live",
            report.replayed
        );
    }
    finish(&run_opts, &file, &ir, report, runtime, &cancel, &stdout)
}

/// Why the log cannot be continued, with the hint for each reason.
fn reopen_failure(opts: &ResumeOptions, e: &ReopenError) -> StartFailure {
    let (kind, help) = match e {
        ReopenError::Ended => (
            StartErrorKind::Ended,
            "a finished session can be replayed (`lt replay`), not resumed",
        ),
        ReopenError::Problem(_) => (
            StartErrorKind::Log,
            "`lt log verify` shows the problem; only an intact log can be continued",
        ),
        ReopenError::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock => (
            StartErrorKind::Log,
            "another lt is writing this session; resume it once that process has ended",
        ),
        _ => (
            StartErrorKind::Log,
            "pass the log written by `lt run --log FILE`",
        ),
    };
    let line = match e {
        ReopenError::Problem(p) => Some(p.line),
        _ => None,
    };
    StartFailure {
        help: Some(help.to_string()),
        file: line.map(|_| opts.log.clone()),
        line,
        ..StartFailure::new(Stage::Log, kind, format!("cannot resume {}: {e}", opts.log))
    }
}

/// The program and the log disagree: nothing was run live, nothing appended.
fn diverged(opts: &ResumeOptions, message: &str) -> u8 {
    let message = format!(
        "cannot resume {}: {message}; nothing was run live and nothing was appended to the log",
        opts.log
    );
    if opts.json {
        let out = RunOutput::Diverged(Diverged {
            error: DivergedError {
                kind: "non_determinism",
                message,
            },
            ok: false,
            stage: Stage::Resume,
        });
        out!("{}", out.to_json_string());
    } else {
        err!("error: {message}");
    }
    EXIT_DIAGNOSTICS
}
