//! `lt check FILE`: type and effects, or diagnostics (human or JSON).

use super::{Emit, EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::diag::{json::to_json, render::render};
use crate::source::SourceFile;
use crate::types::{check_source, Analysis};
use serde_json::json;

/// Runs `lt check` and returns the exit code.
pub fn run(path: &str, as_json: bool, emit: Option<Emit>, color: bool) -> u8 {
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
    let file = SourceFile::new(name, text);
    let analysis = check_source(&file.text);
    if as_json {
        out!("{}", report_json(&file, &analysis, emit));
    } else {
        print_human(&file, &analysis, emit, color);
    }
    if analysis.is_ok() {
        EXIT_OK
    } else {
        EXIT_DIAGNOSTICS
    }
}

/// The `--json` object: `{ok, type, effects, diagnostics, truncated}` (and
/// `bindings` with `--emit types`).
pub fn report_json(file: &SourceFile, a: &Analysis, emit: Option<Emit>) -> serde_json::Value {
    let ok = a.is_ok();
    let effects: Vec<&str> = if ok {
        a.effects.labels().collect()
    } else {
        Vec::new()
    };
    let mut v = json!({
        "ok": ok,
        "type": if ok { json!(a.ty.to_string()) } else { json!(null) },
        "effects": effects,
        "diagnostics": a.diagnostics.iter().map(|d| to_json(file, d)).collect::<Vec<_>>(),
        "truncated": a.truncated,
    });
    if ok && emit == Some(Emit::Ir) {
        if let Some(obj) = v.as_object_mut() {
            obj.insert("ir".into(), json!(ir_text(file, a)));
        }
    }
    if emit == Some(Emit::Types) {
        let bindings: Vec<serde_json::Value> = a
            .let_types
            .iter()
            .map(|b| {
                let lc = file.line_col(b.span.start);
                json!({"name": &*b.name, "line": lc.line, "column": lc.column, "type": b.ty.to_string()})
            })
            .collect();
        if let Some(obj) = v.as_object_mut() {
            obj.insert("bindings".into(), json!(bindings));
        }
    }
    v
}

fn print_human(file: &SourceFile, a: &Analysis, emit: Option<Emit>, color: bool) {
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

/// Prints the diagnostics of a rejected program on stderr, with a count.
pub fn print_diagnostics(file: &SourceFile, a: &Analysis, color: bool) {
    {
        use std::io::Write as _;
        super::note_write(write!(
            std::io::stderr().lock(),
            "{}",
            render(file, &a.diagnostics, color)
        ));
    }
    let n = a.diagnostics.len() + a.truncated;
    if a.truncated > 0 {
        err!("… and {} more errors not shown", a.truncated);
    }
    err!(
        "error: {} found in {}",
        if n == 1 {
            "1 error".to_string()
        } else {
            format!("{n} errors")
        },
        file.name
    );
}
