//! Comparing an actual type with an expected one and turning failures into
//! diagnostics; record literals checked field by field; operators.

use super::checker::Checker;
use super::ty::Type;
use super::unify::Mismatch;
use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{BinOp, Expr, ExprKind, Field, Name};

fn at_path(path: &[String]) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" (in {})", path.join(" → "))
    }
}

impl Checker<'_> {
    /// Reports unless `actual ≤ expected`; `span` is the expression's.
    pub(super) fn expect(&mut self, span: Span, actual: &Type, expected: &Type) {
        if let Err(m) = self.metas.coerce(actual, expected) {
            let mut d = self.mismatch(span, actual, expected, m);
            if let Some((branch, first, what)) = self.branch_ctx {
                if branch == span && matches!(d.code, Code::E0201 | Code::E0208 | Code::E0606) {
                    let first_ty = self.show(expected);
                    d = d
                        .with_secondary(first, format!("{what} has type {first_ty}"))
                        .with_help(format!(
                            "give this the same type as {what} ({first_ty}), or change {what}"
                        ));
                }
            }
            self.diags.push(d);
        }
    }

    /// The diagnostic for a failed `actual ≤ expected`.
    pub(super) fn mismatch(
        &self,
        span: Span,
        actual: &Type,
        expected: &Type,
        m: Mismatch,
    ) -> Diagnostic {
        let full_exp = self.show(expected);
        let full_found = self.show(actual);
        match m {
            Mismatch::Types {
                path,
                expected: e,
                found: f,
            } => {
                if path.is_empty()
                    && matches!(f, Type::Result(..))
                    && !matches!(e, Type::Result(..))
                {
                    return Diagnostic::error(Code::E0606, span, format!("this is a {f}, but a value of type {e} is expected"))
                        .with_label("unmatched Result")
                        .with_expected_found(e.to_string(), f.to_string())
                        .with_help("a Result must be matched before its value is used: `match … { Ok(v) => …, Err(e) => … }`");
                }
                let mut d = Diagnostic::error(
                    Code::E0201,
                    span,
                    format!("type mismatch: expected {e}, found {f}{}", at_path(&path)),
                )
                .with_label(format!("this has type {f}"))
                .with_expected_found(e.to_string(), f.to_string());
                if !path.is_empty() {
                    d = d.with_note(format!(
                        "the whole value has type {full_found}, but {full_exp} is expected"
                    ));
                }
                let help = match (&e, &f) {
                    (Type::String, Type::Int) => {
                        "use a String value (text in double quotes)".to_string()
                    }
                    (Type::Int, Type::String) => {
                        "use an Int value (numbers are written without quotes)".to_string()
                    }
                    (Type::List(_), Type::Unit) | (Type::List(_), Type::Record(_)) => {
                        "write a list as `[a, b]`, or `[]: T` for an empty list of T".to_string()
                    }
                    (Type::Result(..), _) => {
                        "wrap the value: `Ok(value)` for success or `Err(\"message\")` for failure"
                            .to_string()
                    }
                    (Type::Fun(..), _) => "pass a function such as `fn x: T => …`".to_string(),
                    _ => format!("give this expression type {e}"),
                };
                d.with_help(help)
            }
            Mismatch::Fields {
                path,
                missing,
                extra,
            } => {
                let mut parts = Vec::new();
                if !missing.is_empty() {
                    parts.push(format!("missing {}", list(&missing)));
                }
                if !extra.is_empty() {
                    parts.push(format!("unexpected {}", list(&extra)));
                }
                let mut d = Diagnostic::error(
                    Code::E0208,
                    span,
                    format!(
                        "record fields do not match{}: {}",
                        at_path(&path),
                        parts.join(", ")
                    ),
                )
                .with_label(format!("this has type {full_found}"))
                .with_expected_found(full_exp.clone(), full_found);
                d = d.with_help(fields_help(&missing, &extra));
                d
            }
            Mismatch::Dropped { path, field, ty } => {
                let (code, what, help) = if ty.is_linear() {
                    (
                        Code::E0502,
                        "a `!` value that would never be used",
                        format!("consume `{field}` first (pass it to the tool that takes it), or list it in the record type"),
                    )
                } else {
                    (
                        Code::E0603,
                        "a Result that would never be matched",
                        format!("match `{field}` first: `match r.{field} {{ Ok(v) => …, Err(e) => … }}`, or list it in the record type"),
                    )
                };
                Diagnostic::error(
                    code,
                    span,
                    format!(
                        "this record's field `{field}`{} holds {what}: `{full_exp}` would hide it",
                        at_path(&path)
                    ),
                )
                .with_label(format!("`{field}` has type {ty}"))
                .with_expected_found(full_exp.clone(), full_found)
                .with_help(help)
            }
            Mismatch::Effects { path, allowed, got } => {
                let mut d = Diagnostic::error(
                    Code::E0401,
                    span,
                    format!("Effect violation: allowed {allowed} but got {got}"),
                )
                .with_label(format!("this function may perform {got}{}", at_path(&path)))
                .with_expected_found(full_exp, full_found);
                d = match &self.callback_reason {
                    Some(r) => d.with_secondary(r.span, r.reason.clone()).with_help(r.help.clone()),
                    None => d.with_help(
                        "only a function with fewer effects fits here; for effectful iteration use `traverse` and match its Result",
                    ),
                };
                d
            }
            Mismatch::Unlinear { path, found } => Diagnostic::error(
                Code::E0505,
                span,
                format!("a linear {found} is used where a plain value is expected{}", at_path(&path)),
            )
            .with_label(format!("this is {found}: it must be used exactly once"))
            .with_expected_found(full_exp, full_found)
            .with_help(
                "keep the `!`: pass the value straight to the tool that consumes it (as its argument or a \
                 field of it), or give the parameter or binding a `!` type",
            ),
            Mismatch::Occurs => {
                Diagnostic::error(Code::E0201, span, "this would need an infinite type")
                    .with_label(format!("{full_found} cannot equal {full_exp}"))
                    .with_help("add type annotations to find the mistake")
            }
        }
    }

    /// Checks a record literal against the fields of an expected record type,
    /// naming each missing and unknown field. `tool` names the tool whose
    /// argument this is.
    pub(super) fn check_record(
        &mut self,
        fields: &[Field],
        expected: &[(Name, Type)],
        span: Span,
        tool: Option<&Name>,
        consuming: bool,
    ) {
        let index: rustc_hash::FxHashMap<&str, &Type> =
            expected.iter().map(|(n, t)| (&**n, t)).collect();
        let mut seen: rustc_hash::FxHashSet<Name> = rustc_hash::FxHashSet::default();
        let mut unknown: Vec<&Field> = Vec::new();
        for f in fields {
            if !seen.insert(f.name.name.clone()) {
                self.duplicate_field(&f.name);
                self.synth(&f.value);
                continue;
            }
            match index.get(&*f.name.name).map(|t| ((), *t)) {
                Some((_, t)) => {
                    self.consuming = consuming;
                    self.check(&f.value, t);
                }
                None => {
                    self.synth(&f.value);
                    unknown.push(f);
                }
            }
        }
        // An `Option` field may be left out (extension): it is `None`.
        type Fields<'f> = Vec<&'f (Name, Type)>;
        let (omitted, missing): (Fields<'_>, Fields<'_>) = expected
            .iter()
            .filter(|(n, _)| !seen.contains(n))
            .partition(|(_, t)| matches!(*self.metas.resolve_peeled(t), Type::Option(_)));
        if !omitted.is_empty() {
            self.omitted_fields
                .insert(span, omitted.iter().map(|(n, _)| n.clone()).collect());
        }
        if unknown.is_empty() && missing.is_empty() {
            return;
        }
        let exp_ty = self.show(&Type::Record(expected.to_vec()));
        let whose = match tool {
            Some(t) => format!("tool `{t}` takes"),
            None => "expected".to_string(),
        };
        for f in &unknown {
            let cands = missing.iter().map(|(n, _)| &**n);
            let help = match did_you_mean(&f.name.name, cands) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("remove it; {whose} {exp_ty}"),
            };
            let d = Diagnostic::error(
                Code::E0208,
                f.name.span,
                format!("unknown field `{}`", f.name.name),
            )
            .with_label(format!("not a field of {exp_ty}"))
            .with_note(format!("{whose} {exp_ty}"))
            .with_help(help);
            self.diags.push(d);
        }
        // A missing field that some unknown field is a typo of is reported
        // with that field; every other missing field is listed here.
        let suggested: Vec<&str> = unknown
            .iter()
            .filter_map(|f| did_you_mean(&f.name.name, missing.iter().map(|(n, _)| &**n)))
            .collect();
        let unmatched_missing: Vec<String> = missing
            .iter()
            .filter(|(n, _)| !suggested.contains(&&**n))
            .map(|(n, t)| format!("{n}: {}", self.show(t)))
            .collect();
        if !unmatched_missing.is_empty() {
            let d = Diagnostic::error(
                Code::E0208,
                span,
                format!(
                    "missing field{} {}",
                    if unmatched_missing.len() > 1 { "s" } else { "" },
                    unmatched_missing.join(", ")
                ),
            )
            .with_label(if unmatched_missing.len() > 1 {
                "this record lacks them"
            } else {
                "this record lacks it"
            })
            .with_note(format!("{whose} {exp_ty}"))
            .with_help(format!(
                "add {}",
                unmatched_missing
                    .iter()
                    .map(|m| {
                        let (name, ty) = m.split_once(": ").unwrap_or((m, "…"));
                        format!("`{name} = …` (type {ty})")
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            self.diags.push(d);
        }
    }

    /// Types a binary operation.
    pub(super) fn binary(&mut self, op: BinOp, op_span: Span, a: &Expr, b: &Expr) -> Type {
        match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                let ta = self.synth(a);
                if op == BinOp::Add && matches!(*self.metas.resolve_peeled(&ta), Type::String) {
                    self.synth(b);
                    let d = Diagnostic::error(
                        Code::E0201,
                        op_span,
                        "`+` adds Ints; it cannot join Strings",
                    )
                    .with_label("String + …")
                    .with_expected_found("Int", "String")
                    .with_help("join strings with `++`: `a ++ b`");
                    self.diags.push(d);
                    return Type::String;
                }
                if matches!(*self.metas.resolve_peeled(&ta), Type::Float) {
                    self.check(b, &Type::Float);
                    return Type::Float;
                }
                let tb = self.synth(b);
                // `fn x => x * 2.0`: an operand of unknown type next to a Float is a Float.
                if matches!(*self.metas.resolve_peeled(&ta), Type::Meta(_))
                    && matches!(*self.metas.resolve_peeled(&tb), Type::Float)
                {
                    self.expect(a.span, &ta, &Type::Float);
                    return Type::Float;
                }
                if matches!(*self.metas.resolve_peeled(&tb), Type::Float)
                    && matches!(*self.metas.resolve_peeled(&ta), Type::Int)
                {
                    let d = Diagnostic::error(
                        Code::E0201,
                        op_span,
                        format!("`{}` on an Int and a Float", op.as_str()),
                    )
                    .with_label("Int on the left, Float on the right")
                    .with_expected_found("two Ints or two Floats", "Int and Float")
                    .with_help("convert the Int first: `to_float n`, or the Float with `round x` / `truncate x`");
                    self.diags.push(d);
                    return Type::Float;
                }
                self.expect(a.span, &ta, &Type::Int);
                self.expect(b.span, &tb, &Type::Int);
                Type::Int
            }
            BinOp::Concat => {
                let before = self.diags.len();
                self.check(a, &Type::String);
                self.check(b, &Type::String);
                // The commonest mistakes with `++`, said in the fix.
                for d in &mut self.diags[before..] {
                    if d.code != Code::E0201 {
                        continue;
                    }
                    match d.found.as_deref() {
                        Some(f) if f.starts_with("List") => {
                            d.help = Some("`++` joins Strings; join two lists with `concat xs ys`".into())
                        }
                        Some(f) if f.starts_with("Option") => {
                            d.help = Some("this is an Option: use `with_default \"\" x`, or `match x { Some(v) => …, None => … }`".into())
                        }
                        Some("Int") | Some("Float") | Some("Bool") => {
                            d.help = Some("convert it first: `\"n: \" ++ to_string n`".into())
                        }
                        _ => {}
                    }
                }
                Type::String
            }
            BinOp::And | BinOp::Or => {
                self.check(a, &Type::Bool);
                self.check(b, &Type::Bool);
                Type::Bool
            }
            BinOp::Eq | BinOp::Ne => {
                let ta = self.synth(a);
                self.check_operand(b, &ta);
                let t = self.metas.zonk(&ta);
                if t.is_linear() {
                    let d = Diagnostic::error(
                        Code::E0505,
                        op_span,
                        format!(
                            "`{}` would consume a linear {t} just to compare it",
                            op.as_str()
                        ),
                    )
                    .with_label("comparison of a `!` value")
                    .with_expected_found("a plain value", t.to_string())
                    .with_help("a `!` value is for one tool call; compare plain values instead");
                    self.diags.push(d);
                    return Type::Bool;
                }
                if self.metas.first_unsolved(&t).is_some() {
                    // Decided once the program is typed (`fn x => x == x`
                    // applied to a Result must not compare it).
                    self.comparisons.push((ta.clone(), op_span, op));
                } else if let Some(why) = not_comparable(&t) {
                    let d = Diagnostic::error(Code::E0211, op_span, format!("`{}` cannot compare values of type {t}", op.as_str()))
                        .with_label(why)
                        .with_help(match t {
                            Type::Result(..) => "match the Result first and compare the values inside",
                            _ => "compare plain data: Int, Bool, String, Unit, or records and lists of them",
                        });
                    self.diags.push(d);
                }
                Type::Bool
            }
            BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
                let ta = self.synth(a);
                match self.metas.resolve_peeled(&ta).into_owned() {
                    Type::Int | Type::String | Type::Float | Type::Enum(_) => {
                        self.check_operand(b, &ta)
                    }
                    Type::Error => {
                        self.synth(b);
                    }
                    Type::Meta(_) => {
                        self.expect(a.span, &ta, &Type::Int);
                        self.check(b, &Type::Int);
                    }
                    other => {
                        self.synth(b);
                        let shown = self.show(&other);
                        let d = Diagnostic::error(
                            Code::E0211,
                            op_span,
                            format!("`{}` cannot order values of type {shown}", op.as_str()),
                        )
                        .with_label("only Int, Float, String and enums are ordered")
                        .with_help("compare Ints, Floats or Strings instead");
                        self.diags.push(d);
                    }
                }
                Type::Bool
            }
        }
    }
}

fn list(names: &[Name]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fields_help(missing: &[Name], extra: &[Name]) -> String {
    for x in extra {
        if let Some(s) = did_you_mean(x, missing.iter().map(|n| &**n)) {
            return format!("did you mean `{s}` instead of `{x}`?");
        }
    }
    match (missing.is_empty(), extra.is_empty()) {
        (false, true) => format!("add {}", list(missing)),
        (true, false) => format!("remove {}", list(extra)),
        _ => format!("add {} and remove {}", list(missing), list(extra)),
    }
}

/// Why values of `t` cannot be compared with `==`, if they cannot.
fn not_comparable(t: &Type) -> Option<&'static str> {
    match t {
        Type::Unit
        | Type::Bool
        | Type::Int
        | Type::Float
        | Type::String
        | Type::Enum(_)
        | Type::Json
        | Type::Approval
        | Type::Meta(_)
        | Type::Error => None,
        Type::Linear(t) | Type::List(t) | Type::Option(t) => not_comparable(t),
        Type::Record(fs) | Type::OpenRecord(fs) => fs.iter().find_map(|(_, t)| not_comparable(t)),
        Type::Result(..) => Some("Results must be matched, not compared"),
        Type::Fun(..) => Some("functions cannot be compared"),
    }
}

impl Checker<'_> {
    /// A string literal where an enum is expected: it must be one of the
    /// enum's literals.
    pub(super) fn enum_literal(&mut self, s: &str, span: Span, lits: &[Name]) {
        if lits.iter().any(|l| &**l == s) {
            return;
        }
        let allowed = lits
            .iter()
            .map(|l| format!("{:?}", &**l))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match did_you_mean(s, lits.iter().map(|l| &**l)) {
            Some(near) => format!("did you mean {near:?}?"),
            None => format!("use one of {allowed}"),
        };
        let d = Diagnostic::error(
            Code::E0216,
            span,
            format!("{s:?} is not one of the allowed values {allowed}"),
        )
        .with_label("not an allowed value")
        .with_expected_found(Type::Enum(lits.into()).to_string(), format!("{s:?}"))
        .with_help(help);
        self.diags.push(d);
    }
}

impl Checker<'_> {
    /// The right operand of a comparison whose left has type `ta`: checked
    /// against it, except that an enum compares with any String (a literal
    /// must still be one of the enum's: E0216).
    fn check_operand(&mut self, b: &Expr, ta: &Type) {
        if matches!(*self.metas.resolve_peeled(ta), Type::Enum(_))
            && !matches!(b.kind, ExprKind::Str(_))
        {
            let tb = self.synth(b);
            self.expect(b.span, &tb, &Type::String);
            return;
        }
        self.check(b, ta);
    }
}

impl Checker<'_> {
    /// Re-checks the comparisons whose operand type was not known when
    /// they were typed (E0211 for Results and functions, E0505 for `!T`).
    pub(super) fn check_comparisons(&mut self) {
        for (t, span, op) in std::mem::take(&mut self.comparisons) {
            let t = self.metas.zonk(&t);
            if t.is_linear() {
                let d = Diagnostic::error(
                    Code::E0505,
                    span,
                    format!(
                        "`{}` would consume a linear {t} just to compare it",
                        op.as_str()
                    ),
                )
                .with_label("comparison of a `!` value")
                .with_help("a `!` value is for one tool call; compare plain values instead");
                self.diags.push(d);
            } else if let Some(why) = not_comparable(&t) {
                let d = Diagnostic::error(
                    Code::E0211,
                    span,
                    format!("`{}` cannot compare values of type {t}", op.as_str()),
                )
                .with_label(why)
                .with_help(match t {
                    Type::Result(..) => "match the Result first and compare the values inside",
                    _ => {
                        "compare plain data: Int, Bool, String, Unit, or records and lists of them"
                    }
                });
                self.diags.push(d);
            }
        }
    }
}
