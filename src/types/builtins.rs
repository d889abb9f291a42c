//! The builtins `map`, `filter`, `fold` (pure callbacks) and `traverse`
//! (effectful, in order, short-circuiting), as in λ-Tool:
//!
//! ```text
//! map      : (a -{}-> b)             -> List a      -> List b
//! filter   : (a -{}-> Bool)          -> List a      -> List a
//! fold     : (c -{}-> a -{}-> c) -> c -> List a     -> c
//! traverse : (a -{E}-> Result<b, e>) -> List a -{E}-> Result<List b, e>
//! ```
//!
//! and (extension) `fan_out` and `bounded_loop`, typed in [`super::combinators`].
//!
//! They are typed at their application site (they are not first-class
//! values: `map` alone is E0210), so each use gets fresh type parameters and
//! `traverse` inherits exactly its callback's effects. Partial application
//! (`map f`) yields a function of the remaining parameters. When the callback
//! is a lambda without a parameter annotation, the list is checked first so
//! that the parameter gets the element type.

use super::checker::{Allowed, Checker, Collected};
use super::ty::{EffectSet, Type};
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Expr, ExprKind, Ident};

fn is_unannotated_fn(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Fn { annot: None, .. })
}

impl Checker<'_> {
    /// Types `name arg1 … argN` for a builtin `name`.
    pub(super) fn builtin(&mut self, id: &Ident, args: &[(&Expr, Span)]) -> Type {
        let name: &str = &id.name;
        if name == "bounded_loop" {
            return self.bounded_loop(id, args);
        }
        let arity = crate::stdlib::BUILTIN_ARITIES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(2, |&(_, arity)| arity);
        let Some(&(callback, _)) = args.first() else {
            return Type::Error;
        };
        let list_index = arity - 1;
        let a = self.metas.fresh(id.span, "the element type of the list");
        let list_first = is_unannotated_fn(callback) && args.len() > list_index;
        if list_first {
            self.check(args[list_index].0, &Type::list(a.clone()));
        }
        // `fold`'s accumulator type comes from `init` when the callback's
        // parameters are not annotated (`fold (fn acc => fn x => acc.n + x) {n = 0} xs`).
        let acc = (name == "fold").then(|| self.metas.fresh(callback.span, "the accumulator type"));
        let init_first = name == "fold" && is_unannotated_fn(callback) && args.len() > 1;
        if let (true, Some(c)) = (init_first, &acc) {
            self.check(args[1].0, c);
        }
        let pure = |what: &str| {
            Allowed {
            set: EffectSet::pure(),
            span: id.span,
            reason: format!("`{name}` requires a pure {what}"),
            help: "`map`, `filter` and `fold` only take pure callbacks; to call a tool for each element use \
                 `traverse`, which stops at the first Err: `match traverse (fn x => exec tool NAME x) xs \
                 { Ok(results) => …, Err(e) => … }`".to_string(),
        }
        };
        // The parameters after the callback, the result, and the effects of
        // the final application.
        let (params, result, effects) = match name {
            "map" => {
                let b = self
                    .metas
                    .fresh(callback.span, "the result type of the callback");
                self.callback(
                    callback,
                    &Type::fun(a.clone(), EffectSet::pure(), b.clone()),
                    pure("callback"),
                );
                (vec![Type::list(a)], Type::list(b), EffectSet::pure())
            }
            "filter" => {
                self.callback(
                    callback,
                    &Type::fun(a.clone(), EffectSet::pure(), Type::Bool),
                    pure("predicate"),
                );
                (
                    vec![Type::list(a.clone())],
                    Type::list(a),
                    EffectSet::pure(),
                )
            }
            "fold" => {
                let c = acc.clone().unwrap_or(Type::Error);
                let step = Type::fun(
                    c.clone(),
                    EffectSet::pure(),
                    Type::fun(a.clone(), EffectSet::pure(), c.clone()),
                );
                self.callback(callback, &step, pure("callback"));
                (vec![c.clone(), Type::list(a)], c, EffectSet::pure())
            }
            "fan_out" => {
                self.fan_out_shape(callback);
                let (b, err, eff) = self.traverse_callback(callback, &a, name);
                let results = Type::result(b, err);
                self.collected.push(Collected {
                    ty: results.clone(),
                    span: id.span,
                    name: "fan_out",
                    elements: false,
                });
                (vec![Type::list(a)], Type::list(results), eff)
            }
            _ => {
                let (b, err, eff) = self.traverse_callback(callback, &a, name);
                // Stops at the first Err: the Ok values before it and the
                // elements after it would be dropped.
                self.collected.push(Collected {
                    ty: b.clone(),
                    span: id.span,
                    name: "traverse",
                    elements: false,
                });
                self.collected.push(Collected {
                    ty: a.clone(),
                    span: id.span,
                    name: "traverse",
                    elements: true,
                });
                (vec![Type::list(a)], Type::result(Type::list(b), err), eff)
            }
        };
        let mut rest = args[1..].iter();
        let mut supplied = 0;
        for (i, p) in params.iter().enumerate() {
            let Some(&(arg, _)) = rest.next() else { break };
            supplied += 1;
            if list_first && i + 1 == params.len() {
                continue;
            }
            if init_first && i == 0 {
                continue;
            }
            self.check(arg, p);
        }
        let whole = args.get(supplied).map_or(id.span, |&(_, s)| s);
        let mut ty = if supplied == params.len() {
            self.perform(&effects, whole, &format!("`{name}` calling its callback"));
            result
        } else {
            let mut t = result;
            let mut eff = effects;
            for p in params[supplied..].iter().rev() {
                t = Type::fun(p.clone(), eff, t);
                eff = EffectSet::pure();
            }
            t
        };
        let mut callee = whole;
        for &(arg, app) in rest {
            ty = self.apply(ty, callee, arg, app, "this call");
            callee = app;
        }
        ty
    }

    /// Checks a callback against `expected` inside a pure context.
    fn callback(&mut self, cb: &Expr, expected: &Type, allowed: Allowed) {
        if matches!(cb.kind, ExprKind::Fn { .. }) {
            self.callback_reason = Some(allowed);
            self.check(cb, expected);
            self.callback_reason = None;
        } else {
            let t = self.synth(cb);
            if let Err(m) = self.metas.coerce(&t, expected) {
                self.callback_reason = Some(allowed);
                let d = self.mismatch(cb.span, &t, expected, m);
                self.callback_reason = None;
                self.diags.push(d);
            }
        }
    }

    /// Synthesizes `traverse`'s callback: `a -{E}-> Result<b, e>`; returns `(b, e, E)`.
    fn traverse_callback(&mut self, cb: &Expr, a: &Type, name: &str) -> (Type, Type, EffectSet) {
        let ft = match &cb.kind {
            ExprKind::Fn {
                param,
                annot: None,
                body,
            } => self.synth_fn(param, None, body, Some(a.clone())),
            _ => self.synth(cb),
        };
        let b = self
            .metas
            .fresh(cb.span, "the Ok type of the callback's result");
        let e = self
            .metas
            .fresh(cb.span, "the Err type of the callback's result");
        let resolved = self.metas.resolve_peeled(&ft).into_owned();
        match resolved {
            Type::Fun(p, eff, r) => {
                self.expect(cb.span, a, &p);
                if self
                    .metas
                    .coerce(&r, &Type::result(b.clone(), e.clone()))
                    .is_err()
                {
                    let shown = self.show(&r);
                    let d = Diagnostic::error(Code::E0201, cb.span, format!("`{name}` needs a callback that returns a Result, but this one returns {shown}"))
                        .with_label(format!("returns {shown}"))
                        .with_expected_found("a -{E}-> Result<b, e>", self.show(&ft))
                        .with_help("return the Result of a tool call (`exec tool NAME x`), or `Ok(v)` / `Err(msg)`; for pure work use `map`");
                    self.diags.push(d);
                    return (Type::Error, Type::Error, eff);
                }
                (b, e, eff)
            }
            Type::Error => (Type::Error, Type::Error, EffectSet::pure()),
            other => {
                let shown = self.show(&other);
                let d = Diagnostic::error(
                    Code::E0201,
                    cb.span,
                    format!("`{name}` needs a function, but this is {shown}"),
                )
                .with_label("not a function")
                .with_expected_found("a -{E}-> Result<b, e>", shown)
                .with_help(format!(
                    "pass a function: `{name} (fn x => exec tool NAME x) xs`"
                ));
                self.diags.push(d);
                (Type::Error, Type::Error, EffectSet::pure())
            }
        }
    }
}
