//! `lt run FILE --executors tools.toml`: check, lower, run, print the value.
//!
//! Stages and exit codes: the program is read (2 on failure), checked (1 and
//! the diagnostics when rejected), lowered, its executors loaded and every
//! tool it calls matched to one (2 when `tools.toml` is invalid or lacks a
//! tool), then run on a tokio runtime (3 when a limit stops the run or lt
//! fails internally; 0 with the value otherwise). Nothing runs before every
//! check passed.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::exec::{ExecutorHost, Registry};
use crate::ir::{lower::lower, Ir, NodeKind};
use crate::runtime::eval::{self, RunStats};
use crate::runtime::host::{CallRequest, Host, Outcome};
use crate::runtime::limits::{Limits, RunError};
use crate::source::SourceFile;
use crate::types::check_source;
use serde_json::json;
use std::path::Path;
use std::time::Instant;

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
}

/// Runs `lt run` and returns the exit code.
pub fn run(opts: &RunOptions) -> u8 {
    let (name, text) = match super::read_source(&opts.file) {
        Ok(x) => x,
        Err(msg) => return fail_usage(opts, "input", &msg),
    };
    let file = SourceFile::new(name, text);
    let analysis = check_source(&file.text);
    if !analysis.is_ok() {
        {
            if opts.json {
                let mut v = super::check::report_json(&file, &analysis, None);
                if let Some(o) = v.as_object_mut() {
                    o.insert("stage".into(), json!("check"));
                }
                out!("{v}");
            } else {
                super::check::print_diagnostics(&file, &analysis, opts.color);
            }
            return EXIT_DIAGNOSTICS;
        }
    }
    let Ok(checked) = analysis.into_checked() else {
        return EXIT_DIAGNOSTICS;
    };
    let ir = match lower(&checked) {
        Ok(ir) => ir,
        Err(e) => {
            let err = RunError::internal(e.span, format!("lowering failed: {}", e.message));
            return report_failure(opts, &file, &err, RunStats::default(), None);
        }
    };
    let called = called_tools(&ir);
    let registry = match &opts.executors {
        Some(path) => match Registry::load(Path::new(path)) {
            Ok(r) => Some(r),
            Err(e) => return fail_usage(opts, "executors", &e.to_string()),
        },
        None => None,
    };
    let missing: Vec<&str> = match &registry {
        Some(r) => r.missing(called.iter().copied()),
        None => called.clone(),
    };
    if !missing.is_empty() {
        let msg = missing_message(&missing, opts.executors.as_deref());
        return fail_usage(opts, "executors", &msg);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("lt-io")
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return fail_usage(
                opts,
                "runtime",
                &format!("cannot start the tokio runtime: {e}"),
            )
        }
    };
    let registry = match registry {
        Some(r) => r,
        None => match Registry::from_str("", Path::new("."), "<no executors>") {
            Ok(r) => r,
            Err(e) => return fail_usage(opts, "executors", &e.to_string()),
        },
    };
    let host = ExecutorHost::new(registry, runtime.handle().clone());
    let started = Instant::now();
    let (result, stats) = if opts.verbose {
        let mut verbose = Verbose { inner: host, n: 0 };
        eval::run(&ir, &mut verbose, &opts.limits)
    } else {
        let mut host = host;
        eval::run(&ir, &mut host, &opts.limits)
    };
    let elapsed = started.elapsed();
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(value) => {
            if opts.json {
                out!(
                    "{}",
                    json!({
                        "ok": true,
                        "value": value.to_json(),
                        "type": ir.ty.to_string(),
                        "effects": ir.effects.labels().collect::<Vec<_>>(),
                        "calls": stats.calls,
                        "steps": stats.steps,
                    })
                );
            } else {
                out!("{value}");
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
        Err(e) => report_failure(opts, &file, &e, stats, Some(&ir)),
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

fn missing_message(missing: &[&str], executors: Option<&str>) -> String {
    let list = missing.join(", ");
    match executors {
        Some(path) => format!(
            "{path}: no executor for {} the program calls: {list}\nhelp: add a table per tool, e.g.\n  [tools.{}]\n  command = [\"python3\", \"tools/{}.py\"]",
            if missing.len() == 1 { "a tool" } else { "tools" },
            missing[0],
            missing[0]
        ),
        None => format!(
            "the program calls {list} but no executors were given\nhelp: pass --executors tools.toml with a [tools.{}] table (see docs/executors.md)",
            missing[0]
        ),
    }
}

fn fail_usage(opts: &RunOptions, stage: &str, msg: &str) -> u8 {
    if opts.json {
        out!(
            "{}",
            json!({"ok": false, "stage": stage, "error": {"kind": "usage", "message": msg}})
        );
    }
    err!("error: {msg}");
    EXIT_USAGE
}

fn report_failure(
    opts: &RunOptions,
    file: &SourceFile,
    e: &RunError,
    stats: RunStats,
    _ir: Option<&Ir>,
) -> u8 {
    let lc = file.line_col(e.span.start);
    if opts.json {
        out!(
            "{}",
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
        );
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
        "error: the run of {} stopped ({}) after {} tool calls",
        file.name,
        e.kind.as_str(),
        stats.calls
    );
    EXIT_RUN_FAILED
}

/// Wraps a host and prints one line per call on stderr.
struct Verbose<H> {
    inner: H,
    n: u64,
}

impl<H: Host> Host for Verbose<H> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.n += 1;
        let (n, id, tool) = (self.n, request.id.to_string(), request.tool.to_string());
        let arg = excerpt(&request.arg.to_string(), 120);
        let started = Instant::now();
        let outcome = self.inner.call(request);
        let ms = started.elapsed().as_millis();
        match &outcome {
            Ok(json) => err!(
                "[lt] call {n} {id} {tool} {arg} → ok in {ms} ms: {}",
                excerpt(&json.to_string(), 120)
            ),
            Err(f) => err!(
                "[lt] call {n} {id} {tool} {arg} → {} in {ms} ms: {}",
                f.kind.as_str(),
                excerpt(&f.message, 200)
            ),
        }
        outcome
    }
}

fn excerpt(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max).collect();
        format!("{head}…")
    }
}
