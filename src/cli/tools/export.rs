//! `lt tools export --format openai|anthropic|mcp FILE`: the JSON Schema
//! tool definitions of the tools FILE declares, on stdout.
//!
//! FILE is a declarations file (or a program, whose declarations are read).
//! Exit codes: 0 every tool exported; 1 the declarations have errors (the
//! diagnostics, rendered as `lt check` renders them), no tool is declared,
//! or a tool cannot be exported (the others are still printed); 2 FILE
//! cannot be read. Warnings (a tool exported for OpenAI without strict mode)
//! and notes (an MCP output without a schema) go to stderr and leave the
//! exit code 0.

use super::super::{color_on, diagnostics::print_diagnostic_list, read_source, Color};
use super::super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::schema::export::{export, Problem, Severity};
use crate::schema::Dialect;
use crate::source::SourceFile;
use crate::types::check_declarations;

/// Runs `lt tools export`; returns the exit status.
pub fn run(format: Dialect, file: &str) -> u8 {
    let (name, text) = match read_source(file) {
        Ok(x) => x,
        Err(msg) => {
            err!("error: {msg}");
            return EXIT_USAGE;
        }
    };
    let file = SourceFile::new(name, text);
    let decls = check_declarations(&file.text);
    if !decls.is_ok() {
        print_diagnostic_list(
            &file,
            &decls.diagnostics,
            decls.truncated,
            color_on(Color::Auto),
        );
        return EXIT_DIAGNOSTICS;
    }
    if decls.tools.is_empty() {
        err!(
            "error: {} declares no tools, so there is nothing to export\n  = help: declare each tool with its input record, effects and output: `tool lookup: {{id: String}} -{{Read}}-> {{email: String}};`",
            file.name
        );
        return EXIT_DIAGNOSTICS;
    }
    let exported = export(&decls, format);
    for p in &exported.problems {
        print_problem(&file, p);
    }
    out!("{}", exported.definitions.to_pretty_string());
    if exported.has_errors() {
        let n = exported
            .problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count();
        err!(
            "error: {n} of {} tools not exported; the others are printed",
            decls.tools.len()
        );
        EXIT_DIAGNOSTICS
    } else {
        EXIT_OK
    }
}

/// `error: FILE:LINE:COL: message` (or `warning:`, `note:`), then `  = help: …`.
fn print_problem(file: &SourceFile, p: &Problem) {
    let level = match p.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    let at = file.line_col(p.span.start);
    let mut text = format!(
        "{level}: {}:{}:{}: {}",
        file.name, at.line, at.column, p.message
    );
    if let Some(h) = &p.help {
        text.push_str(&format!("\n  = help: {h}"));
    }
    err!("{text}");
}
