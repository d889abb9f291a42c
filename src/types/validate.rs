//! Restrictions checked after parsing, before typing (as in starlark-rust's
//! dialect pass; here in `types` because it needs the library's names):
//! lt programs must terminate, so loops and recursion are rejected here, each
//! with a dedicated code and a hint towards bounded iteration.
//!
//! * `while c { … }` and `for x in xs { … }` → E0301;
//! * `let rec f = …` → E0302;
//! * `let f = … f …` where `f` is not already bound outside (the only other way
//!   to write recursion; `let x = x + 1` that refers to an outer `x` is fine,
//!   and so is `let sum = sum xs` where `sum` is a builtin or library function) → E0302.
//!
//! The spans of the self-references are returned so that the checker does not
//! report them again as unbound variables.

use crate::diag::{Code, Diagnostic};
use crate::scope::Scope;
use crate::source::Span;
use crate::syntax::ast::*;
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

/// What a `let rec` is written as instead: a fold over a finite list
/// (every lt program terminates), and lt's syntax for a function.
const LET_REC_HINT: &str = "lt has no recursion, so that every program terminates: iterate over a finite list instead, with `fold (fn acc => fn x => …) init xs` (accumulate), `map`/`filter` (pure) or `traverse` (tool calls, stops at the first Err); `range 0 n` is the list [0, …, n-1] for a count. A function that does not call itself is `let f = fn (x: Int) => … in …`";

/// Runs the restriction pass over `program`.
pub fn validate(program: &Program) -> Validation {
    let mut w = Walker {
        scope: Scope::with_capacity(program.binders_hint()),
        defining: Scope::default(),
        v: Validation::default(),
    };
    w.walk(&program.body);
    w.v
}

struct Walker {
    /// Names in scope (`false` hides an outer binding inside a `let rec` value).
    scope: Scope<bool>,
    /// Names whose own value is being walked, with their binding site.
    /// (binding site, whether a self-reference is reported: not under `rec`,
    /// which is reported once itself).
    defining: Scope<(Span, bool)>,
    v: Validation,
}

impl Walker {
    fn walk(&mut self, e: &Expr) {
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || self.walk_inner(e))
    }

    fn bound(&mut self, name: &Name, body: &Expr) {
        let m = self.scope.mark();
        self.scope.push(name.clone(), true);
        self.walk(body);
        self.scope.reset(m);
    }

    fn walk_inner(&mut self, e: &Expr) {
        let v = &mut self.v;
        match &e.kind {
            ExprKind::Var(id) => {
                if !self.defining.is_empty() && self.scope.get(&id.name) != Some(&true) {
                    if let Some(&(def, report)) = self.defining.get(&id.name) {
                        v.recursive_refs.insert(id.span);
                        if !report {
                            return;
                        }
                        v.diags.push(
                            Diagnostic::error(
                                Code::E0302,
                                id.span,
                                format!("`{}` refers to itself: recursion is not allowed", id.name),
                            )
                            .with_label("recursive reference")
                            .with_secondary(def, "defined here")
                            .with_help(ITERATE_HINT),
                        );
                    }
                }
            }
            ExprKind::Let(chain) => {
                let outer = self.scope.mark();
                for b in &chain.bindings {
                    if let Some(rk) = b.rec_kw {
                        self.v.diags.push(
                            Diagnostic::error(
                                Code::E0302,
                                rk,
                                "`let rec` is not allowed: lt programs cannot recurse",
                            )
                            .with_label("recursive binding")
                            .with_help(LET_REC_HINT),
                        );
                    }
                    // `let x = … x …` where x is bound outside refers to the outer x;
                    // otherwise (and always under `rec`) it refers to itself.
                    let before_value = self.scope.mark();
                    if b.rec_kw.is_some() {
                        self.scope.push(b.name.name.clone(), false);
                    }
                    let defining = self.defining.mark();
                    // A builtin or library name on the right refers to the library.
                    if self.scope.get(&b.name.name) != Some(&true)
                        && (b.rec_kw.is_some() || !crate::stdlib::is_predefined(&b.name.name))
                    {
                        self.defining
                            .push(b.name.name.clone(), (b.name.span, b.rec_kw.is_none()));
                    }
                    self.walk(&b.value);
                    self.defining.reset(defining);
                    self.scope.reset(before_value);
                    self.scope.push(b.name.name.clone(), true);
                }
                self.walk(&chain.body);
                self.scope.reset(outer);
            }
            ExprKind::Fn { param, body, .. } => self.bound(&param.name, body),
            ExprKind::Match(s, arms) => {
                self.walk(s);
                for arm in arms {
                    match &arm.pattern.kind {
                        PatternKind::Ok(Binder::Var(x))
                        | PatternKind::Err(Binder::Var(x))
                        | PatternKind::Var(x) => self.bound(&x.name, &arm.body),
                        _ => self.walk(&arm.body),
                    }
                }
            }
            // Reported from the tokens (E0301), whatever shape the loop has.
            ExprKind::Loop { head, body, .. } => {
                self.walk(head);
                self.walk(body);
            }
            kind => kind.for_each_child(|c| self.walk(c)),
        }
    }
}
