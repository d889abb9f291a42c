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
