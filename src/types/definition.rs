//! Checking a standard-library definition written in lt (`stdlib/*.lt`,
//! see [`crate::stdlib::prelude`]) against its signature, and the checked
//! definitions that lowering inlines ([`library_definition`]).
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
//!
//! The library's files are read by `stdlib` ([`crate::stdlib::prelude`]:
//! names, signatures, docs, the parsed `fn`s); checking them is the
//! checker's, here, once per thread (syntax trees are `Rc`). A definition
//! that fails is a bug in lt, reported by lowering as an internal error and
//! caught before release by the test `stdlib_lt_definitions_check`.

use super::checker::Checker;
use super::decls::{lower_type, TypeEnv};
use super::natives::{parse_signature, type_vars};
use super::ty::Type;
use super::validate;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::stdlib::prelude::parse_all;
use crate::syntax::ast::{Expr, ExprKind, Name, Program};
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

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
    ck.check_collected();
    ck.check_scoped_calls();
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

/// A checked library definition, ready to inline.
#[derive(Debug)]
pub struct Definition {
    /// The `fn` (spans point into [`Definition::file`]).
    pub value: Expr,
    /// Record literals in `value` that omit `Option` fields (as
    /// [`super::CheckedProgram::omitted_fields`]).
    pub omitted_fields: HashMap<Span, Vec<Name>>,
    /// The file it is written in.
    pub file: &'static str,
}

/// What checking a library definition found wrong (a bug in lt's library).
#[derive(Clone, Debug)]
pub struct DefinitionError {
    /// The definition's name.
    pub name: &'static str,
    /// Its file.
    pub file: &'static str,
    /// The problems, one line each.
    pub problems: Vec<String>,
}

/// A library definition, checked, or what is wrong with it.
pub type CheckedDefinition = Result<Rc<Definition>, DefinitionError>;

thread_local! {
    static CHECKED: std::cell::RefCell<Option<std::collections::HashMap<&'static str, CheckedDefinition>>> =
        const { std::cell::RefCell::new(None) };
}

/// Every library definition written in lt, checked (once per thread), by name.
pub fn library_definitions() -> Vec<(&'static str, CheckedDefinition)> {
    with_checked(|m| {
        let mut v: Vec<_> = m.iter().map(|(k, c)| (*k, c.clone())).collect();
        v.sort_by_key(|(k, _)| *k);
        v
    })
}

/// The checked definition of the library function `name`, or why it
/// cannot be used; `None` when `name` is not written in lt.
pub fn library_definition(name: &str) -> Option<CheckedDefinition> {
    with_checked(|m| m.get(name).cloned())
}

fn with_checked<R>(
    f: impl FnOnce(&std::collections::HashMap<&'static str, CheckedDefinition>) -> R,
) -> R {
    CHECKED.with(|cell| {
        if cell.borrow().is_none() {
            let map = check_all();
            *cell.borrow_mut() = Some(map);
        }
        match cell.borrow().as_ref() {
            Some(map) => f(map),
            None => f(&std::collections::HashMap::new()),
        }
    })
}

fn check_all() -> std::collections::HashMap<&'static str, CheckedDefinition> {
    let parsed = parse_all();
    let order: std::collections::HashMap<&str, usize> = parsed
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name, i))
        .collect();
    let mut out = std::collections::HashMap::new();
    for (i, p) in parsed.into_iter().enumerate() {
        let mut problems = p.problems;
        // Only definitions above may be used (so inlining terminates).
        for used in free_library_names(&p.value) {
            if let Some(&j) = order.get(&*used) {
                if j >= i {
                    problems.push(format!(
                        "`{}` uses `{used}`, which is not defined above it",
                        p.name
                    ));
                }
            }
        }
        let mut omitted_fields = HashMap::default();
        if problems.is_empty() {
            match check_definition(p.signature, &p.value) {
                Ok(omitted) => omitted_fields = omitted,
                Err(diags) => problems.extend(diags.iter().map(describe)),
            }
        }
        let result = if problems.is_empty() {
            Ok(Rc::new(Definition {
                value: p.value,
                omitted_fields,
                file: p.file,
            }))
        } else {
            Err(DefinitionError {
                name: p.name,
                file: p.file,
                problems,
            })
        };
        out.insert(p.name, result);
    }
    out
}

fn describe(d: &Diagnostic) -> String {
    let mut s = format!(
        "{} at bytes {}..{}: {}",
        d.code, d.span.start, d.span.end, d.message
    );
    for n in &d.notes {
        s.push_str("; ");
        s.push_str(n);
    }
    s
}

/// Names used in `e` but not bound in it (candidates for library calls).
fn free_library_names(e: &Expr) -> Vec<Name> {
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if let ExprKind::Var(id) = &x.kind {
            if crate::stdlib::lookup(&id.name).is_some() && !out.contains(&id.name) {
                out.push(id.name.clone());
            }
        }
        x.kind.for_each_child(|c| stack.push(c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdlib_lt_definitions_check() {
        let all = library_definitions();
        assert_eq!(all.len(), crate::stdlib::prelude::entries().len());
        assert!(all.len() >= 20, "{} definitions", all.len());
        for (name, c) in all {
            if let Err(e) = c {
                panic!("`{name}` in {}: {}", e.file, e.problems.join("\n"));
            }
        }
    }

    fn problems_of(signature: &'static str, value: &str) -> Vec<Diagnostic> {
        let (program, diags) = crate::syntax::parse(value);
        assert!(diags.is_empty(), "{diags:?}");
        check_definition(signature, &program.body)
            .err()
            .unwrap_or_default()
    }

    #[test]
    fn a_definition_less_general_than_its_signature_is_rejected() {
        let d = problems_of("a -> a", "fn x => x + 1");
        assert!(
            d.iter().any(|d| d.message.contains("less general")),
            "{d:?}"
        );
        let d = problems_of("a -> b -> a", "fn x => fn y => if true then x else y");
        assert!(
            d.iter().any(|d| d.message.contains("less general")),
            "{d:?}"
        );
        assert!(problems_of("a -> b -> a", "fn x => fn y => x").is_empty());
    }
}
