//! Syntax: source text → tokens → AST, with every syntax error reported.
//!
//! ```text
//! text ──lex (logos)──▶ tokens ──parse (lalrpop, grammar/lt.lalrpop)──▶ Program
//! ```
//!
//! Parsing never fails and never panics: lexical errors are reported and the
//! offending characters skipped; the LALR(1) parser recovers from syntax errors
//! with lalrpop's `!` error token (in atoms and tool declarations), so one pass
//! reports every error it can find. Nodes nested deeper than [`MAX_DEPTH`] are
//! replaced by error nodes with one `E0103` diagnostic, which bounds the
//! recursion of every later pass. This module knows nothing of types.
//!
//! Accepted: `tool f: {a: Int} -{Read}-> String; match exec tool f {a = 1} { Ok(s) => s, Err(e) => e }`.
//! Rejected: `let x = 1` (E0102: a `let` needs `in` and a body).

pub mod ast;
pub mod build;
mod descent;
pub mod doc;
pub mod print;
pub mod repair;
mod scan;
pub mod tok;
pub mod token;

#[allow(
    clippy::all,
    clippy::unwrap_used,
    missing_docs,
    unused_qualifications,
    dead_code
)]
mod grammar {
    lalrpop_util::lalrpop_mod!(pub lt, "/lt.rs");
}

use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use ast::{Expr, Program};
use lalrpop_util::ParseError;
use tok::{LexError, Tok};

/// The deepest nesting of expressions or types the parser accepts.
pub const MAX_DEPTH: u32 = 1000;

/// Parses a whole program. Always returns a tree; `diags` holds every lexical
/// and syntax error found (empty when the program parsed cleanly).
pub fn parse(text: &str) -> (Program, Vec<Diagnostic>) {
    let (program, _, diags) = parse_with(text, false);
    (program, diags)
}

/// Parses a declarations file: declarations (`tool`, `type`, `effect`),
/// optionally followed by an expression. Unlike [`parse`], a text without an
/// expression is not an error (no E0104); the returned flag says whether
/// there was one (when not, the program's body is an error node at the end).
/// Every other lexical and syntax error is reported as [`parse`] reports it.
pub fn parse_declarations(text: &str) -> (Program, bool, Vec<Diagnostic>) {
    let (program, missing, diags) = parse_with(text, true);
    (program, !missing, diags)
}

/// The parse driver; `expression_optional` is [`build::ParseState`]'s flag.
/// Returns the tree, whether the expression is missing, and the diagnostics.
fn parse_with(text: &str, expression_optional: bool) -> (Program, bool, Vec<Diagnostic>) {
    let (mut tokens, mut diags) = token::lex(text);
    let end = text.len();
    if diags.iter().any(|d| d.code == Code::E0103) {
        // Too deep to parse safely; the lexer has said where.
        diags.retain(|d| d.code == Code::E0103);
        let body = Expr::error(Span::new(end, end));
        return (
            Program {
                decls: Vec::new(),
                body,
                span: Span::new(0, end),
            },
            false,
            diags,
        );
    }
    // The recursive-descent fast path, or (when it gives up: a syntax
    // error, or a construct it leaves to the grammar) the LR parser.
    let (program, mut st) = match descent::parse(&tokens, expression_optional) {
        Some(parsed) => parsed,
        None => {
            let mut st = build::ParseState::default();
            st.expression_optional = expression_optional;
            let parser = grammar::lt::ProgramParser::new();
            let result = parser.parse(&mut st, tokens.drain(..).map(Ok::<_, LexError>));
            let program = match result {
                Ok(p) => *p,
                Err(e) => {
                    diags.push(convert(e, end));
                    Program {
                        decls: Vec::new(),
                        body: Expr::error(Span::new(end, end)),
                        span: Span::new(0, end),
                    }
                }
            };
            (program, st)
        }
    };
    token::recycle(tokens);
    for rec in std::mem::take(&mut st.recovered) {
        diags.push(convert(rec.error, end));
    }
    diags.append(&mut st.diags);
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    // An unterminated comment swallows the rest, expression included: one error.
    if diags.iter().any(|d| d.code == Code::E0003) {
        diags.retain(|d| d.code != Code::E0104);
    }
    // After recovery, later errors on the same line are usually echoes of the first.
    let echo = |d: &Diagnostic| matches!(d.code, Code::E0101 | Code::E0102 | Code::E0301);
    if diags.iter().any(echo) {
        let line_starts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
        let mut lines_seen: std::collections::HashSet<usize> = std::collections::HashSet::new();
        diags.retain(|d| {
            if !echo(d) {
                return true;
            }
            let line = line_starts.partition_point(|&nl| nl < d.span.start as usize);
            lines_seen.insert(line) || d.code == Code::E0301
        });
    }
    diags.dedup_by(|a, b| a.span == b.span && a.code == b.code);
    (program, st.expression_missing, diags)
}

fn describe_expected(expected: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in expected {
        let pretty = match e.as_str() {
            "IdentTok" => "a name".to_string(),
            "Int" => "an integer".to_string(),
            "Float" => "a float".to_string(),
            "Str" => "a string".to_string(),
            // Not "`{`": the `{` that opens match arms is a token of its
            // own, and "unexpected `{`, expected `{`" would contradict itself.
            "\"match{\"" => "the arms of a `match` (`{ pattern => … }`)".to_string(),
            other => format!("`{}`", other.trim_matches('"')),
        };
        if !out.contains(&pretty) {
            out.push(pretty);
        }
    }
    out
}

fn expected_text(list: &[String]) -> String {
    let starts_expr = list.iter().any(|e| e == "a name") && list.iter().any(|e| e == "an integer");
    if starts_expr && list.len() > 8 {
        let mut rest: Vec<&str> = list
            .iter()
            .filter(|e| {
                !matches!(
                    e.as_str(),
                    "a name"
                        | "an integer"
                        | "a string"
                        | "`(`"
                        | "`[`"
                        | "`{`"
                        | "the arms of a `match` (`{ pattern => … }`)"
                        | "`true`"
                        | "`false`"
                        | "`match`"
                        | "`exec`"
                        | "`Ok`"
                        | "`Err`"
                        | "`Some`"
                        | "`None`"
                        | "a float"
                        | "`-`"
                        | "`let`"
                        | "`fn`"
                        | "`if`"
                        | "`while`"
                        | "`for`"
                        | "`gather`"
                        | "`@intent`"
                )
            })
            .map(String::as_str)
            .collect();
        rest.insert(0, "an expression");
        return rest.join(", ");
    }
    match list.len() {
        0 => "nothing more".to_string(),
        1 => list[0].clone(),
        _ => format!("one of {}", list.join(", ")),
    }
}

fn convert(e: ParseError<usize, Tok, LexError>, end: usize) -> Diagnostic {
    match e {
        ParseError::UnrecognizedEof { location, expected } => {
            let list = describe_expected(&expected);
            let at = Span::new(location.min(end), end);
            let mut help =
                "the program ended early: look for a missing `}`, `)`, `in` or `else`".to_string();
            if list.iter().any(|e| e == "`in`") {
                help = "every `let` needs `in` and a body: `let x = value in body`".to_string();
            }
            Diagnostic::error(Code::E0102, at, "unexpected end of input")
                .with_label(format!("expected {}", expected_text(&list)))
                .with_expected_found(expected_text(&list), "end of input")
                .with_help(help)
        }
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } if expected.is_empty() => extra_token(l, tok, r),
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            let list = describe_expected(&expected);
            let span = Span::new(l, r);
            let exp = expected_text(&list);
            let mut d = Diagnostic::error(Code::E0101, span, format!("unexpected `{tok}`"))
                .with_label(format!("expected {exp}"))
                .with_expected_found(exp, format!("`{tok}`"));
            if tok == Tok::MatchLBrace && list.iter().any(|e| e == "`{`") {
                d = d.with_note(
                    "this `{` was read as the start of match arms, as it is followed by \
                     `Ok`, `Err`, `Some`, `None`, `_` or a pattern and `=>`",
                );
            }
            match hint_for(&tok, &list) {
                Some(help) => d.with_help(help),
                None => d,
            }
        }
        ParseError::ExtraToken { token: (l, tok, r) } => extra_token(l, tok, r),
        ParseError::InvalidToken { location } => Diagnostic::error(
            Code::E0001,
            Span::new(location, location + 1),
            "invalid token",
        )
        .with_help("remove this character"),
        ParseError::User { error } => Diagnostic::error(
            Code::E0001,
            Span::new(end, end),
            format!("lexical error: {error:?}"),
        ),
    }
}

fn extra_token(l: usize, tok: Tok, r: usize) -> Diagnostic {
    let help = match tok {
        Tok::RParen | Tok::RBrace | Tok::RBracket => format!("remove this `{tok}`: it closes nothing"),
        _ => "a program is declarations and then exactly one expression; combine steps with `let … in`".to_string(),
    };
    Diagnostic::error(
        Code::E0101,
        Span::new(l, r),
        format!("unexpected `{tok}` after the end of the program"),
    )
    .with_label("the program's expression ended before this")
    .with_help(help)
}

fn hint_for(tok: &Tok, expected: &[String]) -> Option<String> {
    let has = |s: &str| expected.iter().any(|e| e == s);
    Some(match tok {
        Tok::Eq if has("`,`") && has("`}`") => "separate record fields with `,`: `{a = 1, b = 2}`".into(),
        Tok::Colon if has("`with`") => {
            "a record value gives its fields with `=`: `{a = 1, b = \"x\"}` (`{a: Int}` is a record type)".into()
        }
        Tok::Eq if has("`==`") => "use `==` to compare; `=` only appears in `let x = …` and in record fields".into(),
        Tok::Arrow if has("`=>`") => "functions and match arms use `=>`: `fn x: Int => x + 1`".into(),
        Tok::FatArrow if has("`:`") => "a function parameter needs its type: `fn x: Int => …`".into(),
        Tok::Semi => "lt has no statements; bind intermediate results with `let x = … in …`".into(),
        Tok::Minus if has("`in`") || has("an expression") => {
            "comments are written `// …` or `(* … *)`, not `--`".into()
        }
        Tok::Rec => "recursion is not allowed; iterate with `fold`, `map`, `filter` or `traverse`".into(),
        Tok::While | Tok::For => {
            "loops are not allowed; iterate over a finite list with `fold`, `map`, `filter` or `traverse`".into()
        }
        _ if has("`in`") => "every `let` needs `in` and a body: `let x = value in body`".into(),
        _ if has("`then`") => "an `if` is written `if cond then a else b`".into(),
        _ if has("`else`") => "every `if` needs an `else` branch of the same type".into(),
        Tok::Comma if has("`=>`") => {
            "a function takes one parameter: write `fn a: Int => fn b: Int => …`, or take a record `fn p: {a: Int, b: Int} => …`".into()
        }
        _ if has("`=>`") => "a match arm is written `Ok(x) => …` or `Err(e) => …`".into(),
        Tok::FatArrow => "a `,` is probably missing between two match arms".into(),
        Tok::Ok | Tok::Err if has("`,`") && has("`}`") => "separate match arms with `,`".into(),
        _ if has("`,`") && has("`}`") => "separate record fields and match arms with `,`".into(),
        _ => return None,
    })
}
