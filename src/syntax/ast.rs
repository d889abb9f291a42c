//! The abstract syntax tree produced by the parser.
//!
//! Every node carries its [`Span`]. Expressions also carry their nesting
//! `depth` (1 for a leaf), which the parser keeps below
//! [`MAX_DEPTH`](super::MAX_DEPTH) so that every later recursive pass is
//! bounded. `let` chains are flattened into one [`LetChain`] node, so a
//! program of 100,000 consecutive `let`s is shallow.

use crate::source::Span;
use std::collections::VecDeque;
use std::rc::Rc;

/// An interned-by-sharing name.
pub type Name = Rc<str>;

/// A name with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: Name,
    /// Where it is written.
    pub span: Span,
}

/// A whole program: tool declarations, then one expression.
#[derive(Clone, Debug)]
pub struct Program {
    /// The declarations, in source order.
    pub decls: Vec<Decl>,
    /// The program's expression (an `Error` node when missing).
    pub body: Expr,
    /// The whole source.
    pub span: Span,
}

/// A top-level declaration.
#[derive(Clone, Debug)]
pub enum Decl {
    /// `tool NAME: In -{E}-> Out;`
    Tool(ToolDecl),
    /// `type Name = T;` (extension).
    Type(TypeAlias),
    /// `effect Payment, Delete;` (extension): user-declared effect labels.
    Effect(Vec<Ident>, Span),
    /// A declaration that did not parse (already reported).
    Error(Span),
}

/// `tool NAME: TYPE;` where TYPE must be a function type.
#[derive(Clone, Debug)]
pub struct ToolDecl {
    /// The tool's name.
    pub name: Ident,
    /// Its declared type, normally `In -{Effects}-> Out`.
    pub ty: TypeExpr,
    /// `undo OTHER(output)` (extension): the tool that undoes a call.
    pub undo: Option<UndoDecl>,
    /// The whole declaration.
    pub span: Span,
}

/// `undo cancel_flight(output)` in a tool declaration (extension): the tool
/// that undoes a completed call inside a `scope`, and what it is given, the
/// call's `input` or its `output`.
#[derive(Clone, Debug)]
pub struct UndoDecl {
    /// The undo tool (declared in the same program).
    pub tool: Ident,
    /// `input` or `output`.
    pub from: Ident,
    /// `undo …(…)`.
    pub span: Span,
}

/// `type Name = T;`: a name for a type, usable in every later declaration
/// and in the program (aliases are expanded: types print structurally).
#[derive(Clone, Debug)]
pub struct TypeAlias {
    /// The alias.
    pub name: Ident,
    /// What it stands for.
    pub ty: TypeExpr,
    /// The whole declaration.
    pub span: Span,
}

/// An effect row as written: `{Read, Write}`; empty for `->` or `-{}->`.
#[derive(Clone, Debug)]
pub struct EffectRowExpr {
    /// The labels in source order (`Pure` included as written).
    pub labels: Vec<Ident>,
    /// The braces (or the arrow).
    pub span: Span,
}

/// A type as written.
#[derive(Clone, Debug)]
pub struct TypeExpr {
    /// What kind of type.
    pub kind: TypeExprKind,
    /// Where.
    pub span: Span,
    /// Nesting depth (1 for a leaf).
    pub depth: u32,
}

/// The forms of written types.
#[derive(Clone, Debug)]
pub enum TypeExprKind {
    /// `Unit`, `Bool`, `Int`, `String`, or another name (an error for now).
    Named(Ident),
    /// `{a: T, b: U}`; with `open`, `{a: T, ..}` (extension): any record
    /// with at least these fields.
    Record(Vec<(Ident, TypeExpr)>, bool),
    /// `T` of an optional field `f?: T` (extension): the field reads as
    /// `Option T` and may be absent.
    Optional(Box<TypeExpr>),
    /// `Option T` (extension).
    Option(Box<TypeExpr>),
    /// `"open" | "closed"` (extension): a string-literal union.
    Enum(Vec<(String, Span)>),
    /// `List T` or `[T]`.
    List(Box<TypeExpr>),
    /// `Result<T, E>`.
    Result(Box<TypeExpr>, Box<TypeExpr>),
    /// `!T`.
    Linear(Box<TypeExpr>),
    /// `A -{E}-> B` (or `A -> B`, pure).
    Fun(Box<TypeExpr>, EffectRowExpr, Box<TypeExpr>),
    /// `()`, the unit type written as its value.
    Unit,
    /// Did not parse (already reported).
    Error,
}

/// An expression node.
#[derive(Clone, Debug)]
pub struct Expr {
    /// What kind of expression.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
    /// Nesting depth (1 for a leaf).
    pub depth: u32,
}

/// Binary operators, all left-associative except comparisons (non-associative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+` on Int.
    Add,
    /// `-` on Int.
    Sub,
    /// `*` on Int.
    Mul,
    /// `/` on Int (extension).
    Div,
    /// `%` on Int (extension).
    Rem,
    /// `++` on String (extension).
    Concat,
    /// `==`.
    Eq,
    /// `!=` (extension).
    Ne,
    /// `<`.
    Lt,
    /// `>`.
    Gt,
    /// `<=` (extension).
    Le,
    /// `>=` (extension).
    Ge,
    /// `&&` (extension, short-circuit).
    And,
    /// `||` (extension, short-circuit).
    Or,
}

impl Program {
    /// A rough count of the names a pass over the program binds (one per
    /// 48 bytes of source or so), to size its tables once.
    pub fn binders_hint(&self) -> usize {
        let bytes = self.span.end.saturating_sub(self.span.start) as usize;
        (bytes / 48).min(1 << 16)
    }
}

impl BinOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Concat => "++",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// One `let` binding inside a [`LetChain`].
#[derive(Clone, Debug)]
pub struct LetBinding {
    /// The `rec` keyword, if written (rejected by validation: E0302).
    pub rec_kw: Option<Span>,
    /// The bound name.
    pub name: Ident,
    /// `let x: T = …`, if annotated.
    pub annot: Option<Box<TypeExpr>>,
    /// The bound expression.
    pub value: Expr,
    /// From `let` to the end of the value.
    pub span: Span,
}

/// `let x1 = e1 in let x2 = e2 in … body`, flattened.
#[derive(Clone, Debug)]
pub struct LetChain {
    /// The bindings, outermost first.
    pub bindings: VecDeque<LetBinding>,
    /// The final body.
    pub body: Expr,
}

/// A pattern binder: a name or `_`.
#[derive(Clone, Debug)]
pub enum Binder {
    /// Binds the payload to a name.
    Var(Ident),
    /// `_`: ignores the payload.
    Wildcard(Span),
}

/// A match-arm pattern.
#[derive(Clone, Debug)]
pub enum PatternKind {
    /// `Ok(x)`.
    Ok(Binder),
    /// `Err(e)`.
    Err(Binder),
    /// `_`.
    Wildcard,
    /// `x` (matches anything).
    Var(Ident),
    /// `Some(x)` (extension).
    Some(Binder),
    /// `None` (extension).
    None,
    /// A string literal `"open"` (extension; on enums and Strings).
    Str(String),
}

/// A pattern with its span.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// Which pattern.
    pub kind: PatternKind,
    /// Where.
    pub span: Span,
}

/// One `pattern => body` arm.
#[derive(Clone, Debug)]
pub struct Arm {
    /// The pattern.
    pub pattern: Pattern,
    /// The body.
    pub body: Expr,
    /// The whole arm.
    pub span: Span,
}

/// The metadata of an `@intent(…)` annotation (seed 000's `annotate`).
#[derive(Clone, Debug)]
pub struct Annotation {
    /// What the annotated expression is for.
    pub intent: String,
    /// What the author expects to happen, if given.
    pub hypothesis: Option<String>,
    /// Free-form notes, if given.
    pub notes: Option<String>,
    /// `@intent(…)`, without the annotated expression.
    pub span: Span,
}

/// A record field `name = value`.
#[derive(Clone, Debug)]
pub struct Field {
    /// The field name.
    pub name: Ident,
    /// The value.
    pub value: Expr,
}

/// Which loop keyword was used (all are rejected by validation: E0301).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    /// `while c { … }`.
    While,
    /// `for x in xs { … }`.
    For,
}

/// The forms of expressions.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// `()`.
    Unit,
    /// `true` / `false`.
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A Float literal (extension; finite).
    Float(f64),
    /// A string literal (escapes already decoded).
    Str(String),
    /// A variable or builtin name.
    Var(Ident),
    /// A flattened chain of `let … in`.
    Let(Box<LetChain>),
    /// `fn x: T => body` (`T` optional: an extension).
    Fn {
        /// The parameter.
        param: Ident,
        /// Its annotation.
        annot: Option<Box<TypeExpr>>,
        /// The body.
        body: Box<Expr>,
    },
    /// `f x` (curried application).
    App(Box<Expr>, Box<Expr>),
    /// `if c then a else b`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `match e { arms }`.
    Match(Box<Expr>, Vec<Arm>),
    /// `{a = 1, b = 2}`.
    Record(Vec<Field>),
    /// `e.field`.
    Field(Box<Expr>, Ident),
    /// `[a, b]`, or `[]: T` with the element type.
    List(Vec<Expr>, Option<Box<TypeExpr>>),
    /// `Ok(e)`.
    Ok(Box<Expr>),
    /// `Err(e)`.
    Err(Box<Expr>),
    /// `Some(e)` (extension).
    Some(Box<Expr>),
    /// `None` (extension).
    None,
    /// `{r with f = v, …}` (extension): `r` with the given fields replaced.
    Update(Box<Expr>, Vec<Field>),
    /// `exec tool NAME arg`.
    Exec(Ident, Box<Expr>),
    /// `gather { a = exec tool …, b = exec tool … }` (extension): the calls
    /// run concurrently. Holds the record literal.
    Gather(Box<Expr>),
    /// `approve tool NAME arg` (extension): asks the control plane to approve
    /// one call of `NAME` with `arg` (its input without the `!Approval`
    /// fields); `Result<!Approval, String>`.
    Approve(Ident, Box<Expr>),
    /// `scope { e }` (extension): when `e` ends in `Err`, the calls that
    /// completed inside are undone, newest first.
    Scope(Box<Expr>),
    /// `@intent("why", hypothesis = "…", notes = "…") e` (extension).
    Annotate(Box<Annotation>, Box<Expr>),
    /// `a op b`.
    Binary(BinOp, Span, Box<Expr>, Box<Expr>),
    /// `-e`.
    Neg(Box<Expr>),
    /// A loop (parsed so that validation can reject it with a hint).
    Loop {
        /// `while` or `for`.
        kind: LoopKind,
        /// The keyword.
        kw: Span,
        /// The condition or the iterated list.
        head: Box<Expr>,
        /// The body.
        body: Box<Expr>,
    },
    /// Did not parse (already reported).
    Error,
}

impl Expr {
    /// A leaf or a node whose children are given, computing its depth.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        let depth = 1 + kind.child_depth();
        Expr { kind, span, depth }
    }

    /// An error node (already reported).
    pub fn error(span: Span) -> Expr {
        Expr {
            kind: ExprKind::Error,
            span,
            depth: 1,
        }
    }
}

impl ExprKind {
    /// The maximum depth of the direct children (0 for leaves). Constant time
    /// except for records, lists and matches (linear in their width).
    pub fn child_depth(&self) -> u32 {
        match self {
            ExprKind::Unit
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::None
            | ExprKind::Str(_)
            | ExprKind::Var(_)
            | ExprKind::Error => 0,
            ExprKind::Let(chain) => {
                let b = chain
                    .bindings
                    .iter()
                    .map(|b| b.value.depth + b.annot.as_ref().map_or(0, |t| t.depth))
                    .max();
                b.unwrap_or(0).max(chain.body.depth)
            }
            ExprKind::Fn { annot, body, .. } => {
                body.depth.max(annot.as_ref().map_or(0, |t| t.depth))
            }
            ExprKind::App(a, b) | ExprKind::Binary(_, _, a, b) => a.depth.max(b.depth),
            ExprKind::If(a, b, c) => a.depth.max(b.depth).max(c.depth),
            ExprKind::Match(s, arms) => arms
                .iter()
                .map(|a| a.body.depth)
                .max()
                .unwrap_or(0)
                .max(s.depth),
            ExprKind::Record(fields) => fields.iter().map(|f| f.value.depth).max().unwrap_or(0),
            ExprKind::Gather(e)
            | ExprKind::Scope(e)
            | ExprKind::Annotate(_, e)
            | ExprKind::Approve(_, e) => e.depth,
            ExprKind::Update(base, fields) => fields
                .iter()
                .map(|f| f.value.depth)
                .max()
                .unwrap_or(0)
                .max(base.depth),
            ExprKind::Field(e, _)
            | ExprKind::Ok(e)
            | ExprKind::Err(e)
            | ExprKind::Some(e)
            | ExprKind::Exec(_, e)
            | ExprKind::Neg(e) => e.depth,
            ExprKind::List(elems, annot) => elems
                .iter()
                .map(|e| e.depth)
                .max()
                .unwrap_or(0)
                .max(annot.as_ref().map_or(0, |t| t.depth)),
            ExprKind::Loop { head, body, .. } => head.depth.max(body.depth),
        }
    }
}

impl TypeExpr {
    /// A type node, computing its depth from its children.
    pub fn new(kind: TypeExprKind, span: Span) -> TypeExpr {
        let child = match &kind {
            TypeExprKind::Named(_)
            | TypeExprKind::Unit
            | TypeExprKind::Enum(_)
            | TypeExprKind::Error => 0,
            TypeExprKind::Record(fs, _) => fs.iter().map(|(_, t)| t.depth).max().unwrap_or(0),
            TypeExprKind::List(t)
            | TypeExprKind::Linear(t)
            | TypeExprKind::Optional(t)
            | TypeExprKind::Option(t) => t.depth,
            TypeExprKind::Result(a, b) | TypeExprKind::Fun(a, _, b) => a.depth.max(b.depth),
        };
        TypeExpr {
            kind,
            span,
            depth: child + 1,
        }
    }
}

impl ExprKind {
    /// Calls `f` on each direct child expression, in source order. Binding
    /// forms (`Let`, `Fn`, `Match`) also yield their children here; passes
    /// that track scope handle those forms themselves.
    pub fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        match self {
            ExprKind::Unit
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::None
            | ExprKind::Str(_)
            | ExprKind::Var(_)
            | ExprKind::Error => {}
            ExprKind::Let(chain) => {
                for b in &chain.bindings {
                    f(&b.value);
                }
                f(&chain.body);
            }
            ExprKind::Fn { body, .. } => f(body),
            ExprKind::App(a, b) | ExprKind::Binary(_, _, a, b) => {
                f(a);
                f(b);
            }
            ExprKind::If(a, b, c) => {
                f(a);
                f(b);
                f(c);
            }
            ExprKind::Match(s, arms) => {
                f(s);
                for arm in arms {
                    f(&arm.body);
                }
            }
            ExprKind::Record(fields) => {
                for fi in fields {
                    f(&fi.value);
                }
            }
            ExprKind::Gather(e)
            | ExprKind::Scope(e)
            | ExprKind::Annotate(_, e)
            | ExprKind::Approve(_, e) => f(e),
            ExprKind::Update(base, fields) => {
                f(base);
                for fi in fields {
                    f(&fi.value);
                }
            }
            ExprKind::List(elems, _) => {
                for e in elems {
                    f(e);
                }
            }
            ExprKind::Field(e, _)
            | ExprKind::Ok(e)
            | ExprKind::Err(e)
            | ExprKind::Some(e)
            | ExprKind::Exec(_, e)
            | ExprKind::Neg(e) => f(e),
            ExprKind::Loop { head, body, .. } => {
                f(head);
                f(body);
            }
        }
    }
}
