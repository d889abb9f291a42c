//! Checking a standard-library definition written in lt (`stdlib/*.lt`,
//! see [`crate::stdlib::prelude`]) against its signature.
//!
//! The signature's type parameters become metavariables, the definition is
//! *checked* against the signature (so its unannotated lambdas get their
//! parameter types from it), and afterwards every parameter must still be
//! an unsolved metavariable distinct from the others: a definition that
//! fixed `a` to Int, or made `a` and `b` equal, would be less general than
//! its signature and is rejected. This is the usual test of a declared
//! polymorphic type against the inferred one (Hindley–Milner with a type
//! annotation), with metavariables standing in for rigid variables.
//!
//! Uses of the definition are typed from the signature alone
//! ([`super::natives`]), where each parameter must be plain data, so the
//! definition may copy or drop values of a parameter type.

use super::decls::{lower_type, TypeEnv};
use super::infer::Checker;
use super::natives::{parse_signature, type_vars};
use super::ty::Type;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Expr, Name, Program};
use super::validate;
use rustc_hash::FxHashMap as HashMap;

/// Checks `value` against the type written `signature` (lt type syntax,
/// lowercase names are type parameters). Returns the record literals that
/// omit `Option` fields (as [`super::CheckedProgram::omitted_fields`]), or
/// the diagnostics; every parameter must stay fully general.
pub fn check_definition(
    signature: &str,
    value: &Expr,
) -> Result<HashMap<Span, Vec<Name>>, Vec<Diagnostic>> {
    let program = Program {
        decls: Vec::new(),
        body: value.clone(),
        span: value.span,
    };
    let validation = validate::validate(&program);
    let mut diags = validation.diags;
    let sig = parse_signature(signature);
    let mut vars = Vec::new();
    type_vars(&sig, &mut vars);
    // Metavariables are numbered from 0 in a fresh checker: reserve them
    // first so the environment can name them before the checker exists.
    let mut env = TypeEnv::default();
    for (i, v) in vars.iter().enumerate() {
        env.vars
            .insert(v.clone(), Type::Meta(u32::try_from(i).unwrap_or(u32::MAX)));
    }
    let mut ck = Checker::new(&[], &env, &validation.recursive_refs);
    for (i, _) in vars.iter().enumerate() {
        let m = ck
            .metas
            .fresh(value.span, "a type parameter of the signature");
        debug_assert_eq!(m, Type::Meta(u32::try_from(i).unwrap_or(u32::MAX)));
    }
    let expected = lower_type(&sig, &env, &mut diags);
    ck.check(value, &expected);
    ck.check_ordered();
    ck.check_data_vars();
    ck.check_comparisons();
    let mut seen: Vec<u32> = Vec::new();
    for (i, v) in vars.iter().enumerate() {
        let t = ck
            .metas
            .zonk(&Type::Meta(u32::try_from(i).unwrap_or(u32::MAX)));
        match t {
            Type::Meta(j) if !seen.contains(&j) => seen.push(j),
            other => ck.diags.push(
                Diagnostic::error(
                    Code::E0201,
                    value.span,
                    format!("the definition is less general than its signature: type parameter `{v}` is fixed to {other}"),
                )
                .with_help("change the definition or the signature"),
            ),
        }
    }
    if !ck.top_effects().is_empty() {
        ck.diags.push(
            Diagnostic::error(Code::E0401, value.span, "a library definition must be pure")
                .with_help("library functions cannot call tools"),
        );
    }
    let omitted = std::mem::take(&mut ck.omitted_fields);
    diags.append(&mut ck.diags);
    let binder_types = super::linear::BinderTypes::new(&ck.binder_types, &ck.metas);
    diags.extend(super::linear::check_usage(&program, &binder_types));
    if diags.is_empty() {
        Ok(omitted)
    } else {
        Err(diags)
    }
}
