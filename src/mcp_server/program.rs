//! `check_program` and `run_program`: a program sent by an MCP client,
//! checked against the catalog and run as one session of the engine
//! ([`Session`]), as `lt run` runs one. Nothing here re-assembles the run
//! path: the front end checks, lowers, builds a `Session` and renders its
//! report.
//!
//! ```text
//! program ──check_with_tools (tools.lt joined before it)──▶ Analysis
//!         ──+ tool list (E0704, E0705) + profile's static check (E07xx)
//!   rejected ─▶ Reply { is_error, "rejected before anything ran (3 errors) …",
//!                       {ok: false, stage: "check", diagnostics: [{code, line, column, message, help}]} }
//!   checked ─▶ lower ─▶ Session (shared executors, the profile, a log per call)
//!           ─▶ Reply { value (or why it stopped) + the calls made and their outcomes }
//! ```
//!
//! Both run on a thread with the session's big stack (the caller's job:
//! [`crate::control::session::spawn`]).

use super::catalog::Catalog;
use crate::agent::feedback::{clip, show_value, Problem};
use crate::agent::tool_list::add_tool_list_diagnostics;
use crate::control::approver::Approver;
use crate::control::report::RunOutput;
use crate::control::session::{
    lower_checked, CallObserver, Executors, FinishedCall, LogTarget, ProfileSource, Rejected,
    Session,
};
use crate::control::static_check;
use crate::ir::Ir;
use crate::runtime::cancel::Cancel;
use crate::runtime::host::FailureKind;
use crate::source::SourceFile;
use crate::types::with_tools::check_with_tools;
use crate::types::{check_declarations, Analysis};
use serde_json::{json, Value as Json};

/// The name a client's program has in diagnostics and logs.
pub const PROGRAM_NAME: &str = "program.lt";

/// Longest program accepted, in bytes.
pub const MAX_PROGRAM_BYTES: usize = 1024 * 1024;

/// Most calls listed in a reply's text (all are in its structured content).
const MAX_LISTED_CALLS: usize = 30;

/// A tool result for the client: the text the model reads, the structured
/// content, and whether it is an error (`isError`).
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// Whether the program was rejected or stopped.
    pub is_error: bool,
    /// The short text rendering.
    pub text: String,
    /// The structured content (a JSON object).
    pub structured: Json,
}

impl Reply {
    /// An error that is not about the program's content (bad input, a
    /// session that could not start).
    pub fn failure(stage: &str, message: impl Into<String>) -> Reply {
        let message = message.into();
        Reply {
            is_error: true,
            text: message.clone(),
            structured: json!({"ok": false, "stage": stage, "error": message}),
        }
    }
}

/// A program's check: the joined file and its analysis (every diagnostic).
fn analyse(catalog: &Catalog, program: &str) -> Result<(SourceFile, Analysis), Reply> {
    if program.len() > MAX_PROGRAM_BYTES {
        return Err(Reply::failure(
            "input",
            format!(
                "the program is {} bytes; at most {MAX_PROGRAM_BYTES} are accepted",
                program.len()
            ),
        ));
    }
    let w = check_with_tools(
        &catalog.tools_name,
        &catalog.tools_text,
        PROGRAM_NAME,
        program,
    )
    .map_err(|_| Reply::failure("check", format!("{} has errors", catalog.tools_name)))?;
    let mut analysis = w.analysis;
    let declarations = check_declarations(&catalog.tools_text);
    add_tool_list_diagnostics(&mut analysis, &declarations, &catalog.tools_text);
    static_check::check_analysis(&mut analysis, &catalog.profile());
    Ok((w.file, analysis))
}

/// The problems of a rejected program, each located in the part of the
/// joined file it is in (a problem in the declarations file says so).
fn problems(file: &SourceFile, analysis: &Analysis) -> Vec<(Problem, String)> {
    analysis
        .diagnostics
        .iter()
        .map(|d| {
            let (part, moved) = crate::diag::in_part(file, d);
            (Problem::from_diagnostic(part, &moved), part.name.clone())
        })
        .collect()
}

/// The reply for a rejected program: every problem (the agent loop's
/// compact form: code, position, message, the line, the fix), and what to
/// call next: `tool` (`check_program` or `run_program`) again, the one
/// the model called.
fn rejected(file: &SourceFile, analysis: &Analysis, tool: &str) -> Reply {
    let all = problems(file, analysis);
    let total = all.len() + analysis.truncated;
    let program = file.locate(u32::MAX).0;
    let shown: Vec<Problem> = all
        .iter()
        .map(|(p, part)| match part.as_str() {
            PROGRAM_NAME => p.clone(),
            other => Problem {
                line: 0,
                message: format!(
                    "in {other} at line {}, col {}: {}",
                    p.line, p.column, p.message
                ),
                ..p.clone()
            },
        })
        .collect();
    let body = crate::agent::feedback::rejected(program, &shown, analysis.truncated);
    let details = body.split_once('\n').map_or("", |(_, rest)| rest);
    let next = if tool == "check_program" {
        "Fix every error and call check_program again with the whole corrected program (or run_program, which checks it and then runs it)."
    } else {
        "Fix every error and call run_program again with the whole corrected program."
    };
    let text = format!(
        "The program was rejected before anything ran ({total} error{}). {next}\n{details}",
        if total == 1 { "" } else { "s" }
    );
    let diagnostics: Vec<Json> = all
        .iter()
        .map(|(p, part)| {
            let mut j = p.to_json();
            j["file"] = json!(part);
            j
        })
        .collect();
    Reply {
        is_error: true,
        text: text.trim_end().to_string(),
        structured: json!({"ok": false, "stage": "check", "diagnostics": diagnostics, "truncated": analysis.truncated}),
    }
}

/// `check_program`: the check alone (nothing runs).
pub fn check_program(catalog: &Catalog, program: &str) -> Reply {
    let (file, analysis) = match analyse(catalog, program) {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !analysis.is_ok() {
        return rejected(&file, &analysis, "check_program");
    }
    let ty = analysis.ty.to_string();
    let effects: Vec<String> = analysis.effects.labels().map(str::to_string).collect();
    Reply {
        is_error: false,
        text: format!(
            "The program checks: type {ty}, effects {{{}}}. run_program runs it.",
            effects.join(", ")
        ),
        structured: json!({"ok": true, "type": ty, "effects": effects}),
    }
}

/// One call of a run, as the reply lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallMade {
    /// The tool.
    pub tool: String,
    /// Its argument (compact JSON text).
    pub argument: String,
    /// `ok`, or the failure's kind (`denied`, `failed`, `timed_out`, …).
    pub status: String,
    /// The failure's message.
    pub message: Option<String>,
}

/// The calls of a session, as they end (the engine's observer port),
/// judged against the declarations of `tools` under `limits`.
struct Calls<'a> {
    made: Vec<CallMade>,
    tools: &'a [crate::types::ToolSig],
    limits: &'a crate::runtime::limits::Limits,
}

impl CallObserver for Calls<'_> {
    fn call_finished(&mut self, call: &FinishedCall<'_>) {
        let (status, message) = match call.outcome {
            // Output that does not fit the declared type reaches the
            // program as `Err`, as the log's `result` says: not ok.
            Ok(_) => match self.tools.iter().find(|t| &*t.name == call.tool) {
                Some(sig) => match crate::control::result_json(sig, call.outcome, self.limits) {
                    Json::Object(r) if r.contains_key("Err") => (
                        FailureKind::BadOutput.as_str().to_string(),
                        r["Err"].as_str().map(str::to_string),
                    ),
                    _ => ("ok".to_string(), None),
                },
                None => ("ok".to_string(), None),
            },
            Err(f) => (f.kind.as_str().to_string(), Some(f.message.clone())),
        };
        self.made.push(CallMade {
            tool: call.tool.to_string(),
            argument: clip(call.argument, 2000),
            status,
            message,
        });
    }
}

/// `run_program`: the check, then one session under the catalog's
/// profile, its log in the catalog's log dir. `approver` answers the
/// approvals the profile leaves to a person (`approvals = "prompt"`);
/// `cancel` stops the run (its running tools killed).
pub fn run_program(
    catalog: &Catalog,
    program: &str,
    approver: Box<dyn Approver>,
    cancel: Cancel,
) -> Reply {
    let (file, analysis) = match analyse(catalog, program) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let ir = match lower_checked(analysis) {
        Ok(ir) => ir,
        Err(Rejected::Diagnostics(a)) => return rejected(&file, &a, "run_program"),
        Err(Rejected::Lowering(e)) => return Reply::failure("check", e.message),
    };
    run_checked(catalog, &file, &ir, approver, cancel)
}

fn run_checked(
    catalog: &Catalog,
    file: &SourceFile,
    ir: &Ir,
    approver: Box<dyn Approver>,
    cancel: Cancel,
) -> Reply {
    let id = crate::log::new_session_id();
    let log = catalog
        .log_dir
        .as_ref()
        .map(|d| d.join(format!("{id}.jsonl")).to_string_lossy().into_owned());
    let mut calls = Calls {
        made: Vec::new(),
        tools: &ir.tools,
        limits: &catalog.limits,
    };
    let session = Session::new(file)
        .id(id.clone())
        .executors(Executors::Shared {
            host: catalog.host.clone(),
            registry_bytes: catalog.registry_bytes.clone(),
        })
        .profile(ProfileSource::Given(catalog.profile()))
        .limits(catalog.limits.clone())
        .log(match &log {
            Some(p) => LogTarget::File(p.clone()),
            None => LogTarget::None,
        })
        .approver(approver)
        .cancel(cancel)
        .observer(&mut calls);
    let report = match session.run(ir) {
        Ok(r) => r,
        Err(f) => return Reply::failure("start", f.message),
    };
    let output = report.output(file, ir);
    let shown = report.result.as_ref().ok().map(show_value);
    drop(report);
    render(output, shown, &calls.made, &id, log.as_deref())
}

/// The reply of a run: its output (`lt run --json`'s), the value in lt's
/// syntax, and the calls made.
fn render(
    output: RunOutput,
    shown: Option<String>,
    calls: &[CallMade],
    id: &str,
    log: Option<&str>,
) -> Reply {
    let ok = matches!(output, RunOutput::Value(_));
    let mut structured = serde_json::to_value(&output).unwrap_or_else(|_| json!({"ok": false}));
    let made: Vec<Json> = calls
        .iter()
        .map(|c| json!({"tool": c.tool, "argument": c.argument, "status": c.status, "message": c.message}))
        .collect();
    if let Some(obj) = structured.as_object_mut() {
        obj.insert("tool_calls".into(), Json::Array(made));
        obj.insert("session".into(), json!(id));
        if let Some(l) = log {
            obj.insert("log".into(), json!(l));
        }
    }
    let n = calls.len();
    let plural = if n == 1 { "" } else { "s" };
    let mut text = match (&output, shown) {
        (RunOutput::Value(v), Some(shown)) => format!("Value ({}): {shown}\n{n} tool call{plural}:", v.ty),
        (RunOutput::Failed(f), _) => format!(
            "The run stopped ({}) after {n} tool call{plural}: {}\nThese calls already ran (their effects happened):",
            f.error.kind,
            clip(&f.error.message, 400)
        ),
        _ => format!("The run ended after {n} tool call{plural}:"),
    };
    for c in calls.iter().take(MAX_LISTED_CALLS) {
        text.push_str(&format!("\n- {} {}", c.tool, c.status));
        if let Some(m) = &c.message {
            text.push_str(&format!(": {}", clip(m, 200).replace('\n', " ")));
        }
    }
    if n > MAX_LISTED_CALLS {
        text.push_str(&format!("\n- … and {} more", n - MAX_LISTED_CALLS));
    }
    if n == 0 {
        text.pop();
        text.push('.');
    }
    Reply {
        is_error: !ok,
        text,
        structured,
    }
}
