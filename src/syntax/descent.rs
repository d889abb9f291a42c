//! The fast path of parsing: a recursive-descent reading of the grammar
//! (`grammar/lt.lalrpop`) for programs without syntax errors.
//!
//! It builds exactly the tree the LR parser builds, with the same builders
//! (`super::build`) called in the same order and the same spans, but without
//! the LR machinery (a table lookup, a stack entry moved twice, a reduction
//! per grammar level). It gives up, returning `None`, at the first token the
//! grammar does not allow, on the constructs it leaves to the LR parser
//! (loops, malformed declarations, a missing expression), on nesting deeper
//! than [`MAX_NESTING`], and whenever a builder reports something (depth,
//! `@intent` fields): the LR parser then parses the tokens again and
//! reports, so every diagnostic comes from one place.
//!
//! Each parsing function returns the node with the byte range of its tokens
//! (`l`, `r`, what the grammar's `@L`/`@R` give): a parenthesized expression
//! is its inner node, but a construct around it starts at the `(`.
//! `tests::descent_agrees_with_lr` checks both parsers against each other.

use super::ast::*;
use super::build::{self as b, ParseState};
use super::tok::{Spanned, Tok};

/// Nesting (of expressions, types, unary minus) beyond which the fast path
/// gives up, so that its recursion stays shallow; the LR parser keeps its
/// stack on the heap.
const MAX_NESTING: u32 = 64;

/// How often (in levels of nesting) the fast path checks the stack.
const STACK_CHECK_EVERY: u32 = 8;

/// The stack the fast path wants left at a check: far more than
/// [`STACK_CHECK_EVERY`] levels take.
const STACK_MIN: usize = 256 * 1024;

/// A node with the byte range of its tokens.
type Node<T> = Option<(T, usize, usize)>;

/// Parses `toks`; `None` when the LR parser must (see the module note).
pub(super) fn parse(toks: &[Spanned], expression_optional: bool) -> Option<(Program, ParseState)> {
    let mut p = Descent {
        toks,
        pos: 0,
        nesting: 0,
        st: ParseState::default(),
    };
    p.st.expression_optional = expression_optional;
    let program = p.program()?;
    if !p.st.diags.is_empty() || p.pos != toks.len() {
        return None;
    }
    Some((program, p.st))
}

struct Descent<'t> {
    toks: &'t [Spanned],
    pos: usize,
    nesting: u32,
    st: ParseState,
}

impl Descent<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.1)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Tok> {
        self.toks.get(self.pos + ahead).map(|t| &t.1)
    }

    fn at(&self, tok: &Tok) -> bool {
        self.peek() == Some(tok)
    }

    /// Where the next token starts (`@L`).
    fn start(&self) -> Option<usize> {
        self.toks.get(self.pos).map(|t| t.0)
    }

    /// Where the last token read ends (`@R`).
    fn end(&self) -> usize {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or(0, |t| t.2)
    }

    /// Reads `tok`, or gives up.
    fn expect(&mut self, tok: &Tok) -> Option<()> {
        if self.at(tok) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    /// Reads `tok` if it is next.
    fn eat(&mut self, tok: &Tok) -> bool {
        let here = self.at(tok);
        if here {
            self.pos += 1;
        }
        here
    }

    /// One level deeper; gives up past [`MAX_NESTING`], or when the
    /// thread's stack runs low (checked every [`STACK_CHECK_EVERY`] levels,
    /// each a few frames).
    fn deeper(&mut self) -> Option<()> {
        self.nesting += 1;
        let room = !self.nesting.is_multiple_of(STACK_CHECK_EVERY)
            || stacker::remaining_stack().is_none_or(|left| left >= STACK_MIN);
        (self.nesting <= MAX_NESTING && room).then_some(())
    }

    fn ident(&mut self) -> Option<Ident> {
        let (l, Tok::Ident(n), r) = self.toks.get(self.pos)? else {
            return None;
        };
        self.pos += 1;
        Some(b::ident(n.clone(), *l, *r))
    }

    fn string(&mut self) -> Option<(String, usize, usize)> {
        let (l, Tok::Str(s), r) = self.toks.get(self.pos)? else {
            return None;
        };
        self.pos += 1;
        Some((s.clone(), *l, *r))
    }

    // ------------------------------------------------------------ program

    fn program(&mut self) -> Option<Program> {
        let l = self.start()?;
        let mut decls: Vec<Box<Decl>> = Vec::new();
        while matches!(self.peek(), Some(Tok::Tool | Tok::TypeKw | Tok::EffectKw)) {
            decls.push(Box::new(self.decl()?));
        }
        // A missing expression is reported (or not) by the LR parser.
        let (body, _, _) = self.expr()?;
        let r = self.end();
        Some(b::program(&mut self.st, decls, Some(body), l, r))
    }

    fn decl(&mut self) -> Option<Decl> {
        let l = self.start()?;
        match self.peek()? {
            Tok::Tool => {
                self.pos += 1;
                let name = self.ident()?;
                self.expect(&Tok::Colon)?;
                let (ty, _, _) = self.ty()?;
                let undo = if self.at(&Tok::Undo) {
                    Some(Box::new(self.undo()?))
                } else {
                    None
                };
                self.expect(&Tok::Semi)?;
                Some(b::tool_decl(name, ty, undo, l, self.end()))
            }
            Tok::TypeKw => {
                self.pos += 1;
                let name = self.ident()?;
                self.expect(&Tok::Eq)?;
                let (ty, _, _) = self.ty()?;
                self.expect(&Tok::Semi)?;
                Some(Decl::Type(TypeAlias {
                    name,
                    ty,
                    span: b::span(l, self.end()),
                }))
            }
            _ => {
                self.expect(&Tok::EffectKw)?;
                let labels = self.comma1(Self::ident)?;
                self.expect(&Tok::Semi)?;
                Some(Decl::Effect(labels, b::span(l, self.end())))
            }
        }
    }

    fn undo(&mut self) -> Option<UndoDecl> {
        let l = self.start()?;
        self.expect(&Tok::Undo)?;
        let tool = self.ident()?;
        self.expect(&Tok::LParen)?;
        let from = self.ident()?;
        self.expect(&Tok::RParen)?;
        Some(UndoDecl {
            tool,
            from,
            span: b::span(l, self.end()),
        })
    }

    /// `Comma1<T>`: `T (, T)* ,?`, ended by a token `item` cannot start
    /// (the caller reads it).
    fn comma1<T>(&mut self, item: fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut out = vec![item(self)?];
        while self.eat(&Tok::Comma) {
            if self.at_close() {
                break;
            }
            out.push(item(self)?);
        }
        Some(out)
    }

    /// Whether a list ends here instead of taking another item after its
    /// `,` (the lists are closed by `]`, `}` or `;`; the caller checks which).
    fn at_close(&self) -> bool {
        matches!(
            self.peek(),
            None | Some(Tok::RParen | Tok::RBracket | Tok::RBrace | Tok::Semi)
        )
    }

    // -------------------------------------------------------------- types

    fn ty(&mut self) -> Node<TypeExpr> {
        self.deeper()?;
        let (a, l, ar) = self.app_type()?;
        let out = match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                let el = self.start()?;
                self.expect(&Tok::LBrace)?;
                let effs = self.comma(Self::ident, &Tok::RBrace)?;
                self.expect(&Tok::RBrace)?;
                let er = self.end();
                self.expect(&Tok::Arrow)?;
                let (ret, _, r) = self.ty()?;
                (b::fun_type(&mut self.st, a, effs, el, er, ret, l, r), l, r)
            }
            Some(Tok::Arrow) => {
                let el = self.start()?;
                self.pos += 1;
                let er = self.end();
                let (ret, _, r) = self.ty()?;
                (
                    b::fun_type(&mut self.st, a, vec![], el, er, ret, l, r),
                    l,
                    r,
                )
            }
            _ => (a, l, ar),
        };
        self.nesting -= 1;
        Some(out)
    }

    fn app_type(&mut self) -> Node<TypeExpr> {
        let l = self.start()?;
        let wrap = match self.peek()? {
            Tok::List => TypeExprKind::List,
            Tok::Bang => TypeExprKind::Linear,
            Tok::Option => TypeExprKind::Option,
            _ => return self.atom_type(),
        };
        self.pos += 1;
        self.deeper()?;
        let (t, _, r) = self.app_type()?;
        self.nesting -= 1;
        Some((b::ty(&mut self.st, wrap(Box::new(t)), l, r), l, r))
    }

    fn atom_type(&mut self) -> Node<TypeExpr> {
        let l = self.start()?;
        let kind = match self.peek()? {
            Tok::Ident(_) => TypeExprKind::Named(self.ident()?),
            Tok::LBrace => {
                self.pos += 1;
                let mut fields: Vec<Box<(Ident, TypeExpr)>> = Vec::new();
                let open = loop {
                    match self.peek()? {
                        Tok::RBrace => break false,
                        Tok::DotDot => {
                            self.pos += 1;
                            break true;
                        }
                        _ => {}
                    }
                    fields.push(Box::new(self.type_field()?));
                    if !self.eat(&Tok::Comma) {
                        break false;
                    }
                };
                self.expect(&Tok::RBrace)?;
                TypeExprKind::Record(b::unbox(fields), open)
            }
            Tok::Str(_) => {
                let (s, sl, sr) = self.string()?;
                let mut lits = vec![(s, b::span(sl, sr))];
                while self.eat(&Tok::Bar) {
                    let (s, sl, sr) = self.string()?;
                    lits.push((s, b::span(sl, sr)));
                }
                TypeExprKind::Enum(lits)
            }
            Tok::LBracket => {
                self.pos += 1;
                let (t, _, _) = self.ty()?;
                self.expect(&Tok::RBracket)?;
                TypeExprKind::List(Box::new(t))
            }
            Tok::Result => {
                self.pos += 1;
                self.expect(&Tok::Lt)?;
                let (a, _, _) = self.ty()?;
                self.expect(&Tok::Comma)?;
                let (e, _, _) = self.ty()?;
                self.expect(&Tok::Gt)?;
                TypeExprKind::Result(Box::new(a), Box::new(e))
            }
            Tok::LParen => {
                self.pos += 1;
                if self.eat(&Tok::RParen) {
                    TypeExprKind::Unit
                } else {
                    // `( Type )` is the inner type itself.
                    let (t, _, _) = self.ty()?;
                    self.expect(&Tok::RParen)?;
                    return Some((t, l, self.end()));
                }
            }
            _ => return None,
        };
        let r = self.end();
        Some((b::ty(&mut self.st, kind, l, r), l, r))
    }

    fn type_field(&mut self) -> Option<(Ident, TypeExpr)> {
        let name = self.ident()?;
        match self.peek()? {
            Tok::Colon => {
                self.pos += 1;
                let (t, _, _) = self.ty()?;
                Some((name, t))
            }
            Tok::Question => {
                self.pos += 1;
                let (t, l, r) = self.ty()?;
                let kind = TypeExprKind::Optional(Box::new(t));
                Some((name, b::ty(&mut self.st, kind, l, r)))
            }
            _ => None,
        }
    }

    /// `Comma<T>` before `close`: `(T ,)* T?`.
    fn comma<T>(&mut self, item: fn(&mut Self) -> Option<T>, close: &Tok) -> Option<Vec<T>> {
        let mut out = Vec::new();
        while !self.at(close) {
            out.push(item(self)?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        Some(out)
    }
}

mod expr;

#[cfg(test)]
mod tests;
