//! Typing the standard library's native functions ([`crate::stdlib`]).
//!
//! A native's signature is instantiated at each use: every type variable
//! becomes a fresh metavariable, so `length` serves `List Int` and
//! `List String` in one program. A variable named `o` must be *ordered*
//! (Int, Float, String, Bool or an enum); that is checked once the whole
//! program is typed, when the metavariable is solved (E0211, or E0209 when
//! nothing fixes it).
//!
//! In an application `f a b` of a native, the arguments that are neither
//! literals nor unannotated lambdas are checked first, then the literals (so
//! a literal meets an enum type found elsewhere), then the lambdas (so that
//! `find (fn x => x.id == 3) xs` gives `x` the element type of `xs`). When
//! the application is checked against a type, the result is fixed to it
//! first (`let s: Status = with_default "open" x`).

use super::checker::Checker;
use super::decls::{lower_type, TypeEnv};
use super::ty::Type;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::stdlib::Native;
use crate::syntax::ast::{Decl, Expr, ExprKind, Name, TypeExpr, TypeExprKind};
use std::collections::HashMap;

thread_local! {
    static SIGNATURES: std::cell::RefCell<HashMap<&'static str, TypeExpr>> =
        std::cell::RefCell::new(HashMap::new());
}

/// The parsed signature of `native` (parsed once per thread).
pub fn signature(native: &'static Native) -> TypeExpr {
    SIGNATURES.with(|cache| {
        if let Some(t) = cache.borrow().get(native.name) {
            return t.clone();
        }
        let ty = parse_signature(native.signature);
        cache.borrow_mut().insert(native.name, ty.clone());
        ty
    })
}

/// A signature written in lt's type syntax, parsed (an `Error` type when it
/// does not parse: the library's signatures are checked by tests).
pub fn parse_signature(text: &str) -> TypeExpr {
    let (program, _) = crate::syntax::parse(&format!("tool sig: {text};\n()"));
    match program.decls.first() {
        Some(Decl::Tool(t)) => t.ty.clone(),
        _ => TypeExpr::new(TypeExprKind::Error, Span::new(0, 0)),
    }
}

/// The type variables (lowercase names) of a signature, in order of appearance.
#[allow(
    clippy::collapsible_match,
    reason = "a lowercase name seen before must match no later arm"
)]
pub fn type_vars(t: &TypeExpr, out: &mut Vec<Name>) {
    match &t.kind {
        TypeExprKind::Named(id) if id.name.starts_with(|c: char| c.is_ascii_lowercase()) => {
            if !out.contains(&id.name) {
                out.push(id.name.clone());
            }
        }
        TypeExprKind::Record(fs, _) => fs.iter().for_each(|(_, t)| type_vars(t, out)),
        TypeExprKind::List(t)
        | TypeExprKind::Linear(t)
        | TypeExprKind::Option(t)
        | TypeExprKind::Optional(t) => type_vars(t, out),
        TypeExprKind::Result(a, b) | TypeExprKind::Fun(a, _, b) => {
            type_vars(a, out);
            type_vars(b, out);
        }
        _ => {}
    }
}

/// True for the types `<`, `sort` and `min` accept.
pub fn is_ordered(t: &Type) -> bool {
    matches!(
        t,
        Type::Int | Type::Float | Type::String | Type::Bool | Type::Enum(_) | Type::Error
    )
}

impl Checker<'_> {
    /// The type of one use of `native` at `span`.
    pub(super) fn instantiate(&mut self, native: &'static Native, span: Span) -> Type {
        let sig = signature(native);
        let mut vars = Vec::new();
        type_vars(&sig, &mut vars);
        let mut env = TypeEnv::default();
        for v in vars {
            let m = self.metas.fresh(span, "a type parameter of this function");
            if &*v == "o" {
                self.ordered.push((m.clone(), span, native.name));
            }
            self.data_vars.push((m.clone(), span, native.name));
            env.vars.insert(v, m);
        }
        let mut sink = Vec::new();
        lower_type(&sig, &env, &mut sink)
    }

    /// Types `name arg1 … argN` for a native `name`: arguments other than
    /// unannotated lambdas first (see the module note).
    pub(super) fn native_app(
        &mut self,
        native: &'static Native,
        head: &Expr,
        args: &[(&Expr, Span)],
        expected: Option<&Type>,
    ) -> Type {
        let mut fty = self.instantiate(native, head.span);
        let mut params: Vec<Type> = Vec::new();
        let mut rest = fty.clone();
        for _ in 0..args.len() {
            match rest {
                Type::Fun(p, _, r) => {
                    params.push(*p);
                    rest = *r;
                }
                other => {
                    rest = other;
                    break;
                }
            }
        }
        if params.len() < args.len() {
            // Too many arguments: the ordinary path reports it.
            let mut callee = head.span;
            for &(arg, app) in args {
                fty = self.apply(fty, callee, arg, app, &format!("calling `{}`", native.name));
                callee = app;
            }
            return fty;
        }
        // Checked against a type: fix the result first, so that the
        // arguments are checked against it (`"open"` as an enum literal).
        // A mismatch is reported by the caller.
        if let Some(exp) = expected {
            if !rest.contains_fun() {
                let _ = self.metas.coerce(&rest, exp);
            }
        }
        let is_lambda = |e: &Expr| matches!(e.kind, ExprKind::Fn { annot: None, .. });
        // Literals after the other arguments: `with_default "closed" (last
        // xs)` gets the element type from `xs`, which may be an enum.
        let is_literal = |e: &Expr| {
            matches!(
                e.kind,
                ExprKind::Str(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_)
            )
        };
        for ((arg, _), p) in args.iter().zip(&params) {
            if !is_lambda(arg) && !is_literal(arg) {
                self.check(arg, p);
            }
        }
        for ((arg, _), p) in args.iter().zip(&params) {
            if is_literal(arg) {
                self.check(arg, p);
            }
        }
        for ((arg, _), p) in args.iter().zip(&params) {
            if is_lambda(arg) {
                // Library callbacks are pure: say so, and where tool calls go.
                self.callback_reason = Some(super::checker::Allowed {
                    set: super::ty::EffectSet::pure(),
                    span: head.span,
                    reason: format!("`{}` requires a pure callback", native.name),
                    help: "library functions take pure callbacks: call the tool first and pass its result, \
                           or use `traverse` (in order) or `fan_out` (concurrently) to call a tool for each element"
                        .to_string(),
                });
                self.check(arg, p);
                self.callback_reason = None;
            }
        }
        rest
    }

    /// Reports every type parameter of a native that stands for a Result,
    /// a `!T` or a function: the library's functions take plain data, so
    /// `length [exec tool t x]` cannot drop a failure and `to_string tok`
    /// cannot copy a token.
    pub(super) fn check_data_vars(&mut self) {
        let mut reported: Vec<Span> = Vec::new();
        for (m, span, name) in std::mem::take(&mut self.data_vars) {
            let t = self.metas.zonk(&m);
            let why = if t.contains_result() {
                (
                    Code::E0606,
                    "a Result",
                    format!(
                        "match each Result first: `map (fn r => match r {{ Ok(v) => …, Err(e) => … }}) xs` gives `{name}` a list of plain values (both arms of one type); for one Result, `match … {{ Ok(v) => …, Err(e) => … }}`"
                    ),
                )
            } else if t.is_linear() {
                (
                    Code::E0505,
                    "a `!` value",
                    "a `!` value is for one tool call; pass plain values to library functions"
                        .to_string(),
                )
            } else if t.contains_fun() {
                (
                    Code::E0211,
                    "a function",
                    "library functions take data (Int, String, records, lists …), not functions"
                        .to_string(),
                )
            } else {
                continue;
            };
            if reported.contains(&span) {
                continue;
            }
            reported.push(span);
            let d = Diagnostic::error(
                why.0,
                span,
                format!(
                    "`{name}` takes plain data, but here it would get {} ({t})",
                    why.1
                ),
            )
            .with_label(format!("used with {t}"))
            .with_help(why.2);
            self.diags.push(d);
        }
    }

    /// Reports every `o` type parameter that was not solved to an ordered type.
    pub(super) fn check_ordered(&mut self) {
        for (m, span, name) in std::mem::take(&mut self.ordered) {
            let t = self.metas.zonk(&m);
            if is_ordered(&t) {
                continue;
            }
            let d = if matches!(t, Type::Meta(_)) {
                Diagnostic::error(
                    Code::E0209,
                    span,
                    format!("cannot infer what `{name}` compares"),
                )
                .with_label("type not known")
                .with_help("annotate the list or the callback's parameter")
            } else {
                Diagnostic::error(
                    Code::E0211,
                    span,
                    format!("`{name}` compares values of type {t}, which are not ordered"),
                )
                .with_label("needs Int, Float, String, Bool or an enum")
                .with_expected_found("an ordered type", t.to_string())
                .with_help("compare by a field that is a number or a string, e.g. `sort_by (fn r => r.name) rows`")
            };
            self.diags.push(d);
        }
    }
}
