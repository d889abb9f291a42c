//! `--tools DECLS.lt` of `lt check` and `lt run`: a program checked with
//! the declarations file `lt tools import` writes ([`crate::types::with_tools`]),
//! and the help of an unknown tool naming the declarations file it could
//! come from.
//!
//! Exit codes: 2 when DECLS.lt cannot be read; 1 when it has errors of its
//! own (shown in DECLS.lt) or the program is rejected.

use super::diagnostics::print_diagnostic_list;
use super::{read_source, EXIT_DIAGNOSTICS, EXIT_USAGE};
use crate::control::report::CheckReport;
use crate::diag::json::DiagnosticReport;
use crate::diag::{did_you_mean, Code};
use crate::source::SourceFile;
use crate::types::with_tools::check_with_tools;
use crate::types::{check_declarations, check_source, Analysis};
use std::path::{Path, PathBuf};

/// Why a program with `--tools` was not checked.
pub enum ToolsFailure {
    /// DECLS.lt cannot be read: the message (exit 2).
    Unreadable(String),
    /// DECLS.lt has errors: its file and the report of its diagnostics (exit 1).
    Invalid(SourceFile, Box<CheckReport>, Vec<crate::diag::Diagnostic>),
}

impl ToolsFailure {
    /// The exit code.
    pub fn code(&self) -> u8 {
        match self {
            ToolsFailure::Unreadable(_) => EXIT_USAGE,
            ToolsFailure::Invalid(..) => EXIT_DIAGNOSTICS,
        }
    }

    /// Prints the failure as `lt check` does (JSON on stdout, or on stderr).
    pub fn print(&self, json: bool, color: bool) {
        match self {
            ToolsFailure::Unreadable(msg) => {
                if json {
                    out!(
                        "{}",
                        serde_json::json!({"ok": false, "type": null, "effects": [], "diagnostics": [], "truncated": 0, "error": msg})
                    );
                }
                err!("error: {msg}");
            }
            ToolsFailure::Invalid(file, report, diags) => {
                if json {
                    out!("{}", serde_json::to_string(report).unwrap_or_default());
                } else {
                    print_diagnostic_list(file, diags, report.truncated, color);
                }
            }
        }
    }
}

/// Checks the program `text` (read from `path`, shown as `name`), with the
/// declarations of `tools` when given. Returns the file to show positions
/// in (joined with DECLS.lt when `tools` is given) and the analysis, whose
/// unknown-tool diagnostics name the declarations file to use.
pub fn check_program(
    path: &str,
    name: String,
    text: String,
    tools: Option<&str>,
) -> Result<(SourceFile, Analysis), ToolsFailure> {
    let (file, mut analysis) = match tools {
        None => {
            let analysis = check_source(&text);
            (SourceFile::new(name, text), analysis)
        }
        Some("-") if path == "-" => {
            return Err(ToolsFailure::Unreadable(
                "--tools -: the program is already read from standard input; give the declarations as a file (--tools tools.lt)".into(),
            ))
        }
        Some(tools_path) => {
            let (tools_name, tools_text) = read_source(tools_path)
                .map_err(|msg| ToolsFailure::Unreadable(format!("--tools: {msg}")))?;
            match check_with_tools(&tools_name, &tools_text, &name, &text) {
                Ok(w) => (w.file, w.analysis),
                Err(decls) => {
                    let file = SourceFile::new(tools_name, tools_text);
                    let report = CheckReport {
                        bindings: None,
                        diagnostics: decls
                            .diagnostics
                            .iter()
                            .map(|d| DiagnosticReport::new(&file, d))
                            .collect(),
                        effects: Vec::new(),
                        ir: None,
                        ok: false,
                        stage: None,
                        truncated: decls.truncated,
                        ty: None,
                    };
                    return Err(ToolsFailure::Invalid(
                        file,
                        Box::new(report),
                        decls.diagnostics,
                    ));
                }
            }
        }
    };
    name_declarations_file(&file, &mut analysis, path, tools);
    Ok((file, analysis))
}

/// Rewrites the help of each unknown tool (E0204) that has no close
/// declared name: with `--tools`, what DECLS.lt declares; without, the
/// `tools.lt` beside the program (or in the working directory) that
/// declares it, else how to get one.
fn name_declarations_file(
    file: &SourceFile,
    analysis: &mut Analysis,
    path: &str,
    tools: Option<&str>,
) {
    let mut candidates: Option<Vec<(PathBuf, Vec<String>)>> = None;
    for d in analysis.diagnostics.iter_mut() {
        if d.code != Code::E0204
            || d.help
                .as_deref()
                .is_some_and(|h| h.starts_with("did you mean"))
        {
            continue;
        }
        let tool = file.slice(d.span).to_string();
        if let Some(tools_path) = tools {
            let declared: Vec<&str> = analysis.tools.iter().map(|t| &*t.name).collect();
            d.help = Some(format!(
                "neither the program nor {tools_path} declares `{tool}`{}; import it into {tools_path} with `lt tools import` (from its schema or MCP server)",
                if declared.is_empty() {
                    String::new()
                } else {
                    format!(" (declared: {})", declared.join(", "))
                }
            ));
            continue;
        }
        let found = candidates.get_or_insert_with(|| nearby_declarations(path));
        d.help = Some(match found.iter().find(|(_, names)| names.contains(&tool)) {
            Some((p, _)) => format!(
                "`{tool}` is declared in {}: check the program with it, `--tools {}`",
                p.display(),
                p.display()
            ),
            None => match found.iter().find_map(|(p, names)| {
                did_you_mean(&tool, names.iter().map(String::as_str)).map(|n| (p, n))
            }) {
                Some((p, close)) => format!(
                    "{} declares `{close}`, not `{tool}`: did you mean `{close}`? (use it with `--tools {}`)",
                    p.display(),
                    p.display()
                ),
                None => "the tools a program calls come from a declarations file: `lt tools import` writes `tools.lt` from the tools' schemas; then `--tools tools.lt`".to_string(),
            },
        });
    }
}

/// The `tools.lt` files beside the program and in the working directory,
/// with the tools each declares (files that cannot be read or have errors
/// are skipped).
fn nearby_declarations(path: &str) -> Vec<(PathBuf, Vec<String>)> {
    let mut dirs = Vec::new();
    if path != "-" {
        if let Some(dir) = Path::new(path).parent() {
            dirs.push(dir.join("tools.lt"));
        }
    }
    dirs.push(PathBuf::from("tools.lt"));
    let mut out: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for p in dirs {
        let same = |q: &PathBuf| {
            q.canonicalize()
                .ok()
                .zip(p.canonicalize().ok())
                .is_some_and(|(a, b)| a == b)
        };
        if out.iter().any(|(q, _)| same(q)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let decls = check_declarations(&text);
        if decls.is_ok() {
            let names = decls.tools.iter().map(|t| t.sig.name.to_string()).collect();
            out.push((p, names));
        }
    }
    out
}
