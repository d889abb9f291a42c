//! Token-level repairs of common mistakes, run between lexing and parsing.
//!
//! LALR error recovery handles a missing token poorly: it discards input
//! until it can go on, and the discarded tokens often produce a cascade of
//! unrelated errors. The few mistakes that LLMs and people make most often are
//! recognised here instead, reported once with a precise message, and the
//! missing token is inserted so that the rest of the program is parsed (and
//! checked) as intended:
//!
//! * a missing `;` between two tool declarations;
//! * a missing `:` between a tool's name and its type;
//! * a missing `,` between two match arms;
//! * OCaml's `match e with …` (reported; arms are written in braces);
//! * a function head, `let [rec] f(x: Int): Int = …` or OCaml's
//!   `let rec f x = …`: rewritten to lt's `let [rec] f = fn (x: Int) => …`
//!   (reported here without `rec`; with it, the restriction pass reports
//!   the `let rec`, E0302, with what to write instead).

use super::tok::{Spanned, Tok};
use crate::diag::{Code, Diagnostic};
use crate::source::Span;

/// Applies every repair to `toks`, reporting each one in `diags`.
pub fn repair(toks: &mut Vec<Spanned>, diags: &mut Vec<Diagnostic>) {
    insert_missing_decl_punctuation(toks, diags);
    insert_missing_arm_commas(toks, diags);
    report_match_with(toks, diags);
    report_loops(toks, diags);
    rewrite_function_heads(toks, diags);
}

/// The hint for a function head: lt's own way to write a function.
pub const FUNCTION_HEAD_HINT: &str = "lt has no `let f(x) = …` function heads: write `let f = fn (x: Int) => … in …` (one parameter; for several, take a record `fn (p: {a: Int, b: Int}) => …` or nest `fn a => fn b => …`)";

/// The parameters of a function head from `toks[i]` (just after the name)
/// up to its `=`: `(x: T, y: U) [: R] =` or `x y [: R] =`. Returns each
/// parameter's tokens and the index of the `=`; `None` when it is not one.
fn function_head(toks: &[Spanned], i: usize) -> Option<(Vec<Vec<Spanned>>, usize)> {
    let mut params: Vec<Vec<Spanned>> = Vec::new();
    let mut j = i;
    match toks.get(j).map(|t| &t.1) {
        Some(Tok::LParen) => {
            let mut depth = 0u32;
            let mut current = Vec::new();
            j += 1;
            loop {
                let t = toks.get(j)?;
                match t.1 {
                    Tok::LParen | Tok::LBrace | Tok::LBracket => depth += 1,
                    Tok::RParen if depth == 0 => break,
                    Tok::RParen | Tok::RBrace | Tok::RBracket => depth = depth.saturating_sub(1),
                    Tok::Comma if depth == 0 => {
                        params.push(std::mem::take(&mut current));
                        j += 1;
                        continue;
                    }
                    Tok::Eq | Tok::In | Tok::Let | Tok::Semi => return None,
                    _ => {}
                }
                current.push(t.clone());
                j += 1;
            }
            if !current.is_empty() {
                params.push(current);
            }
            j += 1;
        }
        Some(Tok::Ident(_)) => {
            while let Some(t @ (_, Tok::Ident(_), _)) = toks.get(j) {
                params.push(vec![t.clone()]);
                j += 1;
            }
        }
        _ => return None,
    }
    // An optional result type, then `=`.
    if matches!(toks.get(j).map(|t| &t.1), Some(Tok::Colon)) {
        while !matches!(toks.get(j).map(|t| &t.1), Some(Tok::Eq)) {
            match toks.get(j)?.1 {
                Tok::In | Tok::Let | Tok::Semi | Tok::FatArrow => return None,
                _ => j += 1,
            }
        }
    }
    matches!(toks.get(j).map(|t| &t.1), Some(Tok::Eq)).then_some((params, j))
}

/// `let [rec] f(x: T, …) [: R] = body` and `let [rec] f x … = body`
/// become `let [rec] f = fn (x: T) => … => body`, so the rest of the
/// program is parsed and checked as meant. Without `rec` the head is
/// reported here (E0101); with it, the restriction pass reports the
/// `let rec` (E0302).
fn rewrite_function_heads(toks: &mut Vec<Spanned>, diags: &mut Vec<Diagnostic>) {
    let mut i = 0;
    while i < toks.len() {
        if toks[i].1 != Tok::Let {
            i += 1;
            continue;
        }
        let rec = matches!(toks.get(i + 1).map(|t| &t.1), Some(Tok::Rec));
        let name_at = i + 1 + usize::from(rec);
        let Some((_, Tok::Ident(name), name_end)) = toks.get(name_at).cloned() else {
            i += 1;
            continue;
        };
        let Some((params, eq)) = function_head(toks, name_at + 1) else {
            i += 1;
            continue;
        };
        let (head_start, eq_end) = (toks[name_at + 1].0, toks[eq].2);
        if !rec {
            diags.push(
                Diagnostic::error(
                    Code::E0101,
                    Span::new(head_start, toks[eq].0),
                    format!("`let {name}(…) = …` is not how lt defines a function"),
                )
                .with_label("function parameters here")
                .with_help(FUNCTION_HEAD_HINT),
            );
        }
        let mut new: Vec<Spanned> = vec![(name_end, Tok::Eq, name_end)];
        for p in params {
            let at = p.first().map_or(name_end, |t| t.0);
            new.push((at, Tok::Fn, at));
            if p.len() > 1 {
                new.push((at, Tok::LParen, at));
                let end = p.last().map_or(at, |t| t.2);
                new.extend(p);
                new.push((end, Tok::RParen, end));
            } else {
                new.extend(p);
            }
            new.push((eq_end, Tok::FatArrow, eq_end));
        }
        let added = new.len();
        toks.splice(name_at + 1..=eq, new);
        i = name_at + added;
    }
}

/// `while` and `for` are reported here, whatever shape the loop has (the
/// grammar parses only `while c { … }` and `for x in xs { … }`, so that the
/// rest of the program is still checked).
fn report_loops(toks: &[Spanned], diags: &mut Vec<Diagnostic>) {
    for (l, tok, r) in toks {
        let word = match tok {
            Tok::While => "while",
            Tok::For => "for",
            _ => continue,
        };
        diags.push(
            Diagnostic::error(Code::E0301, Span::new(*l, *r), format!("`{word}` loops are not allowed: lt programs must terminate"))
                .with_label("loop")
                .with_help(
                    "iterate over a finite list instead: `fold` (accumulate), `map`/`filter` (pure), or \
                     `traverse` (tool calls, stops at the first Err)",
                ),
        );
    }
}

fn missing(at: usize, what: &str, found: &Tok, context: String, help: &str) -> Diagnostic {
    Diagnostic::error(
        Code::E0101,
        Span::new(at, at),
        format!("missing `{what}` {context}"),
    )
    .with_label(format!("expected `{what}` here"))
    .with_expected_found(format!("`{what}`"), format!("`{found}`"))
    .with_help(help.to_string())
}

fn starts_type(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Ident(_)
            | Tok::LBrace
            | Tok::LBracket
            | Tok::LParen
            | Tok::Bang
            | Tok::List
            | Tok::Result
    )
}

/// A declaration runs from `tool` to `;`. When another declaration starts
/// (`tool` not preceded by `exec`) before the `;`, the `;` was forgotten.
/// `tool NAME T…` where a type starts right after the name lacks its `:`.
fn insert_missing_decl_punctuation(toks: &mut Vec<Spanned>, diags: &mut Vec<Diagnostic>) {
    let mut i = 0;
    let mut in_decl = false;
    let mut decl_name = String::new();
    while i < toks.len() {
        match &toks[i].1 {
            Tok::Tool if i == 0 || toks[i - 1].1 != Tok::Exec => {
                if in_decl && i > 0 {
                    let at = toks[i - 1].2;
                    diags.push(missing(
                        at,
                        ";",
                        &Tok::Tool,
                        format!("after the declaration of tool `{decl_name}`"),
                        "end every tool declaration with `;`",
                    ));
                    toks.insert(i, (at, Tok::Semi, at));
                    i += 1;
                }
                in_decl = true;
                decl_name = match toks.get(i + 1) {
                    Some((_, Tok::Ident(n), _)) => n.to_string(),
                    _ => String::new(),
                };
                let name_end = toks.get(i + 1).map(|t| t.2);
                if let (Some(at), Some((_, next, _))) = (name_end, toks.get(i + 2)) {
                    if !decl_name.is_empty() && starts_type(next) {
                        diags.push(missing(
                            at,
                            ":",
                            next,
                            format!("after the tool name `{decl_name}`"),
                            "a tool is declared `tool NAME: In -{Effects}-> Out;`",
                        ));
                        toks.insert(i + 2, (at, Tok::Colon, at));
                    }
                }
            }
            Tok::Semi => in_decl = false,
            Tok::Let | Tok::Match => break,
            _ => {}
        }
        i += 1;
    }
}

/// Inside match arms, `… body  Ok(x) => …` at the arms' own bracket depth
/// lacks the `,` before the second pattern.
fn insert_missing_arm_commas(toks: &mut Vec<Spanned>, diags: &mut Vec<Diagnostic>) {
    let mut depth: u32 = 0;
    let mut arm_depths: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].1 {
            Tok::MatchLBrace => {
                depth += 1;
                arm_depths.push(depth);
            }
            Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                if arm_depths.last() == Some(&depth) {
                    arm_depths.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ if arm_depths.last() == Some(&depth) && i > 0 => {
                let prev = &toks[i - 1].1;
                let after_separator = matches!(
                    prev,
                    Tok::Comma
                        | Tok::MatchLBrace
                        | Tok::Fn
                        | Tok::Colon
                        | Tok::List
                        | Tok::Option
                        | Tok::Bang
                        // `fn p: "a" | "b" => …`: a type, not a second arm.
                        | Tok::Bar
                        | Tok::Arrow
                        | Tok::FatArrow
                        // `Ok x =>`: the name is the pattern's binder.
                        | Tok::Ok
                        | Tok::Err
                        | Tok::Some
                );
                if !after_separator {
                    if let Some(len) = pattern_len(&toks[i..]) {
                        if toks.get(i + len).map(|t| &t.1) == Some(&Tok::FatArrow) {
                            let at = toks[i - 1].2;
                            diags.push(missing(
                                at,
                                ",",
                                &toks[i].1,
                                "between two match arms".to_string(),
                                "separate match arms with `,`: `Ok(x) => …, Err(e) => …`",
                            ));
                            toks.insert(i, (at, Tok::Comma, at));
                            i += 1;
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The number of tokens of a match pattern starting at `t[0]`, if one does.
fn pattern_len(t: &[Spanned]) -> Option<usize> {
    let binder =
        |x: Option<&Spanned>| matches!(x.map(|x| &x.1), Some(Tok::Ident(_) | Tok::Underscore));
    match t.first().map(|x| &x.1)? {
        Tok::None | Tok::Str(_) => Some(1),
        Tok::Ok | Tok::Err | Tok::Some => {
            if t.get(1).map(|x| &x.1) == Some(&Tok::LParen)
                && binder(t.get(2))
                && t.get(3).map(|x| &x.1) == Some(&Tok::RParen)
            {
                Some(4)
            } else if binder(t.get(1)) {
                Some(2)
            } else {
                None
            }
        }
        Tok::Underscore | Tok::Ident(_) => Some(1),
        _ => None,
    }
}

/// `match e with` (OCaml) is reported with the lt form.
fn report_match_with(toks: &[Spanned], diags: &mut Vec<Diagnostic>) {
    let mut open_match = false;
    for (i, (l, tok, r)) in toks.iter().enumerate() {
        // `with` as a field name (`{with = 1}`, `r.with`, `{with: Int}`) is not OCaml's.
        let field_name = || {
            matches!(
                toks.get(i + 1).map(|t| &t.1),
                Some(Tok::Eq | Tok::Colon | Tok::Comma | Tok::RBrace | Tok::RParen)
            ) || (i > 0 && matches!(toks[i - 1].1, Tok::Dot | Tok::LBrace | Tok::Comma))
        };
        match tok {
            Tok::Match => open_match = true,
            Tok::MatchLBrace => open_match = false,
            Tok::Ident(w) if open_match && &**w == "with" && !field_name() => {
                diags.push(
                    Diagnostic::error(
                        Code::E0101,
                        Span::new(*l, *r),
                        "lt writes match arms in braces, not after `with`",
                    )
                    .with_label("`with` is not lt syntax")
                    .with_help("write `match e { Ok(x) => …, Err(e) => … }`"),
                );
                open_match = false;
            }
            _ => {}
        }
    }
}
