//! The typed results of checking and running a program: what `lt check
//! --json` and `lt run --json` print, and what a server sends. Front ends
//! render these; none defines the JSON by printing code.
//!
//! Every struct declares its fields in the order they are printed: sorted
//! by name, as every JSON object lt prints (serde_json's maps are sorted).
//!
//! ```text
//! lt check --json ──▶ CheckReport {diagnostics, effects, ok, truncated, type, [bindings], [ir]}
//! lt run --json   ──▶ RunOutput::Value   {calls, effects, ok: true, steps, type, value}
//!                     RunOutput::Failed  {calls, error: RunErrorReport, ok: false, stage: "run", steps}
//!                     RunOutput::Refused {error: StartError, ok: false, stage}
//!                     RunOutput::Rejected(CheckReport with stage "check")
//!                     RunOutput::Diverged {error: {kind: "non_determinism", message}, ok: false, stage: "resume"}
//! ```

use crate::diag::json::DiagnosticReport;
use crate::runtime::limits::RunError;
use crate::source::SourceFile;
use crate::types::Analysis;
use serde::Serialize;
use serde_json::Value as Json;

/// `lt check --json`: `{ok, type, effects, diagnostics, truncated}`, with
/// `bindings` (`--emit types`), `ir` (`--emit ir`) and `stage` (`"check"`,
/// when a run was refused by the checker) where they apply.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Every `let` binding's type (`--emit types`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bindings: Option<Vec<BindingReport>>,
    /// Every diagnostic, in source order.
    pub diagnostics: Vec<DiagnosticReport>,
    /// The program's effects (empty when it has errors).
    pub effects: Vec<String>,
    /// The IR's text (`--emit ir`, well-typed programs only; `null` when
    /// it could not be lowered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ir: Option<Option<String>>,
    /// The program is well-typed.
    pub ok: bool,
    /// `"check"` in the output of a run the checker refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// How many diagnostics were found but not reported (past the cap).
    pub truncated: usize,
    /// The program's type (`null` when it has errors).
    #[serde(rename = "type")]
    pub ty: Option<String>,
}

/// One `let` binding's type (`lt check --emit types --json`).
#[derive(Clone, Debug, Serialize)]
pub struct BindingReport {
    /// 1-based character column of the name.
    pub column: usize,
    /// 1-based line.
    pub line: usize,
    /// The bound name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: String,
}

impl CheckReport {
    /// The report of `analysis` of `file` (no bindings, no IR, no stage).
    pub fn new(file: &SourceFile, analysis: &Analysis) -> CheckReport {
        let ok = analysis.is_ok();
        CheckReport {
            bindings: None,
            diagnostics: analysis
                .diagnostics
                .iter()
                .map(|d| DiagnosticReport::new(file, d))
                .collect(),
            effects: if ok {
                analysis.effects.labels().map(str::to_string).collect()
            } else {
                Vec::new()
            },
            ir: None,
            ok,
            stage: None,
            truncated: analysis.truncated,
            ty: ok.then(|| analysis.ty.to_string()),
        }
    }
}

/// The stage a run stopped in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Reading the program.
    Input,
    /// The checker refused the program.
    Check,
    /// Loading or matching the executors (tools.toml).
    Executors,
    /// Opening or writing the event log.
    Log,
    /// Starting the tokio runtime.
    Runtime,
    /// Running the program.
    Run,
    /// Replaying a log before a resumed session goes live.
    Resume,
    /// `lt agent`: the task.
    Task,
    /// `lt agent`: the model's settings.
    Model,
    /// `lt agent`: the declarations file.
    Tools,
    /// `lt agent`: the `[agent]` settings.
    Settings,
    /// `lt run --server`: reaching the server (its URL, the API key, the
    /// connection, an error it answered).
    Server,
}

/// Why a session could not start (or a resumed one go live): the kind a
/// caller acts on (a server maps it to a status), the message, where, and
/// a hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StartErrorKind {
    /// Bad input from the caller: an unreadable file, conflicting options.
    Usage,
    /// tools.toml or a profile is invalid.
    Config,
    /// The program calls a tool that has no executor.
    MissingExecutor,
    /// The program declares a tool with fewer effects than tools.toml gives it.
    Effects,
    /// The event log cannot be created, read or continued.
    Log,
    /// The session already ended (resume).
    Ended,
    /// `lt run --server`: the server could not be reached, refused the
    /// key, or answered an error.
    Server,
}

/// A session that could not start, with its stage: `{error: {column,
/// file, help, kind, line, message}, ok: false, stage}` as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartFailure {
    /// Where it stopped.
    pub stage: Stage,
    /// What kind of failure.
    pub kind: StartErrorKind,
    /// One sentence.
    pub message: String,
    /// The file at fault, when one is.
    pub file: Option<String>,
    /// 1-based line in `file`.
    pub line: Option<usize>,
    /// 1-based character column.
    pub column: Option<usize>,
    /// The fix.
    pub help: Option<String>,
}

impl StartFailure {
    /// A failure with no position and no hint.
    pub fn new(stage: Stage, kind: StartErrorKind, message: impl Into<String>) -> StartFailure {
        StartFailure {
            stage,
            kind,
            message: message.into(),
            file: None,
            line: None,
            column: None,
            help: None,
        }
    }

    /// With a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> StartFailure {
        self.help = Some(help.into());
        self
    }

    /// At `file` (line and column when known).
    pub fn at(
        mut self,
        file: impl Into<String>,
        line: Option<usize>,
        column: Option<usize>,
    ) -> Self {
        self.file = Some(file.into());
        self.line = line;
        self.column = column;
        self
    }

    /// The failure of an invalid tools.toml or profile.
    pub fn config(e: &crate::exec::ConfigError) -> StartFailure {
        StartFailure {
            file: Some(e.path.clone()),
            line: e.line,
            column: e.column,
            help: e.help.clone(),
            ..StartFailure::new(Stage::Executors, StartErrorKind::Config, e.message.clone())
        }
    }

    /// The JSON form.
    pub fn output(&self) -> RunOutput {
        RunOutput::Refused(Refused {
            error: StartErrorReport {
                column: self.column,
                file: self.file.clone(),
                help: self.help.clone(),
                kind: self.kind,
                line: self.line,
                message: self.message.clone(),
            },
            ok: false,
            stage: self.stage,
        })
    }
}

impl std::fmt::Display for StartFailure {
    /// `file:line:col: message` and `\n  = help: …`, as `lt run` prints it
    /// after `error: `.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(col) = self.column {
                    write!(f, ":{col}")?;
                }
            }
            write!(f, ": ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  = help: {h}")?;
        }
        Ok(())
    }
}

/// What `lt run --json` (and `lt resume --json`) prints: one of five shapes.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum RunOutput {
    /// The run ended with a value.
    Value(RunValue),
    /// The run stopped (a limit, a cancel, the log).
    Failed(RunFailed),
    /// The session did not start.
    Refused(Refused),
    /// The checker refused the program.
    Rejected(CheckReport),
    /// A resumed session's program and log disagree.
    Diverged(Diverged),
}

impl RunOutput {
    /// The JSON text (one line).
    pub fn to_json_string(&self) -> String {
        serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_else(|e| format!("{{\"ok\":false,\"error\":\"{e}\"}}"))
    }
}

/// `{calls, effects, ok: true, steps, type, value}`.
#[derive(Clone, Debug, Serialize)]
pub struct RunValue {
    /// Tool calls made.
    pub calls: u64,
    /// The program's effects.
    pub effects: Vec<String>,
    /// Always `true`.
    pub ok: bool,
    /// Evaluation steps used.
    pub steps: u64,
    /// The program's type.
    #[serde(rename = "type")]
    pub ty: String,
    /// The value (records → objects, lists → arrays, …; docs/cli.md).
    pub value: Json,
}

/// `{calls, error: {column, help, kind, line, message}, ok: false, stage: "run", steps}`.
#[derive(Clone, Debug, Serialize)]
pub struct RunFailed {
    /// Tool calls made before it stopped.
    pub calls: u64,
    /// Why.
    pub error: RunErrorReport,
    /// Always `false`.
    pub ok: bool,
    /// Always [`Stage::Run`].
    pub stage: Stage,
    /// Steps used.
    pub steps: u64,
}

/// A run error with its position: `{column, help, kind, line, message}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunErrorReport {
    /// 1-based character column of the expression being evaluated.
    pub column: usize,
    /// The fix.
    pub help: Option<String>,
    /// `call_limit`, `step_limit`, `timeout`, `size_limit`, `arithmetic`,
    /// `internal` or `cancelled`.
    pub kind: &'static str,
    /// 1-based line.
    pub line: usize,
    /// One sentence.
    pub message: String,
}

impl RunErrorReport {
    /// `e`, its span resolved in `file`.
    pub fn new(file: &SourceFile, e: &RunError) -> RunErrorReport {
        let lc = file.line_col(e.span.start);
        RunErrorReport {
            column: lc.column,
            help: e.help.clone(),
            kind: e.kind.as_str(),
            line: lc.line,
            message: e.message.clone(),
        }
    }
}

/// `{error: {column, file, help, kind, line, message}, ok: false, stage}`.
#[derive(Clone, Debug, Serialize)]
pub struct Refused {
    /// Why.
    pub error: StartErrorReport,
    /// Always `false`.
    pub ok: bool,
    /// Where it stopped.
    pub stage: Stage,
}

/// The `error` of [`Refused`]; absent positions are `null`.
#[derive(Clone, Debug, Serialize)]
pub struct StartErrorReport {
    /// 1-based character column.
    pub column: Option<usize>,
    /// The file at fault.
    pub file: Option<String>,
    /// The fix.
    pub help: Option<String>,
    /// What kind of failure.
    pub kind: StartErrorKind,
    /// 1-based line.
    pub line: Option<usize>,
    /// One sentence.
    pub message: String,
}

/// `{error: {kind: "non_determinism", message}, ok: false, stage: "resume"}`.
#[derive(Clone, Debug, Serialize)]
pub struct Diverged {
    /// Why.
    pub error: DivergedError,
    /// Always `false`.
    pub ok: bool,
    /// Always [`Stage::Resume`].
    pub stage: Stage,
}

/// The `error` of [`Diverged`].
#[derive(Clone, Debug, Serialize)]
pub struct DivergedError {
    /// Always `non_determinism`.
    pub kind: &'static str,
    /// Both sides of the difference.
    pub message: String,
}
