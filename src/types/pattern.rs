//! `match`: mandatory `Result` matching and arm typing.
//!
//! A match on a `Result` must have exactly one `Ok(…)` arm and one `Err(…)`
//! arm, in either order; `_` or a bare name instead of one of them is
//! rejected (E0604), because the point of the rule is that every failure is
//! handled by name. A second `Ok` or `Err` arm is E0605. On any other type the
//! only patterns are `_` and a name, and arms after the first catch-all are
//! unreachable (E0605). `Ok`/`Err` patterns on a non-Result are E0214.

use super::infer::Checker;
use super::ty::Type;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Arm, Binder, Expr, PatternKind};

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
        let has_result_pats = arms
            .iter()
            .any(|a| matches!(a.pattern.kind, PatternKind::Ok(_) | PatternKind::Err(_)));
        let (ok_t, err_t, is_result) = match &resolved {
            Type::Result(a, b) => ((**a).clone(), (**b).clone(), true),
            Type::Meta(_) if has_result_pats => {
                let a = self
                    .metas
                    .fresh(scrut.span, "the Ok type of the matched Result");
                let b = self
                    .metas
                    .fresh(scrut.span, "the Err type of the matched Result");
                let _ = self.metas.coerce(&st, &Type::result(a.clone(), b.clone()));
                (a, b, true)
            }
            Type::Error => (Type::Error, Type::Error, has_result_pats),
            other => {
                let shown = self.show(other);
                for arm in arms {
                    if matches!(arm.pattern.kind, PatternKind::Ok(_) | PatternKind::Err(_)) {
                        let d = Diagnostic::error(
                            Code::E0214,
                            arm.pattern.span,
                            format!("this pattern matches a Result, but the matched value has type {shown}"),
                        )
                        .with_label("Result pattern")
                        .with_secondary(scrut.span, format!("this has type {shown}"))
                        .with_help("match a Result here (for example `exec tool …`), or use `_` / a name as the pattern");
                        self.diags.push(d);
                        // One error per match: the other arms have the same problem.
                        break;
                    }
                }
                (Type::Error, Type::Error, false)
            }
        };
        if is_result && !matches!(resolved, Type::Error) {
            self.result_arms(arms, scrut.span, span);
        } else if !is_result {
            self.plain_arms(arms, span);
        }

        let mut result_ty = expected.clone();
        let mut first_arm: Option<Span> = None;
        for arm in arms {
            let saved = self.env.clone();
            match &arm.pattern.kind {
                PatternKind::Ok(Binder::Var(x)) => self.bind(x, ok_t.clone()),
                PatternKind::Err(Binder::Var(x)) => self.bind(x, err_t.clone()),
                // On a Result a catch-all is already E0604; do not report it again.
                PatternKind::Var(x) if is_result => self.bind(x, Type::Error),
                PatternKind::Var(x) => self.bind(x, st.clone()),
                PatternKind::Ok(Binder::Wildcard(w)) => {
                    self.binder_types.insert(*w, ok_t.clone());
                }
                PatternKind::Err(Binder::Wildcard(w)) => {
                    self.binder_types.insert(*w, err_t.clone());
                }
                PatternKind::Wildcard => {
                    self.binder_types.insert(arm.pattern.span, st.clone());
                }
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
            self.env = saved;
        }
        result_ty.unwrap_or(Type::Error)
    }

    fn result_arms(&mut self, arms: &[Arm], scrut: Span, whole: Span) {
        let mut ok_arm: Option<Span> = None;
        let mut err_arm: Option<Span> = None;
        for arm in arms {
            let (slot, name) = match &arm.pattern.kind {
                PatternKind::Ok(_) => (&mut ok_arm, "Ok"),
                PatternKind::Err(_) => (&mut err_arm, "Err"),
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
