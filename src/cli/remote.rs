//! `lt run FILE --server URL [--executors local.toml] [--profile NAME]`:
//! the thick client. The program is checked here (a rejected program is
//! reported as `lt run` reports it, and never sent), sent to `lt serve` as
//! a session under the tenant's profile `NAME` (default `default`), and
//! followed to its end by [`crate::serve::client`]: the calls the server
//! routes to the client venue run with `local.toml`'s executors, and the
//! output is printed as a local `lt run` prints it, with its exit codes.
//!
//! ```text
//! read ─▶ check, lower (exit 1) ─▶ LT_API_KEY, URL, local.toml (exit 2)
//!   ─▶ POST /v1/sessions ─▶ 422: the server's diagnostics or refusal (1, 2)
//!   ─▶ follow: log events ─▶ --verbose lines (run.rs's `Verbose`)
//!   ─▶ output ─▶ the value (0), the run's failure (3)
//! connection, 401, 404, 5xx ─▶ `error: …` (exit 2; --json: stage "server")
//! SIGINT/SIGTERM/SIGHUP ─▶ the session cancelled on the server, 128 + signal
//! ```
//!
//! The API key comes from the environment ([`API_KEY_ENV`]), never from a
//! flag: flags are visible to every user in `ps`.

use super::run::{self, RunOptions, Verbose};
use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::control::report::{Stage, StartErrorKind, StartFailure};
use crate::control::session::{CallObserver, FinishedCall};
use crate::diag::{Code, Diagnostic, Label, Severity};
use crate::exec::{ExecutorHost, Registry, Venue};
use crate::ir::Ir;
use crate::runtime::eval::RunStats;
use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use crate::runtime::limits::{RunError, RunErrorKind};
use crate::serve::client::{Client, ClientError, Submitted, Watcher};
use crate::source::{SourceFile, Span};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

/// The environment variable holding the API key.
pub const API_KEY_ENV: &str = "LT_API_KEY";

/// The tenant's profile used without `--profile`.
pub const DEFAULT_PROFILE: &str = "default";

/// Runs `lt run FILE --server URL` and returns the exit code. `local_only`
/// names the flags given that only a local run takes (the limits: with a
/// server, the tenant's profile sets them).
pub fn run(opts: &RunOptions, server: &str, local_only: &[&str]) -> u8 {
    let usage = |message: String, help: Option<&str>| {
        let mut f = StartFailure::new(Stage::Input, StartErrorKind::Usage, message);
        f.help = help.map(str::to_string);
        run::fail_usage(opts, &f)
    };
    if let Some(flag) = local_only.first() {
        return usage(
            format!(
                "{flag} applies to a local run; with --server the server's profile sets the limits"
            ),
            Some("leave it out, or set the limit in the tenant's profile on the server"),
        );
    }
    let (name, text) = match super::read_source(&opts.file) {
        Ok(x) => x,
        Err(msg) => return usage(msg, None),
    };
    // Checked here first: a program with errors is reported as `lt run`
    // reports it, and is never sent (with `--tools`, the joined program is).
    let (file, analysis) =
        match super::tools_file::check_program(&opts.file, name, text, opts.tools.as_deref()) {
            Ok(x) => x,
            Err(f) => {
                f.print(opts.json, opts.color);
                return f.code();
            }
        };
    let ir = match run::lower_analysis(opts, &file, analysis) {
        Ok(ir) => ir,
        Err(code) => return code,
    };
    let key = match std::env::var(API_KEY_ENV) {
        Ok(k) if !k.is_empty() => k,
        _ => {
            let f = StartFailure::new(
                Stage::Server,
                StartErrorKind::Usage,
                format!("lt run --server needs an API key: set the environment variable {API_KEY_ENV}"),
            )
            .with_help("the key is read from the environment only (a flag would be visible to every user in `ps`)");
            return run::fail_usage(opts, &f);
        }
    };
    let client = match Client::new(server, &key) {
        Ok(c) => c,
        Err(e) => return client_failure(opts, &e),
    };
    let registry = match opts.executors.as_deref() {
        None => None,
        Some(path) => match Registry::load(std::path::Path::new(path)) {
            Ok(r) => Some(r),
            Err(e) => return run::fail_usage(opts, &StartFailure::config(&e)),
        },
    };
    // The client runs every tool local.toml gives an executor.
    let tools: Vec<String> = registry
        .as_ref()
        .map(|r| {
            r.names()
                .filter(|t| r.venue(t) != Venue::Client)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(path) = opts.log.as_deref() {
        if let Err(code) = run::refuse_replacing_log(opts, path) {
            return code;
        }
        if let Err(code) = create_log(opts, path) {
            return code;
        }
    }
    let runtime = match super::signals::io_runtime() {
        Ok(rt) => rt,
        Err(msg) => {
            return run::fail_usage(
                opts,
                &StartFailure::new(Stage::Runtime, StartErrorKind::Usage, msg),
            )
        }
    };
    let host = registry.map(|r| ExecutorHost::new(r, runtime.handle().clone()));
    let profile = opts
        .profile
        .clone()
        .unwrap_or_else(|| DEFAULT_PROFILE.to_string());
    let mut narrator = Narrator {
        verbose: Verbose {
            ir: &ir,
            limits: &opts.limits,
        },
        on: opts.verbose,
        n: 0,
        calls: HashMap::new(),
        started: None,
        ended: None,
    };
    let ended = runtime.block_on(session(
        &client,
        &file,
        &profile,
        &tools,
        host,
        opts.log.is_some(),
        &mut narrator,
    ));
    let code = match ended {
        Err(e) => client_failure(opts, &e),
        Ok(End::Refused(output)) => refused(opts, &file, output),
        Ok(End::Interrupted {
            signal,
            id,
            cancelled,
        }) => {
            let how = match cancelled {
                Ok(()) => format!("session {id} cancelled on the server"),
                Err(e) => format!("session {id} could not be cancelled on the server: {e}"),
            };
            err!("error: interrupted by {signal}; {how}");
            (128 + signal as i32) as u8
        }
        Ok(End::Output { output, log }) => {
            let elapsed = match (narrator.started, narrator.ended) {
                (Some(a), Some(b)) => b.duration_since(a).unwrap_or_default(),
                _ => Duration::ZERO,
            };
            let code = print_output(opts, &file, &ir, output, elapsed);
            match (opts.log.as_deref(), log) {
                (Some(path), Some(Ok(text))) => {
                    if let Err(e) = std::fs::write(path, text) {
                        err!("error: cannot write the session's log to {path}: {e}");
                        return EXIT_USAGE;
                    }
                    code
                }
                (Some(path), Some(Err(e))) => {
                    err!("error: the session's log could not be fetched for {path}: {e}");
                    EXIT_USAGE
                }
                _ => code,
            }
        }
    };
    runtime.shutdown_timeout(Duration::from_secs(2));
    code
}

/// How a session sent to the server ended.
enum End {
    /// Its output, and its log when asked for.
    Output {
        output: Json,
        log: Option<Result<String, ClientError>>,
    },
    /// The server refused the program (422): its output.
    Refused(Json),
    /// A signal stopped `lt`; the session was cancelled (or not).
    Interrupted {
        signal: nix::sys::signal::Signal,
        id: String,
        cancelled: Result<(), ClientError>,
    },
}

/// Submits the program and follows the session to its end.
async fn session(
    client: &Client,
    file: &SourceFile,
    profile: &str,
    tools: &[String],
    host: Option<ExecutorHost>,
    want_log: bool,
    narrator: &mut Narrator<'_>,
) -> Result<End, ClientError> {
    let id = match client.submit(&file.text, profile, tools).await? {
        Submitted::Started(id) => id,
        Submitted::Refused(output) => return Ok(End::Refused(output)),
    };
    let output = tokio::select! {
        r = client.follow(&id, host, narrator) => r?,
        signal = interrupted() => {
            let cancelled = match tokio::time::timeout(Duration::from_secs(5), client.cancel(&id)).await {
                Ok(r) => r,
                Err(_) => Err(ClientError::Unreachable { message: "the server did not answer within 5 s".into() }),
            };
            return Ok(End::Interrupted { signal, id, cancelled });
        }
    };
    let log = if want_log {
        Some(client.log(&id).await)
    } else {
        None
    };
    Ok(End::Output { output, log })
}

/// The first of SIGINT, SIGTERM and SIGHUP (never, when they cannot be
/// caught).
async fn interrupted() -> nix::sys::signal::Signal {
    use nix::sys::signal::Signal;
    use tokio::signal::unix::{signal, SignalKind};
    let streams = (|| {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    })();
    let Ok((mut int, mut term, mut hup)) = streams else {
        return std::future::pending().await;
    };
    tokio::select! {
        Some(()) = int.recv() => Signal::SIGINT,
        Some(()) = term.recv() => Signal::SIGTERM,
        Some(()) = hup.recv() => Signal::SIGHUP,
        else => std::future::pending().await,
    }
}

/// Creates (or truncates) `--log`'s file before anything is sent, as a
/// local run does; the server's log is written to it at the end.
fn create_log(opts: &RunOptions, path: &str) -> Result<(), u8> {
    let fail = |message: String, help: &str| {
        Err(run::fail_usage(
            opts,
            &StartFailure::new(Stage::Log, StartErrorKind::Usage, message).with_help(help),
        ))
    };
    if crate::frontend::is_stdout_file(path) {
        return fail(
            format!(
                "--log {path} is the file standard output goes to, where the result is printed"
            ),
            "write the log to a file of its own, e.g. `--log session.jsonl`",
        );
    }
    match std::fs::File::create(path) {
        Ok(_) => Ok(()),
        Err(e) => fail(
            format!("cannot create the event log {path}: {e}"),
            "--log names a file to write (its folder must exist)",
        ),
    }
}

/// Reports a client failure (exit 2): `error: …` with its help, or with
/// `--json` the failure object with stage `server`.
fn client_failure(opts: &RunOptions, e: &ClientError) -> u8 {
    let kind = match e {
        ClientError::Usage { .. } => StartErrorKind::Usage,
        _ => StartErrorKind::Server,
    };
    let mut f = StartFailure::new(Stage::Server, kind, e.to_string());
    f.help = e.help();
    run::fail_usage(opts, &f)
}

/// The shapes of `lt run --json`'s object.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    /// `{ok: true, value, …}`: exit 0.
    Value,
    /// The checker refused it (`stage: "check"`, diagnostics): exit 1.
    Rejected,
    /// The run stopped (`stage: "run"`), or a resumed session diverged
    /// (`stage: "resume"`): exit 3.
    Failed,
    /// It did not start (`error: {kind, message, …}`), or anything else:
    /// exit 2.
    Refused,
}

fn shape(output: &Json) -> Shape {
    if output["ok"] == Json::Bool(true) {
        return Shape::Value;
    }
    match output["stage"].as_str() {
        Some("check") => Shape::Rejected,
        Some("run") => Shape::Failed,
        Some("resume") if output["error"]["kind"] == "non_determinism" => Shape::Failed,
        _ if output["diagnostics"].is_array() => Shape::Rejected,
        _ => Shape::Refused,
    }
}

fn exit_code(s: &Shape) -> u8 {
    match s {
        Shape::Value => EXIT_OK,
        Shape::Rejected => EXIT_DIAGNOSTICS,
        Shape::Failed => EXIT_RUN_FAILED,
        Shape::Refused => EXIT_USAGE,
    }
}

/// The diagnostics of a program the server refused name it as the server
/// does (`program.lt`); here they name the file they came from.
fn rename_program(file: &SourceFile, output: &mut Json) {
    if let Some(ds) = output.get_mut("diagnostics").and_then(Json::as_array_mut) {
        for d in ds {
            if d["file"] == crate::serve::check::PROGRAM_NAME {
                d["file"] = Json::String(file.name.clone());
            }
        }
    }
}

/// A program the server refused before it ran (422), reported as a local
/// `lt run` reports a rejection (exit 1) or a session that cannot start
/// (exit 2).
fn refused(opts: &RunOptions, file: &SourceFile, mut output: Json) -> u8 {
    rename_program(file, &mut output);
    let s = shape(&output);
    if opts.json {
        out!("{output}");
        return exit_code(&s);
    }
    match s {
        Shape::Rejected => {
            print_diagnostics(opts, file, &output);
            EXIT_DIAGNOSTICS
        }
        Shape::Failed => print_failure(opts, file, &output),
        Shape::Value | Shape::Refused => print_refusal(opts, &output),
    }
}

/// The session's output, printed as `lt run` prints it; the exit code.
fn print_output(
    opts: &RunOptions,
    file: &SourceFile,
    ir: &Ir,
    output: Json,
    elapsed: Duration,
) -> u8 {
    let mut output = output;
    rename_program(file, &mut output);
    let s = shape(&output);
    if opts.json {
        out!("{output}");
    } else {
        match s {
            Shape::Value => {
                // The value in lt syntax, from its JSON and the program's type.
                let json = &output["value"];
                match crate::runtime::boundary::from_json(json, &ir.ty) {
                    Ok(v) => out!("{v}"),
                    Err(_) => out!("{json}"),
                }
            }
            Shape::Rejected => {
                print_diagnostics(opts, file, &output);
            }
            Shape::Failed => return print_failure(opts, file, &output),
            Shape::Refused => return print_refusal(opts, &output),
        }
    }
    if s == Shape::Value && opts.verbose {
        run::print_done(stats(&output), elapsed);
    }
    exit_code(&s)
}

fn stats(output: &Json) -> RunStats {
    RunStats {
        calls: output["calls"].as_u64().unwrap_or(0),
        steps: output["steps"].as_u64().unwrap_or(0),
    }
}

/// The byte offset of 1-based `line` and character `column` in `text`
/// (clamped to the text).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let rest = &text[start..];
    rest.char_indices()
        .nth(column.saturating_sub(1))
        .map_or(text.len(), |(i, _)| start + i)
}

fn span_of(file: &SourceFile, v: &Json) -> Span {
    let n = |k: &str| v[k].as_u64().unwrap_or(1) as usize;
    let start = offset_of(&file.text, n("line"), n("column"));
    let end = match (v["end_line"].as_u64(), v["end_column"].as_u64()) {
        (Some(l), Some(c)) => offset_of(&file.text, l as usize, c as usize),
        _ => start,
    };
    Span::new(start, end)
}

/// A diagnostic from its JSON form (`lt check --json`'s), its positions
/// taken in `file` (the text the server checked). `None`: a code this lt
/// does not know.
fn diagnostic_of(file: &SourceFile, v: &Json) -> Option<Diagnostic> {
    let s = |k: &str| v[k].as_str().map(str::to_string);
    let code = Code::parse(v["code"].as_str()?)?;
    Some(Diagnostic {
        code,
        severity: if v["severity"] == "warning" {
            Severity::Warning
        } else {
            Severity::Error
        },
        message: s("message").unwrap_or_default(),
        span: span_of(file, v),
        primary_label: s("label").unwrap_or_default(),
        labels: v["labels"]
            .as_array()
            .map(|ls| {
                ls.iter()
                    .map(|l| Label {
                        span: span_of(file, l),
                        message: l["message"].as_str().unwrap_or("").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        expected: s("expected"),
        found: s("found"),
        notes: v["notes"]
            .as_array()
            .map(|ns| {
                ns.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        help: s("help"),
    })
}

/// The diagnostics of a rejection, rendered as `lt run` renders its own.
fn print_diagnostics(opts: &RunOptions, file: &SourceFile, output: &Json) {
    let list = output["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let truncated = output["truncated"].as_u64().unwrap_or(0) as usize;
    let diags: Option<Vec<Diagnostic>> = list.iter().map(|d| diagnostic_of(file, d)).collect();
    match diags {
        Some(ds) if !ds.is_empty() => {
            super::diagnostics::print_diagnostic_list(file, &ds, truncated, opts.color)
        }
        _ => {
            // Codes this lt does not know: their text, one per line.
            for d in &list {
                err!(
                    "{}:{}:{}: {} {}",
                    file.name,
                    d["line"],
                    d["column"],
                    d["code"].as_str().unwrap_or("error"),
                    d["message"].as_str().unwrap_or("")
                );
            }
            err!("error: the server refused {}", file.name);
        }
    }
}

/// A run that stopped (exit 3), reported as `lt run` reports its own.
fn print_failure(opts: &RunOptions, file: &SourceFile, output: &Json) -> u8 {
    let e = &output["error"];
    let message = e["message"]
        .as_str()
        .unwrap_or("the run stopped")
        .to_string();
    if output["stage"] == "resume" {
        err!("error: the session diverged from its log when the server resumed it: {message}");
        return EXIT_RUN_FAILED;
    }
    let kinds = [
        RunErrorKind::CallLimit,
        RunErrorKind::StepLimit,
        RunErrorKind::Timeout,
        RunErrorKind::SizeLimit,
        RunErrorKind::Arithmetic,
        RunErrorKind::Internal,
        RunErrorKind::Cancelled,
    ];
    let kind = kinds
        .into_iter()
        .find(|k| e["kind"] == k.as_str())
        .unwrap_or(RunErrorKind::Internal);
    let at = offset_of(
        &file.text,
        e["line"].as_u64().unwrap_or(1) as usize,
        e["column"].as_u64().unwrap_or(1) as usize,
    );
    let mut error = RunError::new(kind, Span::new(at, at), message);
    error.help = e["help"].as_str().map(str::to_string);
    run::report_failure(opts, file, &error, stats(output))
}

/// A session that did not start (exit 2), reported as `lt run` reports
/// its own: `error: FILE:LINE:COL: message` and the help.
fn print_refusal(opts: &RunOptions, output: &Json) -> u8 {
    let e = &output["error"];
    let message = match e {
        Json::String(s) => s.clone(),
        _ => e["message"]
            .as_str()
            .map_or_else(|| output.to_string(), str::to_string),
    };
    let mut f = StartFailure::new(Stage::Server, StartErrorKind::Server, message);
    f.file = e["file"].as_str().map(str::to_string);
    f.line = e["line"].as_u64().map(|n| n as usize);
    f.column = e["column"].as_u64().map(|n| n as usize);
    f.help = e["help"].as_str().map(str::to_string);
    run::fail_usage(opts, &f)
}

/// `--verbose` from the session's log: a call line as each call ends (the
/// local run's [`Verbose`] observer prints it), and the session's times.
struct Narrator<'a> {
    verbose: Verbose<'a>,
    on: bool,
    /// Calls proposed so far (the local run's call number).
    n: u64,
    calls: HashMap<String, Pending>,
    started: Option<SystemTime>,
    ended: Option<SystemTime>,
}

/// A call proposed and not yet ended.
struct Pending {
    n: u64,
    tool: String,
    argument: String,
    /// When it was scheduled (or proposed).
    since: Option<SystemTime>,
}

fn failure_kind(name: &str) -> FailureKind {
    [
        FailureKind::Failed,
        FailureKind::Crashed,
        FailureKind::TimedOut,
        FailureKind::BadOutput,
        FailureKind::Unavailable,
        FailureKind::Denied,
        FailureKind::Unknown,
    ]
    .into_iter()
    .find(|k| k.as_str() == name)
    .unwrap_or(FailureKind::Failed)
}

impl Narrator<'_> {
    fn ended(&mut self, call_id: &str, outcome: Outcome, at: Option<SystemTime>) {
        let Some(p) = self.calls.remove(call_id) else {
            return;
        };
        if !self.on {
            return;
        }
        let took = match (p.since, at) {
            (Some(a), Some(b)) => b.duration_since(a).unwrap_or_default(),
            _ => Duration::ZERO,
        };
        let started = Instant::now()
            .checked_sub(took)
            .unwrap_or_else(Instant::now);
        self.verbose.call_finished(&FinishedCall {
            n: p.n,
            id: call_id,
            tool: &p.tool,
            argument: &p.argument,
            started,
            outcome: &outcome,
        });
    }
}

impl Watcher for Narrator<'_> {
    fn log(&mut self, e: &Json) {
        let at = e["ts"]
            .as_str()
            .and_then(|t| humantime::parse_rfc3339(t).ok());
        let call_id = e["call_id"].as_str().unwrap_or("").to_string();
        let text = |k: &str| e[k].as_str().unwrap_or("").to_string();
        match e["kind"].as_str().unwrap_or("") {
            "session_started" => self.started = at,
            "session_ended" => self.ended = at,
            "proposed" => {
                self.n += 1;
                self.calls.insert(
                    call_id,
                    Pending {
                        n: self.n,
                        tool: text("tool"),
                        argument: e["argument"].to_string(),
                        since: at,
                    },
                );
            }
            "scheduled" => {
                if let Some(p) = self.calls.get_mut(&call_id) {
                    p.since = at;
                }
            }
            "decided" if e["decision"] == "deny" => {
                let message = format!("denied: {}: {}", text("rule"), text("reason"));
                let outcome = Err(ToolFailure {
                    stderr: None,
                    kind: FailureKind::Denied,
                    message,
                });
                self.ended(&call_id, outcome, at);
            }
            "completed" => self.ended(&call_id, Ok(e["output"].clone()), at),
            "failed" => {
                let outcome = Err(ToolFailure {
                    stderr: None,
                    kind: failure_kind(e["failure"].as_str().unwrap_or("")),
                    message: text("message"),
                });
                self.ended(&call_id, outcome, at);
            }
            "timed_out" => {
                let outcome = Err(ToolFailure {
                    stderr: None,
                    kind: FailureKind::TimedOut,
                    message: text("message"),
                });
                self.ended(&call_id, outcome, at);
            }
            _ => {}
        }
    }

    fn notice(&mut self, message: &str) {
        if self.on {
            err!("[lt] {message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_characters_and_clamp() {
        let t = "ab\nçd\n";
        assert_eq!(offset_of(t, 1, 1), 0);
        assert_eq!(offset_of(t, 2, 2), 5);
        assert_eq!(offset_of(t, 2, 3), 6);
        assert_eq!(offset_of(t, 9, 1), t.len());
    }

    #[test]
    fn each_output_shape_has_lt_runs_exit_code() {
        let cases = [
            (serde_json::json!({"ok": true, "value": 1}), EXIT_OK),
            (
                serde_json::json!({"ok": false, "stage": "check", "diagnostics": []}),
                EXIT_DIAGNOSTICS,
            ),
            (
                serde_json::json!({"ok": false, "stage": "run", "error": {"kind": "timeout"}}),
                EXIT_RUN_FAILED,
            ),
            (
                serde_json::json!({"ok": false, "stage": "resume", "error": {"kind": "non_determinism"}}),
                EXIT_RUN_FAILED,
            ),
            (
                serde_json::json!({"ok": false, "stage": "executors", "error": {"kind": "usage"}}),
                EXIT_USAGE,
            ),
            (
                serde_json::json!({"ok": false, "error": "no such tenant"}),
                EXIT_USAGE,
            ),
        ];
        for (v, code) in cases {
            assert_eq!(exit_code(&shape(&v)), code, "{v}");
        }
    }
}
