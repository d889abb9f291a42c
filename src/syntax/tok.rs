//! The kinds of token the lexer ([`super::token::lex`]) produces and the
//! parser consumes: [`Tok`], its literals, [`LexError`] and [`Spanned`].
//! Below both the lexer and its repair pass ([`super::repair`]), which
//! rewrite token streams of these kinds.

use super::ast::Name;
use std::fmt;

/// What went wrong while reading one token.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum LexError {
    /// A character that starts no token.
    #[default]
    UnexpectedChar,
    /// A string with no closing quote.
    UnterminatedString,
    /// A `(*` with no matching `*)`.
    UnterminatedComment,
    /// A bad `\` escape at the given byte range relative to the token start.
    InvalidEscape(usize, usize),
    /// An integer literal that does not fit in 64 bits.
    IntOverflow,
    /// A Float literal too large to be finite (`1e999`).
    FloatOverflow,
}

/// A token of lt source. Keyword and punctuation variants are named after
/// what they spell (`Let` is `let`, `FatArrow` is `=>`); see `Display`.
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `(* … *)`, nested; dropped before parsing.
    BlockComment,
    /// `-- …` to the end of the line: not a comment in lt; reported and skipped.
    DashComment,

    Tool,
    Let,
    Rec,
    In,
    Fn,
    If,
    Then,
    Else,
    Match,
    Exec,
    True,
    False,
    Ok,
    Err,
    List,
    Result,
    /// `Option` (extension; contextual, see [`lex`](super::token::lex)).
    Option,
    /// `Some` (extension; contextual).
    Some,
    /// `None` (extension; contextual).
    None,
    /// `type`, at the start of a declaration `type Name = T;` (extension;
    /// elsewhere `type` is an ordinary name, e.g. a field).
    TypeKw,
    /// `effect`, at the start of a declaration `effect Payment;` (extension).
    EffectKw,
    /// `with` in a record update `{r with f = v}` (extension).
    With,
    While,
    For,

    LParen,
    RParen,
    LBrace,
    /// A `{` that opens match arms (produced by [`lex`](super::token::lex), never by logos).
    MatchLBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Colon,
    Dot,
    DotDot,
    /// `@intent` (extension): an annotation, `@intent("why", …) e`.
    AtIntent,
    /// `gather` followed by `{` (extension; contextual).
    Gather,
    /// `scope` followed by `{` (extension; contextual).
    Scope,
    /// `undo` in a tool declaration, `undo NAME(…)` (extension; contextual).
    Undo,
    /// `approve` followed by `tool` (extension; contextual).
    Approve,

    /// `?:` in an optional field `email?: String` (one token, so that a
    /// stray `?` stays an unreadable character).
    Question,
    Bar,
    Eq,
    FatArrow,
    Arrow,
    Minus,
    Plus,
    PlusPlus,
    Star,
    Slash,
    Percent,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    Ne,
    Bang,
    AndAnd,
    OrOr,
    Underscore,

    Int(i64),
    /// A Float literal `1.5`, `2.0e-3`, `1e6` (extension), kept as its text
    /// (so that tokens compare exactly) and parsed by the grammar's action.
    Float(FloatLit),
    Str(String),
    /// A name as logos sees it; [`lex`](super::token::lex) turns it into [`Tok::Ident`].
    RawIdent,
    /// A name (interned by [`lex`](super::token::lex): equal names share one allocation).
    Ident(Name),
}

/// A finite Float literal (its value; `Eq` by bits so tokens compare).
#[derive(Clone, Copy, Debug)]
pub struct FloatLit(pub f64);

impl PartialEq for FloatLit {
    fn eq(&self, other: &FloatLit) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Tok::BlockComment | Tok::DashComment => "comment",
            Tok::Tool => "tool",
            Tok::Let => "let",
            Tok::Rec => "rec",
            Tok::In => "in",
            Tok::Fn => "fn",
            Tok::If => "if",
            Tok::Then => "then",
            Tok::Else => "else",
            Tok::Match => "match",
            Tok::Exec => "exec",
            Tok::True => "true",
            Tok::False => "false",
            Tok::Ok => "Ok",
            Tok::Err => "Err",
            Tok::List => "List",
            Tok::Result => "Result",
            Tok::Option => "Option",
            Tok::Some => "Some",
            Tok::None => "None",
            Tok::TypeKw => "type",
            Tok::EffectKw => "effect",
            Tok::With => "with",
            Tok::DotDot => "..",
            Tok::AtIntent => "@intent",
            Tok::Gather => "gather",
            Tok::Scope => "scope",
            Tok::Undo => "undo",
            Tok::Approve => "approve",
            Tok::Question => "?:",
            Tok::Bar => "|",
            Tok::Float(x) => return write!(f, "{:?}", x.0),
            Tok::While => "while",
            Tok::For => "for",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace | Tok::MatchLBrace => "{",
            Tok::RBrace => "}",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::Dot => ".",
            Tok::Eq => "=",
            Tok::FatArrow => "=>",
            Tok::Arrow => "->",
            Tok::Minus => "-",
            Tok::Plus => "+",
            Tok::PlusPlus => "++",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Le => "<=",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::Bang => "!",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Underscore => "_",
            Tok::Int(n) => return write!(f, "{n}"),
            Tok::Str(s) => return write!(f, "{s:?}"),
            Tok::Ident(s) => return f.write_str(s),
            Tok::RawIdent => "name",
        };
        f.write_str(s)
    }
}

/// A token with its byte range, as the parser consumes it.
pub type Spanned = (usize, Tok, usize);
