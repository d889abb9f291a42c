//! `lambda_tool`: lt speaking the command-line protocol of λ-Tool, so that
//! hosts written for λ-Tool (the `lambda-tool-python` package, agents built
//! on it, any program that spawns `lambda_tool`) drive lt unchanged. The
//! `lambda_tool` binary and `lt compat …` both land here; the protocol is
//! `docs/protocol.md`.
//!
//! ```text
//! lambda_tool --json --typecheck  < prog   ──▶ {"ok": true, "type": "Int", "effects": []}
//! lambda_tool --json              < prog   ──▶ {"ok": true, "value": 3, "type": "Int", "effects": []}
//! lambda_tool --json --interactive FILE    ──▶ {"tool_call": {"tool": "q", "argument": "a"}}
//!                                          ◀── {"tool_result": {"ok": {"name": "Alice"}}}
//!                                          ──▶ {"ok": true, "value": "Alice", …}
//! any failure                              ──▶ {"ok": false, "errors": ["…", …]}
//! ```
//!
//! Every mode ends with exactly one result line on stdout, an object with
//! `ok`; nothing is written on stderr (the Python wrapper reads it only
//! after the process ended, so a full stderr pipe would block us). The
//! pipeline is lt's own: `types::check_source`, lowering, and a run under
//! the [`ControlPlane`](crate::control::ControlPlane) (`session.rs`), in
//! which `--interactive` makes every declared tool a client-venue tool
//! answered by the host over the λ-Tool wire
//! ([`Wire::LambdaTool`](crate::control::client::Wire)). So the profile,
//! the output validation against the declared type and the event log
//! apply to a λ-Tool host's calls as to any other. Errors are flattened to
//! one string each by `errors.rs`.
//!
//! Invariant: whatever the arguments, the input or the host does, the
//! process prints one result line and exits; it never panics and never
//! waits for input after the program ended. (A host that stops reading
//! stdout gets no result line: after 2 s without progress it is given up,
//! see `control/client/stdout.rs`, and the process exits all the same.)

mod errors;
mod session;

use crate::control::client::{FinalOutput, StdoutHandoff};
use crate::runtime::boundary::drop_deep;
use crate::runtime::deep_json::to_compact;
use crate::runtime::value::Value;
use crate::source::SourceFile;
use crate::types::check_source;
use std::process::ExitCode;

/// The exit codes: those of `lt run` (`docs/cli.md`).
const EXIT_OK: u8 = crate::frontend::EXIT_OK;
const EXIT_REJECTED: u8 = crate::frontend::EXIT_DIAGNOSTICS;
const EXIT_USAGE: u8 = crate::frontend::EXIT_USAGE;
const EXIT_RUN_FAILED: u8 = crate::frontend::EXIT_RUN_FAILED;

/// The usage line, also the hint of every usage error.
const USAGE: &str = "lambda_tool --json --typecheck [FILE] | lambda_tool --json [FILE] | \
                     lambda_tool --json --interactive FILE; lt options: --log FILE, --profile FILE, \
                     --max-calls N, --max-steps N (the program is read from stdin when FILE is absent or `-`)";

/// What `lambda_tool` is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `--typecheck`: type and effects, nothing runs.
    Typecheck,
    /// Neither flag: check and run; no tool has an executor.
    Run,
    /// `--interactive FILE`: check and run; the host answers every call.
    Interactive,
}

/// The parsed command line.
#[derive(Clone, Debug)]
struct Options {
    mode: Mode,
    /// The program file; `None`: stdin.
    file: Option<String>,
    /// `--log FILE`: the session's event log.
    log: Option<String>,
    /// `--profile FILE`: a file with a `[profile]` table.
    profile: Option<String>,
    /// `--max-calls N`: most tool calls in the run.
    max_calls: Option<u64>,
    /// `--max-steps N`: most evaluation steps (fuel).
    max_steps: Option<u64>,
}

/// What the command line asks for.
enum Parsed {
    Options(Options),
    Help,
    Version,
}

/// The result line and the exit code.
struct Reply {
    line: Vec<u8>,
    code: u8,
}

impl Reply {
    /// `{"ok": false, "errors": [...]}`.
    fn errors(errors: &[String], code: u8) -> Reply {
        let mut line = br#"{"ok":false,"errors":"#.to_vec();
        line.extend_from_slice(&to_compact(errors));
        line.extend_from_slice(b"}\n");
        Reply { line, code }
    }

    fn usage(error: String) -> Reply {
        Reply::errors(&[error], EXIT_USAGE)
    }

    fn run_failed(error: String) -> Reply {
        Reply::errors(&[error], EXIT_RUN_FAILED)
    }

    /// `{"ok": true, "type": …, "effects": […]}` and, for a run, `"value"`
    /// first (the order λ-Tool documents).
    fn success(
        value: Option<Value>,
        ty: &crate::types::Type,
        effects: &crate::types::EffectSet,
    ) -> Reply {
        let mut line = br#"{"ok":true,"#.to_vec();
        if let Some(v) = value {
            let json = v.to_json();
            drop(v);
            line.extend_from_slice(br#""value":"#);
            line.extend_from_slice(&to_compact(&json));
            drop_deep(json);
            line.push(b',');
        }
        line.extend_from_slice(br#""type":"#);
        line.extend_from_slice(&to_compact(&ty.to_string()));
        line.extend_from_slice(br#","effects":"#);
        line.extend_from_slice(&to_compact(&effects.labels().collect::<Vec<_>>()));
        line.extend_from_slice(b"}\n");
        Reply {
            line,
            code: EXIT_OK,
        }
    }

    fn value(value: Value, ir: &crate::ir::Ir) -> Reply {
        Reply::success(Some(value), &ir.ty, &ir.effects)
    }
}

/// The `lambda_tool` binary: `args` with the program name first. Prints
/// the result line and returns the exit code.
pub fn main_with_args(args: Vec<String>) -> ExitCode {
    let code = run(args.get(1..).unwrap_or_default());
    if crate::frontend::take_write_failed() {
        return ExitCode::from(EXIT_USAGE);
    }
    ExitCode::from(code)
}

/// Reports an argument that is not UTF-8 (the binary's check, before
/// anything is parsed) as the protocol's error object; the exit code.
pub fn bad_argument(shown: &str) -> ExitCode {
    print(
        &StdoutHandoff::new(),
        &Reply::usage(errors::plain(
            &format!(
            "the argument {shown} is not valid UTF-8; lambda_tool takes UTF-8 paths and options"
        ),
            "usage",
            Some(USAGE),
        )),
    );
    ExitCode::from(EXIT_USAGE)
}

/// Reports a panic of the worker thread (a bug in lt): the result line,
/// unless one was printed already, and exit code 101.
pub fn crashed() -> ExitCode {
    if !PRINTED.load(std::sync::atomic::Ordering::SeqCst) {
        // The worker's client channel (if any) is gone with its thread.
        print(
            &StdoutHandoff::new(),
            &Reply::errors(
                &[errors::plain(
                    "internal error in lt",
                    "internal",
                    Some("this is a bug in lt; please report it with the program"),
                )],
                101,
            ),
        );
    }
    ExitCode::from(101)
}

/// Set once the result line was written (or tried).
static PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `lt compat ARGS…` and `lambda_tool ARGS…` (`args` without the program
/// name): does what they ask, prints the result line, returns the exit code.
pub fn run(args: &[String]) -> u8 {
    let stdout = StdoutHandoff::new();
    let opts = match parse_args(args) {
        Ok(Parsed::Options(o)) => o,
        Ok(Parsed::Help) => {
            write_stdout(
                &stdout,
                format!("usage: {USAGE}\nThe protocol: docs/protocol.md\n").as_bytes(),
            );
            return EXIT_OK;
        }
        Ok(Parsed::Version) => {
            write_stdout(
                &stdout,
                format!(
                    "lambda_tool (lt {}, λ-Tool protocol compatible)\n",
                    env!("CARGO_PKG_VERSION")
                )
                .as_bytes(),
            );
            return EXIT_OK;
        }
        Err(msg) => {
            let reply = Reply::usage(errors::plain(&msg, "usage", Some(USAGE)));
            print(&stdout, &reply);
            return reply.code;
        }
    };
    let reply = answer(&opts, &stdout);
    print(&stdout, &reply);
    reply.code
}

/// Reads, checks and (unless `--typecheck`) runs the program.
fn answer(opts: &Options, stdout: &StdoutHandoff) -> Reply {
    let (name, text) = match crate::frontend::read_source(opts.file.as_deref().unwrap_or("-")) {
        Ok(x) => x,
        Err(msg) => return Reply::usage(errors::plain(&msg, "input", None)),
    };
    let file = SourceFile::new(name, text);
    let mut analysis = check_source(&file.text);
    if opts.mode == Mode::Typecheck {
        if let Some(path) = &opts.profile {
            // As `lt check --profile`: calls the profile would deny are errors.
            match crate::control::profile::Profile::load(std::path::Path::new(path)) {
                Ok(p) => crate::control::static_check::check_analysis(&mut analysis, &p),
                Err(e) => return Reply::usage(errors::config(&e)),
            }
        }
    }
    if !analysis.is_ok() {
        let list = errors::diagnostics(
            &file,
            &analysis.program,
            &analysis.diagnostics,
            analysis.truncated,
        );
        return Reply::errors(&list, EXIT_REJECTED);
    }
    if opts.mode == Mode::Typecheck {
        return Reply::success(None, &analysis.ty, &analysis.effects);
    }
    let Ok(checked) = analysis.into_checked() else {
        return Reply::errors(
            &[errors::plain(
                "the checker accepted the program but produced no checked program",
                "internal",
                Some("this is a bug in lt; please report it with the program"),
            )],
            EXIT_RUN_FAILED,
        );
    };
    let ir = match crate::ir::lower::lower(&checked) {
        Ok(ir) => ir,
        Err(e) => {
            let err = crate::runtime::limits::RunError::internal(
                e.span,
                format!("lowering failed: {}", e.message),
            );
            return Reply::run_failed(errors::run_error(&file, &err));
        }
    };
    session::run(opts, &file, &ir, stdout)
}

/// Parses the arguments (without the program name). Flags may come in any
/// order; `--json` is accepted and changes nothing (the output is always
/// JSON).
fn parse_args(args: &[String]) -> Result<Parsed, String> {
    let mut typecheck = false;
    let mut interactive = false;
    let mut file: Option<String> = None;
    let mut log: Option<String> = None;
    let mut profile: Option<String> = None;
    let mut max_calls: Option<String> = None;
    let mut max_steps: Option<String> = None;
    let mut only_files = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") && !only_files => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone().or_else(|| it.next().cloned()) {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(format!("option `{name}` needs a value")),
            }
        };
        match flag {
            _ if only_files || flag == "-" || !flag.starts_with('-') => {
                if let Some(first) = &file {
                    return Err(format!("more than one program file: `{first}` and `{arg}`"));
                }
                file = Some(arg.clone());
            }
            "--" => only_files = true,
            "--json" | "--typecheck" | "--interactive" if inline.is_some() => {
                return Err(format!("option `{flag}` takes no value"));
            }
            "--json" => {}
            "--typecheck" => typecheck = true,
            "--interactive" => interactive = true,
            "--log" => set_once(&mut log, "--log", value("--log")?)?,
            "--profile" => set_once(&mut profile, "--profile", value("--profile")?)?,
            "--max-calls" => set_once(&mut max_calls, "--max-calls", value("--max-calls")?)?,
            "--max-steps" => set_once(&mut max_steps, "--max-steps", value("--max-steps")?)?,
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            _ => return Err(format!("unknown option `{arg}`")),
        }
    }
    if file.as_deref() == Some("-") {
        file = None;
    }
    let mode = match (typecheck, interactive) {
        (true, true) => {
            return Err(
                "`--typecheck` and `--interactive` exclude each other: a check runs nothing".into(),
            )
        }
        (true, false) => Mode::Typecheck,
        (false, true) => Mode::Interactive,
        (false, false) => Mode::Run,
    };
    if mode == Mode::Interactive && file.is_none() {
        return Err(
            "`--interactive` needs the program as a FILE: stdin carries the host's tool_result lines"
                .into(),
        );
    }
    if mode == Mode::Typecheck && log.is_some() {
        return Err("`--log` records a run, and `--typecheck` runs nothing".into());
    }
    let count = |name: &str, v: Option<String>| -> Result<Option<u64>, String> {
        v.map(|text| {
            text.parse::<u64>().map_err(|_| {
                format!("option `{name}` needs a non-negative integer, found `{text}`")
            })
        })
        .transpose()
    };
    Ok(Parsed::Options(Options {
        mode,
        file,
        log,
        profile,
        max_calls: count("--max-calls", max_calls)?,
        max_steps: count("--max-steps", max_steps)?,
    }))
}

fn set_once(slot: &mut Option<String>, name: &str, value: String) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("option `{name}` is given twice"));
    }
    *slot = Some(value);
    Ok(())
}

fn print(stdout: &StdoutHandoff, reply: &Reply) {
    PRINTED.store(true, std::sync::atomic::Ordering::SeqCst);
    write_stdout(stdout, &reply.line);
}

/// Writes and flushes `bytes` on stdout in one piece; a failure is noted
/// for the exit code (a closed pipe is a host that stopped reading). After
/// an interactive run the channel has written or abandoned its last
/// `tool_call` line, and a host that stopped reading stdout in the middle
/// of it cannot keep the process waiting: the line is then given up. A
/// result line not written whole to a host (given up, or a closed pipe)
/// makes the exit code 2; nothing is said on stderr, which the protocol
/// keeps empty.
fn write_stdout(stdout: &StdoutHandoff, bytes: &[u8]) {
    match stdout.write_final(bytes.to_vec()) {
        FinalOutput::Written(written) => crate::frontend::note_write(written),
        FinalOutput::Abandoned(_) => crate::frontend::note_write_failure(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args(&args)? {
            Parsed::Options(o) => Ok(o),
            Parsed::Help => Err("help".into()),
            Parsed::Version => Err("version".into()),
        }
    }

    #[test]
    fn the_three_modes_and_the_lt_options() {
        let o = parse(&["--json", "--typecheck"]).expect("typecheck");
        assert_eq!((o.mode, o.file), (Mode::Typecheck, None));
        let o = parse(&["--json"]).expect("run");
        assert_eq!(o.mode, Mode::Run);
        let o = parse(&["--json", "--interactive", "/tmp/x.ltool"]).expect("interactive");
        assert_eq!(
            (o.mode, o.file.as_deref()),
            (Mode::Interactive, Some("/tmp/x.ltool"))
        );
        let o = parse(&[
            "--interactive",
            "p.lt",
            "--json",
            "--log=s.jsonl",
            "--profile",
            "p.toml",
        ])
        .expect("lt options");
        assert_eq!(o.log.as_deref(), Some("s.jsonl"));
        assert_eq!(o.profile.as_deref(), Some("p.toml"));
        assert_eq!(parse(&["--json", "-"]).expect("stdin").file, None);
        assert_eq!(
            parse(&["--", "--odd-name"])
                .expect("after --")
                .file
                .as_deref(),
            Some("--odd-name")
        );
    }

    #[test]
    fn usage_errors_name_the_problem() {
        let cases: [(&[&str], &str); 9] = [
            (&["--json", "--frobnicate"], "unknown option `--frobnicate`"),
            (
                &["--json", "--interactive"],
                "`--interactive` needs the program as a FILE",
            ),
            (
                &["--interactive", "-"],
                "`--interactive` needs the program as a FILE",
            ),
            (&["--typecheck", "--interactive", "f"], "exclude each other"),
            (&["a", "b"], "more than one program file"),
            (&["--log"], "option `--log` needs a value"),
            (&["--max-calls", "x"], "needs a non-negative integer"),
            (&["--log", "a", "--log", "b"], "given twice"),
            (&["--json=1"], "takes no value"),
        ];
        for (args, expected) in cases {
            let got = parse(args).expect_err("usage error");
            assert!(got.contains(expected), "{args:?}: {got}");
        }
        assert_eq!(parse(&["--help"]).expect_err("help"), "help");
        assert_eq!(parse(&["-V"]).expect_err("version"), "version");
    }
}
