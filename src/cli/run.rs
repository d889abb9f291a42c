//! `lt run FILE --executors tools.toml`: check, lower, run, print the value.
//!
//! Stages and exit codes: the program is read (2 on failure), checked (1 and
//! the diagnostics when rejected), lowered, its executors loaded and every
//! tool it calls matched to one (2 when `tools.toml` is invalid or lacks a
//! tool), then run on a tokio runtime (multi-thread when it calls a tool; 3 when a limit stops the run or lt
//! fails internally; 0 with the value otherwise). Nothing runs before every
//! check passed.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::control::client::{FinalOutput, StdoutHandoff};
use crate::control::report::{RunOutput, Stage, StartErrorKind, StartFailure};
use crate::control::session::{
    called_tools, run_failed, CallObserver, ClientPort, Executors, FinishedCall, LogTarget,
    ProfileSource, Rejected, Session, SessionReport,
};
use crate::ir::Ir;
use crate::runtime::cancel::Cancel;
use crate::runtime::eval::RunStats;
use crate::runtime::host::Outcome;
use crate::runtime::limits::{Limits, RunError};
use crate::source::SourceFile;

/// The options of `lt run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The program file (`-`: stdin).
    pub file: String,
    /// The executors file.
    pub executors: Option<String>,
    /// A declarations file (`--tools`), joined before the program.
    pub tools: Option<String>,
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
    /// Replace a `--log` file that already holds something.
    pub force: bool,
    /// `--otlp-endpoint`: the session exported as a trace.
    pub otlp: Option<crate::otlp::Settings>,
}

/// Runs `lt run` and returns the exit code.
pub fn run(opts: &RunOptions) -> u8 {
    let (name, text) = match super::read_source(&opts.file) {
        Ok(x) => x,
        Err(msg) => {
            return fail_usage(
                opts,
                &StartFailure::new(Stage::Input, StartErrorKind::Usage, msg),
            )
        }
    };
    let (file, analysis) =
        match super::tools_file::check_program(&opts.file, name, text, opts.tools.as_deref()) {
            Ok(x) => x,
            Err(f) => {
                f.print(opts.json, opts.color);
                return f.code();
            }
        };
    let ir = match lower_analysis(opts, &file, analysis) {
        Ok(ir) => ir,
        Err(code) => return code,
    };
    if let Some(log) = opts
        .log
        .as_deref()
        .filter(|l| crate::frontend::is_stdout_file(l))
    {
        // Two writers at one offset each: the result would overwrite the log.
        return fail_usage(
            opts,
            &StartFailure::new(
                Stage::Log,
                StartErrorKind::Usage,
                format!(
                    "--log {log} is the file standard output goes to, where the result is printed"
                ),
            )
            .with_help("write the log to a file of its own, e.g. `--log session.jsonl`"),
        );
    }
    if let Some(log) = opts.log.as_deref() {
        if let Err(code) = refuse_replacing_log(opts, log) {
            return code;
        }
    }
    let exporter = match opts.otlp.as_ref().map(|o| crate::otlp::Exporter::new("lt run", o)) {
        None => None,
        Some(Ok(x)) => Some(x),
        Some(Err(message)) => {
            return fail_usage(
                opts,
                &StartFailure::new(Stage::Log, StartErrorKind::Usage, message).with_help(
                    "--otlp-endpoint takes the URL spans are posted to, e.g. http://127.0.0.1:4318/v1/traces",
                ),
            )
        }
    };
    // The trace is built from the events as the session records them, and
    // handed to the exporter's thread as the session ends.
    let mut recorder = exporter.as_ref().map(crate::otlp::Exporter::recorder);
    let mut verbose = Verbose {
        ir: &ir,
        limits: &opts.limits,
    };
    let stdout = StdoutHandoff::new();
    let profile = match &opts.profile {
        Some(path) => ProfileSource::File(path.clone()),
        None => ProfileSource::FromExecutors,
    };
    let (session, runtime, cancel) =
        match command_session(opts, &file, &ir, profile, &stdout, &mut verbose) {
            Ok(s) => s,
            Err(f) => return fail_usage(opts, &f),
        };
    let mut session = session.log(match &opts.log {
        Some(path) => LogTarget::File(path.clone()),
        None => LogTarget::None,
    });
    if let Some(r) = recorder.as_mut() {
        session = session.tap(r);
    }
    let session = session.inputs(
        [
            Some(&opts.file),
            opts.tools.as_ref(),
            opts.executors.as_ref(),
            opts.profile.as_ref(),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect(),
    );
    let result = session.run(&ir);
    drop(recorder);
    // The trace left with session_ended: wait for it to be sent; a failure
    // is a note on stderr, not the run's.
    if let Some(Err(e)) = exporter.as_ref().map(crate::otlp::Exporter::shutdown) {
        err!("lt: otlp: {e}");
    }
    match result {
        Ok(report) => finish(opts, &file, &ir, report, runtime, &cancel, &stdout),
        Err(f) => fail_usage(opts, &f),
    }
}

/// The session of a command that runs one program (`lt run`, `lt
/// resume`): the executors of `opts.executors`, its limits, the client
/// venue on stdio (sharing `stdout`), `--verbose` through `verbose`, a
/// runtime of the command's own when the program calls tools (returned, to
/// be shut down after the output) with the signals interrupting the
/// session, and the session's cancellation token (for [`finish`]).
pub(super) fn command_session<'a>(
    opts: &RunOptions,
    file: &'a SourceFile,
    ir: &Ir,
    profile: ProfileSource,
    stdout: &StdoutHandoff,
    verbose: &'a mut Verbose<'_>,
) -> Result<(Session<'a>, Option<tokio::runtime::Runtime>, Cancel), StartFailure> {
    let cancel = Cancel::new();
    let runtime = session_runtime(ir, &cancel)?;
    let mut session = Session::new(file)
        .executors(match &opts.executors {
            Some(path) => Executors::File(path.clone()),
            None => Executors::None,
        })
        .profile(profile)
        .limits(opts.limits.clone())
        // Calls go out on stdout as JSON lines, reports come in on stdin;
        // the value is printed on stdout after the run, after every call.
        .client(ClientPort::Stdio {
            program_on_stdin: opts.file == "-",
            stdout: stdout.clone(),
        })
        .cancel(cancel.clone());
    if let Some(rt) = &runtime {
        session = session.runtime(rt.handle().clone());
    }
    if opts.verbose {
        session = session.observer(verbose);
    }
    Ok((session, runtime, cancel))
}

/// The executors' runtime of a program that calls tools, with SIGINT,
/// SIGTERM and SIGHUP abandoning the session (its tools killed; lt exits
/// 130/143/129). A program that calls no tool gets the session's own
/// current-thread runtime, and the signals keep their default action
/// (nothing to stop; lt ends at once).
pub(super) fn session_runtime(
    ir: &Ir,
    cancel: &Cancel,
) -> Result<Option<tokio::runtime::Runtime>, StartFailure> {
    if called_tools(ir).is_empty() {
        return Ok(None);
    }
    let rt = super::signals::io_runtime()
        .map_err(|msg| StartFailure::new(Stage::Runtime, StartErrorKind::Usage, msg))?;
    super::signals::abandon_on_signals(rt.handle(), cancel.clone());
    Ok(Some(rt))
}

/// Checks and lowers the program in `file`, printing the diagnostics (as
/// `lt run` does) when it is rejected. `Err`: the exit code.
pub(super) fn check_and_lower(opts: &RunOptions, file: &SourceFile) -> Result<Ir, u8> {
    lower_analysis(opts, file, crate::types::check_source(&file.text))
}

/// Lowers a program checked by the caller (`analysis` of `file`), printing
/// the diagnostics as `lt run` does when it is rejected. `Err`: the exit code.
pub(super) fn lower_analysis(
    opts: &RunOptions,
    file: &SourceFile,
    analysis: crate::types::Analysis,
) -> Result<Ir, u8> {
    match crate::control::session::lower_checked(analysis) {
        Ok(ir) => Ok(ir),
        Err(Rejected::Diagnostics(analysis)) => {
            if opts.json {
                let mut report = super::check::report(file, &analysis, None);
                report.stage = Some(Stage::Check);
                out!("{}", RunOutput::Rejected(report).to_json_string());
            } else {
                super::diagnostics::print_diagnostics(file, &analysis, opts.color);
            }
            Err(EXIT_DIAGNOSTICS)
        }
        Err(Rejected::Lowering(err)) => Err(report_failure(opts, file, &err, RunStats::default())),
    }
}

/// Prints the run's value (or error) the way `lt run` does and returns the
/// exit code. A log that could not be written fails the run. `runtime` is
/// shut down after the output. A run a signal stopped (`cancel` interrupted
/// by the signal handler) prints nothing more and exits 128 + the signal's
/// number, as the handler does: the session has recorded
/// `session_interrupted` by now, and the handler's own exit may come after
/// this thread's.
pub(super) fn finish(
    opts: &RunOptions,
    file: &SourceFile,
    ir: &Ir,
    report: SessionReport,
    runtime: Option<tokio::runtime::Runtime>,
    cancel: &Cancel,
    stdout: &StdoutHandoff,
) -> u8 {
    if let Some(status) = cancel.exit_status() {
        drop(ShutdownOnDrop(runtime));
        return status;
    }
    // The runtime stays up while the value is printed (its signal task
    // keeps SIGINT/SIGTERM working if stdout blocks); it is shut down when
    // this function returns.
    let _runtime = ShutdownOnDrop(runtime);
    if let Some(e) = report.failure(ir) {
        return report_failure_to(opts, file, &e, report.stats, stdout);
    }
    let Ok(value) = &report.result else {
        return EXIT_RUN_FAILED;
    };
    if opts.json {
        print_final(stdout, report.output(file, ir).to_json_string());
    } else {
        print_final(stdout, value.to_string());
    }
    if opts.verbose {
        print_done(report.stats, report.elapsed);
    }
    EXIT_OK
}

/// `--verbose`'s last line, after the value: calls, steps, time.
pub(super) fn print_done(stats: RunStats, elapsed: std::time::Duration) {
    err!(
        "[lt] done: {} tool calls, {} steps, {} ms",
        stats.calls,
        stats.steps,
        elapsed.as_millis()
    );
}

/// Prints `line`, the run's last output, on stdout. The client channel,
/// if there was one, is gone by now (its last tool_call line written or
/// abandoned), so the output comes after every call line; and a client
/// that stopped reading stdout in the middle of a call line cannot keep
/// `lt` waiting: the output is then given up. Output not written whole on
/// a stdout shared with a client is said on stderr, and `lt` exits 2.
fn print_final(stdout: &StdoutHandoff, line: String) {
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    match stdout.write_final(bytes) {
        FinalOutput::Written(written) => crate::frontend::note_write(written),
        FinalOutput::Abandoned(why) => {
            crate::frontend::note_write_failure();
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

/// Prints why the run could not start (JSON or `error: …` on stderr) and
/// returns [`EXIT_USAGE`].
/// `Err(2)`, the refusal printed, when `--log` names an earlier session's
/// log and `--force` was not given ([`crate::frontend::refuse_replacing_log`]).
pub(super) fn refuse_replacing_log(opts: &RunOptions, log: &str) -> Result<(), u8> {
    crate::frontend::refuse_replacing_log(log, opts.force).map_err(|(message, help)| {
        fail_usage(
            opts,
            &StartFailure::new(Stage::Log, StartErrorKind::Usage, message).with_help(help),
        )
    })
}

pub(super) fn fail_usage(opts: &RunOptions, f: &StartFailure) -> u8 {
    if opts.json {
        out!("{}", f.output().to_json_string());
    } else {
        err!("error: {f}");
    }
    EXIT_USAGE
}

/// Prints why the run stopped and returns [`EXIT_RUN_FAILED`].
pub(super) fn report_failure(
    opts: &RunOptions,
    file: &SourceFile,
    e: &RunError,
    stats: RunStats,
) -> u8 {
    report_failure_to(opts, file, e, stats, &StdoutHandoff::new())
}

/// [`report_failure`], the JSON written after the client channel's lines.
fn report_failure_to(
    opts: &RunOptions,
    file: &SourceFile,
    e: &RunError,
    stats: RunStats,
    stdout: &StdoutHandoff,
) -> u8 {
    if opts.json {
        print_final(stdout, run_failed(file, e, stats).to_json_string());
        return EXIT_RUN_FAILED;
    }
    let (part, at) = file.locate(e.span.start);
    let lc = part.line_col(at);
    let line_text = part.line_text(lc.line);
    let shown: String = line_text.chars().take(160).collect();
    let mut msg = format!(
        "error[run]: {}\n  --> {}:{}:{}\n   | {}",
        e.message, part.name, lc.line, lc.column, shown
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

/// `--verbose`: one line per call on stderr, saying whether the result
/// passed the boundary check the program will apply.
pub(super) struct Verbose<'a> {
    pub(super) ir: &'a Ir,
    pub(super) limits: &'a Limits,
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

impl CallObserver for Verbose<'_> {
    fn call_finished(&mut self, call: &FinishedCall<'_>) {
        let arg = excerpt(call.argument, 120);
        print_call(self.ir, self.limits, call, &arg, call.outcome);
    }
}

/// The `--verbose` line of one finished call.
fn print_call(ir: &Ir, limits: &Limits, call: &FinishedCall<'_>, arg: &str, outcome: &Outcome) {
    let (n, id, tool) = (call.n, call.id, call.tool);
    let ms = call.started.elapsed().as_millis();
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
