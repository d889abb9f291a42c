//! The checker: AST → typed program, or every diagnostic at once.
//!
//! ```text
//! Program ──validate (termination)──▶ ──tools──▶ ──synth/check──▶ ──usage (linear, Result)──▶ Analysis
//! ```
//!
//! Judgements (bidirectional): `Γ ⊢ e ⇒ T ! E` synthesizes a type `T` and
//! performs effects `E`; `Γ ⊢ e ⇐ T` checks against a known type. Records are
//! closed rows compared as sets of fields; every function type carries an
//! effect row; a program's effects are the union of everything it may do.
//! After typing:
//!
//! * a program whose value contains a `Result` is rejected (E0602: the
//!   failure would be unhandled);
//! * linear `!T` binders are used exactly once on every path and a `let`-bound
//!   `Result` is matched ([`linear`]).
//!
//! Accepted: `tool q: String -{Read}-> {n: Int}; match exec tool q "a" { Ok(r) => r.n, Err(e) => 0 }`
//! has type `Int` and effects `[Read]`.
//! Rejected: `… Ok(r) => r.m …` (E0202, did you mean `n`?), or the bare
//! `exec tool q "a"` as the program (E0602).
//!
//! A declarations file (tools, aliases and effects, no expression) is
//! checked by [`check_declarations`] ([`declarations`]), with the
//! declarations' checks only.

pub mod builtins;
pub mod calls;
pub mod checker;
pub mod combinators;
pub mod declarations;
pub mod decls;
pub mod definition;
pub mod fields;
pub mod infer;
pub mod linear;
pub mod natives;
pub mod pattern;
pub mod report;
pub mod ty;
pub mod undo;
pub mod undo_vars;
pub mod unify;
pub mod validate;
pub mod walk;
pub mod with_tools;

use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax;
use crate::syntax::ast::{Expr, ExprKind, Name, Program};
pub use declarations::{check_declarations, Declarations, DeclaredAlias, DeclaredTool};
pub use decls::ToolSig;
pub use definition::check_definition;
use rustc_hash::FxHashMap as HashMap;
pub use ty::{EffectSet, Type};

/// The most nodes a record literal's type may have (E0215). Types of
/// programs are small; the bound stops `{x = a, y = a}` chains, which double
/// the type on every line, before they exhaust memory.
pub const MAX_TYPE_SIZE: usize = 100_000;

/// At most this many diagnostics are kept (by source position); the rest are counted.
pub const MAX_DIAGNOSTICS: usize = 100;

/// The type of one `let` binding, for `lt check --emit types`.
#[derive(Clone, Debug)]
pub struct LetType {
    /// The bound name's span.
    pub span: Span,
    /// The name.
    pub name: Name,
    /// Its type (metavariables substituted).
    pub ty: Type,
}

/// Everything `lt check` learns about a source text.
#[derive(Debug)]
pub struct Analysis {
    /// The parsed program (with error nodes where parsing failed).
    pub program: Program,
    /// Every diagnostic, sorted by position, at most [`MAX_DIAGNOSTICS`].
    pub diagnostics: Vec<Diagnostic>,
    /// How many diagnostics were dropped beyond [`MAX_DIAGNOSTICS`].
    pub truncated: usize,
    /// The program's type (meaningful when there are no errors).
    pub ty: Type,
    /// The effects the program may perform, in canonical order.
    pub effects: EffectSet,
    /// The declared tools.
    pub tools: Vec<ToolSig>,
    /// The type of every `let`, in source order.
    pub let_types: Vec<LetType>,
    /// See [`CheckedProgram::omitted_fields`].
    pub omitted_fields: HashMap<Span, Vec<Name>>,
}

/// A program that passed every check. Only [`Analysis::into_checked`] makes
/// one, so later phases (lowering) accept nothing else.
#[derive(Debug)]
pub struct CheckedProgram {
    /// The program.
    pub program: Program,
    /// Its type.
    pub ty: Type,
    /// Its effects.
    pub effects: EffectSet,
    /// The declared tools.
    pub tools: Vec<ToolSig>,
    /// Record literals that omit `Option` fields of the record type they
    /// were checked against: literal span → the fields lowering fills with `None`.
    pub omitted_fields: HashMap<Span, Vec<Name>>,
}

impl Analysis {
    /// True when there are no errors.
    pub fn is_ok(&self) -> bool {
        self.diagnostics.is_empty() && self.truncated == 0
    }

    /// The checked program, or the diagnostics.
    pub fn into_checked(self) -> Result<CheckedProgram, Vec<Diagnostic>> {
        if self.is_ok() {
            Ok(CheckedProgram {
                program: self.program,
                ty: self.ty,
                effects: self.effects,
                tools: self.tools,
                omitted_fields: self.omitted_fields,
            })
        } else {
            Err(self.diagnostics)
        }
    }
}

/// Parses and checks `text`.
///
/// Where the parser had to recover from a syntax error, the tree around it is
/// partly guessed; type diagnostics on the same lines as a syntax error are
/// dropped, because they describe the guess rather than the program.
pub fn check_source(text: &str) -> Analysis {
    let (program, diags) = syntax::parse(text);
    let broken_lines = broken_lines(text, &diags);
    let mut analysis = check_program(program, diags);
    drop_guesses(&mut analysis.diagnostics, &broken_lines);
    analysis
}

/// The lines (byte ranges) on which the parser had to recover from a syntax error.
fn broken_lines(text: &str, parse_diags: &[Diagnostic]) -> Vec<std::ops::Range<u32>> {
    parse_diags
        .iter()
        .filter(|d| {
            (d.code < Code::E0201 && !matches!(d.code, Code::E0004 | Code::E0005))
                || d.code == Code::E0301
        })
        .map(|d| line_range(text, d.span))
        .collect()
}

/// Drops the type diagnostics on `broken` lines: they describe the parser's
/// guess rather than the program.
fn drop_guesses(diags: &mut Vec<Diagnostic>, broken: &[std::ops::Range<u32>]) {
    if !broken.is_empty() {
        diags.retain(|d| {
            let syntax_phase = d.code.as_str() < "E0200" || d.code == Code::E0301;
            syntax_phase || !broken.iter().any(|r| r.contains(&d.span.start))
        });
    }
}

/// The byte range of the lines a span touches.
fn line_range(text: &str, span: Span) -> std::ops::Range<u32> {
    let start = (span.start as usize).min(text.len());
    let end = (span.end as usize).min(text.len());
    let bytes = text.as_bytes();
    let a = bytes[..start]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let b = bytes[end..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(text.len(), |i| end + i + 1);
    let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    clamp(a)..clamp(b)
}

/// Checks a parsed program; `diags` are the parse diagnostics so far.
pub fn check_program(program: Program, mut diags: Vec<Diagnostic>) -> Analysis {
    let validation = validate::validate(&program);
    diags.extend(validation.diags);
    let type_env = decls::type_env(&program.decls, &mut diags);
    let tools = decls::tools(&program.decls, &type_env, &mut diags);

    let mut ck = checker::Checker::new(&tools, &type_env, &validation.recursive_refs);
    ck.reserve(program.binders_hint());
    let ty = ck.synth(&program.body);
    ck.check_ordered();
    ck.check_data_vars();
    ck.check_comparisons();
    ck.check_collected();
    ck.check_scoped_calls();
    let ty = ck.metas.zonk(&ty);
    let effects = ck.top_effects();
    let tail = tail_expr(&program.body);
    if ty.contains_result() {
        let d = Diagnostic::error(Code::E0602, tail.span, format!("Unhandled Result: the program's value has type {ty}"))
            .with_label("this Result is never matched")
            .with_help(
                "match it and return a plain value from both arms: `match … { Ok(v) => …, Err(e) => … }`",
            );
        ck.diags.push(d);
    }
    let before = diags.len() + ck.diags.len();
    if before == 0 {
        if let Some(id) = ck.metas.first_unsolved(&ty) {
            if let Some((origin, what)) = ck.metas.origin(id) {
                let d = Diagnostic::error(Code::E0209, origin, format!("cannot infer {what}"))
                    .with_label("type not known")
                    .with_note(format!("the program's type would be {ty}"))
                    .with_help("add a type annotation: `[]: String` for an empty list, `fn x: Int => …` for a parameter");
                ck.diags.push(d);
            }
        }
    }
    let omitted_fields = std::mem::take(&mut ck.omitted_fields);
    diags.append(&mut ck.diags);
    let binder_types = linear::BinderTypes::new(&ck.binder_types, &ck.metas);
    diags.extend(linear::check_usage(&program, &binder_types));
    // The binder table shares the `let` types: dropped first, each `let`
    // type is zonked in place rather than copied.
    ck.binder_types = HashMap::default();
    let metas = &ck.metas;
    let mut let_types: Vec<LetType> = std::mem::take(&mut ck.let_types)
        .into_iter()
        .map(|(span, name, t)| LetType {
            span,
            name,
            ty: metas.zonk_owned(std::rc::Rc::try_unwrap(t).unwrap_or_else(|t| (*t).clone())),
        })
        .collect();
    let_types.sort_by_key(|b| b.span.start);
    diags.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    diags.dedup_by(|a, b| a.span == b.span && a.code == b.code && a.message == b.message);
    let truncated = diags.len().saturating_sub(MAX_DIAGNOSTICS);
    diags.truncate(MAX_DIAGNOSTICS);
    Analysis {
        program,
        diagnostics: diags,
        truncated,
        ty,
        effects,
        tools,
        let_types,
        omitted_fields,
    }
}

/// The expression whose value is the program's value (through `let` chains).
fn tail_expr(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Let(chain) => tail_expr(&chain.body),
        _ => e,
    }
}
