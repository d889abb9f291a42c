//! Builders called by the grammar's semantic actions.
//!
//! They compute spans and nesting depths, flatten `let` chains, and enforce
//! [`MAX_DEPTH`]: a node deeper than the limit is replaced by an error node
//! (reported once as `E0103`), so no later pass recurses deeper than the
//! limit and dropping the tree never overflows the stack.

use super::ast::*;
use super::tok::{LexError, Tok};
use super::MAX_DEPTH;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use lalrpop_util::ErrorRecovery;
use std::collections::VecDeque;

/// Mutable state threaded through the parser's actions.
#[derive(Default)]
pub struct ParseState {
    /// Syntax errors the parser recovered from.
    pub recovered: Vec<ErrorRecovery<usize, Tok, LexError>>,
    /// Diagnostics raised by the actions themselves.
    pub diags: Vec<Diagnostic>,
    /// Whether a text without an expression is a whole (a declarations
    /// file, [`parse_declarations`](super::parse_declarations)) rather than
    /// a program missing its expression (E0104).
    pub expression_optional: bool,
    /// Set when the text has no expression after its declarations.
    pub expression_missing: bool,
    depth_reported: bool,
}

/// A span from two byte offsets.
pub fn span(l: usize, r: usize) -> Span {
    Span::new(l, r)
}

/// An identifier.
pub fn ident(name: Name, l: usize, r: usize) -> Ident {
    Ident {
        name,
        span: span(l, r),
    }
}

fn too_deep(st: &mut ParseState, at: Span) {
    if !st.depth_reported {
        st.depth_reported = true;
        st.diags.push(
            Diagnostic::error(Code::E0103, at, format!("program is nested more than {MAX_DEPTH} levels deep"))
                .with_label("nesting limit reached here")
                .with_note("a chain of operators or arguments (`a + b + …`, `f x y …`) nests one level per term")
                .with_help("split the expression with `let` bindings (a `let … in` chain does not count as nesting)"),
        );
    }
}

/// `@intent("…", hypothesis = "…", notes = "…") body`: the known fields
/// are `hypothesis` and `notes`, each at most once (E0105 otherwise).
pub fn annotate(
    st: &mut ParseState,
    intent: String,
    extra: Vec<(Ident, String)>,
    at: Span,
    body: Expr,
    l: usize,
    r: usize,
) -> Expr {
    let mut a = Annotation {
        intent,
        hypothesis: None,
        notes: None,
        span: at,
    };
    for (name, value) in extra {
        let slot = match &*name.name {
            "hypothesis" => &mut a.hypothesis,
            "notes" => &mut a.notes,
            other => {
                st.diags.push(
                    Diagnostic::error(Code::E0105, name.span, format!("`{other}` is not a field of `@intent`"))
                        .with_label("unknown field")
                        .with_help("write `@intent(\"what this is for\", hypothesis = \"what should happen\", notes = \"…\")`"),
                );
                continue;
            }
        };
        if slot.is_some() {
            st.diags.push(
                Diagnostic::error(
                    Code::E0105,
                    name.span,
                    format!("`{}` is given twice", name.name),
                )
                .with_label("given again here")
                .with_help("give each field of `@intent` once"),
            );
        }
        *slot = Some(value);
    }
    expr(st, ExprKind::Annotate(Box::new(a), Box::new(body)), l, r)
}

/// Wraps an expression node, enforcing the depth limit.
pub fn expr(st: &mut ParseState, kind: ExprKind, l: usize, r: usize) -> Expr {
    cap(st, Expr::new(kind, span(l, r)))
}

fn cap(st: &mut ParseState, e: Expr) -> Expr {
    if e.depth > MAX_DEPTH {
        too_deep(st, e.span);
        // Keep the depth at the limit so every enclosing node is replaced too.
        Expr {
            kind: ExprKind::Error,
            span: e.span,
            depth: MAX_DEPTH,
        }
    } else {
        e
    }
}

/// Wraps a type node, enforcing the depth limit.
pub fn ty(st: &mut ParseState, kind: TypeExprKind, l: usize, r: usize) -> TypeExpr {
    let t = TypeExpr::new(kind, span(l, r));
    if t.depth > MAX_DEPTH {
        too_deep(st, t.span);
        TypeExpr {
            kind: TypeExprKind::Error,
            span: t.span,
            depth: MAX_DEPTH,
        }
    } else {
        t
    }
}

/// `A -{E}-> B` (`effs` empty for `->`).
#[allow(clippy::too_many_arguments)]
pub fn fun_type(
    st: &mut ParseState,
    a: TypeExpr,
    effs: Vec<Ident>,
    el: usize,
    er: usize,
    ret: TypeExpr,
    l: usize,
    r: usize,
) -> TypeExpr {
    let row = EffectRowExpr {
        labels: effs,
        span: span(el, er),
    };
    ty(st, TypeExprKind::Fun(Box::new(a), row, Box::new(ret)), l, r)
}

/// `a op b`.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    st: &mut ParseState,
    op: BinOp,
    a: Expr,
    c: Expr,
    ol: usize,
    or: usize,
    l: usize,
    r: usize,
) -> Expr {
    expr(
        st,
        ExprKind::Binary(op, span(ol, or), Box::new(a), Box::new(c)),
        l,
        r,
    )
}

/// One `let [rec] name [: T] = value in` head of a chain.
pub fn let_binding(
    rec_kw: Option<Span>,
    name: Ident,
    annot: Option<Box<TypeExpr>>,
    value: Expr,
    l: usize,
    vr: usize,
) -> LetBinding {
    LetBinding {
        rec_kw,
        name,
        annot,
        value,
        span: span(l, vr),
    }
}

/// Moves boxed parser results (boxed to keep the parse stack small) into place.
pub fn unbox<T>(items: Vec<Box<T>>) -> Vec<T> {
    items.into_iter().map(|b| *b).collect()
}

/// A whole `let` chain: its heads and final body, as one node.
pub fn let_chain(
    st: &mut ParseState,
    heads: Vec<Box<LetBinding>>,
    body: Expr,
    l: usize,
    r: usize,
) -> Expr {
    let heads_depth = heads
        .iter()
        .map(|b| b.value.depth.max(b.annot.as_ref().map_or(0, |t| t.depth)))
        .max()
        .unwrap_or(0);
    let depth = 1 + heads_depth.max(body.depth);
    let chain = LetChain {
        bindings: heads.into_iter().map(|b| *b).collect::<VecDeque<_>>(),
        body,
    };
    cap(
        st,
        Expr {
            kind: ExprKind::Let(Box::new(chain)),
            span: span(l, r),
            depth,
        },
    )
}

/// `tool name: ty;`
pub fn tool_decl(
    name: Ident,
    ty: TypeExpr,
    undo: Option<Box<UndoDecl>>,
    l: usize,
    r: usize,
) -> Decl {
    Decl::Tool(ToolDecl {
        name,
        ty,
        undo: undo.map(|u| *u),
        span: span(l, r),
    })
}

/// A tool declaration whose type did not parse: the name stays declared
/// (with an error type) so that its uses are not reported again.
pub fn broken_tool_decl(name: Ident, l: usize, r: usize) -> Decl {
    let ty = TypeExpr {
        kind: TypeExprKind::Error,
        span: span(l, r),
        depth: 1,
    };
    Decl::Tool(ToolDecl {
        name,
        ty,
        undo: None,
        span: span(l, r),
    })
}

/// The whole program; a missing expression is reported as `E0104`
/// (unless [`ParseState::expression_optional`]; it is then an error node).
pub fn program(
    st: &mut ParseState,
    decls: Vec<Box<Decl>>,
    body: Option<Expr>,
    l: usize,
    r: usize,
) -> Program {
    let body = body.unwrap_or_else(|| {
        let at = span(r, r);
        st.expression_missing = true;
        if st.expression_optional {
            return Expr::error(at);
        }
        st.diags.push(
            Diagnostic::error(Code::E0104, at, "the program has no expression")
                .with_label("expected an expression after the declarations")
                .with_help(
                    "a program is tool declarations followed by one expression, e.g. \
                     `match exec tool NAME ARG { Ok(x) => x, Err(e) => e }`",
                ),
        );
        Expr::error(at)
    });
    Program {
        decls: unbox(decls),
        body,
        span: span(l, r),
    }
}
