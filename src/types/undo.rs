//! E0220 through functions: which functions may make a call a `scope`
//! cannot roll back.
//!
//! A call of a tool with an effect beyond `Read` and no `undo` is
//! *irrevocable*. Inside a `scope` it is E0220: when the scope ends in `Err`
//! the completed calls are undone, and this one cannot be. Scopes are
//! dynamic (the runtime keeps a stack of them), so what matters is which
//! calls *run* while a scope is open, wherever they are written: a function
//! defined outside and applied inside makes its calls in the scope, and a
//! lambda written inside but only applied after it does not.
//!
//! Every function type the checker makes carries, in its effect row, an
//! *undo variable* (`EffectSet::undo`): true when a function of that type
//! may make an irrevocable call. The variables are solved once the program
//! is typed, from three kinds of facts:
//!
//! * a *source*: an irrevocable `exec` in a function's body makes the
//!   function's variable true (remembering the tool and the call);
//! * a *flow* `a → b` (if `a` then `b`): applying a function of variable
//!   `a` in the body of a function of variable `b`; `actual ≤ expected`
//!   between function types (a function given as an argument, stored in a
//!   record or a list, returned, annotated; parameters contravariantly, as
//!   for the types); the join of two branches (a fresh variable both flow
//!   into);
//! * a *sink*: applying a function of variable `a` inside a `scope` (the
//!   application itself, or a builtin that calls it: `traverse`, `fan_out`,
//!   `bounded_loop`). A sink whose variable is true is E0220.
//!
//! Every value that can be called has a type, and every call goes through
//! one of these applications, so the rule is sound: a variable is false
//! only when no function of its type, through any path of the program, can
//! make an irrevocable call. A written function type (a parameter's
//! annotation, `let f: A -{Write}-> B`) gets a fresh variable per
//! occurrence, so `fn g: (A -{Write}-> B) => scope { g x }` is accepted
//! when every function given as `g` has an undo for each call, and a
//! caller passing one without is E0220 at `g x`.
//!
//! A row without a variable (a native's, a builtin's pure callback) makes
//! no irrevocable call. It never needs one: a variable can only be true
//! together with an effect beyond `Read` in the same row (an irrevocable
//! call performs its tool's effects; a flow is added only between rows
//! where the labels fit), and such a row is never `≤` a row without one
//! (those hold at most `Read`).

use super::checker::{Checker, ScopedCall};
use super::ty::EffectSet;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::Name;
use std::rc::Rc;

/// The subject of a message from the description `perform` is given:
/// "calling `f`" → "`f`", "`traverse` calling its callback" → "the
/// callback of `traverse`".
fn subject(what: &str) -> String {
    if let Some(name) = what.strip_prefix("calling ") {
        return name.to_string();
    }
    if let Some((name, part)) = what.split_once(" calling its ") {
        return format!("the {part} of {name}");
    }
    "this function".to_string()
}

/// True when `inner` lies within `outer`.
fn within(inner: Span, outer: Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

impl Checker<'_> {
    /// The tool `name` when a call of it is irrevocable: an effect beyond
    /// `Read` and no undo.
    pub(super) fn irrevocable(&self, name: &str) -> Option<&super::decls::ToolSig> {
        self.tool(name).filter(|sig| {
            let mut read_only = EffectSet::pure();
            read_only.insert(Rc::from("Read"));
            sig.undo.is_none() && !sig.effects.is_subset(&read_only)
        })
    }

    /// An irrevocable call of `tool` at `call`, written where it runs: the
    /// enclosing function may make it, and inside a `scope` it is E0220.
    pub(super) fn irrevocable_call(&mut self, tool: &Name, call: Span, effects: &EffectSet) {
        let Some(frame) = self.frames.last() else {
            return;
        };
        let (var, scope) = (frame.undo, frame.scopes.last().copied());
        if let Some(var) = var {
            self.metas.undo.source(var, tool.clone(), call);
        }
        let Some(scope) = scope else {
            return;
        };
        if self.undo_reported.contains(&(scope, tool.clone())) {
            return;
        }
        self.undo_reported.push((scope, tool.clone()));
        self.diags.push(
            Diagnostic::error(
                Code::E0220,
                call,
                format!("`{tool}` has no undo, so this `scope` could not roll it back"),
            )
            .with_label(format!("performs {effects} and cannot be undone"))
            .with_secondary(scope, "in this scope")
            .with_help(format!(
                "declare the tool that undoes it: `tool {tool}: … undo cancel_{tool}(output);`, or call it outside the scope"
            )),
        );
    }

    /// A function whose row is `eff` applied where `perform` is (`what`
    /// at `at`): its variable flows into the enclosing function's, and
    /// inside a `scope` it must be false.
    pub(super) fn applied(&mut self, eff: &EffectSet, at: Span, what: &str) {
        let Some(var) = eff.undo() else {
            return;
        };
        let Some(frame) = self.frames.last() else {
            return;
        };
        let (outer, scope) = (frame.undo, frame.scopes.last().copied());
        self.metas.undo.flow(Some(var), outer);
        if let Some(scope) = scope {
            self.scoped_calls.push(ScopedCall {
                var,
                at,
                subject: subject(what),
                effects: eff.clone().with_undo(None),
                scope,
            });
        }
    }

    /// Reports every function applied inside a `scope` that may make an
    /// irrevocable call (E0220), once the program is typed.
    pub(super) fn check_scoped_calls(&mut self) {
        let why = self.metas.undo.solve();
        let mut at_uses: Vec<Span> = Vec::new();
        for c in std::mem::take(&mut self.scoped_calls) {
            let Some(Some((tool, call))) = why.get(c.var as usize) else {
                continue;
            };
            let d = if within(*call, c.scope) {
                // Written inside the scope, run there through a function.
                if self.undo_reported.contains(&(c.scope, tool.clone())) {
                    continue;
                }
                self.undo_reported.push((c.scope, tool.clone()));
                Diagnostic::error(
                    Code::E0220,
                    *call,
                    format!("`{tool}` has no undo, so this `scope` could not roll it back"),
                )
                .with_label(format!("performs {} and cannot be undone", c.effects))
                .with_secondary(c.at, format!("{} makes the call here", c.subject))
                .with_secondary(c.scope, "in this scope")
                .with_help(format!(
                    "declare the tool that undoes it: `tool {tool}: … undo cancel_{tool}(output);`, or call it outside the scope"
                ))
            } else {
                if at_uses.contains(&c.at) {
                    continue;
                }
                at_uses.push(c.at);
                Diagnostic::error(
                    Code::E0220,
                    c.at,
                    format!(
                        "{} may call `{tool}`, which has no undo, so this `scope` could not roll it back",
                        c.subject
                    ),
                )
                .with_label(format!("performs {} and cannot be undone", c.effects))
                .with_secondary(*call, format!("the call of `{tool}`"))
                .with_secondary(c.scope, "in this scope")
                .with_help(format!(
                    "declare the tool that undoes it: `tool {tool}: … undo cancel_{tool}(output);`, \
                     or apply {} outside the scope",
                    c.subject
                ))
            };
            self.diags.push(d);
        }
    }
}
