//! The machine form of diagnostics, printed by `lt check --json`.
//!
//! Shape (a public interface, documented in `docs/cli.md`):
//! `{code, severity, message, label, file, line, column, end_line, end_column,
//!   labels: [{message, line, column, end_line, end_column}], expected?, found?,
//!   notes, help}` with 1-based lines and character columns; `end_*` point one
//! past the last character.

use super::Diagnostic;
use crate::source::SourceFile;
use serde_json::{json, Value};

/// Converts one diagnostic to its JSON object.
pub fn to_json(file: &SourceFile, d: &Diagnostic) -> Value {
    let start = file.line_col(d.span.start);
    let end = file.line_col(d.span.end);
    let labels: Vec<Value> = d
        .labels
        .iter()
        .map(|l| {
            let s = file.line_col(l.span.start);
            let e = file.line_col(l.span.end);
            json!({"message": l.message, "line": s.line, "column": s.column,
                   "end_line": e.line, "end_column": e.column})
        })
        .collect();
    let mut v = json!({
        "code": d.code.as_str(),
        "severity": d.severity,
        "message": d.message,
        "label": d.primary_label,
        "file": file.name,
        "line": start.line,
        "column": start.column,
        "end_line": end.line,
        "end_column": end.column,
        "labels": labels,
        "notes": d.notes,
        "help": d.help,
    });
    if let Some(obj) = v.as_object_mut() {
        if let Some(e) = &d.expected {
            obj.insert("expected".into(), json!(e));
        }
        if let Some(f) = &d.found {
            obj.insert("found".into(), json!(f));
        }
    }
    v
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
