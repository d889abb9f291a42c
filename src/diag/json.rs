//! The machine form of diagnostics, printed by `lt check --json`.
//!
//! Shape (a public interface, documented in `docs/cli.md`):
//! `{code, severity, message, label, file, line, column, end_line, end_column,
//!   labels: [{message, line, column, end_line, end_column}], expected?, found?,
//!   notes, help}` with 1-based lines and character columns; `end_*` point one
//! past the last character.

use super::{Diagnostic, Severity};
use crate::source::SourceFile;
use serde::Serialize;
use serde_json::Value;

/// One diagnostic as `lt check --json` prints it (and a server sends it).
/// Fields are declared in the order they are printed (sorted by name, as
/// every JSON object lt prints).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiagnosticReport {
    /// The stable code, e.g. `E0202`.
    pub code: &'static str,
    /// 1-based character column of the primary span's start.
    pub column: usize,
    /// One past the primary span's last character.
    pub end_column: usize,
    /// The line of `end_column`.
    pub end_line: usize,
    /// The expected type, where one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The file's name as given.
    pub file: String,
    /// The type found, where one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// The concrete fix.
    pub help: Option<String>,
    /// The primary label.
    pub label: String,
    /// Secondary labels.
    pub labels: Vec<LabelReport>,
    /// 1-based line of the primary span's start.
    pub line: usize,
    /// One sentence.
    pub message: String,
    /// Notes.
    pub notes: Vec<String>,
    /// `error` or `warning`.
    pub severity: Severity,
}

/// A secondary label of a [`DiagnosticReport`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabelReport {
    /// 1-based character column of the start.
    pub column: usize,
    /// One past the last character.
    pub end_column: usize,
    /// The line of `end_column`.
    pub end_line: usize,
    /// 1-based line of the start.
    pub line: usize,
    /// The label's text.
    pub message: String,
}

impl DiagnosticReport {
    /// The report of `d`, positions resolved in `file`.
    pub fn new(file: &SourceFile, d: &Diagnostic) -> DiagnosticReport {
        if file.prelude_len() > 0 {
            let (part, d) = super::in_part(file, d);
            return DiagnosticReport::new(part, &d);
        }
        let start = file.line_col(d.span.start);
        let end = file.line_col(d.span.end);
        DiagnosticReport {
            code: d.code.as_str(),
            column: start.column,
            end_column: end.column,
            end_line: end.line,
            expected: d.expected.clone(),
            file: file.name.clone(),
            found: d.found.clone(),
            help: d.help.clone(),
            label: d.primary_label.clone(),
            labels: d
                .labels
                .iter()
                .map(|l| {
                    let s = file.line_col(l.span.start);
                    let e = file.line_col(l.span.end);
                    LabelReport {
                        column: s.column,
                        end_column: e.column,
                        end_line: e.line,
                        line: s.line,
                        message: l.message.clone(),
                    }
                })
                .collect(),
            line: start.line,
            message: d.message.clone(),
            notes: d.notes.clone(),
            severity: d.severity,
        }
    }
}

/// Converts one diagnostic to its JSON object ([`DiagnosticReport`]).
pub fn to_json(file: &SourceFile, d: &Diagnostic) -> Value {
    serde_json::to_value(DiagnosticReport::new(file, d)).unwrap_or(Value::Null)
}

/// A compact one-line form for people and LLM prompts:
/// `file:line:col: error[E0202]: message (help: …)`.
pub fn to_line(file: &SourceFile, d: &Diagnostic) -> String {
    let s = file.line_col(d.span.start);
    let mut out = format!(
        "{}:{}:{}: error[{}]: {}",
        file.name, s.line, s.column, d.code, d.message
    );
    if let Some(h) = &d.help {
        out.push_str(" (help: ");
        out.push_str(h);
        out.push(')');
    }
    out
}
