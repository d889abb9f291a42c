//! The fast path's expressions (see [`super`]).

use super::{Descent, Node};
use crate::syntax::ast::*;
use crate::syntax::build as b;
use crate::syntax::tok::Tok;

impl Descent<'_> {
    /// `Expr`: `let` heads, then an expression that is not a `let`.
    pub(super) fn expr(&mut self) -> Node<Expr> {
        self.deeper()?;
        let l = self.start()?;
        let out = if self.at(&Tok::Let) {
            let mut heads: Vec<Box<LetBinding>> = Vec::new();
            while self.at(&Tok::Let) {
                heads.push(Box::new(self.let_head()?));
            }
            let (body, _, r) = self.expr_no_let()?;
            (b::let_chain(&mut self.st, heads, body, l, r), l, r)
        } else {
            self.expr_no_let()?
        };
        self.nesting -= 1;
        Some(out)
    }

    fn let_head(&mut self) -> Option<LetBinding> {
        let l = self.start()?;
        self.expect(&Tok::Let)?;
        let rec_kw = match self.toks.get(self.pos) {
            Some((a, Tok::Rec, z)) => {
                self.pos += 1;
                Some(b::span(*a, *z))
            }
            _ => None,
        };
        let name = match self.toks.get(self.pos)? {
            (a, Tok::Underscore, z) => {
                self.pos += 1;
                b::ident("_".into(), *a, *z)
            }
            _ => self.ident()?,
        };
        let annot = if self.eat(&Tok::Colon) {
            Some(Box::new(self.ty()?.0))
        } else {
            None
        };
        self.expect(&Tok::Eq)?;
        let (value, _, vr) = self.expr()?;
        self.expect(&Tok::In)?;
        Some(b::let_binding(rec_kw, name, annot, value, l, vr))
    }

    fn expr_no_let(&mut self) -> Node<Expr> {
        let l = self.start()?;
        match self.peek()? {
            Tok::Fn => {
                self.pos += 1;
                let (param, annot) = if self.eat(&Tok::LParen) {
                    let param = self.ident()?;
                    self.expect(&Tok::Colon)?;
                    let (t, _, _) = self.ty()?;
                    self.expect(&Tok::RParen)?;
                    (param, Some(Box::new(t)))
                } else {
                    let param = self.ident()?;
                    let annot = if self.eat(&Tok::Colon) {
                        Some(Box::new(self.ty()?.0))
                    } else {
                        None
                    };
                    (param, annot)
                };
                self.expect(&Tok::FatArrow)?;
                let (body, _, r) = self.expr()?;
                let kind = ExprKind::Fn {
                    param,
                    annot,
                    body: Box::new(body),
                };
                Some((b::expr(&mut self.st, kind, l, r), l, r))
            }
            Tok::AtIntent => {
                self.pos += 1;
                self.expect(&Tok::LParen)?;
                let (intent, _, _) = self.string()?;
                let mut extra: Vec<(Ident, String)> = Vec::new();
                while self.eat(&Tok::Comma) {
                    let name = self.ident()?;
                    self.expect(&Tok::Eq)?;
                    extra.push((name, self.string()?.0));
                }
                self.expect(&Tok::RParen)?;
                let ar = self.end();
                let (body, _, r) = self.expr()?;
                let e = b::annotate(&mut self.st, intent, extra, b::span(l, ar), body, l, r);
                Some((e, l, r))
            }
            Tok::If => {
                self.pos += 1;
                let (c, _, _) = self.expr()?;
                self.expect(&Tok::Then)?;
                let (t, _, _) = self.expr()?;
                self.expect(&Tok::Else)?;
                let (f, _, r) = self.expr()?;
                let kind = ExprKind::If(Box::new(c), Box::new(t), Box::new(f));
                Some((b::expr(&mut self.st, kind, l, r), l, r))
            }
            // Loops are rejected anyway; the LR parser builds their nodes.
            Tok::While | Tok::For => None,
            _ => self.or_expr(),
        }
    }

    /// A left-associative level: `next (op next)*`.
    fn binary_level(
        &mut self,
        next: fn(&mut Self) -> Node<Expr>,
        op: fn(&Tok) -> Option<BinOp>,
    ) -> Node<Expr> {
        let (mut a, l, mut r) = next(self)?;
        while let Some(o) = self.peek().and_then(op) {
            let (ol, or) = self.toks.get(self.pos).map(|t| (t.0, t.2))?;
            self.pos += 1;
            let (c, _, cr) = next(self)?;
            r = cr;
            a = b::binary(&mut self.st, o, a, c, ol, or, l, r);
        }
        Some((a, l, r))
    }

    fn or_expr(&mut self) -> Node<Expr> {
        self.binary_level(Self::and_expr, |t| {
            matches!(t, Tok::OrOr).then_some(BinOp::Or)
        })
    }

    fn and_expr(&mut self) -> Node<Expr> {
        self.binary_level(Self::cmp_expr, |t| {
            matches!(t, Tok::AndAnd).then_some(BinOp::And)
        })
    }

    /// Comparisons do not chain: `a < b < c` is left to the LR parser.
    fn cmp_expr(&mut self) -> Node<Expr> {
        let (a, l, r) = self.add_expr()?;
        let Some(o) = self.peek().and_then(cmp_op) else {
            return Some((a, l, r));
        };
        let (ol, or) = self.toks.get(self.pos).map(|t| (t.0, t.2))?;
        self.pos += 1;
        let (c, _, r) = self.add_expr()?;
        if self.peek().and_then(cmp_op).is_some() {
            return None;
        }
        Some((b::binary(&mut self.st, o, a, c, ol, or, l, r), l, r))
    }

    fn add_expr(&mut self) -> Node<Expr> {
        self.binary_level(Self::mul_expr, |t| match t {
            Tok::Plus => Some(BinOp::Add),
            Tok::Minus => Some(BinOp::Sub),
            Tok::PlusPlus => Some(BinOp::Concat),
            _ => None,
        })
    }

    fn mul_expr(&mut self) -> Node<Expr> {
        self.binary_level(Self::unary_expr, |t| match t {
            Tok::Star => Some(BinOp::Mul),
            Tok::Slash => Some(BinOp::Div),
            Tok::Percent => Some(BinOp::Rem),
            _ => None,
        })
    }

    fn unary_expr(&mut self) -> Node<Expr> {
        if !self.at(&Tok::Minus) {
            return self.app_expr();
        }
        let l = self.start()?;
        self.pos += 1;
        self.deeper()?;
        let (e, _, r) = self.unary_expr()?;
        self.nesting -= 1;
        let e = b::expr(&mut self.st, ExprKind::Neg(Box::new(e)), l, r);
        Some((e, l, r))
    }

    /// `f a b`: a prefix form or an atom, applied to atoms.
    fn app_expr(&mut self) -> Node<Expr> {
        let (mut f, l, mut r) = self.prefix_expr()?;
        while starts_atom(self.peek()) {
            let (a, _, ar) = self.atom()?;
            r = ar;
            f = b::expr(&mut self.st, ExprKind::App(Box::new(f), Box::new(a)), l, r);
        }
        Some((f, l, r))
    }

    fn prefix_expr(&mut self) -> Node<Expr> {
        let l = self.start()?;
        let kind = match self.peek()? {
            Tok::Exec | Tok::Approve => {
                let exec = self.at(&Tok::Exec);
                self.pos += 1;
                self.expect(&Tok::Tool)?;
                let t = self.ident()?;
                let (a, _, _) = self.atom()?;
                if exec {
                    ExprKind::Exec(t, Box::new(a))
                } else {
                    ExprKind::Approve(t, Box::new(a))
                }
            }
            Tok::Ok | Tok::Err | Tok::Some => {
                let which = self.peek()?.clone();
                self.pos += 1;
                let (a, _, _) = self.atom()?;
                match which {
                    Tok::Ok => ExprKind::Ok(Box::new(a)),
                    Tok::Err => ExprKind::Err(Box::new(a)),
                    _ => ExprKind::Some(Box::new(a)),
                }
            }
            _ => return self.atom(),
        };
        let r = self.end();
        Some((b::expr(&mut self.st, kind, l, r), l, r))
    }

    /// An atom and the fields read from it: `a.b.c`.
    fn atom(&mut self) -> Node<Expr> {
        let (mut e, l, mut r) = self.primary()?;
        while self.eat(&Tok::Dot) {
            let f = self.ident()?;
            r = self.end();
            e = b::expr(&mut self.st, ExprKind::Field(Box::new(e), f), l, r);
        }
        Some((e, l, r))
    }

    fn primary(&mut self) -> Node<Expr> {
        let (l, tok, r) = self.toks.get(self.pos)?;
        let (l, r) = (*l, *r);
        let kind = match tok {
            Tok::Int(n) => ExprKind::Int(*n),
            Tok::Float(x) => ExprKind::Float(x.0),
            Tok::None => ExprKind::None,
            Tok::Str(s) => ExprKind::Str(s.clone()),
            Tok::True => ExprKind::Bool(true),
            Tok::False => ExprKind::Bool(false),
            Tok::Ident(n) => ExprKind::Var(b::ident(n.clone(), l, r)),
            Tok::LParen => {
                self.pos += 1;
                if self.eat(&Tok::RParen) {
                    let r = self.end();
                    return Some((b::expr(&mut self.st, ExprKind::Unit, l, r), l, r));
                }
                // `( Expr )` is the inner expression itself.
                let (e, _, _) = self.expr()?;
                self.expect(&Tok::RParen)?;
                return Some((e, l, self.end()));
            }
            Tok::LBrace => return self.braces(),
            Tok::Scope => {
                self.pos += 1;
                self.expect(&Tok::LBrace)?;
                let (e, _, _) = self.expr()?;
                self.expect(&Tok::RBrace)?;
                let r = self.end();
                let e = b::expr(&mut self.st, ExprKind::Scope(Box::new(e)), l, r);
                return Some((e, l, r));
            }
            Tok::Gather => {
                self.pos += 1;
                let rl = self.start()?;
                self.expect(&Tok::LBrace)?;
                let fields = self.comma(Self::field_init, &Tok::RBrace)?;
                self.expect(&Tok::RBrace)?;
                let r = self.end();
                let record = b::expr(&mut self.st, ExprKind::Record(b::unbox(fields)), rl, r);
                let e = b::expr(&mut self.st, ExprKind::Gather(Box::new(record)), l, r);
                return Some((e, l, r));
            }
            Tok::LBracket => return self.list(),
            Tok::Match => {
                self.pos += 1;
                let (s, _, _) = self.expr()?;
                self.expect(&Tok::MatchLBrace)?;
                let arms = self.comma(Self::arm, &Tok::RBrace)?;
                self.expect(&Tok::RBrace)?;
                let r = self.end();
                let kind = ExprKind::Match(Box::new(s), b::unbox(arms));
                return Some((b::expr(&mut self.st, kind, l, r), l, r));
            }
            _ => return None,
        };
        self.pos += 1;
        Some((b::expr(&mut self.st, kind, l, r), l, r))
    }

    /// `{ fields }` or `{ e with fields }`.
    fn braces(&mut self) -> Node<Expr> {
        let l = self.start()?;
        self.expect(&Tok::LBrace)?;
        let record = matches!(
            (self.peek(), self.peek_at(1)),
            (Some(Tok::RBrace), _) | (Some(Tok::Ident(_)), Some(Tok::Eq))
        );
        let kind = if record {
            let fields = self.comma(Self::field_init, &Tok::RBrace)?;
            ExprKind::Record(b::unbox(fields))
        } else {
            let (base, _, _) = self.expr()?;
            self.expect(&Tok::With)?;
            let fields = self.comma1(Self::field_init)?;
            ExprKind::Update(Box::new(base), b::unbox(fields))
        };
        self.expect(&Tok::RBrace)?;
        let r = self.end();
        Some((b::expr(&mut self.st, kind, l, r), l, r))
    }

    fn field_init(&mut self) -> Option<Box<Field>> {
        let name = self.ident()?;
        self.expect(&Tok::Eq)?;
        let (value, _, _) = self.expr()?;
        Some(Box::new(Field { name, value }))
    }

    /// `[a, b]`, `[]`, `[]: T`.
    fn list(&mut self) -> Node<Expr> {
        let l = self.start()?;
        self.expect(&Tok::LBracket)?;
        let kind = if self.eat(&Tok::RBracket) {
            if self.eat(&Tok::Colon) {
                let (t, _, _) = self.app_type()?;
                ExprKind::List(vec![], Some(Box::new(t)))
            } else {
                ExprKind::List(vec![], None)
            }
        } else {
            let elems = self.comma1(|p: &mut Self| p.expr().map(|(e, _, _)| e))?;
            self.expect(&Tok::RBracket)?;
            ExprKind::List(elems, None)
        };
        let r = self.end();
        Some((b::expr(&mut self.st, kind, l, r), l, r))
    }

    fn arm(&mut self) -> Option<Box<Arm>> {
        let l = self.start()?;
        let pattern = self.pattern()?;
        self.expect(&Tok::FatArrow)?;
        let (body, _, r) = self.expr()?;
        Some(Box::new(Arm {
            pattern,
            body,
            span: b::span(l, r),
        }))
    }

    fn pattern(&mut self) -> Option<Pattern> {
        let l = self.start()?;
        let kind = match self.peek()? {
            Tok::Ok | Tok::Err | Tok::Some => {
                let which = self.peek()?.clone();
                self.pos += 1;
                let x = if self.eat(&Tok::LParen) {
                    let x = self.binder()?;
                    self.expect(&Tok::RParen)?;
                    x
                } else {
                    self.binder()?
                };
                match which {
                    Tok::Ok => PatternKind::Ok(x),
                    Tok::Err => PatternKind::Err(x),
                    _ => PatternKind::Some(x),
                }
            }
            Tok::Underscore => {
                self.pos += 1;
                PatternKind::Wildcard
            }
            Tok::None => {
                self.pos += 1;
                PatternKind::None
            }
            Tok::Str(_) => PatternKind::Str(self.string()?.0),
            _ => PatternKind::Var(self.ident()?),
        };
        Some(Pattern {
            kind,
            span: b::span(l, self.end()),
        })
    }

    fn binder(&mut self) -> Option<Binder> {
        match self.toks.get(self.pos)? {
            (l, Tok::Underscore, r) => {
                self.pos += 1;
                Some(Binder::Wildcard(b::span(*l, *r)))
            }
            _ => Some(Binder::Var(self.ident()?)),
        }
    }
}

fn cmp_op(t: &Tok) -> Option<BinOp> {
    Some(match t {
        Tok::EqEq => BinOp::Eq,
        Tok::Ne => BinOp::Ne,
        Tok::Lt => BinOp::Lt,
        Tok::Gt => BinOp::Gt,
        Tok::Le => BinOp::Le,
        Tok::Ge => BinOp::Ge,
        _ => return None,
    })
}

/// The tokens an `Atom` starts with (an argument in `f a b`).
fn starts_atom(t: Option<&Tok>) -> bool {
    matches!(
        t,
        Some(
            Tok::LParen
                | Tok::Int(_)
                | Tok::Float(_)
                | Tok::None
                | Tok::Str(_)
                | Tok::True
                | Tok::False
                | Tok::Ident(_)
                | Tok::LBrace
                | Tok::Scope
                | Tok::Gather
                | Tok::LBracket
                | Tok::Match
        )
    )
}
