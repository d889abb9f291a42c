//! The system prompt of the agent loop (and of `lt prompt`): the guide for
//! models, `docs/llm-guide.md`, then the user's tool declarations.
//!
//! ```text
//! DECLS.lt ──load_declarations──▶ PromptDeclarations { text, tools }   (or the diagnostics)
//!          ──system_prompt──────▶ GUIDE + "## Your tools" + ```lt text ``` + the reply rule
//! ```
//!
//! The declarations are shown as written, with their `//` doc comments: they
//! are what the model copies into every program. A file that ends with an
//! expression (a whole program) is accepted; the expression is left out of
//! the prompt ([`PromptDeclarations::dropped_expression`]).

use crate::diag::Diagnostic;
use crate::syntax::ast::Decl;
use crate::types::check_declarations;

/// The guide to the language written for models (`docs/llm-guide.md`):
/// every rule with a right and a wrong example, the common mistakes, and
/// the shape of the loop's feedback. Every ```` ```lt ```` block in it is
/// checked by `tests/agent/guide.rs`.
pub const GUIDE: &str = include_str!("../../docs/llm-guide.md");

/// The heading of the prompt's last section, which holds the declarations.
pub const TOOLS_HEADING: &str = "## Your tools";

/// The last line of the prompt: the reply rule.
pub const REPLY_RULE: &str = "Reply with exactly one ```lt block holding one complete program \
(the declarations it needs, copied from above, then one expression), or, when you have your \
answer, in plain text without a code block.";

/// Declarations checked for a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptDeclarations {
    /// The text the prompt shows: the file as written (doc comments
    /// included) up to the end of its last declaration, without trailing
    /// whitespace.
    pub text: String,
    /// The declared tools' names, in declaration order.
    pub tools: Vec<String>,
    /// Whether the file ended with an expression, which `text` leaves out.
    pub dropped_expression: bool,
}

/// Why a declarations file cannot make a prompt: its diagnostics, as
/// `lt check` renders them.
#[derive(Clone, Debug)]
pub struct DeclarationErrors {
    /// The diagnostics, sorted by position (at most 100).
    pub diagnostics: Vec<Diagnostic>,
    /// How many more there were.
    pub truncated: usize,
}

/// Checks a declarations file (`tool`, `type` and `effect` declarations;
/// a whole program is accepted and its expression left out) with
/// [`check_declarations`], and returns the text the prompt shows, or the
/// diagnostics. A file that declares nothing is accepted (its text is
/// empty, `tools` too).
pub fn load_declarations(text: &str) -> Result<PromptDeclarations, DeclarationErrors> {
    let decls = check_declarations(text);
    if !decls.is_ok() {
        return Err(DeclarationErrors {
            diagnostics: decls.diagnostics,
            truncated: decls.truncated,
        });
    }
    let shown = if decls.has_expression {
        let end = decls
            .program
            .decls
            .iter()
            .map(|d| match d {
                Decl::Tool(t) => t.span.end,
                Decl::Type(a) => a.span.end,
                Decl::Effect(_, span) | Decl::Error(span) => span.end,
            })
            .max()
            .unwrap_or(0) as usize;
        text.get(..end).unwrap_or(text)
    } else {
        text
    };
    Ok(PromptDeclarations {
        text: shown.trim_end().to_string(),
        tools: decls.tools.iter().map(|t| t.sig.name.to_string()).collect(),
        dropped_expression: decls.has_expression,
    })
}

/// The system prompt: [`GUIDE`], then a section [`TOOLS_HEADING`] with
/// `declarations_text` as given, in a ```` ```lt ```` block, then
/// [`REPLY_RULE`]. The text is not checked here (see
/// [`load_declarations`]).
pub fn system_prompt(declarations_text: &str) -> String {
    let decls = declarations_text.trim_end();
    let trimmed = decls.trim_start_matches(['\n', '\r']);
    // A doc comment holding a fence must not close the block early.
    let fence = "`".repeat(longest_backtick_run(trimmed).max(2) + 1);
    let mut out = String::with_capacity(GUIDE.len() + decls.len() + 512);
    // The `fails=E0xxx` tags are for the guide's test (tests/agent/guide.rs);
    // the model sees each wrong example by its `// WRONG:` comment.
    for line in GUIDE.trim_end().split_inclusive('\n') {
        match line.strip_prefix("```lt fails=") {
            Some(rest) if rest.trim_end().chars().all(|c| c.is_ascii_alphanumeric()) => {
                out.push_str("```lt");
                out.push_str(if line.ends_with('\n') { "\n" } else { "" });
            }
            _ => out.push_str(line),
        }
    }
    out.push_str("\n\n");
    out.push_str(TOOLS_HEADING);
    out.push_str(
        "\n\nThe declarations of the tools you can call. Copy the ones a program uses, with the \
`type` and `effect` declarations they need, unchanged into every program.\n\n",
    );
    out.push_str(&fence);
    out.push_str("lt\n");
    if !trimmed.is_empty() {
        out.push_str(trimmed);
        out.push('\n');
    }
    out.push_str(&fence);
    out.push_str("\n\n");
    out.push_str(REPLY_RULE);
    out.push('\n');
    out
}

/// The length of the longest run of backticks in `text`.
fn longest_backtick_run(text: &str) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_ends_with_the_declarations_and_the_reply_rule() {
        let p = system_prompt("tool t: String -{Read}-> String;\n");
        assert!(p.starts_with("# Writing lt programs"));
        assert!(p.ends_with(&format!(
            "## Your tools\n\nThe declarations of the tools you can call. Copy the ones a program uses, with the `type` and `effect` declarations they need, unchanged into every program.\n\n```lt\ntool t: String -{{Read}}-> String;\n```\n\n{REPLY_RULE}\n"
        )));
    }

    #[test]
    fn a_fence_in_a_comment_gets_a_longer_fence() {
        let p = system_prompt("// see ```lt blocks\ntool t: String -{Read}-> String;");
        assert!(p.contains("\n````lt\n// see ```lt blocks\n"));
        assert!(p.contains("String;\n````\n"));
    }

    #[test]
    fn an_expression_after_the_declarations_is_left_out() {
        let d = load_declarations(
            "// Looks up.\ntool t: String -{Read}-> String;\n// the program\nmatch exec tool t \"x\" { Ok(v) => v, Err(e) => e }\n",
        )
        .expect("declarations");
        assert_eq!(d.text, "// Looks up.\ntool t: String -{Read}-> String;");
        assert_eq!(d.tools, vec!["t".to_string()]);
        assert!(d.dropped_expression);
    }

    #[test]
    fn declarations_are_kept_as_written() {
        let text = "effect Payment;\ntype Money = {cents: Int};\n// Charges.\ntool charge: Money -{Write, Payment}-> {id: String};\n\n";
        let d = load_declarations(text).expect("declarations");
        assert_eq!(d.text, text.trim_end());
        assert!(!d.dropped_expression);
    }

    #[test]
    fn bad_declarations_give_their_diagnostics() {
        let e = load_declarations("tool t: Strin -{Read}-> String;").expect_err("E0205");
        assert_eq!(e.diagnostics[0].code.as_str(), "E0205");
    }
}
