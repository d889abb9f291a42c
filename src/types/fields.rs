//! Field access: `r.f` on a record type.
//!
//! A missing field is E0202, naming the record's fields and the closest one
//! (λ-Tool's wording: `Field 'plan' not found in record type {…}`); a field
//! of a Result is E0601 (match it first); reading one field discards the
//! others, which is an error when one of them is linear (E0502) or, in a
//! record literal, a Result (E0603).

use super::checker::Checker;
use super::ty::Type;
use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::*;

impl Checker<'_> {
    pub(super) fn field(&mut self, r: &Expr, f: &Ident) -> Type {
        let rt = self.synth(r);
        let rt = self.metas.resolve_peeled(&rt);
        match &*rt {
            Type::Record(fs) | Type::OpenRecord(fs) => {
                if let Some((_, t)) = fs.iter().find(|(n, _)| *n == f.name) {
                    self.dropped_fields(r, f, fs);
                    return t.clone();
                }
                let shown = self.show(&rt);
                let all: Vec<&str> = fs.iter().map(|(n, _)| &**n).collect();
                let listed = list_names(&all);
                let mut d = Diagnostic::error(
                    Code::E0202,
                    f.span,
                    format!("Field '{}' not found in record type {shown}", f.name),
                )
                .with_label(format!("no field `{}`", f.name))
                .with_secondary(r.span, format!("this has type {shown}"));
                let searchable = self.suggestions_allowed() && all.len() <= 1000;
                d = if all.is_empty() {
                    d.with_help("this record has no fields")
                } else {
                    d = d.with_note(format!("the record has fields: {listed}"));
                    let typo = if searchable {
                        did_you_mean(&f.name, all.iter().copied())
                    } else {
                        None
                    };
                    match typo {
                        Some(s) => d.with_help(format!("did you mean `{s}`?")),
                        None if !searchable => {
                            d.with_help(format!("use one of the record's fields: {listed}"))
                        }
                        // No field is close: naming the least far one
                        // (`plan` → `last_charge_cents`) would only mislead.
                        None => d.with_help(format!(
                            "no field is named like `{}`: use one of the record's fields ({listed}), or, if the tool returns `{}`, add it to the tool's declaration",
                            f.name, f.name
                        )),
                    }
                };
                self.diags.push(d);
                Type::Error
            }
            Type::Result(..) => {
                let shown = self.show(&rt);
                let d = Diagnostic::error(
                    Code::E0601,
                    f.span,
                    format!("cannot read field `{}` of a Result", f.name),
                )
                .with_label("field access on a Result")
                .with_secondary(r.span, format!("this is a {shown}: it may have failed"))
                .with_help(format!(
                    "match it first: `match … {{ Ok(v) => v.{}, Err(e) => … }}`",
                    f.name
                ));
                self.diags.push(d);
                Type::Error
            }
            Type::Option(_) => {
                let shown = self.show(&rt);
                let d = Diagnostic::error(
                    Code::E0601,
                    f.span,
                    format!("cannot read field `{}` of an Option", f.name),
                )
                .with_label("field access on an Option")
                .with_secondary(r.span, format!("this is a {shown}: it may be None"))
                .with_help(format!(
                    "match it first: `match … {{ Some(v) => v.{}, None => … }}`",
                    f.name
                ));
                self.diags.push(d);
                Type::Error
            }
            Type::Error => Type::Error,
            Type::Meta(id) => {
                let mut d = Diagnostic::error(
                    Code::E0209,
                    r.span,
                    format!(
                        "cannot read field `{}`: the record type is not known here",
                        f.name
                    ),
                )
                .with_label("type not known");
                if let Some((origin, what)) = self.metas.origin(*id) {
                    d = d.with_secondary(origin, what);
                }
                self.diags.push(d.with_help("annotate the parameter with its record type, e.g. `fn r: {name: String} => r.name`"));
                Type::Error
            }
            other => {
                let shown = self.show(other);
                let d = Diagnostic::error(
                    Code::E0202,
                    f.span,
                    format!("`{shown}` is not a record, so it has no field `{}`", f.name),
                )
                .with_label("field access on a non-record")
                .with_secondary(r.span, format!("this has type {shown}"))
                .with_help("only records have fields; remove `.field` or use a record value");
                self.diags.push(d);
                Type::Error
            }
        }
    }

    /// Reading `r.f` discards the record's other fields: a linear one (its
    /// value is never used) is E0502, and a Result in a record literal (its
    /// failure is never handled) is E0603.
    pub(super) fn dropped_fields(&mut self, r: &Expr, f: &Ident, fs: &[(Name, Type)]) {
        let literal = matches!(r.kind, ExprKind::Record(_));
        for (n, t) in fs {
            if *n == f.name {
                continue;
            }
            let t = self.metas.zonk(t);
            if t.is_linear() {
                let d = Diagnostic::error(Code::E0502, f.span, format!("reading `.{}` discards the linear field `{n}`", f.name))
                    .with_label(format!("`{n}` has type {t} and is never used"))
                    .with_secondary(r.span, "this record holds a `!` value")
                    .with_help(format!("use `{n}` exactly once: pass the whole record to the tool that consumes it, or bind the field before reading others"));
                self.diags.push(d);
            } else if literal && t.contains_result() {
                let d = Diagnostic::error(
                    Code::E0603,
                    f.span,
                    format!(
                        "Unhandled Result: reading `.{}` discards the Result in field `{n}`",
                        f.name
                    ),
                )
                .with_label(format!("`{n}` has type {t}, which is never matched"))
                .with_help(format!(
                    "match `{n}` first: `match … {{ Ok(v) => …, Err(e) => … }}`"
                ));
                self.diags.push(d);
            }
        }
    }
}

/// At most 30 names, comma-separated, then how many more.
fn list_names(names: &[&str]) -> String {
    const MAX: usize = 30;
    let mut out = names
        .iter()
        .take(MAX)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX {
        out.push_str(&format!(" … and {} more", names.len() - MAX));
    }
    out
}

impl Checker<'_> {
    /// `{base with f = v, …}` (extension): `base` must be a record that has
    /// every updated field; each new value is checked against the field's
    /// type, and the whole has `base`'s type.
    pub(super) fn update(&mut self, base: &Expr, fields: &[Field], _span: Span) -> Type {
        let bt = self.synth(base);
        let resolved = self.metas.resolve_peeled(&bt).into_owned();
        let fs = match &resolved {
            Type::Record(fs) | Type::OpenRecord(fs) => fs.clone(),
            Type::Error => {
                for f in fields {
                    self.synth(&f.value);
                }
                return Type::Error;
            }
            other => {
                let shown = self.show(other);
                let d = Diagnostic::error(
                    Code::E0202,
                    base.span,
                    format!("only a record can be updated, but this has type {shown}"),
                )
                .with_label("not a record")
                .with_help("write `{r with field = value}` where `r` is a record");
                self.diags.push(d);
                for f in fields {
                    self.synth(&f.value);
                }
                return Type::Error;
            }
        };
        let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        for f in fields {
            if !seen.insert(&f.name.name) {
                self.duplicate_field(&f.name);
                self.synth(&f.value);
                continue;
            }
            match fs.iter().find(|(n, _)| *n == f.name.name) {
                Some((_, t)) => {
                    let old = self.metas.zonk(t);
                    if old.is_linear() || old.contains_result() {
                        let (code, what) = if old.is_linear() {
                            (Code::E0502, "a `!` value, which would never be used")
                        } else {
                            (Code::E0603, "a Result, which would never be matched")
                        };
                        let d = Diagnostic::error(
                            code,
                            f.name.span,
                            format!("updating `{}` discards its old value, {what}", f.name.name),
                        )
                        .with_label(format!("the old `{}` has type {old}", f.name.name))
                        .with_help("use the old value first, or build a new record literal");
                        self.diags.push(d);
                    }
                    self.check(&f.value, t)
                }
                None => {
                    self.synth(&f.value);
                    let shown = self.show(&resolved);
                    let all: Vec<&str> = fs.iter().map(|(n, _)| &**n).collect();
                    let help = match did_you_mean(&f.name.name, all.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "an update replaces existing fields only; to add `{}`, build a new record literal",
                            f.name.name
                        ),
                    };
                    let d = Diagnostic::error(
                        Code::E0202,
                        f.name.span,
                        format!("Field '{}' not found in record type {shown}", f.name.name),
                    )
                    .with_label(format!("no field `{}` to update", f.name.name))
                    .with_secondary(base.span, format!("this has type {shown}"))
                    .with_help(help);
                    self.diags.push(d);
                }
            }
        }
        bt
    }
}
