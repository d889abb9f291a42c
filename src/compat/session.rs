//! A `lambda_tool` run as an lt session: the program runs under the
//! control plane, whatever answers its calls.
//!
//! ```text
//! ControlPlane (profile from --profile, else allow all; log from --log, else none)
//!   --json:                 every tool on the server venue, whose executor host
//!                           has no executor: Err("no executor for tool 'NAME'")
//!   --json --interactive:   every tool on the client venue: ClientChannel over
//!                           stdin/stdout with Wire::LambdaTool (the host answers)
//! ```
//!
//! The events are those of `lt run` (`session_started` with the program,
//! profile and limits; per call `proposed`, `decided`, `scheduled`, the
//! `client_*` events, the outcome; `session_ended`), so `lt log verify`
//! and `lt replay` work on a compat session's log as on any other.

use super::{errors, Mode, Options, Reply};
use crate::control::report::StartErrorKind;
use crate::control::session::{ClientPort, Executors, LogTarget, ProfileSource, Session};
use crate::control::Venue;
use crate::ir::Ir;
use crate::runtime::boundary::drop_deep;
use crate::runtime::host::{CallRequest, FailureKind, Host, Outcome, ToolFailure};
use crate::runtime::limits::Limits;
use crate::source::SourceFile;
use std::collections::BTreeMap;

/// The executor host of a compat session: it has no executors. In
/// `--json` mode every allowed call ends here, as λ-Tool's wrapper answers
/// a tool it has no executor for; in `--interactive` mode no call does
/// (every tool is a client-venue tool).
struct NoExecutor;

impl Host for NoExecutor {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        let message = format!("no executor for tool '{}'", request.tool);
        drop_deep(request.arg);
        Err(ToolFailure {
            stderr: None,
            kind: FailureKind::Unavailable,
            message,
        })
    }
}

/// The limits of a compat run: lt's defaults (or `--max-calls`,
/// `--max-steps`) without a wall-clock limit. λ-Tool has none, and the host
/// (which runs the tools and may take as long as they take) can end
/// `lambda_tool` whenever it likes; pure work stays bounded by fuel. A
/// profile's per-tool `timeout_ms` still applies.
pub(super) fn limits(opts: &Options) -> Limits {
    let defaults = Limits::default();
    Limits {
        timeout: None,
        max_calls: opts.max_calls.unwrap_or(defaults.max_calls),
        max_steps: opts.max_steps.unwrap_or(defaults.max_steps),
        ..defaults
    }
}

/// Runs the checked and lowered program `ir` of `file` under a session,
/// and gives the reply (the result object and the exit code).
pub(super) fn run(
    opts: &Options,
    file: &SourceFile,
    ir: &Ir,
    stdout: &crate::control::client::StdoutHandoff,
) -> Reply {
    let profile = match &opts.profile {
        Some(path) => ProfileSource::File(path.clone()),
        None => ProfileSource::Default,
    };
    let log = match &opts.log {
        Some(path) => {
            if crate::control::session::same_file(path, "/dev/stdout") {
                return Reply::usage(errors::plain(
                    &format!("--log {path} is this process's standard output, which carries the protocol's lines"),
                    "log",
                    Some("write the log to a file of its own, e.g. `--log session.jsonl`"),
                ));
            }
            if let Some(input) = overwritten_input(path, opts) {
                return Reply::usage(errors::plain(
                    &format!("--log {path} would overwrite {input}, an input of this run"),
                    "log",
                    Some("write the log to a file of its own, e.g. `--log session.jsonl`"),
                ));
            }
            LogTarget::File(path.clone())
        }
        None => LogTarget::None,
    };
    let limits = limits(opts);
    let venue = match opts.mode {
        Mode::Interactive => Venue::Client,
        Mode::Run | Mode::Typecheck => Venue::Server,
    };
    let venues: BTreeMap<String, Venue> = ir
        .tools
        .iter()
        .map(|t| (t.name.to_string(), venue))
        .collect();
    let client = if opts.mode == Mode::Interactive {
        ClientPort::StdioAlways {
            wire: crate::control::client::Wire::LambdaTool,
            stdout: stdout.clone(),
        }
    } else {
        ClientPort::None
    };
    let session = Session::new(file)
        .executors(Executors::Custom {
            host: Box::new(NoExecutor),
            venues,
        })
        .profile(profile)
        .limits(limits)
        .log(log)
        .client(client);
    // The log is closed (its buffer written) before the result is shown:
    // a host may read it as soon as it has the result line.
    let report = match session.run(ir) {
        Ok(r) => r,
        Err(f) if f.kind == StartErrorKind::Config => {
            return Reply::usage(errors::config(&crate::exec::ConfigError {
                path: f.file.clone().unwrap_or_default(),
                line: f.line,
                column: f.column,
                message: f.message.clone(),
                help: f.help.clone(),
            }))
        }
        Err(f) => return Reply::usage(errors::plain(&f.message, "log", f.help.as_deref())),
    };
    if let Some(msg) = &report.log_error {
        return Reply::run_failed(errors::plain(
            msg,
            "log",
            Some("the session's record is incomplete; check the disk and the --log path"),
        ));
    }
    match report.result {
        Ok(value) => Reply::value(value, ir),
        Err(e) => Reply::run_failed(errors::run_error(file, &e)),
    }
}

/// The input `--log` names (the program or the profile), if it does.
fn overwritten_input<'a>(log: &str, opts: &'a Options) -> Option<&'a str> {
    [opts.file.as_deref(), opts.profile.as_deref()]
        .into_iter()
        .flatten()
        .find(|i| crate::control::session::same_file(log, i))
}
