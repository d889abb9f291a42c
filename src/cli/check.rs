//! `lt check FILE [--profile PROFILE_TOML] [--tools DECLS_LT]`: type and effects, or
//! diagnostics (human or JSON).
//!
//! With `--profile`, the profile is read before the program is checked (an
//! unreadable or invalid profile is exit 2, with its file, line and column,
//! as for `lt run --profile`), and every call site the profile would deny
//! is one more diagnostic (E0701–E0703, `control::static_check`).

use super::diagnostics::print_diagnostics;
use super::{Emit, EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::control::profile::Profile;
use crate::control::report::{BindingReport, CheckReport};
use crate::control::static_check;
use crate::exec::ConfigError;
use crate::source::SourceFile;
use crate::types::Analysis;
use serde_json::json;
use std::path::Path;

/// Runs `lt check` and returns the exit code. `profile` is the path of a
/// file with a `[profile]` table (`--profile`).
pub fn run(
    path: &str,
    as_json: bool,
    emit: Option<Emit>,
    color: bool,
    profile: Option<&str>,
    tools: Option<&str>,
) -> u8 {
    let (name, text) = match super::read_source(path) {
        Ok(x) => x,
        Err(msg) => {
            if as_json {
                out!(
                    "{}",
                    json!({"ok": false, "type": null, "effects": [], "diagnostics": [], "truncated": 0, "error": msg})
                );
            }
            err!("error: {msg}");
            return EXIT_USAGE;
        }
    };
    let profile = match profile.map(|p| Profile::load(Path::new(p))).transpose() {
        // `name = ""` is shown as `default`, as `lt run` does.
        Ok(Some(p)) if p.name.is_empty() => Some(Profile {
            name: "default".to_string(),
            ..p
        }),
        Ok(p) => p,
        Err(e) => return profile_failure(&e, as_json),
    };
    let (file, mut analysis) = match super::tools_file::check_program(path, name, text, tools) {
        Ok(x) => x,
        Err(f) => {
            f.print(as_json, color);
            return f.code();
        }
    };
    if let Some(p) = &profile {
        static_check::check_analysis(&mut analysis, p);
    }
    if as_json {
        let mut v = report_json(&file, &analysis, emit);
        if let (Some(p), Some(obj)) = (&profile, v.as_object_mut()) {
            obj.insert("profile".into(), json!(p.name));
        }
        out!("{v}");
    } else {
        print_human(&file, &analysis, emit, color, profile.as_ref());
    }
    if analysis.is_ok() {
        EXIT_OK
    } else {
        EXIT_DIAGNOSTICS
    }
}

/// The `--json` object: `{ok, type, effects, diagnostics, truncated}` (and
/// `bindings` with `--emit types`, `ir` with `--emit ir`).
pub fn report_json(file: &SourceFile, a: &Analysis, emit: Option<Emit>) -> serde_json::Value {
    serde_json::to_value(report(file, a, emit)).unwrap_or(serde_json::Value::Null)
}

/// The typed `--json` report ([`CheckReport`]).
pub fn report(file: &SourceFile, a: &Analysis, emit: Option<Emit>) -> CheckReport {
    let mut report = CheckReport::new(file, a);
    if report.ok && emit == Some(Emit::Ir) {
        report.ir = Some(ir_text(file, a));
    }
    if emit == Some(Emit::Types) {
        report.bindings = Some(
            a.let_types
                .iter()
                .map(|b| {
                    let lc = file.line_col(b.span.start);
                    BindingReport {
                        column: lc.column,
                        line: lc.line,
                        name: b.name.to_string(),
                        ty: b.ty.to_string(),
                    }
                })
                .collect(),
        );
    }
    report
}

fn print_human(
    file: &SourceFile,
    a: &Analysis,
    emit: Option<Emit>,
    color: bool,
    profile: Option<&Profile>,
) {
    if emit == Some(Emit::Types) {
        for b in &a.let_types {
            let lc = file.line_col(b.span.start);
            out!(
                "{}:{}:{}: let {}: {}",
                file.name,
                lc.line,
                lc.column,
                b.name,
                b.ty
            );
        }
    }
    if a.is_ok() {
        out!("type: {}", a.ty);
        out!("effects: {}", a.effects);
        if let Some(p) = profile {
            out!(
                "profile: {} allows every call site (budgets and argument checks apply when it runs)",
                p.name
            );
        }
        if emit == Some(Emit::Ir) {
            if let Some(text) = ir_text(file, a) {
                out!("{}", text.trim_end());
            }
        }
        return;
    }
    print_diagnostics(file, a, color);
}

/// The IR of a well-typed program, as `--emit ir` prints it (`None` when
/// lowering fails, which is an internal error reported on stderr).
fn ir_text(file: &SourceFile, a: &Analysis) -> Option<String> {
    let checked = crate::types::CheckedProgram {
        program: a.program.clone(),
        ty: a.ty.clone(),
        effects: a.effects.clone(),
        tools: a.tools.clone(),
        omitted_fields: a.omitted_fields.clone(),
    };
    match crate::ir::lower::lower(&checked) {
        Ok(ir) => Some(crate::ir::print::print(&ir, file)),
        Err(e) => {
            err!(
                "error: internal error while lowering: {} (this is a bug in lt)",
                e.message
            );
            None
        }
    }
}

/// Reports a profile that cannot be read or is invalid (exit 2): on stderr
/// `error: FILE:LINE:COL: message` and its help, as `lt run --profile`
/// does; with `--json`, the I/O error object with `error` (that line) and
/// `config` (`{file, line, column, message, help}`).
fn profile_failure(e: &ConfigError, as_json: bool) -> u8 {
    let mut place = e.path.clone();
    if let Some(line) = e.line {
        place.push_str(&format!(":{line}"));
        if let Some(column) = e.column {
            place.push_str(&format!(":{column}"));
        }
    }
    let text = format!("{place}: {}", e.message);
    if as_json {
        out!(
            "{}",
            json!({
                "ok": false,
                "type": null,
                "effects": [],
                "diagnostics": [],
                "truncated": 0,
                "error": text,
                "config": {
                    "file": e.path,
                    "line": e.line,
                    "column": e.column,
                    "message": e.message,
                    "help": e.help,
                },
            })
        );
        return EXIT_USAGE;
    }
    match &e.help {
        Some(h) => err!("error: {text}\n  = help: {h}"),
        None => err!("error: {text}"),
    }
    EXIT_USAGE
}
