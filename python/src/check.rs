//! `lt.check`: a program checked as `lt check --json` checks it (with a
//! declarations text as `--tools`, a profile as `--profile`), the report
//! as JSON for the Python layer, each diagnostic also rendered as `lt
//! check` prints it.

use crate::errors::{config_error, Failure};
use crate::profile::ProfileArg;
use lt::control::report::CheckReport;
use lt::control::static_check;
use lt::diag::render::render;
use lt::source::SourceFile;
use lt::types::with_tools::check_with_tools;
use lt::types::{check_source, Analysis};
use serde_json::{json, Value as Json};

/// The declarations a program is checked with: `(name, text)`.
pub type Declarations = Option<(String, String)>;

/// The program `source` (shown as `name`) checked, with `declarations`
/// joined before it. `Err`: the declarations have errors of their own (the
/// check report of the declarations file).
pub fn analyse(
    name: &str,
    source: &str,
    declarations: &Declarations,
) -> Result<(SourceFile, Analysis), Json> {
    match declarations {
        None => Ok((SourceFile::new(name, source), check_source(source))),
        Some((decls_name, decls_text)) => {
            match check_with_tools(decls_name, decls_text, name, source) {
                Ok(w) => Ok((w.file, w.analysis)),
                Err(decls) => {
                    let file = SourceFile::new(decls_name.clone(), decls_text.clone());
                    Err(declarations_report(
                        &file,
                        &decls.diagnostics,
                        decls.truncated,
                    ))
                }
            }
        }
    }
}

/// Refuses declarations that hold more than declarations (an expression
/// after them, which `--tools` files of the command line may have and
/// which is dropped there): `declarations=` takes tool, type and effect
/// declarations only. A `ConfigError` pointing at the expression.
pub fn declarations_only(declarations: &Declarations) -> Result<(), Failure> {
    let Some((name, text)) = declarations else {
        return Ok(());
    };
    let (program, has_expression, diags) = lt::syntax::parse_declarations(text);
    if !has_expression || !diags.is_empty() {
        // Syntax errors are the check's to report, in the declarations.
        return Ok(());
    }
    let file = SourceFile::new(name.clone(), text.clone());
    let at = file.line_col(program.body.span.start);
    let end = (program.body.span.end as usize).min(text.len());
    let start = (program.body.span.start as usize).min(end);
    let shown: String = text
        .get(start..end)
        .unwrap_or("")
        .chars()
        .take(40)
        .collect();
    Err(Failure::new(
        "ConfigError",
        format!("declarations= holds an expression ({shown:?}) after its declarations: it takes tool, type and effect declarations only"),
        json!({"stage": "input", "file": name, "line": at.line, "column": at.column,
               "help": "the program goes in source (lt.run's or lt.check's first argument); declarations= holds `tool name: In -{E}-> Out;` lines"}),
    ))
}

/// The check report of a declarations file with errors (`ok` false, no
/// type), each diagnostic `rendered`.
pub fn declarations_report(
    file: &SourceFile,
    diags: &[lt::diag::Diagnostic],
    truncated: usize,
) -> Json {
    report_json(
        file,
        diags,
        CheckReport {
            bindings: None,
            diagnostics: Vec::new(),
            effects: Vec::new(),
            ir: None,
            ok: false,
            stage: None,
            truncated,
            ty: None,
        },
    )
}

/// `{ok, type, effects, diagnostics, truncated, rendered}` for `a`: each
/// diagnostic carries `rendered`, the text `lt check` prints for it.
pub fn analysis_json(file: &SourceFile, a: &Analysis) -> Json {
    report_json(file, &a.diagnostics, CheckReport::new(file, a))
}

fn report_json(file: &SourceFile, diags: &[lt::diag::Diagnostic], mut report: CheckReport) -> Json {
    if report.diagnostics.is_empty() {
        report.diagnostics = diags
            .iter()
            .map(|d| lt::diag::json::DiagnosticReport::new(file, d))
            .collect();
    }
    let mut v = serde_json::to_value(&report).unwrap_or(Json::Null);
    if let Some(list) = v.get_mut("diagnostics").and_then(Json::as_array_mut) {
        for (item, d) in list.iter_mut().zip(diags) {
            if let Some(obj) = item.as_object_mut() {
                obj.insert(
                    "rendered".into(),
                    json!(render(file, std::slice::from_ref(d), false)),
                );
            }
        }
    }
    if let Some(obj) = v.as_object_mut() {
        obj.insert("rendered".into(), json!(render(file, diags, false)));
    }
    v
}

/// `lt.check`'s engine: the report, or the failure to raise (an invalid
/// profile).
pub fn check(
    source: &str,
    declarations: &Declarations,
    profile: &ProfileArg,
) -> Result<Json, Failure> {
    let profile = profile.load().map_err(|e| config_error(&e))?;
    declarations_only(declarations)?;
    let (file, mut analysis) = match analyse("<program>", source, declarations) {
        Ok(x) => x,
        Err(report) => return Ok(report),
    };
    if let Some(p) = &profile {
        static_check::check_analysis(&mut analysis, p);
    }
    let mut v = analysis_json(&file, &analysis);
    if let (Some(p), Some(obj)) = (&profile, v.as_object_mut()) {
        obj.insert("profile".into(), json!(p.name));
    }
    Ok(v)
}
