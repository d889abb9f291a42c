//! The logos scanner under [`lex`](super::token::lex): token kinds only.
//!
//! A [`Raw`] token carries no payload (names, numbers and strings are read
//! from the token's text by `lex`), so each step of the scanner returns a
//! byte-sized value instead of a token copied through memory. The patterns
//! are the language's tokens; see [`Tok`](super::tok::Tok) for what each
//! spells.

use logos::Logos;

/// What the scanner could not read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) enum RawError {
    /// A character that starts no token.
    #[default]
    UnexpectedChar,
    /// A `(*` with no matching `*)`.
    UnterminatedComment,
}

/// A token kind, as the scanner sees it.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(error = RawError)]
#[logos(skip r"[ \t\r\n\f\u{FEFF}]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
pub(super) enum Raw {
    #[token("(*", block_comment)]
    BlockComment,
    #[regex(r"--[ \t][^\n]*", allow_greedy = true)]
    DashComment,
    #[token("tool")]
    Tool,
    #[token("let")]
    Let,
    #[token("rec")]
    Rec,
    #[token("in")]
    In,
    #[token("fn")]
    Fn,
    #[token("if")]
    If,
    #[token("then")]
    Then,
    #[token("else")]
    Else,
    #[token("match")]
    Match,
    #[token("exec")]
    Exec,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("Ok")]
    Ok,
    #[token("Err")]
    Err,
    #[token("List")]
    List,
    #[token("Result")]
    Result,
    #[token("while")]
    While,
    #[token("for")]
    For,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
    #[token("@intent")]
    AtIntent,
    #[regex(r"\?[ \t]*:")]
    Question,
    #[token("|")]
    Bar,
    #[token("=")]
    Eq,
    #[token("=>")]
    FatArrow,
    #[token("->")]
    Arrow,
    #[token("-")]
    Minus,
    #[token("+")]
    Plus,
    #[token("++")]
    PlusPlus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("!")]
    Bang,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("_", priority = 10)]
    Underscore,
    #[regex(r"[0-9]+")]
    Int,
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")]
    Float,
    /// The opening `"`; `lex` reads the rest with [`string_literal`].
    #[token("\"")]
    Quote,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident,
}

fn block_comment(lex: &mut logos::Lexer<Raw>) -> Result<(), RawError> {
    let rest = lex.remainder().as_bytes();
    let mut depth = 1usize;
    let mut i = 0;
    while i < rest.len() {
        if rest[i] == b'(' && rest.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if rest[i] == b'*' && rest.get(i + 1) == Some(&b')') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                lex.bump(i);
                return Ok(());
            }
        } else {
            i += 1;
        }
    }
    lex.bump(rest.len());
    Err(RawError::UnterminatedComment)
}

/// How a string literal ends.
pub(super) enum StrEnd {
    /// Closed by `"`: its value with escapes decoded.
    Value(String),
    /// Closed, with a bad `\` escape at this byte range relative to the
    /// opening quote (the first one, if several).
    InvalidEscape(usize, usize),
    /// No closing `"` on its line.
    Unterminated,
}

/// Reads a string literal from `rest`, the text after its opening `"`:
/// the number of bytes it takes and how it ends. An unterminated string
/// runs to the end of its line.
pub(super) fn string_literal(rest: &str) -> (usize, StrEnd) {
    let mut out = String::new();
    let mut chars = rest.char_indices();
    let mut bad_escape: Option<(usize, usize)> = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let end = match bad_escape {
                    Some((a, b)) => StrEnd::InvalidEscape(a + 1, b + 1),
                    None => StrEnd::Value(out),
                };
                return (i + 1, end);
            }
            '\n' => break,
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, '0')) => out.push('\0'),
                Some((_, '"')) => out.push('"'),
                Some((_, '\\')) => out.push('\\'),
                Some((_, 'u')) => {
                    let after = &rest[i + 2..];
                    let parsed = after
                        .strip_prefix('{')
                        .and_then(|s| s.split_once('}'))
                        .filter(|(hex, _)| !hex.is_empty() && hex.len() <= 6)
                        .and_then(|(hex, _)| {
                            Some((
                                hex.len(),
                                char::from_u32(u32::from_str_radix(hex, 16).ok()?)?,
                            ))
                        });
                    match parsed {
                        Some((len, ch)) => {
                            out.push(ch);
                            for _ in 0..len + 2 {
                                chars.next();
                            }
                        }
                        None => {
                            bad_escape.get_or_insert((i, i + 2));
                        }
                    }
                }
                Some((j, other)) => {
                    bad_escape.get_or_insert((i, j + other.len_utf8()));
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    (rest.find('\n').unwrap_or(rest.len()), StrEnd::Unterminated)
}
