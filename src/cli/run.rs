//! `lt run FILE --executors tools.toml`: check, lower, run, print the value.
//!
//! Stages and exit codes: the program is read (2 on failure), checked (1 and
//! the diagnostics when rejected), lowered, its executors loaded and every
//! tool it calls matched to one (2 when `tools.toml` is invalid or lacks a
//! tool), then run on a tokio runtime (multi-thread when it calls a tool; 3 when a limit stops the run or lt
//! fails internally; 0 with the value otherwise). Nothing runs before every
//! check passed.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::control::client::{write_final_output, FinalOutput};
use crate::control::{ClientChannel, ControlPlane};
use crate::exec::{ExecutorHost, Registry, Venue};
use crate::ir::{lower::lower, Ir, NodeKind};
use crate::runtime::eval::{self, RunStats};
use crate::runtime::host::{
    AnnotationEvent, ApprovalRequest, BatchEvent, CallRequest, Host, Outcome,
};
use crate::runtime::limits::{Limits, RunError};
use crate::source::SourceFile;
use crate::types::check_source;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The options of `lt run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The program file (`-`: stdin).
    pub file: String,
    /// The executors file.
    pub executors: Option<String>,
    /// Print `{ok, value, type, effects, …}` as JSON.
    pub json: bool,
    /// A progress line per tool call on stderr.
    pub verbose: bool,
    /// Colour diagnostics.
    pub color: bool,
    /// The run's limits.
    pub limits: Limits,
    /// A profile file (`[profile]` table); else the one in the executors file.
    pub profile: Option<String>,
    /// Where to write the session's event log (JSON Lines).
    pub log: Option<String>,
}

/// Runs `lt run` and returns the exit code.
pub fn run(opts: &RunOptions) -> u8 {
    let (name, text) = match super::read_source(&opts.file) {
        Ok(x) => x,
        Err(msg) => return fail_usage(opts, &Failure::new("input", "usage", msg)),
    };
    let file = SourceFile::new(name, text);
    let ir = match check_and_lower(opts, &file) {
        Ok(ir) => ir,
        Err(code) => return code,
    };
    let (registry, runtime) = match prepare_executors(opts, &file, &ir) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let (venues, idempotent) = registry.tool_traits();
    let client = match client_timeouts(opts, &file, &ir, &registry) {
        Ok(c) => c,
        Err(f) => return fail_usage(opts, &f),
    };
    if let (Some(_), Some(log)) = (&client, &opts.log) {
        if crate::control::session::same_file(log, "/dev/stdout") {
            return fail_usage(
                opts,
                &Failure {
                    help: Some("write the log to a file of its own, e.g. `--log session.jsonl`".into()),
                    ..Failure::new(
                        "log",
                        "usage",
                        format!("--log {log} is standard output, which carries the client's tool_call lines"),
                    )
                },
            );
        }
    }
    let host = ExecutorHost::new(registry, runtime.handle().clone());
    // Kept to end the session's MCP servers once the program has run.
    let executors = host.clone();
    let session = match super::session::start(opts, &file) {
        Ok(s) => s,
        Err(f) => return fail_usage(opts, &f),
    };
    let mut plane = ControlPlane::new(host, session.profile, &ir.tools, session.sink, session.id)
        .with_limits(opts.limits.clone())
        .with_tool_traits(venues, idempotent);
    if let Some(timeouts) = client {
        // Calls go out on stdout as JSON lines, reports come in on stdin;
        // the value is printed on stdout after the run, after every call.
        plane = plane.with_client(ClientChannel::stdio().with_timeouts(timeouts));
    }
    if let Err(msg) = plane.record(session.started) {
        return fail_usage(opts, &Failure::new("log", "log", msg));
    }
    let started = Instant::now();
    let (result, stats) = run_program(opts, &ir, &mut plane);
    let elapsed = started.elapsed();
    executors.shutdown();
    let _ = plane.record(super::session::ended(&file, &ir, &result, stats));
    let log_error = plane.log_error().map(str::to_string);
    // The log file is closed (its buffer written), and the client channel's
    // last tool_call line written or abandoned (a bounded wait), before the
    // value is shown: the value is the last line on stdout.
    drop(plane);
    finish(opts, &file, &ir, result, stats, elapsed, log_error, runtime)
}

/// When the program calls a client-venue tool: each such tool's
/// `timeout_ms` (for [`ClientChannel::with_timeouts`]), the client being
/// the process on the other end of stdin and stdout. `Ok(None)`: no client
/// channel is needed. `Err`: the program itself was read from stdin, which
/// the client's reports need.
#[allow(clippy::result_large_err)]
pub(super) fn client_timeouts(
    opts: &RunOptions,
    file: &SourceFile,
    ir: &Ir,
    registry: &Registry,
) -> Result<Option<BTreeMap<String, Duration>>, Failure> {
    let called = called_tools(ir);
    let Some(first) = called.iter().find(|t| registry.venue(t) == Venue::Client) else {
        return Ok(None);
    };
    if opts.file == "-" {
        return Err(Failure {
            file: Some(file.name.clone()),
            help: Some("pass the program as a file: stdin carries the client's tool_result lines".into()),
            ..Failure::new(
                "input",
                "usage",
                format!(
                    "the program was read from stdin, but it calls {first}, a client-venue tool whose outcome the client reports on stdin"
                ),
            )
        });
    }
    Ok(Some(
        called
            .iter()
            .filter_map(|t| registry.client_timeout(t).map(|d| (t.to_string(), d)))
            .collect(),
    ))
}

/// Checks and lowers the program in `file`, printing the diagnostics (as
/// `lt run` does) when it is rejected. `Err`: the exit code.
pub(super) fn check_and_lower(opts: &RunOptions, file: &SourceFile) -> Result<Ir, u8> {
    let analysis = check_source(&file.text);
    if !analysis.is_ok() {
        if opts.json {
            let mut v = super::check::report_json(file, &analysis, None);
            if let Some(o) = v.as_object_mut() {
                o.insert("stage".into(), json!("check"));
            }
            out!("{v}");
        } else {
            super::check::print_diagnostics(file, &analysis, opts.color);
        }
        return Err(EXIT_DIAGNOSTICS);
    }
    let Ok(checked) = analysis.into_checked() else {
        return Err(EXIT_DIAGNOSTICS);
    };
    match lower(&checked) {
        Ok(ir) => Ok(ir),
        Err(e) => {
            let err = RunError::internal(e.span, format!("lowering failed: {}", e.message));
            Err(report_failure(opts, file, &err, RunStats::default(), None))
        }
    }
}

/// Loads `opts.executors`, checks that every tool the program calls has an
/// executor and that its declaration states the effects tools.toml gives
/// it, and starts the tokio runtime the executors run on (with Ctrl-C and
/// SIGTERM forwarded to the tools' process groups). `Err`: the exit code,
/// the failure printed.
pub(super) fn prepare_executors(
    opts: &RunOptions,
    file: &SourceFile,
    ir: &Ir,
) -> Result<(Registry, tokio::runtime::Runtime), u8> {
    let called = called_tools(ir);
    let registry = match &opts.executors {
        Some(path) => match Registry::load(Path::new(path)) {
            Ok(r) => Some(r),
            Err(e) => return Err(fail_usage(opts, &config_failure(&e))),
        },
        None => None,
    };
    let missing: Vec<&str> = match &registry {
        Some(r) => r.missing(called.iter().copied()),
        None => called.clone(),
    };
    if !missing.is_empty() {
        return Err(fail_usage(
            opts,
            &missing_failure(file, ir, &missing, opts.executors.as_deref()),
        ));
    }
    if let Some(registry) = &registry {
        if let Some(f) = understated_effects(
            file,
            &ir.tools,
            &called,
            registry,
            opts.executors.as_deref(),
        ) {
            return Err(fail_usage(opts, &f));
        }
    }
    // A program that calls no tool needs no worker threads: starting and
    // joining them was most of a trivial `lt run` (docs/performance.md). Its
    // current-thread runtime only carries the SIGXFSZ guard for the log.
    let built = if called.is_empty() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lt-io")
            .enable_all()
            .build()
    };
    let runtime = match built {
        Ok(rt) => rt,
        Err(e) => {
            return Err(fail_usage(
                opts,
                &Failure::new(
                    "runtime",
                    "usage",
                    format!("cannot start the tokio runtime: {e}"),
                ),
            ))
        }
    };
    let registry = match registry {
        Some(r) => r,
        None => match Registry::from_str("", Path::new("."), "<no executors>") {
            Ok(r) => r,
            Err(e) => return Err(fail_usage(opts, &config_failure(&e))),
        },
    };
    // Tools run in their own process groups: a Ctrl-C or SIGTERM to lt
    // stops them too (and lt exits 130/143). Without tools the signals keep
    // their default action (nothing to stop; lt ends at once).
    if called.is_empty() {
        crate::exec::ignore_file_size_signal(runtime.handle());
    } else {
        crate::exec::install_signal_forwarding(runtime.handle());
    }
    Ok((registry, runtime))
}

/// Runs the program on `host`, with a line per call on stderr under
/// `--verbose`.
pub(super) fn run_program<H: Host>(
    opts: &RunOptions,
    ir: &Ir,
    host: &mut H,
) -> (Result<crate::runtime::value::Value, RunError>, RunStats) {
    if opts.verbose {
        let mut verbose = Verbose {
            inner: host,
            n: 0,
            ir,
            limits: &opts.limits,
        };
        eval::run(ir, &mut verbose, &opts.limits)
    } else {
        eval::run(ir, host, &opts.limits)
    }
}

/// Prints the run's value (or error) the way `lt run` does and returns the
/// exit code. `log_error`: the event log could not be written (the run is
/// then reported as failed). `runtime` is shut down after the output.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    opts: &RunOptions,
    file: &SourceFile,
    ir: &Ir,
    result: Result<crate::runtime::value::Value, RunError>,
    stats: RunStats,
    elapsed: std::time::Duration,
    log_error: Option<String>,
    runtime: tokio::runtime::Runtime,
) -> u8 {
    // The runtime stays up while the value is printed (its signal task
    // keeps SIGINT/SIGTERM working if stdout blocks); it is shut down when
    // this function returns.
    let _runtime = ShutdownOnDrop(Some(runtime));
    if let Some(msg) = log_error {
        let e = RunError::new(
            crate::runtime::limits::RunErrorKind::Internal,
            ir.node(ir.root).span,
            msg.to_string(),
        )
        .with_help("the session's record is incomplete; check the disk and the --log path");
        return report_failure(opts, file, &e, stats, Some(ir));
    }
    match result {
        Ok(value) => {
            if opts.json {
                print_final(
                    json!({
                        "ok": true,
                        "value": value.to_json(),
                        "type": ir.ty.to_string(),
                        "effects": ir.effects.labels().collect::<Vec<_>>(),
                        "calls": stats.calls,
                        "steps": stats.steps,
                    })
                    .to_string(),
                );
            } else {
                print_final(value.to_string());
            }
            if opts.verbose {
                err!(
                    "[lt] done: {} tool calls, {} steps, {} ms",
                    stats.calls,
                    stats.steps,
                    elapsed.as_millis()
                );
            }
            EXIT_OK
        }
        Err(e) => report_failure(opts, file, &e, stats, Some(ir)),
    }
}

/// A called tool whose declaration in the program omits an effect that
/// tools.toml says it performs: the policy would be decided on a lie.
pub(super) fn understated_effects(
    file: &SourceFile,
    tools: &[crate::types::ToolSig],
    called: &[&str],
    registry: &Registry,
    executors: Option<&str>,
) -> Option<Failure> {
    for name in called {
        let Some(real) = registry.declared_effects(name) else {
            continue;
        };
        let sig = tools.iter().find(|t| &*t.name == *name)?;
        let missing: Vec<&str> = real
            .iter()
            .map(String::as_str)
            .filter(|l| !sig.effects.labels().any(|d| d == *l))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let lc = file.line_col(sig.span.start);
        return Some(Failure {
            file: Some(file.name.clone()),
            line: Some(lc.line),
            column: Some(lc.column),
            help: Some(format!(
                "declare the tool with its real effects: `tool {name}: … -{{{}}}-> …;`",
                real.join(", ")
            )),
            ..Failure::new(
                "executors",
                "effects",
                format!(
                    "the program declares tool {name} with effects {}, but {} says it performs {}",
                    sig.effects,
                    executors.unwrap_or("tools.toml"),
                    missing.join(", ")
                ),
            )
        });
    }
    None
}

/// Prints `line`, the run's last output, on stdout. The client channel,
/// if there was one, is gone by now (its last tool_call line written or
/// abandoned), so the output comes after every call line; and a client
/// that stopped reading stdout in the middle of a call line cannot keep
/// `lt` waiting: the output is then given up. Output not written whole on
/// a stdout shared with a client is said on stderr, and `lt` exits 2.
fn print_final(line: String) {
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    match write_final_output(bytes) {
        FinalOutput::Written(written) => super::note_write(written),
        FinalOutput::Abandoned(why) => {
            super::WRITE_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
            err!("error: the run's output was not written: {why}");
        }
    }
}

/// Shuts the runtime down (waiting at most 2 s for its tasks) when dropped.
struct ShutdownOnDrop(Option<tokio::runtime::Runtime>);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
        }
    }
}

/// The tools with at least one `exec` site, in declaration order.
fn called_tools(ir: &Ir) -> Vec<&str> {
    let mut used = vec![false; ir.tools.len()];
    for n in &ir.nodes {
        if let NodeKind::Exec { tool, .. } = n.kind {
            if let Some(u) = used.get_mut(tool as usize) {
                *u = true;
            }
        }
    }
    ir.tools
        .iter()
        .zip(used)
        .filter(|(_, u)| *u)
        .map(|(t, _)| &*t.name)
        .collect()
}

/// Why a run could not start: the stage, a kind, the message, where (a
/// file and position, when known) and a hint.
pub(super) struct Failure {
    pub(super) stage: &'static str,
    pub(super) kind: &'static str,
    pub(super) message: String,
    pub(super) file: Option<String>,
    pub(super) line: Option<usize>,
    pub(super) column: Option<usize>,
    pub(super) help: Option<String>,
}

impl Failure {
    pub(super) fn new(
        stage: &'static str,
        kind: &'static str,
        message: impl Into<String>,
    ) -> Failure {
        Failure {
            stage,
            kind,
            message: message.into(),
            file: None,
            line: None,
            column: None,
            help: None,
        }
    }
}

pub(super) fn config_failure(e: &crate::exec::ConfigError) -> Failure {
    Failure {
        file: Some(e.path.clone()),
        line: e.line,
        column: e.column,
        help: e.help.clone(),
        ..Failure::new("executors", "config", e.message.clone())
    }
}

/// Tools the program calls without an executor, pointing at the first call
/// of the first such tool.
fn missing_failure(
    file: &SourceFile,
    ir: &Ir,
    missing: &[&str],
    executors: Option<&str>,
) -> Failure {
    let list: Vec<String> = missing.iter().map(|t| format!("`{t}`")).collect();
    let first_call = ir.nodes.iter().find_map(|n| match n.kind {
        NodeKind::Exec { tool, .. } => ir
            .tools
            .get(tool as usize)
            .filter(|t| *t.name == *missing[0])
            .map(|_| n.span),
        _ => None,
    });
    let (message, help) = match executors {
        Some(path) => (
            format!(
                "{path} has no executor for {} {}, which the program calls",
                if missing.len() == 1 { "tool" } else { "tools" },
                list.join(", ")
            ),
            format!(
                "add a table per tool to {path}, e.g. `[tools.{}]` with `command = [\"python3\", \"tools/{}.py\"]` (see docs/executors.md)",
                missing[0], missing[0]
            ),
        ),
        None => (
            format!("the program calls {} but no executors were given", list.join(", ")),
            format!(
                "pass --executors tools.toml with a `[tools.{}]` table (see docs/executors.md)",
                missing[0]
            ),
        ),
    };
    let at = first_call.map(|span| file.line_col(span.start));
    Failure {
        file: Some(file.name.clone()),
        line: at.map(|lc| lc.line),
        column: at.map(|lc| lc.column),
        help: Some(help),
        ..Failure::new("executors", "missing_executor", message)
    }
}

pub(super) fn fail_usage(opts: &RunOptions, f: &Failure) -> u8 {
    if opts.json {
        out!(
            "{}",
            json!({
                "ok": false,
                "stage": f.stage,
                "error": {
                    "kind": f.kind,
                    "message": f.message,
                    "file": f.file,
                    "line": f.line,
                    "column": f.column,
                    "help": f.help,
                },
            })
        );
        return EXIT_USAGE;
    }
    let mut text = String::from("error: ");
    if let Some(file) = &f.file {
        text.push_str(file);
        if let Some(line) = f.line {
            text.push_str(&format!(":{line}"));
            if let Some(col) = f.column {
                text.push_str(&format!(":{col}"));
            }
        }
        text.push_str(": ");
    }
    text.push_str(&f.message);
    if let Some(h) = &f.help {
        text.push_str(&format!("\n  = help: {h}"));
    }
    err!("{text}");
    EXIT_USAGE
}

pub(super) fn report_failure(
    opts: &RunOptions,
    file: &SourceFile,
    e: &RunError,
    stats: RunStats,
    _ir: Option<&Ir>,
) -> u8 {
    let lc = file.line_col(e.span.start);
    if opts.json {
        print_final(
            json!({
                "ok": false,
                "stage": "run",
                "error": {
                    "kind": e.kind.as_str(),
                    "message": e.message,
                    "line": lc.line,
                    "column": lc.column,
                    "help": e.help,
                },
                "calls": stats.calls,
                "steps": stats.steps,
            })
            .to_string(),
        );
        return EXIT_RUN_FAILED;
    }
    let line_text = file.line_text(lc.line);
    let shown: String = line_text.chars().take(160).collect();
    let mut msg = format!(
        "error[run]: {}\n  --> {}:{}:{}\n   | {}",
        e.message, file.name, lc.line, lc.column, shown
    );
    if let Some(h) = &e.help {
        msg.push_str(&format!("\n   = help: {h}"));
    }
    err!("{msg}");
    err!(
        "error: the run of {} stopped ({}) after {} tool call{}",
        file.name,
        e.kind.as_str(),
        stats.calls,
        if stats.calls == 1 { "" } else { "s" }
    );
    EXIT_RUN_FAILED
}

/// Wraps a host and prints one line per call on stderr, saying whether the
/// result passed the boundary check the program will apply.
struct Verbose<'a, H> {
    inner: H,
    n: u64,
    ir: &'a Ir,
    limits: &'a Limits,
}

/// Why the program will see `Err` for this JSON result, if it will.
fn invalid(ir: &Ir, limits: &Limits, tool: &str, json: &serde_json::Value) -> Option<String> {
    let sig = ir.tools.iter().find(|t| &*t.name == tool)?;
    if let Err(msg) =
        crate::runtime::boundary::check_size(json, limits.max_list_len, limits.max_value_nodes)
    {
        return Some(msg);
    }
    crate::runtime::boundary::from_json(json, &sig.output)
        .err()
        .map(|e| e.to_string())
}

impl<H: Host> Host for Verbose<'_, H> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.n += 1;
        let (n, id, tool) = (self.n, request.id.to_string(), request.tool.to_string());
        let arg = excerpt(&request.arg.to_string(), 120);
        let started = Instant::now();
        let outcome = self.inner.call(request);
        print_call(self.ir, self.limits, n, &id, &tool, &arg, started, &outcome);
        outcome
    }

    /// The inner host's batch (so the calls still run concurrently), with a
    /// line per call as each one finishes, timed from when it started.
    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let first = self.n + 1;
        self.n += requests.len() as u64;
        let calls: Vec<(String, String, String)> = requests
            .iter()
            .map(|r| {
                (
                    r.id.to_string(),
                    r.tool.to_string(),
                    excerpt(&r.arg.to_string(), 120),
                )
            })
            .collect();
        let batch_start = Instant::now();
        let mut started: Vec<Option<Instant>> = vec![None; calls.len()];
        let (ir, limits) = (self.ir, self.limits);
        let mut watch = |event: BatchEvent<'_>| {
            match &event {
                BatchEvent::Starting(i) => {
                    if let Some(s) = started.get_mut(*i) {
                        *s = Some(Instant::now());
                    }
                }
                BatchEvent::Done(i, outcome) => {
                    if let Some((id, tool, arg)) = calls.get(*i) {
                        let from = started.get(*i).copied().flatten().unwrap_or(batch_start);
                        let n = first + *i as u64;
                        print_call(ir, limits, n, id, tool, arg, from, outcome);
                    }
                }
            }
            events(event)
        };
        self.inner.call_batch(requests, limit, &mut watch)
    }

    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        self.inner.approve(request)
    }

    fn annotation(&mut self, event: AnnotationEvent<'_>) {
        self.inner.annotation(event)
    }
}

/// The `--verbose` line of one finished call.
#[allow(clippy::too_many_arguments)]
fn print_call(
    ir: &Ir,
    limits: &Limits,
    n: u64,
    id: &str,
    tool: &str,
    arg: &str,
    started: Instant,
    outcome: &Outcome,
) {
    let ms = started.elapsed().as_millis();
    match outcome {
        Ok(json) => match invalid(ir, limits, tool, json) {
            None => err!(
                "[lt] call {n} {id} {tool} {arg} → ok in {ms} ms: {}",
                excerpt(&json.to_string(), 120)
            ),
            Some(why) => err!(
                "[lt] call {n} {id} {tool} {arg} → invalid result in {ms} ms: {why}: {}",
                excerpt(&json.to_string(), 120)
            ),
        },
        Err(f) => err!(
            "[lt] call {n} {id} {tool} {arg} → {} in {ms} ms: {}",
            f.kind.as_str(),
            excerpt(&f.message, 200)
        ),
    }
}

/// At most `max` characters of `s` on one line: control characters (a
/// tool's ANSI escapes, `\r`, newlines) are shown escaped, so a progress
/// line stays one line.
fn excerpt(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
