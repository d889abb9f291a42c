//! The session's tool list (`lt agent --tools DECLS.lt`): a proposed
//! program may declare only tools of the list, each exactly as the list
//! declares it. Without this check a model could declare
//! `tool issue_refund: … -{Read}-> …` and have the policy decide on a lie.
//!
//! | code | when |
//! |---|---|
//! | E0704 | the program declares a tool of the list with another input, output, effects or undo |
//! | E0705 | the program declares a tool that is not in the list |
//!
//! Types are compared after aliases are expanded (a program may write the
//! type out or declare its own alias), record fields in any order.

use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::types::{Analysis, Declarations, MAX_DIAGNOSTICS};

pub use crate::types::with_tools::same_type;

/// The declaration of `name` in the tool list, as written (`tool …;`).
pub fn listed_declaration(decls: &Declarations, decls_text: &str, name: &str) -> Option<String> {
    let l = &decls.tool(name)?.sig;
    let written = decls_text
        .get(l.span.start as usize..l.span.end as usize)?
        .trim()
        .trim_end_matches(';');
    Some(format!("{written};"))
}

/// Adds [`check_tool_list`]'s diagnostics to `analysis`: all of them
/// sorted by position, at most [`MAX_DIAGNOSTICS`] kept, the rest counted
/// in `truncated` (`lt serve`'s and `lt mcp`'s check of a program).
pub fn add_tool_list_diagnostics(analysis: &mut Analysis, decls: &Declarations, decls_text: &str) {
    let listed = check_tool_list(analysis, decls, decls_text);
    if listed.is_empty() {
        return;
    }
    let diags = &mut analysis.diagnostics;
    diags.extend(listed);
    diags.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    let over = diags.len().saturating_sub(MAX_DIAGNOSTICS);
    diags.truncate(MAX_DIAGNOSTICS);
    analysis.truncated += over;
}

/// The diagnostics of `analysis`'s tool declarations against the list in
/// `decls` (whose text is `decls_text`, to quote a declaration back).
pub fn check_tool_list(
    analysis: &Analysis,
    decls: &Declarations,
    decls_text: &str,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for sig in &analysis.tools {
        let name: &str = &sig.name;
        match decls.tool(name) {
            None => {
                let names: Vec<&str> = decls.tools.iter().map(|t| &*t.sig.name).collect();
                let help = match did_you_mean(name, names.iter().copied()) {
                    Some(close) => format!(
                        "did you mean `{close}`? the session's tools are: {}",
                        names.join(", ")
                    ),
                    None => format!(
                        "use only the session's tools, declared as listed: {}",
                        names.join(", ")
                    ),
                };
                out.push(
                    Diagnostic::error(
                        Code::E0705,
                        sig.span,
                        format!("tool `{name}` is not in this session's tool list"),
                    )
                    .with_label("not a tool of this session")
                    .with_help(help),
                );
            }
            Some(listed) => {
                let l = &listed.sig;
                let mut differs = Vec::new();
                if !same_type(&sig.input, &l.input) {
                    differs.push(format!("input {} (listed: {})", sig.input, l.input));
                }
                if !same_type(&sig.output, &l.output) {
                    differs.push(format!("output {} (listed: {})", sig.output, l.output));
                }
                if sig.effects != l.effects {
                    differs.push(format!("effects {} (listed: {})", sig.effects, l.effects));
                }
                if sig.undo != l.undo {
                    differs.push("its undo clause".to_string());
                }
                if differs.is_empty() {
                    continue;
                }
                let written = listed_declaration(decls, decls_text, name).unwrap_or_default();
                out.push(
                    Diagnostic::error(
                        Code::E0704,
                        sig.span,
                        format!(
                            "tool `{name}` is declared differently from this session's tool list: {}",
                            differs.join(", ")
                        ),
                    )
                    .with_label("differs from the tool list")
                    .with_help(format!("copy the declaration from the tool list: `{written}`")),
                );
            }
        }
    }
    out
}
