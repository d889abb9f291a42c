//! Tokens and the lexer (logos).
//!
//! The lexer never fails: characters it cannot read become diagnostics
//! (`E0001`–`E0005`) and are skipped, so the parser always sees a token
//! stream and can report every syntax error in one pass.
//!
//! One rewrite happens after lexing, to keep the grammar LALR(1): a `{` that
//! opens the arms of a `match` is told apart from a `{` that opens a record by
//! looking at what follows (`Ok`, `Err`, `_`, or any token followed by `=>`).
//! That resolves `match exec tool t {a = 1} { Ok(x) => … }`, where the first
//! braces are the tool's argument and the second the arms.

pub use super::tok::{FloatLit, LexError, Spanned, Tok};

use super::ast::Name;
use super::scan::{string_literal, Raw, RawError, StrEnd};
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use logos::Logos;
use rustc_hash::FxHashMap;

thread_local! {
    /// The token vector of the last parse on this thread, emptied, kept for
    /// the next (see [`recycle`]).
    static SPARE: std::cell::Cell<Vec<Spanned>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest token vector kept for reuse (in tokens: about 1 MB).
const SPARE_MAX: usize = 1 << 15;

/// Keeps the (emptied) allocation of `toks` for the next [`lex`] on this
/// thread: a checker called in a loop then lexes into warm memory instead of
/// a fresh mapping each time.
pub fn recycle(mut toks: Vec<Spanned>) {
    toks.clear();
    if toks.capacity() <= SPARE_MAX {
        SPARE.with(|spare| spare.set(toks));
    }
}

/// Lexes `text` into tokens (comments dropped, match braces marked) and the
/// lexical diagnostics. Adjacent unreadable characters give one diagnostic.
pub fn lex(text: &str) -> (Vec<Spanned>, Vec<Diagnostic>) {
    // Typical source has a token per four bytes or so: one allocation.
    let mut toks: Vec<Spanned> = SPARE.with(|spare| spare.take());
    toks.reserve(text.len() / 3 + 16);
    let mut diags: Vec<Diagnostic> = Vec::new();
    let mut bad_run: Option<(usize, usize)> = None;
    let flush = |run: &mut Option<(usize, usize)>, diags: &mut Vec<Diagnostic>| {
        if let Some((a, b)) = run.take() {
            let chars = &text[a..b];
            let shown: String = chars.chars().take(12).collect();
            let hint = if chars.starts_with('\'') {
                "strings use double quotes: \"text\"".to_string()
            } else if chars.starts_with('#') {
                "comments are `// …` or `(* … *)`".to_string()
            } else if chars.starts_with('@')
                && text[b..].starts_with(|c: char| c.is_ascii_alphabetic())
            {
                "the only annotation is `@intent(\"what this is for\") expression`".to_string()
            } else {
                "remove it; lt source uses ASCII operators such as `+ - * < > == =>`".to_string()
            };
            diags.push(
                Diagnostic::error(
                    Code::E0001,
                    Span::new(a, b),
                    format!("unexpected character `{shown}`"),
                )
                .with_label("this is not part of any token")
                .with_help(hint),
            );
        }
    };
    let mut names: FxHashMap<Name, ()> = FxHashMap::default();
    let mut lexer = Raw::lexer(text);
    while let Some(res) = lexer.next() {
        let raw = match res {
            Ok(raw) => raw,
            Err(RawError::UnexpectedChar) => {
                let range = lexer.span();
                match &mut bad_run {
                    Some((_, end)) if *end == range.start => *end = range.end,
                    _ => {
                        flush(&mut bad_run, &mut diags);
                        bad_run = Some((range.start, range.end));
                    }
                }
                continue;
            }
            Err(RawError::UnterminatedComment) => {
                flush(&mut bad_run, &mut diags);
                let range = lexer.span();
                diags.push(
                    Diagnostic::error(
                        Code::E0003,
                        Span::new(range.start, range.end),
                        "unterminated block comment",
                    )
                    .with_label("this `(*` is never closed")
                    .with_help("close the comment with `*)` (block comments nest)"),
                );
                continue;
            }
        };
        if bad_run.is_some() {
            flush(&mut bad_run, &mut diags);
        }
        let tok = match raw {
            Raw::BlockComment => continue,
            Raw::DashComment => {
                let start = lexer.span().start;
                diags.push(
                    Diagnostic::error(
                        Code::E0001,
                        Span::new(start, start + 2),
                        "`--` does not start a comment",
                    )
                    .with_label("not a comment")
                    .with_help("comments are `// …` to the end of the line, or `(* … *)`"),
                );
                continue;
            }
            Raw::Ident => {
                let text = lexer.slice();
                Tok::Ident(match names.get_key_value(text) {
                    Some((name, ())) => name.clone(),
                    None => {
                        let name = Name::from(text);
                        names.insert(name.clone(), ());
                        name
                    }
                })
            }
            Raw::Int => match lexer.slice().parse::<i64>() {
                Ok(n) => Tok::Int(n),
                Err(_) => {
                    let range = lexer.span();
                    toks.push((range.start, Tok::Int(0), range.end));
                    diags.push(
                        Diagnostic::error(Code::E0005, Span::new(range.start, range.end), "integer literal is too large")
                            .with_label("does not fit in a 64-bit signed integer")
                            .with_help(format!(
                                "a literal is at most {}; Ints are 64-bit, from {} (write `-{} - 1`) to {}",
                                i64::MAX,
                                i64::MIN,
                                i64::MAX,
                                i64::MAX
                            )),
                    );
                    continue;
                }
            },
            Raw::Float => match lexer.slice().parse::<f64>() {
                Ok(x) if x.is_finite() => Tok::Float(FloatLit(x)),
                _ => {
                    let range = lexer.span();
                    toks.push((range.start, Tok::Float(FloatLit(0.0)), range.end));
                    diags.push(
                        Diagnostic::error(
                            Code::E0005,
                            Span::new(range.start, range.end),
                            "Float literal is too large",
                        )
                        .with_label("not a finite 64-bit float")
                        .with_help(format!("Floats are 64-bit: at most {:e}", f64::MAX)),
                    );
                    continue;
                }
            },
            Raw::Quote => {
                let (len, end) = string_literal(lexer.remainder());
                lexer.bump(len);
                let range = lexer.span();
                let d = match end {
                    StrEnd::Value(s) => {
                        toks.push((range.start, Tok::Str(s), range.end));
                        continue;
                    }
                    StrEnd::Unterminated => Diagnostic::error(
                        Code::E0002,
                        Span::new(range.start, range.end),
                        "unterminated string literal",
                    )
                    .with_label("this string has no closing `\"` on its line")
                    .with_help(
                        "close the string with `\"`; write a line break inside a string as `\\n`",
                    ),
                    StrEnd::InvalidEscape(a, b) => {
                        let esc = Span::new(range.start + a, range.start + b);
                        Diagnostic::error(
                            Code::E0004,
                            esc,
                            format!("invalid escape `{}`", &text[esc.range()]),
                        )
                        .with_label(if text[esc.range()].starts_with("\\u") {
                            "`\\u{…}` needs 1 to 6 hex digits naming a Unicode scalar value (not a surrogate, at most 10FFFF)"
                        } else {
                            "unknown escape"
                        })
                        .with_help("valid escapes are \\n \\t \\r \\0 \\\" \\\\ and \\u{1F600}")
                    }
                };
                toks.push((range.start, Tok::Str(String::new()), range.end));
                diags.push(d);
                continue;
            }
            other => keyword_or_symbol(other),
        };
        let range = lexer.span();
        toks.push((range.start, tok, range.end));
    }
    flush(&mut bad_run, &mut diags);
    // Only a text that uses one of these names has keywords to mark.
    if CONTEXTUAL.iter().any(|w| names.contains_key(*w)) {
        mark_contextual_keywords(&mut toks);
    }
    mark_match_braces(&mut toks);
    super::repair::repair(&mut toks, &mut diags);
    check_nesting(&toks, &mut diags);
    (toks, diags)
}

/// The token of a scanned keyword or punctuation (kinds with no text to
/// read; the others are handled by [`lex`]).
fn keyword_or_symbol(raw: Raw) -> Tok {
    match raw {
        Raw::Tool => Tok::Tool,
        Raw::Let => Tok::Let,
        Raw::Rec => Tok::Rec,
        Raw::In => Tok::In,
        Raw::Fn => Tok::Fn,
        Raw::If => Tok::If,
        Raw::Then => Tok::Then,
        Raw::Else => Tok::Else,
        Raw::Match => Tok::Match,
        Raw::Exec => Tok::Exec,
        Raw::True => Tok::True,
        Raw::False => Tok::False,
        Raw::Ok => Tok::Ok,
        Raw::Err => Tok::Err,
        Raw::List => Tok::List,
        Raw::Result => Tok::Result,
        Raw::While => Tok::While,
        Raw::For => Tok::For,
        Raw::LParen => Tok::LParen,
        Raw::RParen => Tok::RParen,
        Raw::LBrace => Tok::LBrace,
        Raw::RBrace => Tok::RBrace,
        Raw::LBracket => Tok::LBracket,
        Raw::RBracket => Tok::RBracket,
        Raw::Comma => Tok::Comma,
        Raw::Semi => Tok::Semi,
        Raw::Colon => Tok::Colon,
        Raw::Dot => Tok::Dot,
        Raw::DotDot => Tok::DotDot,
        Raw::AtIntent => Tok::AtIntent,
        Raw::Question => Tok::Question,
        Raw::Bar => Tok::Bar,
        Raw::Eq => Tok::Eq,
        Raw::FatArrow => Tok::FatArrow,
        Raw::Arrow => Tok::Arrow,
        Raw::Minus => Tok::Minus,
        Raw::Plus => Tok::Plus,
        Raw::PlusPlus => Tok::PlusPlus,
        Raw::Star => Tok::Star,
        Raw::Slash => Tok::Slash,
        Raw::Percent => Tok::Percent,
        Raw::Lt => Tok::Lt,
        Raw::Gt => Tok::Gt,
        Raw::Le => Tok::Le,
        Raw::Ge => Tok::Ge,
        Raw::EqEq => Tok::EqEq,
        Raw::Ne => Tok::Ne,
        Raw::Bang => Tok::Bang,
        Raw::AndAnd => Tok::AndAnd,
        Raw::OrOr => Tok::OrOr,
        Raw::Underscore => Tok::Underscore,
        Raw::BlockComment => Tok::BlockComment,
        Raw::DashComment => Tok::DashComment,
        Raw::Ident => Tok::RawIdent,
        // Read from their text by `lex`; never asked for here.
        Raw::Int => Tok::Int(0),
        Raw::Float => Tok::Float(FloatLit(0.0)),
        Raw::Quote => Tok::Str(String::new()),
    }
}

/// Reports (once) a program nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH),
/// estimated from the tokens: open brackets plus the constructs whose body
/// runs to the right (`fn … =>`, `else`, unary `-`) that are still open.
/// `let … in`, `if … then`, `,` and closing brackets close what they end, so
/// long programs (a chain of 100,000 `let`s) stay shallow. When this fires the
/// parser is not run: parsing (and LR error recovery) on such input is what
/// the limit protects against.
fn check_nesting(toks: &[Spanned], diags: &mut Vec<Diagnostic>) {
    #[derive(PartialEq)]
    enum Open {
        Bracket,
        MatchArms,
        Let,
        If,
        Then,
        Prefix,
    }
    let mut opens: Vec<Open> = Vec::new();
    let pop_until = |opens: &mut Vec<Open>, stop: Open| {
        while let Some(top) = opens.pop() {
            if top == stop {
                break;
            }
        }
    };
    for (i, (l, tok, r)) in toks.iter().enumerate() {
        match tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => opens.push(Open::Bracket),
            Tok::MatchLBrace => opens.push(Open::MatchArms),
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                while let Some(top) = opens.pop() {
                    if matches!(top, Open::Bracket | Open::MatchArms) {
                        break;
                    }
                }
            }
            Tok::Let => opens.push(Open::Let),
            Tok::In => pop_until(&mut opens, Open::Let),
            Tok::If => opens.push(Open::If),
            Tok::Then => {
                pop_until(&mut opens, Open::If);
                opens.push(Open::Then);
            }
            Tok::Else => {
                pop_until(&mut opens, Open::Then);
                opens.push(Open::Prefix);
            }
            // An arm's body ends at `,` or `}`: it adds no level of its own.
            Tok::FatArrow if opens.last() == Some(&Open::MatchArms) => {}
            Tok::FatArrow => opens.push(Open::Prefix),
            Tok::Comma => {
                while opens
                    .last()
                    .is_some_and(|o| !matches!(o, Open::Bracket | Open::MatchArms))
                {
                    opens.pop();
                }
            }
            Tok::Semi => opens.clear(),
            Tok::Minus => {
                let after_operand = i > 0
                    && matches!(
                        toks[i - 1].1,
                        Tok::Ident(_)
                            | Tok::Int(_)
                            | Tok::Float(_)
                            | Tok::None
                            | Tok::Str(_)
                            | Tok::True
                            | Tok::False
                            | Tok::RParen
                            | Tok::RBracket
                            | Tok::RBrace
                    );
                if !after_operand {
                    opens.push(Open::Prefix);
                }
            }
            _ => {}
        }
        if opens.len() > super::MAX_DEPTH as usize {
            diags.push(
                Diagnostic::error(
                    Code::E0103,
                    Span::new(*l, *r),
                    format!("program is nested more than {} levels deep", super::MAX_DEPTH),
                )
                .with_label("nesting limit reached here")
                .with_help("split the expression with `let` bindings (a `let … in` chain does not count as nesting)"),
            );
            return;
        }
    }
}

/// Turns each `{` that opens match arms into [`Tok::MatchLBrace`]: a `{`
/// followed by `Ok`, `Err`, `_`, or any token and then `=>`; or an empty
/// `{ }` where a `match` at the same bracket depth still awaits its arms and
/// no other `{` follows (so `match x { }` is an empty match, while
/// `match f {} { … }` passes an empty record to `f`). The `{` after
/// `scope` or `gather`, and a `while`/`for` loop's body `{`, never opens
/// match arms (`scope { Ok(1) }`, `while c { Ok(1) }`).
fn mark_match_braces(toks: &mut [Spanned]) {
    let mut depth: u32 = 0;
    let mut pending: Vec<u32> = Vec::new();
    // The depths of the `while`/`for` loops whose body `{` is still to come.
    let mut loops: Vec<u32> = Vec::new();
    for i in 0..toks.len() {
        match toks[i].1 {
            Tok::Match => pending.push(depth),
            Tok::While | Tok::For => loops.push(depth),
            // A loop whose body never came (a syntax error) awaits no more.
            Tok::Semi => {
                while loops.last().is_some_and(|&d| d >= depth) {
                    loops.pop();
                }
            }
            Tok::LBrace => {
                let next = toks.get(i + 1).map(|t| &t.1);
                let after = toks.get(i + 2).map(|t| &t.1);
                let awaited = pending.last() == Some(&depth);
                // The `{` of `scope {` and `gather {` opens a block or a
                // record, never match arms; nor does a loop's body `{` (the
                // first `{` at the loop's depth after its head atom, which
                // is not itself a record, a `scope` or a `gather`).
                let prev = i.checked_sub(1).map(|j| &toks[j].1);
                let after_block_kw = matches!(prev, Some(Tok::Scope | Tok::Gather));
                let loop_body = loops.last() == Some(&depth)
                    && !matches!(prev, Some(Tok::While | Tok::In | Tok::Scope | Tok::Gather));
                if loop_body {
                    loops.pop();
                }
                let opens_arms = !after_block_kw
                    && !loop_body
                    && (matches!(
                        next,
                        Some(Tok::Ok | Tok::Err | Tok::Some | Tok::None | Tok::Underscore)
                    ) || (matches!(after, Some(Tok::FatArrow))
                        && !matches!(next, Some(Tok::RBrace)))
                        || (awaited
                            && matches!(next, Some(Tok::RBrace))
                            && !matches!(after, Some(Tok::LBrace))));
                if opens_arms {
                    toks[i].1 = Tok::MatchLBrace;
                    if awaited {
                        pending.pop();
                    }
                }
                depth += 1;
            }
            Tok::LParen | Tok::LBracket => depth += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                depth = depth.saturating_sub(1);
                while pending.last().is_some_and(|&d| d > depth) {
                    pending.pop();
                }
                while loops.last().is_some_and(|&d| d > depth) {
                    loops.pop();
                }
            }
            _ => {}
        }
    }
}

/// The names [`mark_contextual_keywords`] may turn into keywords.
const CONTEXTUAL: [&str; 10] = [
    "type", "effect", "with", "Option", "Some", "None", "gather", "scope", "approve", "undo",
];

/// Turns the names `type`, `effect` and `with` into keywords where they
/// start a declaration or a record update (extensions), so that they stay
/// ordinary names everywhere else (a tool's field called `type` is common):
///
/// * `type` at the start of the program or after `;`, followed by a name and `=`;
/// * `effect` at the start of the program or after `;`, followed by a name;
/// * `with` followed by a name and `=` (`{r with f = v}`).
fn mark_contextual_keywords(toks: &mut [Spanned]) {
    // `Option`, `Some` and `None` are names in λ-Tool: a program that binds
    // one (`let None = …`, `fn Some => …`, `tool Option: …`, `Ok(None)`)
    // keeps it as a name throughout, and a field label or a field access
    // stays a name anywhere.
    let bound: Vec<Name> = (0..toks.len())
        .filter_map(|i| {
            let Tok::Ident(name) = &toks[i].1 else {
                return None;
            };
            if !matches!(
                &**name,
                "Option" | "Some" | "None" | "gather" | "scope" | "undo" | "approve"
            ) || i == 0
            {
                return None;
            }
            let next = toks.get(i + 1).map(|t| &t.1);
            let binder = match &toks[i - 1].1 {
                Tok::Let | Tok::Fn => true,
                Tok::Tool => i < 2 || !matches!(toks[i - 2].1, Tok::Exec),
                // `Ok(None) =>` as a pattern, `fn (None: Int) => …` (but
                // not the expressions `Ok(Some(1))` or `match Err(None) {`)
                Tok::LParen => {
                    let after = toks.get(i + 2).map(|t| &t.1);
                    i >= 2
                        && matches!(toks[i - 2].1, Tok::Ok | Tok::Err | Tok::Fn)
                        && (matches!(next, Some(Tok::Colon))
                            || (matches!(next, Some(Tok::RParen))
                                && matches!(after, Some(Tok::FatArrow))))
                }
                // `Ok None => …` (a pattern without parentheses)
                Tok::Ok | Tok::Err => matches!(next, Some(Tok::FatArrow)),
                _ => false,
            };
            binder.then(|| name.clone())
        })
        .collect();
    for i in 0..toks.len() {
        let Tok::Ident(name) = &toks[i].1 else {
            continue;
        };
        let at_decl = i == 0 || matches!(toks[i - 1].1, Tok::Semi);
        let next_is_name = matches!(toks.get(i + 1).map(|t| &t.1), Some(Tok::Ident(_)));
        let then_eq = matches!(toks.get(i + 2).map(|t| &t.1), Some(Tok::Eq));
        let prev = i.checked_sub(1).map(|j| &toks[j].1);
        let next = toks.get(i + 1).map(|t| &t.1);
        let label = matches!(prev, Some(Tok::LBrace | Tok::Comma | Tok::With))
            && matches!(next, Some(Tok::Eq | Tok::Colon | Tok::Question));
        let as_name = bound.contains(name)
            || label
            || matches!(
                prev,
                Some(Tok::Dot | Tok::Tool | Tok::TypeKw | Tok::EffectKw)
            );
        let kw = match &**name {
            "type" if at_decl && next_is_name && then_eq => Tok::TypeKw,
            "effect" if at_decl && next_is_name => Tok::EffectKw,
            "with" if i > 0 && next_is_name && then_eq => Tok::With,
            "Option" if !as_name => Tok::Option,
            "Some" if !as_name => Tok::Some,
            "None" if !as_name => Tok::None,
            "gather" if !bound.contains(name) && matches!(next, Some(Tok::LBrace)) => Tok::Gather,
            "scope" if !bound.contains(name) && matches!(next, Some(Tok::LBrace)) => Tok::Scope,
            "approve" if !bound.contains(name) && matches!(next, Some(Tok::Tool)) => Tok::Approve,
            "undo"
                if !bound.contains(name)
                    && next_is_name
                    && matches!(toks.get(i + 2).map(|t| &t.1), Some(Tok::LParen)) =>
            {
                Tok::Undo
            }
            _ => continue,
        };
        toks[i].1 = kw;
    }
}
