//! The `errors` strings of the λ-Tool protocol: every problem as one line,
//! λ-Tool's wording first, then what lt adds in brackets.
//!
//! ```text
//! Field 'plan' not found in record type {id: String} [E0202 at line 7, col 20; hint: the closest field is `id`; …]
//! Type mismatch at line 1, col 9: expected Bool, got Int [E0201 at line 1, col 13; hint: give this expression type Int]
//! step limit of 1000 exceeded [step_limit at line 3, col 5; hint: …]
//! unknown option `--frobnicate` [usage; hint: lambda_tool --json [--typecheck] [FILE] …]
//! unknown field `bogus` [profile in p.toml, line 3, col 1]
//! ```
//!
//! The bracket holds a tag (an error code `E0xxx`, a run-error kind, or
//! `usage`, `input`, `profile`, `log`), the position when there is one, and
//! the hint when there is one. Newlines and other control characters in
//! messages become spaces, so each string is one line.

use crate::diag::{Code, Diagnostic};
use crate::exec::ConfigError;
use crate::runtime::limits::RunError;
use crate::source::SourceFile;
use crate::syntax::ast::{BinOp, Expr, ExprKind, Program};
use std::borrow::Cow;

/// A checker diagnostic: `MESSAGE [E0xxx at line L, col C; hint: HELP]`,
/// the message in λ-Tool's wording where it differs from lt's
/// ([`lambda_tool_message`]), placed without the program's tree.
#[cfg(test)]
pub fn diagnostic(file: &SourceFile, d: &Diagnostic) -> String {
    diagnostic_in(file, None, d)
}

/// [`diagnostic`], with the program's tree to place a mismatch as λ-Tool
/// places it ([`lambda_tool_place`]).
fn diagnostic_in(file: &SourceFile, program: Option<&Program>, d: &Diagnostic) -> String {
    let lc = file.line_col(d.span.start);
    with_bracket(
        &lambda_tool_message(file, program, d),
        &format!("{} at line {}, col {}", d.code.as_str(), lc.line, lc.column),
        d.help.as_deref(),
    )
}

/// The message of `d` as λ-Tool words it. A type mismatch (E0201) is
/// λ-Tool's `Type mismatch at line L, col C: expected X, got Y`, followed
/// by what lt's message adds: the path inside the value (``Type mismatch
/// at line 1, col 31: expected String, got Int (in field `a`)``), or lt's
/// own sentence when it has a more specific one (``Type mismatch at line
/// 1, col 13: expected Int, got String; `+` adds Ints; it cannot join
/// Strings``). Every other message already starts with λ-Tool's wording, or
/// λ-Tool's is not known. The bracket keeps lt's own position and hint.
fn lambda_tool_message<'a>(
    file: &SourceFile,
    program: Option<&Program>,
    d: &'a Diagnostic,
) -> Cow<'a, str> {
    if d.code != Code::E0201 {
        return Cow::Borrowed(&d.message);
    }
    let (at, swapped) = lambda_tool_place(program, d);
    let lc = file.line_col(at);
    let place = format!("Type mismatch at line {}, col {}", lc.line, lc.column);
    let (Some(expected), Some(found)) = (&d.expected, &d.found) else {
        return Cow::Owned(format!("{place}: {}", d.message));
    };
    let head = if swapped {
        format!("{place}: expected {found}, got {expected}")
    } else {
        format!("{place}: expected {expected}, got {found}")
    };
    let lt_head = format!("type mismatch: expected {expected}, found {found}");
    Cow::Owned(match d.message.strip_prefix(&lt_head) {
        Some(rest) => head + rest,
        None => format!("{head}; {}", d.message),
    })
}

/// Where λ-Tool reports the mismatch `d`, and whether it names the two
/// types the other way round. λ-Tool types an arithmetic operation as a
/// whole: `1 + true` is a mismatch of the operation (at its start), that
/// expected the right operand's type (`Bool`) and got the left one's
/// (`Int`); lt reports the right operand, expected `Int`, found `Bool`.
/// Elsewhere both report the expression that has the wrong type.
fn lambda_tool_place(program: Option<&Program>, d: &Diagnostic) -> (u32, bool) {
    let Some(program) = program else {
        return (d.span.start, false);
    };
    let mut work: Vec<&Expr> = vec![&program.body];
    while let Some(e) = work.pop() {
        if e.span.start > d.span.start || e.span.end < d.span.end {
            continue;
        }
        if let ExprKind::Binary(op, _, _, right) = &e.kind {
            let arithmetic = matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
            );
            if arithmetic && right.span == d.span {
                return (e.span.start, true);
            }
        }
        e.kind.for_each_child(|c| work.push(c));
    }
    (d.span.start, false)
}

/// Every diagnostic of a rejected program (`program`, its tree), and a
/// last line counting those the checker did not list (`truncated`).
pub fn diagnostics(
    file: &SourceFile,
    program: &Program,
    list: &[Diagnostic],
    truncated: usize,
) -> Vec<String> {
    let mut out: Vec<String> = list
        .iter()
        .map(|d| diagnostic_in(file, Some(program), d))
        .collect();
    if truncated > 0 {
        out.push(format!(
            "… and {truncated} more errors not listed [truncated; hint: fix the errors above and check again]"
        ));
    }
    out
}

/// An error that stopped a run: `MESSAGE [KIND at line L, col C; hint: HELP]`.
pub fn run_error(file: &SourceFile, e: &RunError) -> String {
    let lc = file.line_col(e.span.start);
    with_bracket(
        &e.message,
        &format!("{} at line {}, col {}", e.kind.as_str(), lc.line, lc.column),
        e.help.as_deref(),
    )
}

/// A problem outside the program: `MESSAGE [TAG; hint: HELP]`.
pub fn plain(message: &str, tag: &str, help: Option<&str>) -> String {
    with_bracket(message, tag, help)
}

/// An invalid or unreadable profile: `MESSAGE [profile in FILE, line L, col C; hint: HELP]`.
pub fn config(e: &ConfigError) -> String {
    let mut place = format!("profile in {}", e.path);
    if let Some(line) = e.line {
        place.push_str(&format!(", line {line}"));
        if let Some(col) = e.column {
            place.push_str(&format!(", col {col}"));
        }
    }
    with_bracket(&e.message, &place, e.help.as_deref())
}

fn with_bracket(message: &str, tag: &str, help: Option<&str>) -> String {
    let mut s = one_line(message);
    s.push_str(" [");
    s.push_str(&one_line(tag));
    if let Some(h) = help {
        s.push_str("; hint: ");
        s.push_str(&one_line(h));
    }
    s.push(']');
    s
}

/// `s` with every control character (newlines, tabs, `\r`) as a space.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::limits::RunErrorKind;
    use crate::source::Span;

    #[test]
    fn a_type_mismatch_is_worded_as_lambda_tool_words_it() {
        let file = SourceFile::new("p.lt", "let x = 1 + true in x");
        let mismatch = |message: &str| {
            Diagnostic::error(Code::E0201, Span::new(12, 16), message)
                .with_expected_found("Int", "Bool")
                .with_help("give this expression type Int")
        };
        assert_eq!(
            diagnostic(&file, &mismatch("type mismatch: expected Int, found Bool")),
            "Type mismatch at line 1, col 13: expected Int, got Bool [E0201 at line 1, col 13; hint: give this expression type Int]"
        );
        assert_eq!(
            diagnostic(
                &file,
                &mismatch("type mismatch: expected Int, found Bool (in field `a`)")
            ),
            "Type mismatch at line 1, col 13: expected Int, got Bool (in field `a`) [E0201 at line 1, col 13; hint: give this expression type Int]"
        );
        assert!(diagnostic(&file, &mismatch("`+` adds Ints")).starts_with(
            "Type mismatch at line 1, col 13: expected Int, got Bool; `+` adds Ints ["
        ));
        let infinite = Diagnostic::error(
            Code::E0201,
            Span::new(0, 3),
            "this would need an infinite type",
        );
        assert_eq!(
            diagnostic(&file, &infinite),
            "Type mismatch at line 1, col 1: this would need an infinite type [E0201 at line 1, col 1]"
        );
    }

    #[test]
    fn an_operand_mismatch_is_placed_and_worded_as_lambda_tool_does() {
        // The lambda-tool-python README: `let x = 1 + true in x` is
        // `Type mismatch at line 1, col 9: expected Bool, got Int`.
        let file = SourceFile::new("p.lt", "let x = 1 + true in x");
        let analysis = crate::types::check_source(&file.text);
        let list = diagnostics(&file, &analysis.program, &analysis.diagnostics, 0);
        assert_eq!(list.len(), 1, "{list:?}");
        assert!(
            list[0].starts_with("Type mismatch at line 1, col 9: expected Bool, got Int ["),
            "{list:?}"
        );
    }

    #[test]
    fn strings_are_one_line_with_the_bracket_last() {
        let file = SourceFile::new("p.lt", "let x = 1 in\n  x.plan");
        let d = Diagnostic::error(
            Code::parse("E0202").expect("code"),
            Span::new(15, 21),
            "Field 'plan'\nnot found",
        )
        .with_help("use `x`");
        assert_eq!(
            diagnostic(&file, &d),
            "Field 'plan' not found [E0202 at line 2, col 3; hint: use `x`]"
        );
        let e = RunError::new(
            RunErrorKind::StepLimit,
            Span::new(0, 3),
            "step limit of 10 exceeded",
        );
        assert_eq!(
            run_error(&file, &e),
            "step limit of 10 exceeded [step_limit at line 1, col 1]"
        );
        assert_eq!(plain("bad\tflag", "usage", None), "bad flag [usage]");
        let c = ConfigError {
            path: "p.toml".into(),
            line: Some(3),
            column: Some(1),
            message: "unknown field `bogus`".into(),
            help: None,
        };
        assert_eq!(
            config(&c),
            "unknown field `bogus` [profile in p.toml, line 3, col 1]"
        );
    }
}
