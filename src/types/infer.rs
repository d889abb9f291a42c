//! The bidirectional checker: `synth` (Γ ⊢ e ⇒ T) and `check` (Γ ⊢ e ⇐ T).
//!
//! Checking mode pushes known types inward: a lambda checked against
//! `A -{E}-> B` gets its parameter type from `A` and may perform only `E`
//! (this is how `map`'s callback is held pure), a record literal checked
//! against a record type reports missing and unknown fields by name, and
//! `Ok(e)`/`Err(e)`/`[]` take the missing half of their type from the context.
//! Everything else synthesizes and is compared with `actual ≤ expected`
//! (see [`super::unify`]).
//!
//! Effects are tracked with a stack of frames, one per function body being
//! checked: performing an effect (an `exec`, or calling a function with a
//! latent effect) adds it to the innermost frame, and a frame created by a
//! pure context (`map`/`filter`/`fold` callbacks, a parameter typed
//! `A -{}-> B`) reports `E0401` at the offending call.
//!
//! The checker never stops at an error: an erroneous subexpression gets
//! [`Type::Error`], which is compatible with everything, so each mistake is
//! reported once.

use super::checker::{Allowed, Checker, Frame, VarInfo};
use super::decls::lower_type;
use super::ty::{EffectSet, Type};
use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::*;
use std::rc::Rc;

/// The builtin iteration functions (λ-Tool).
pub use crate::stdlib::BUILTINS;

impl<'a> Checker<'a> {
    pub(super) fn bind(&mut self, id: &Ident, ty: Type) {
        self.bind_shared(id, Rc::new(ty));
    }

    fn bind_shared(&mut self, id: &Ident, ty: Rc<Type>) {
        self.binder_types.insert(id.span, ty.clone());
        self.env.push(id.name.clone(), VarInfo { ty });
    }

    /// A written type, lowered; each function type in it gets a fresh
    /// undo variable ([`super::undo`]).
    pub(super) fn lower(&mut self, a: &TypeExpr) -> Type {
        let mut t = lower_type(a, self.types, &mut self.diags);
        self.metas.undo.freshen(&mut t);
        t
    }

    /// Opens a `scope` in the current function body.
    pub(super) fn enter_scope(&mut self, span: Span) {
        if let Some(f) = self.frames.last_mut() {
            f.scopes.push(span);
        }
    }

    /// Closes the innermost `scope` of the current function body.
    pub(super) fn leave_scope(&mut self) {
        if let Some(f) = self.frames.last_mut() {
            f.scopes.pop();
        }
    }

    /// The names in scope in the order the suggestion search has always
    /// seen them (a persistent hash map's, which depends only on the set).
    fn names_in_scope(&self) -> Vec<Name> {
        let set: im::HashMap<Name, (), rustc_hash::FxBuildHasher> =
            self.env.iter().map(|(n, _)| (n.clone(), ())).collect();
        set.keys().cloned().collect()
    }

    /// Records that `eff` is performed at `span` by `what` (e.g. "`exec tool charge`").
    pub(super) fn perform(&mut self, eff: &EffectSet, span: Span, what: &str) {
        self.perform_at(eff, span, what, span);
    }

    /// [`Checker::perform`] of a function's row, applied at `at` (the
    /// function, for E0220 inside a `scope`).
    pub(super) fn perform_at(&mut self, eff: &EffectSet, span: Span, what: &str, at: Span) {
        if eff.is_empty() {
            return;
        }
        self.applied(eff, at, what);
        let Some(frame) = self.frames.last_mut() else {
            return;
        };
        frame.performed.extend(eff);
        if let Some(allowed) = &frame.allowed {
            if !eff.is_subset(&allowed.set) {
                let d = Diagnostic::error(
                    Code::E0401,
                    span,
                    format!("Effect violation: allowed {} but got {}", allowed.set, eff),
                )
                .with_label(format!("{what} performs {eff}"))
                .with_secondary(allowed.span, allowed.reason.clone())
                .with_expected_found(format!("effects within {}", allowed.set), eff.to_string())
                .with_help(allowed.help.clone());
                self.diags.push(d);
            }
        }
    }

    /// Γ ⊢ e ⇐ expected.
    pub fn check(&mut self, e: &Expr, expected: &Type) {
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || self.check_inner(e, expected))
    }

    fn check_inner(&mut self, e: &Expr, expected: &Type) {
        let consuming = std::mem::take(&mut self.consuming);
        let exp = self.metas.resolve(expected);
        let exp: &Type = &exp;
        match (&e.kind, exp) {
            (ExprKind::Fn { param, annot, body }, Type::Fun(p, eff, r)) => {
                self.check_fn(e.span, param, annot.as_deref(), body, p, eff, r);
            }
            (ExprKind::Let(chain), _) => {
                self.let_chain(chain, Some(exp));
            }
            (ExprKind::Annotate(_, body), _) => {
                let exp = exp.clone();
                self.consuming = consuming;
                self.check(body, &exp);
            }
            (ExprKind::If(c, t, f), _) => {
                self.check_condition(c);
                self.check(t, exp);
                self.check(f, exp);
            }
            (ExprKind::Match(s, arms), _) => {
                self.match_expr(s, arms, Some(exp.clone()), e.span);
            }
            (ExprKind::Record(fields), Type::Record(fe)) => {
                let fe = fe.clone();
                self.check_record(fields, &fe, e.span, None, consuming);
            }
            (ExprKind::Record(fields), Type::OpenRecord(fe)) => {
                // Each listed field is checked against its type (an enum
                // literal stays one); the others are synthesized, and the
                // record is then compared with the open type as a whole.
                let fe = fe.clone();
                let exp = exp.clone();
                let mut out: Vec<(Name, Type)> = Vec::with_capacity(fields.len());
                let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
                for f in fields {
                    if !seen.insert(&f.name.name) {
                        self.duplicate_field(&f.name);
                        self.synth(&f.value);
                        continue;
                    }
                    let t = match fe.iter().find(|(n, _)| *n == f.name.name) {
                        Some((_, te)) => {
                            self.consuming = consuming;
                            self.check(&f.value, te);
                            te.clone()
                        }
                        None => self.synth(&f.value),
                    };
                    out.push((f.name.name.clone(), t));
                }
                let t = self.bounded(Type::Record(out), e.span);
                self.expect(e.span, &t, &exp);
            }
            (ExprKind::List(elems, annot), Type::List(t)) => {
                if let Some(a) = annot {
                    let at = self.lower(a);
                    if self.metas.coerce(&at, t).is_err() {
                        let (exp, found) = (self.show(t), self.show(&at));
                        let d = Diagnostic::error(
                            Code::E0201,
                            a.span,
                            format!("this list is annotated as `List {found}`, but `List {exp}` is expected"),
                        )
                        .with_label(format!("element type {found}"))
                        .with_expected_found(format!("List {exp}"), format!("List {found}"))
                        .with_help(format!("annotate the empty list with its element type: `[]: {exp}`"));
                        self.diags.push(d);
                    }
                }
                self.check_elements(elems, t);
            }
            (ExprKind::Ok(x), Type::Result(t, _)) => self.check(x, t),
            (ExprKind::Err(x), Type::Result(_, er)) => self.check(x, er),
            (ExprKind::Some(x), Type::Option(t)) => self.check(x, t),
            (ExprKind::None, Type::Option(_)) => {}
            (ExprKind::Str(s), Type::Enum(lits)) => {
                let lits = lits.clone();
                self.enum_literal(s, e.span, &lits);
            }
            _ => {
                // A library function applied here learns the expected result
                // first (`let s: Status = with_default "open" x`).
                if matches!(e.kind, ExprKind::App(..)) {
                    self.expected_app = Some(exp.clone());
                }
                let t = self.synth(e);
                self.expected_app = None;
                let direct = matches!(e.kind, ExprKind::Var(_) | ExprKind::Field(..));
                self.metas.allow_unlinear = consuming && direct;
                let before = self.diags.len();
                self.expect(e.span, &t, exp);
                self.metas.allow_unlinear = false;
                if self.diags.len() == before + 1 {
                    if let Some(help) = self.edit_for(e, &t, exp) {
                        if let Some(d) = self.diags.last_mut() {
                            if matches!(d.code, Code::E0201 | Code::E0208) && d.span == e.span {
                                d.help = Some(help);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The edit that makes `e` (of type `t`) fit `expected`, written out
    /// for a model to copy: `write \`1.0\`` for an Int literal where a
    /// Float is expected, `write \`Some(v)\`` for a value where an Option
    /// is expected.
    fn edit_for(&mut self, e: &Expr, t: &Type, expected: &Type) -> Option<String> {
        let t = self.metas.resolve(t).into_owned();
        match (self.metas.resolve(expected).into_owned(), &t) {
            (Type::Float, Type::Int) => Some(match &e.kind {
                ExprKind::Int(n) => {
                    format!("write `{n}.0`: a Float is written with a decimal point")
                }
                _ => {
                    let text = crate::syntax::print::print_expr(e);
                    let arg = if text.contains(' ') {
                        format!("({})", short(&text))
                    } else {
                        text
                    };
                    format!("convert it: `to_float {arg}`")
                }
            }),
            (Type::Option(inner), _) if self.fits(&t, &inner) => Some(format!(
                "write `Some({})`: an optional value that is present is written `Some(v)` (leave the field out for none)",
                short(&crate::syntax::print::print_expr(e))
            )),
            // A value with more fields than the type lists (a tool's whole
            // output given to a function that names a few): the fields are
            // the value's, not the writer's to remove.
            (Type::Record(want), Type::Record(have))
                if have.len() > want.len()
                    && want.iter().all(|(n, _)| have.iter().any(|(m, _)| m == n)) =>
            {
                let extra: Vec<String> = have
                    .iter()
                    .filter(|(n, _)| want.iter().all(|(m, _)| m != n))
                    .map(|(n, _)| format!("`{n}`"))
                    .collect();
                let exp = Type::Record(want).to_string();
                let open = match exp.strip_suffix('}') {
                    Some(head) if head.len() > 1 => format!("{head}, ..}}"),
                    _ => "{..}".to_string(),
                };
                Some(format!(
                    "this value also has {}: list them in the type, write the type open as `{open}` (these fields and any others), or drop the annotation",
                    extra.join(", ")
                ))
            }
            _ => None,
        }
    }

    /// Γ ⊢ e ⇒ T.
    pub fn synth(&mut self, e: &Expr) -> Type {
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || self.synth_inner(e))
    }

    fn synth_inner(&mut self, e: &Expr) -> Type {
        match &e.kind {
            ExprKind::Unit => Type::Unit,
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Int(_) => Type::Int,
            ExprKind::Float(_) => Type::Float,
            ExprKind::Str(_) => Type::String,
            ExprKind::Var(id) => self.var(id),
            ExprKind::Let(chain) => self.let_chain(chain, None),
            ExprKind::Fn { param, annot, body } => {
                self.synth_fn(param, annot.as_deref(), body, None)
            }
            ExprKind::App(..) => self.synth_app(e),
            ExprKind::If(c, t, f) => {
                self.check_condition(c);
                let tt = self.synth(t);
                self.check_branch(f, &tt, t.span, "the `then` branch")
            }
            ExprKind::Match(s, arms) => self.match_expr(s, arms, None, e.span),
            ExprKind::Record(fields) => {
                let measured = self.record_of_variables_size(fields);
                if measured == Some(false) {
                    return self.too_large(e.span);
                }
                let mut out: Vec<(Name, Type)> = Vec::with_capacity(fields.len());
                let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
                for f in fields {
                    let t = self.synth(&f.value);
                    if !seen.insert(&f.name.name) {
                        self.duplicate_field(&f.name);
                    } else {
                        out.push((f.name.name.clone(), t));
                    }
                }
                if measured == Some(true) {
                    return Type::Record(out);
                }
                self.bounded(Type::Record(out), e.span)
            }
            ExprKind::Field(r, f) => self.field(r, f),
            ExprKind::List(elems, annot) => {
                let elem = match annot {
                    Some(a) => self.lower(a),
                    None => match elems.first() {
                        Some(first) => self.synth(first),
                        None => self
                            .metas
                            .fresh(e.span, "the element type of this empty list"),
                    },
                };
                let mut elem = elem;
                if annot.is_some() {
                    self.check_elements(elems, &elem);
                } else if let Some(first) = elems.first() {
                    for el in &elems[1..] {
                        elem = self.check_branch(el, &elem, first.span, "the first element");
                    }
                }
                Type::list(elem)
            }
            ExprKind::Ok(x) => {
                let t = self.synth(x);
                let err = self
                    .metas
                    .fresh_plain(e.span, "the Err type of this `Ok(…)`");
                Type::result(t, err)
            }
            ExprKind::Err(x) => {
                let t = self.synth(x);
                let ok = self
                    .metas
                    .fresh_plain(e.span, "the Ok type of this `Err(…)`");
                Type::result(ok, t)
            }
            ExprKind::Some(x) => Type::option(self.synth(x)),
            ExprKind::None => Type::option(self.metas.fresh(e.span, "the type inside this `None`")),
            ExprKind::Update(base, fields) => self.update(base, fields, e.span),
            ExprKind::Exec(tool, arg) => self.exec(tool, arg, e.span),
            ExprKind::Gather(record) => self.gather(record, e.span),
            ExprKind::Scope(body) => self.scope(body, e.span),
            ExprKind::Approve(tool, arg) => self.approve(tool, arg, e.span),
            ExprKind::Annotate(_, body) => self.synth(body),
            ExprKind::Binary(op, op_span, a, b) => self.binary(*op, *op_span, a, b),
            ExprKind::Neg(x) => {
                let t = self.synth(x);
                if matches!(*self.metas.resolve_peeled(&t), Type::Float) {
                    return Type::Float;
                }
                self.expect(x.span, &t, &Type::Int);
                Type::Int
            }
            // Rejected by validation (E0301); nothing inside is checked.
            ExprKind::Loop { .. } | ExprKind::Error => Type::Error,
        }
    }

    /// Checks a later branch against the type synthesized for the first one,
    /// so that a mismatch points at both.
    /// When the first branch's type holds a function or an enum, the later
    /// branch is synthesized and the two types joined instead (see
    /// [`Metas::join`](super::unify::Metas::join)), so that a pure function in
    /// the first branch does not make an effectful one in the next an error.
    /// Returns the type of the whole.
    pub(super) fn check_branch(
        &mut self,
        e: &Expr,
        first_ty: &Type,
        first: Span,
        what: &'static str,
    ) -> Type {
        // A later branch that is a plain String next to an enum: the whole
        // is a String (either order gives the same type).
        if matches!(*self.metas.resolve_peeled(first_ty), Type::Enum(_))
            && !matches!(e.kind, ExprKind::Str(_))
        {
            let t = self.synth(e);
            if matches!(*self.metas.resolve_peeled(&t), Type::String) {
                return Type::String;
            }
            let saved = self.branch_ctx.replace((e.span, first, what));
            self.expect(e.span, &t, first_ty);
            self.branch_ctx = saved;
            return first_ty.clone();
        }
        // A function (effects are unioned), or an enum inside a record,
        // list or option (a String beside it widens it to String, as at the
        // top): synthesize the branch and join the two types.
        let zonked = self.metas.zonk(first_ty);
        if zonked.contains_fun() || zonked.contains_enum() {
            let t = self.synth(e);
            return match self.metas.join(first_ty, &t) {
                Ok(joined) => joined,
                Err(m) => {
                    let d = self
                        .mismatch(e.span, &t, first_ty, m)
                        .with_secondary(first, format!("{what} has type {}", self.show(first_ty)));
                    self.diags.push(d);
                    first_ty.clone()
                }
            };
        }
        let saved = self.branch_ctx.replace((e.span, first, what));
        self.check(e, first_ty);
        self.branch_ctx = saved;
        first_ty.clone()
    }

    /// `ty`, or `Error` with E0215 when it has more than
    /// [`MAX_TYPE_SIZE`](super::MAX_TYPE_SIZE) nodes. Only record literals
    /// can multiply a type's size (`{x = a, y = a}` holds `a`'s type twice),
    /// so they are where the bound is applied.
    fn bounded(&mut self, ty: Type, span: Span) -> Type {
        let max = super::MAX_TYPE_SIZE;
        if self.metas.size(&ty, max) <= max {
            return ty;
        }
        self.too_large(span)
    }

    /// For a record literal whose `fields` are all variables in scope,
    /// whether its type fits [`bounded`](Self::bounded)'s limit (`None`
    /// for other literals): measured on the variables' types, before they
    /// are copied into the record's (copying is what makes `{x = a, y = a}`
    /// chains slow). When it does not fit, the duplicate fields are
    /// reported as synthesis reports them.
    fn record_of_variables_size(&mut self, fields: &[Field]) -> Option<bool> {
        let max = super::MAX_TYPE_SIZE;
        let mut n = 1;
        let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        for f in fields {
            let ExprKind::Var(id) = &f.value.kind else {
                return None;
            };
            let v = self.env.get(&id.name)?;
            if seen.insert(&f.name.name) {
                self.metas.count(&v.ty, max, &mut n);
            }
        }
        if n <= max {
            return Some(true);
        }
        seen.clear();
        for f in fields {
            if !seen.insert(&f.name.name) {
                self.duplicate_field(&f.name);
            }
        }
        Some(false)
    }

    /// E0215 at `span` (once per program), and the error type.
    fn too_large(&mut self, span: Span) -> Type {
        let max = super::MAX_TYPE_SIZE;
        if std::mem::replace(&mut self.type_size_reported, true) {
            return Type::Error;
        }
        let d = Diagnostic::error(Code::E0215, span, format!("the type of this record has more than {max} parts"))
            .with_label("type too large")
            .with_help("a record that holds another value several times doubles its type each time; store an id or a smaller part instead");
        self.diags.push(d);
        Type::Error
    }

    /// Checks list elements against `t`; after the first element that does
    /// not fit, the rest are only synthesized (one error, not one per element).
    fn check_elements(&mut self, elems: &[Expr], t: &Type) {
        let mut failed = false;
        for el in elems {
            if failed {
                self.synth(el);
                continue;
            }
            let before = self.diags.len();
            self.check(el, t);
            failed = self.diags.len() > before;
        }
    }

    fn check_condition(&mut self, c: &Expr) {
        self.check(c, &Type::Bool);
    }

    fn var(&mut self, id: &Ident) -> Type {
        if let Some(v) = self.env.get(&id.name) {
            return (*v.ty).clone();
        }
        if self.recursive_refs.contains(&id.span) {
            return Type::Error;
        }
        if let Some(native) = crate::stdlib::lookup(&id.name) {
            return self.instantiate(native, id.span);
        }
        if BUILTINS.contains(&&*id.name) {
            let d = Diagnostic::error(
                Code::E0210,
                id.span,
                format!("builtin `{}` must be applied to its arguments", id.name),
            )
            .with_label("used as a value")
            .with_help(builtin_usage(&id.name));
            self.diags.push(d);
            return Type::Error;
        }
        let mut d = Diagnostic::error(
            Code::E0203,
            id.span,
            format!("unbound variable `{}`", id.name),
        )
        .with_label("not defined here");
        if self.tool_index.contains_key(&id.name) {
            d = d.with_help(format!(
                "`{0}` is a tool: call it with `exec tool {0} ARG` and match the Result",
                id.name
            ));
        } else if matches!(&*id.name, "and" | "or") {
            d = d.with_help(match &*id.name {
                "and" => "write `&&` for “and”",
                _ => "write `||` for “or”",
            });
        } else if !self.suggestions_allowed() {
            d = d.with_help(format!("bind it first with `let {} = … in …`", id.name));
        } else {
            let names: Vec<Name> = self.names_in_scope();
            let cands = names
                .iter()
                .map(|n| &**n)
                .chain(BUILTINS)
                .chain(crate::stdlib::all().map(|n| n.name));
            match did_you_mean(&id.name, cands) {
                Some(s) => d = d.with_help(format!("did you mean `{s}`?")),
                None => {
                    d = d.with_help(format!(
                        "bind it first with `let {} = … in …`, or use a name in scope",
                        id.name
                    ))
                }
            }
        }
        self.diags.push(d);
        Type::Error
    }

    fn let_chain(&mut self, chain: &LetChain, expected: Option<&Type>) -> Type {
        let saved = self.env.mark();
        for b in &chain.bindings {
            let ty = match &b.annot {
                Some(a) => {
                    let t = self.lower(a);
                    self.check(&b.value, &t);
                    t
                }
                None => self.synth(&b.value),
            };
            let ty = Rc::new(ty);
            self.let_types
                .push((b.name.span, b.name.name.clone(), ty.clone()));
            self.bind_shared(&b.name, ty);
        }
        let t = match expected {
            Some(exp) => {
                self.check(&chain.body, exp);
                exp.clone()
            }
            None => self.synth(&chain.body),
        };
        self.env.reset(saved);
        t
    }

    /// Synthesizes `fn param => body`; `hint` gives an unannotated parameter
    /// its type (used by `traverse`).
    pub(super) fn synth_fn(
        &mut self,
        param: &Ident,
        annot: Option<&TypeExpr>,
        body: &Expr,
        hint: Option<Type>,
    ) -> Type {
        let pty = match (annot, hint) {
            (Some(a), _) => self.lower(a),
            (None, Some(h)) => h,
            (None, None) => self.metas.fresh(param.span, "the type of this parameter"),
        };
        let undo = self.metas.undo.fresh();
        self.frames.push(Frame::new(None, Some(undo)));
        let saved = self.env.mark();
        self.bind(param, pty.clone());
        let rty = self.synth(body);
        self.env.reset(saved);
        let performed = self.frames.pop().map(|f| f.performed).unwrap_or_default();
        Type::fun(pty, performed.with_undo(Some(undo)), rty)
    }

    #[allow(clippy::too_many_arguments)]
    fn check_fn(
        &mut self,
        span: Span,
        param: &Ident,
        annot: Option<&TypeExpr>,
        body: &Expr,
        p: &Type,
        eff: &EffectSet,
        r: &Type,
    ) {
        let reason = self.callback_reason.take();
        let pty = match annot {
            Some(a) => {
                let at = self.lower(a);
                if self.metas.coerce(p, &at).is_err() {
                    let (exp, found) = (self.show(p), self.show(&at));
                    let d = Diagnostic::error(
                        Code::E0201,
                        a.span,
                        format!("parameter `{}` is annotated `{found}`, but this function receives `{exp}`", param.name),
                    )
                    .with_label(format!("expected `{exp}`"))
                    .with_expected_found(exp.clone(), found)
                    .with_help(format!("annotate the parameter as `{}: {exp}`", param.name));
                    self.diags.push(d);
                }
                at
            }
            None => p.clone(),
        };
        let allowed = match &reason {
            Some(r) => r.clone(),
            None => Allowed {
                set: eff.clone(),
                span,
                reason: format!("this function is expected to perform at most {eff}"),
                help: format!(
                    "allow the effect in the expected function type (for example `A -{{Write}}-> B`), \
                     or move the call out of this function; allowed here: {eff}"
                ),
            },
        };
        // The function's calls are those of a function of the expected type.
        self.frames.push(Frame::new(Some(allowed), eff.undo()));
        let saved = self.env.mark();
        self.bind(param, pty);
        // A curried callback's inner lambda is held to the same reason
        // (`fold (fn acc => fn x => …)`), but only while the expected type
        // is as pure as the reason: a lambda returned *as the accumulator*
        // (`c = String -{Read}-> …`) has its own allowed effects.
        if matches!(body.kind, ExprKind::Fn { .. }) {
            let inner_fits = match (&*self.metas.resolve(r), &reason) {
                (Type::Fun(_, e, _), Some(why)) => e.is_subset(&why.set),
                _ => false,
            };
            if inner_fits {
                self.callback_reason = reason;
            }
        }
        self.check(body, r);
        self.callback_reason = None;
        self.env.reset(saved);
        self.frames.pop();
    }

    pub(super) fn duplicate_field(&mut self, name: &Ident) {
        let d = Diagnostic::error(
            Code::E0207,
            name.span,
            format!("field `{}` is given twice", name.name),
        )
        .with_label("duplicate field")
        .with_help("remove one of the two");
        self.diags.push(d);
    }
}

/// How to call a builtin, for help lines.
pub(super) fn builtin_usage(name: &str) -> String {
    match name {
        "map" => "apply it: `map (fn x => …) xs` (the callback must be pure)".into(),
        "filter" => {
            "apply it: `filter (fn x => …) xs` (the predicate must be pure and return Bool)"
                .into()
        }
        "fold" => {
            "apply it: `fold (fn acc => fn x => …) init xs` (the callback must be pure)"
                .into()
        }
        "fan_out" => "apply it: `fan_out (fn x => exec tool NAME x) xs`, and match each Result".into(),
        "bounded_loop" => {
            "apply it: `bounded_loop 10 init (fn s => … {done = …, value = …})` (the bound is an Int literal)"
                .into()
        }
        _ => "apply it: `traverse (fn x => exec tool NAME x) xs` and match its Result".into(),
    }
}

impl Checker<'_> {
    /// Whether `actual ≤ expected` holds, for a hint: only asked of types
    /// without unsolved metavariables, so nothing is bound.
    fn fits(&mut self, actual: &Type, expected: &Type) -> bool {
        let (a, e) = (self.metas.zonk(actual), self.metas.zonk(expected));
        self.metas.first_unsolved(&a).is_none()
            && self.metas.first_unsolved(&e).is_none()
            && self.metas.coerce(&a, &e).is_ok()
    }
}

/// `text`, or `…` when it is too long to quote in a help line.
fn short(text: &str) -> &str {
    if text.len() <= 60 && !text.contains('\n') {
        text
    } else {
        "…"
    }
}
