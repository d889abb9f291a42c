//! Restrictions checked after parsing (as in starlark-rust's dialect pass):
//! lt programs must terminate, so loops and recursion are rejected here, each
//! with a dedicated code and a hint towards bounded iteration.
//!
//! * `while c { … }` and `for x in xs { … }` → E0301;
//! * `let rec f = …` → E0302;
//! * `let f = … f …` where `f` is not already bound outside (the only other way
//!   to write recursion; `let x = x + 1` that refers to an outer `x` is fine) → E0302.
//!
//! The spans of the self-references are returned so that the checker does not
//! report them again as unbound variables.

use super::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use std::collections::HashSet;

/// What validation found.
#[derive(Default)]
pub struct Validation {
    /// E0301 / E0302 diagnostics.
    pub diags: Vec<Diagnostic>,
    /// Spans of variables that refer to the binding being defined.
    pub recursive_refs: HashSet<Span>,
}

const ITERATE_HINT: &str =
    "iterate over a finite list instead: `fold` (accumulate), `map`/`filter` (pure), or `traverse` (tool calls, stops at the first Err)";

/// Runs the restriction pass over `program`.
pub fn validate(program: &Program) -> Validation {
    let mut v = Validation::default();
    walk(&program.body, &im::HashSet::new(), &im::HashMap::new(), &mut v);
    v
}

fn walk(e: &Expr, scope: &im::HashSet<Name>, defining: &im::HashMap<Name, Span>, v: &mut Validation) {
    stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || walk_inner(e, scope, defining, v))
}

fn walk_inner(e: &Expr, scope: &im::HashSet<Name>, defining: &im::HashMap<Name, Span>, v: &mut Validation) {
    match &e.kind {
        ExprKind::Var(id) => {
            if !scope.contains(&id.name) {
                if let Some(&def) = defining.get(&id.name) {
                    v.recursive_refs.insert(id.span);
                    v.diags.push(
                        Diagnostic::error(Code::E0302, id.span, format!("`{}` refers to itself: recursion is not allowed", id.name))
                            .with_label("recursive reference")
                            .with_secondary(def, "defined here")
                            .with_help(ITERATE_HINT),
                    );
                }
            }
        }
        ExprKind::Let(chain) => {
            let mut scope = scope.clone();
            for b in &chain.bindings {
                if let Some(rk) = b.rec_kw {
                    v.diags.push(
                        Diagnostic::error(Code::E0302, rk, "`let rec` is not allowed: lt programs cannot recurse")
                            .with_label("recursive binding")
                            .with_help(ITERATE_HINT),
                    );
                }
                // `let x = … x …` where x is bound outside refers to the outer x;
                // otherwise (and always under `rec`) it refers to itself.
                let mut value_scope = scope.clone();
                let mut value_defining = defining.clone();
                if b.rec_kw.is_some() {
                    value_scope.remove(&b.name.name);
                }
                if !value_scope.contains(&b.name.name) {
                    value_defining.insert(b.name.name.clone(), b.name.span);
                }
                walk(&b.value, &value_scope, &value_defining, v);
                scope.insert(b.name.name.clone());
            }
            walk(&chain.body, &scope, defining, v);
        }
        ExprKind::Fn { param, body, .. } => {
            let scope = scope.update(param.name.clone());
            walk(body, &scope, defining, v);
        }
        ExprKind::Match(s, arms) => {
            walk(s, scope, defining, v);
            for arm in arms {
                let bound = match &arm.pattern.kind {
                    PatternKind::Ok(Binder::Var(x)) | PatternKind::Err(Binder::Var(x)) | PatternKind::Var(x) => {
                        Some(x.name.clone())
                    }
                    _ => None,
                };
                match bound {
                    Some(n) => walk(&arm.body, &scope.update(n), defining, v),
                    None => walk(&arm.body, scope, defining, v),
                }
            }
        }
        ExprKind::Loop { kind, kw, head, body } => {
            let word = match kind {
                LoopKind::While => "while",
                LoopKind::For => "for",
            };
            v.diags.push(
                Diagnostic::error(Code::E0301, *kw, format!("`{word}` loops are not allowed: lt programs must terminate"))
                    .with_label("loop")
                    .with_help(ITERATE_HINT),
            );
            walk(head, scope, defining, v);
            walk(body, scope, defining, v);
        }
        kind => kind.for_each_child(|c| walk(c, scope, defining, v)),
    }
}
