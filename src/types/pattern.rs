//! `match`: mandatory `Result` matching, exhaustive `Option` and enum
//! matching, and arm typing.
//!
//! A match on a `Result` must have exactly one `Ok(…)` arm and one `Err(…)`
//! arm, in either order; `_` or a bare name instead of one of them is
//! rejected (E0604), because the point of the rule is that every failure is
//! handled by name. A second `Ok` or `Err` arm is E0605. On any other type the
//! catch-all patterns are `_` and a name, and arms after the first catch-all
//! are unreachable (E0605). `Ok`/`Err` patterns on a non-Result are E0214.
//!
//! Extensions: a match on an `Option T` covers `Some(x)` and `None` (or has
//! a catch-all); a match on an enum `"a" | "b"` covers every literal (or has
//! a catch-all), and a literal outside the enum is E0216; a match on a
//! `String` with literal patterns needs a catch-all. A match that misses a
//! case is E0607, naming what is missing.

use super::checker::Checker;
use super::ty::Type;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Arm, Binder, Expr, Name, PatternKind};

/// What a match's scrutinee is, as far as its arms are concerned.
enum Scrutinee {
    Result(Type, Type),
    Option(Type),
    Enum(std::rc::Rc<[Name]>),
    Str,
    Plain,
    Error,
}

fn is_result_pat(k: &PatternKind) -> bool {
    matches!(k, PatternKind::Ok(_) | PatternKind::Err(_))
}

fn is_option_pat(k: &PatternKind) -> bool {
    matches!(k, PatternKind::Some(_) | PatternKind::None)
}

fn is_catch_all(k: &PatternKind) -> bool {
    matches!(k, PatternKind::Wildcard | PatternKind::Var(_))
}

impl Checker<'_> {
    /// Types `match scrut { arms }`; `expected` is the checking-mode type.
    pub(super) fn match_expr(
        &mut self,
        scrut: &Expr,
        arms: &[Arm],
        expected: Option<Type>,
        span: Span,
    ) -> Type {
        let st = self.synth(scrut);
        let resolved = self.metas.resolve_peeled(&st).into_owned();
        let has = |f: fn(&PatternKind) -> bool| arms.iter().any(|a| f(&a.pattern.kind));
        let kind = match &resolved {
            Type::Result(a, b) => Scrutinee::Result((**a).clone(), (**b).clone()),
            Type::Option(t) => Scrutinee::Option((**t).clone()),
            Type::Enum(lits) => Scrutinee::Enum(lits.clone()),
            Type::String => Scrutinee::Str,
            Type::Meta(_) if has(is_result_pat) => {
                let a = self
                    .metas
                    .fresh(scrut.span, "the Ok type of the matched Result");
                let b = self
                    .metas
                    .fresh(scrut.span, "the Err type of the matched Result");
                let _ = self.metas.coerce(&st, &Type::result(a.clone(), b.clone()));
                Scrutinee::Result(a, b)
            }
            Type::Meta(_) if has(is_option_pat) => {
                let a = self
                    .metas
                    .fresh(scrut.span, "the type inside the matched Option");
                let _ = self.metas.coerce(&st, &Type::option(a.clone()));
                Scrutinee::Option(a)
            }
            Type::Meta(_) if has(|k| matches!(k, PatternKind::Str(_))) => {
                let _ = self.metas.coerce(&st, &Type::String);
                Scrutinee::Str
            }
            Type::Error => Scrutinee::Error,
            _ => Scrutinee::Plain,
        };
        self.misplaced_patterns(arms, &kind, scrut, &resolved);
        if matches!(kind, Scrutinee::Enum(_) | Scrutinee::Str)
            && self.metas.zonk(&st).is_linear()
            && arms
                .iter()
                .any(|a| matches!(a.pattern.kind, PatternKind::Str(_)))
        {
            let t = self.metas.zonk(&st);
            let d = Diagnostic::error(
                Code::E0505,
                scrut.span,
                format!("matching a linear {t} against string literals would consume it just to compare it"),
            )
            .with_label("a `!` value")
            .with_help("a `!` value is for one tool call; match a plain value instead");
            self.diags.push(d);
        }
        match &kind {
            Scrutinee::Result(..) => self.result_arms(arms, scrut.span, span),
            Scrutinee::Option(_) => self.option_arms(arms, scrut.span, span),
            Scrutinee::Enum(lits) => self.enum_arms(arms, lits, scrut.span, span),
            Scrutinee::Str => self.string_arms(arms, scrut.span, span),
            Scrutinee::Plain => self.plain_arms(arms, span),
            Scrutinee::Error => {}
        }
        let is_result = matches!(kind, Scrutinee::Result(..));
        let (ok_t, err_t) = match &kind {
            Scrutinee::Result(a, b) => (a.clone(), b.clone()),
            _ => (Type::Error, Type::Error),
        };
        let some_t = match &kind {
            Scrutinee::Option(t) => t.clone(),
            _ => Type::Error,
        };

        let mut result_ty = expected.clone();
        let mut first_arm: Option<Span> = None;
        for arm in arms {
            let saved = self.env.mark();
            match &arm.pattern.kind {
                PatternKind::Ok(Binder::Var(x)) => self.bind(x, ok_t.clone()),
                PatternKind::Err(Binder::Var(x)) => self.bind(x, err_t.clone()),
                PatternKind::Some(Binder::Var(x)) => self.bind(x, some_t.clone()),
                // On a Result a catch-all is already E0604; do not report it again.
                PatternKind::Var(x) if is_result => self.bind(x, Type::Error),
                PatternKind::Var(x) => self.bind(x, st.clone()),
                PatternKind::Ok(Binder::Wildcard(w)) => {
                    self.binder_types.insert(*w, std::rc::Rc::new(ok_t.clone()));
                }
                PatternKind::Err(Binder::Wildcard(w)) => {
                    self.binder_types
                        .insert(*w, std::rc::Rc::new(err_t.clone()));
                }
                PatternKind::Some(Binder::Wildcard(w)) => {
                    self.binder_types
                        .insert(*w, std::rc::Rc::new(some_t.clone()));
                }
                PatternKind::Wildcard => {
                    self.binder_types
                        .insert(arm.pattern.span, std::rc::Rc::new(st.clone()));
                }
                PatternKind::None | PatternKind::Str(_) => {}
            }
            match (&result_ty, first_arm) {
                (Some(t), Some(first)) if expected.is_none() => {
                    let t = t.clone();
                    result_ty = Some(self.check_branch(&arm.body, &t, first, "the first arm"));
                }
                (Some(t), _) => {
                    let t = t.clone();
                    self.check(&arm.body, &t);
                }
                (None, _) => {
                    result_ty = Some(self.synth(&arm.body));
                    first_arm = Some(arm.body.span);
                }
            }
            self.env.reset(saved);
        }
        result_ty.unwrap_or(Type::Error)
    }

    /// E0214 for patterns of another type's shape (one per match).
    fn misplaced_patterns(&mut self, arms: &[Arm], kind: &Scrutinee, scrut: &Expr, t: &Type) {
        if matches!(kind, Scrutinee::Error) {
            return;
        }
        let shown = self.show(t);
        for arm in arms {
            let k = &arm.pattern.kind;
            let (what, fits) = if is_result_pat(k) {
                ("a Result", matches!(kind, Scrutinee::Result(..)))
            } else if is_option_pat(k) {
                ("an Option", matches!(kind, Scrutinee::Option(_)))
            } else if matches!(k, PatternKind::Str(_)) {
                (
                    "a String",
                    matches!(kind, Scrutinee::Str | Scrutinee::Enum(_)),
                )
            } else {
                continue;
            };
            if fits {
                continue;
            }
            let help = match what {
                "a Result" => "match a Result here (for example `exec tool …`), or use `_` / a name as the pattern",
                "an Option" => "match an Option here (`Some(x) => …, None => …`), or use `_` / a name as the pattern",
                _ => "match a String or an enum here, or use `_` / a name as the pattern",
            };
            let d = Diagnostic::error(
                Code::E0214,
                arm.pattern.span,
                format!("this pattern matches {what}, but the matched value has type {shown}"),
            )
            .with_label(format!(
                "{} pattern",
                &what[what.find(' ').map_or(0, |i| i + 1)..]
            ))
            .with_secondary(scrut.span, format!("this has type {shown}"))
            .with_help(help);
            self.diags.push(d);
            // One error per match: the other arms have the same problem.
            break;
        }
    }

    fn option_arms(&mut self, arms: &[Arm], scrut: Span, whole: Span) {
        let mut some_arm: Option<Span> = None;
        let mut none_arm: Option<Span> = None;
        let mut catch_all: Option<Span> = None;
        for arm in arms {
            if let Some(first) = catch_all {
                self.unreachable(
                    arm.pattern.span,
                    first,
                    "this pattern already matches everything",
                );
                continue;
            }
            let (slot, name) = match &arm.pattern.kind {
                PatternKind::Some(_) => (&mut some_arm, "Some"),
                PatternKind::None => (&mut none_arm, "None"),
                k if is_catch_all(k) => {
                    catch_all = Some(arm.pattern.span);
                    continue;
                }
                _ => continue,
            };
            match slot {
                Some(first) => {
                    let first = *first;
                    self.unreachable(
                        arm.pattern.span,
                        first,
                        &format!("the first `{name}` arm already matches"),
                    );
                }
                None => *slot = Some(arm.pattern.span),
            }
        }
        if catch_all.is_some() {
            return;
        }
        for (present, name, example) in [
            (some_arm, "Some", "Some(x) => …"),
            (none_arm, "None", "None => …"),
        ] {
            if present.is_none() {
                let d = Diagnostic::error(
                    Code::E0607,
                    whole,
                    format!("this match on an Option has no `{name}` arm"),
                )
                .with_label(format!("missing `{example}`"))
                .with_secondary(scrut, "this is an Option")
                .with_help(format!(
                    "add the arm `{example}`: an Option is matched with both Some and None"
                ));
                self.diags.push(d);
            }
        }
    }

    fn enum_arms(&mut self, arms: &[Arm], lits: &[Name], scrut: Span, whole: Span) {
        let mut seen: Vec<(String, Span)> = Vec::new();
        let mut catch_all: Option<Span> = None;
        for arm in arms {
            if let Some(first) = catch_all {
                self.unreachable(
                    arm.pattern.span,
                    first,
                    "this pattern already matches everything",
                );
                continue;
            }
            match &arm.pattern.kind {
                PatternKind::Str(s) => {
                    if let Some((_, first)) = seen.iter().find(|(x, _)| x == s) {
                        let first = *first;
                        self.unreachable(
                            arm.pattern.span,
                            first,
                            &format!("the first {s:?} arm already matches"),
                        );
                    } else {
                        self.enum_literal(s, arm.pattern.span, lits);
                        seen.push((s.clone(), arm.pattern.span));
                    }
                }
                k if is_catch_all(k) => catch_all = Some(arm.pattern.span),
                _ => {}
            }
        }
        if catch_all.is_some() {
            return;
        }
        let missing: Vec<String> = lits
            .iter()
            .filter(|l| !seen.iter().any(|(s, _)| s == &***l))
            .map(|l| format!("{:?}", &**l))
            .collect();
        if !missing.is_empty() {
            let d = Diagnostic::error(
                Code::E0607,
                whole,
                format!("this match does not cover {}", missing.join(", ")),
            )
            .with_label(format!("missing {}", missing.join(", ")))
            .with_secondary(scrut, format!("this is {}", Type::Enum(lits.into())))
            .with_help(format!(
                "add {}, or a catch-all arm `_ => …`",
                missing
                    .iter()
                    .map(|m| format!("`{m} => …`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            self.diags.push(d);
        }
    }

    fn string_arms(&mut self, arms: &[Arm], scrut: Span, whole: Span) {
        let mut seen: Vec<(&str, Span)> = Vec::new();
        let mut catch_all: Option<Span> = None;
        for arm in arms {
            if let Some(first) = catch_all {
                self.unreachable(
                    arm.pattern.span,
                    first,
                    "this pattern already matches everything",
                );
                continue;
            }
            match &arm.pattern.kind {
                PatternKind::Str(s) => {
                    if let Some((_, first)) = seen.iter().find(|(x, _)| x == s) {
                        let first = *first;
                        self.unreachable(
                            arm.pattern.span,
                            first,
                            &format!("the first {s:?} arm already matches"),
                        );
                    } else {
                        seen.push((s, arm.pattern.span));
                    }
                }
                k if is_catch_all(k) => catch_all = Some(arm.pattern.span),
                _ => {}
            }
        }
        if arms.is_empty() {
            self.plain_arms(arms, whole);
        } else if catch_all.is_none() {
            let d = Diagnostic::error(
                Code::E0607,
                whole,
                "this match on a String does not cover every string",
            )
            .with_label("no catch-all arm")
            .with_secondary(scrut, "this is a String")
            .with_help("add a last arm `_ => …`, or declare the value's type as an enum (`\"a\" | \"b\"`) so that its literals can be covered")
            ;
            self.diags.push(d);
        }
    }

    fn unreachable(&mut self, at: Span, first: Span, why: &str) {
        let d = Diagnostic::error(Code::E0605, at, "unreachable match arm")
            .with_label("never reached")
            .with_secondary(first, why.to_string())
            .with_help("remove this arm");
        self.diags.push(d);
    }

    fn result_arms(&mut self, arms: &[Arm], scrut: Span, whole: Span) {
        let mut ok_arm: Option<Span> = None;
        let mut err_arm: Option<Span> = None;
        for arm in arms {
            let (slot, name) = match &arm.pattern.kind {
                PatternKind::Ok(_) => (&mut ok_arm, "Ok"),
                PatternKind::Err(_) => (&mut err_arm, "Err"),
                PatternKind::Some(_) | PatternKind::None | PatternKind::Str(_) => continue,
                PatternKind::Wildcard | PatternKind::Var(_) => {
                    let d = Diagnostic::error(
                        Code::E0604,
                        arm.pattern.span,
                        "a match on a Result must name both `Ok` and `Err`",
                    )
                    .with_label("catch-all pattern on a Result")
                    .with_help("write the arms `Ok(x) => …` and `Err(e) => …`; handle the failure explicitly");
                    self.diags.push(d);
                    continue;
                }
            };
            match slot {
                Some(first) => {
                    let first = *first;
                    let d = Diagnostic::error(
                        Code::E0605,
                        arm.pattern.span,
                        format!("duplicate `{name}` arm"),
                    )
                    .with_label("never reached")
                    .with_secondary(first, format!("the first `{name}` arm already matches"))
                    .with_help("remove this arm");
                    self.diags.push(d);
                }
                None => *slot = Some(arm.pattern.span),
            }
        }
        let has_catch_all = arms
            .iter()
            .any(|a| matches!(a.pattern.kind, PatternKind::Wildcard | PatternKind::Var(_)));
        for (present, name, example) in [
            (ok_arm, "Ok", "Ok(v) => …"),
            (err_arm, "Err", "Err(e) => …"),
        ] {
            if present.is_none() && !has_catch_all {
                let d = Diagnostic::error(
                    Code::E0604,
                    whole,
                    format!("Unhandled Result: this match has no `{name}` arm"),
                )
                .with_label(format!("missing `{example}`"))
                .with_secondary(scrut, "this is a Result")
                .with_help(format!(
                    "add the arm `{example}`: every Result must be matched with both Ok and Err"
                ));
                self.diags.push(d);
            }
        }
    }

    fn plain_arms(&mut self, arms: &[Arm], whole: Span) {
        let mut catch_all: Option<Span> = None;
        for arm in arms {
            if let Some(first) = catch_all {
                let d = Diagnostic::error(Code::E0605, arm.pattern.span, "unreachable match arm")
                    .with_label("never reached")
                    .with_secondary(first, "this pattern already matches everything")
                    .with_help("remove this arm");
                self.diags.push(d);
            } else if matches!(
                arm.pattern.kind,
                PatternKind::Wildcard | PatternKind::Var(_)
            ) {
                catch_all = Some(arm.pattern.span);
            }
        }
        if arms.is_empty() {
            let d = Diagnostic::error(Code::E0604, whole, "this match has no arms")
                .with_label("empty match")
                .with_help("add an arm such as `x => …` (or `Ok(v) => …, Err(e) => …` when matching a Result)");
            self.diags.push(d);
        }
    }
}
