//! Written types → semantic types, and the tool table.
//!
//! `Unit Bool Int String` are the base types; `List T` and `[T]` are the same
//! type; `A -> B` is the pure function type `A -{}-> B`; `Pure` in an effect
//! row means "no effect". A tool's declared type must be a function type whose
//! input and output are data (no functions inside).

use super::ty::{EffectSet, Type, BUILTIN_EFFECTS};
use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Decl, EffectRowExpr, Ident, Name, TypeExpr, TypeExprKind};

const BASE_TYPES: [&str; 4] = ["Unit", "Bool", "Int", "String"];

/// A declared tool: `tool name: input -{effects}-> output;`.
#[derive(Clone, Debug)]
pub struct ToolSig {
    /// The tool's name.
    pub name: Name,
    /// The argument type.
    pub input: Type,
    /// The effects one call performs.
    pub effects: EffectSet,
    /// The type of a successful result (a call yields `Result<output, String>`).
    pub output: Type,
    /// The declaration.
    pub span: Span,
}

/// Converts a written type, reporting unknown names and effects.
pub fn lower_type(t: &TypeExpr, diags: &mut Vec<Diagnostic>) -> Type {
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || match &t.kind {
        TypeExprKind::Named(id) => named(id, diags),
        TypeExprKind::Unit => Type::Unit,
        TypeExprKind::Record(fields) => {
            let mut out: Vec<(Name, Type)> = Vec::with_capacity(fields.len());
            let mut seen: rustc_hash::FxHashSet<Name> = rustc_hash::FxHashSet::default();
            for (name, ft) in fields {
                let ty = lower_type(ft, diags);
                if !seen.insert(name.name.clone()) {
                    diags.push(
                        Diagnostic::error(
                            Code::E0207,
                            name.span,
                            format!("field `{}` is declared twice", name.name),
                        )
                        .with_label("duplicate field")
                        .with_help("remove one of the two declarations"),
                    );
                } else {
                    out.push((name.name.clone(), ty));
                }
            }
            Type::Record(out)
        }
        TypeExprKind::List(e) => Type::list(lower_type(e, diags)),
        TypeExprKind::Result(a, b) => Type::result(lower_type(a, diags), lower_type(b, diags)),
        TypeExprKind::Linear(e) => match lower_type(e, diags) {
            Type::Linear(inner) => Type::Linear(inner),
            inner => Type::Linear(Box::new(inner)),
        },
        TypeExprKind::Fun(a, row, b) => {
            let a = lower_type(a, diags);
            let e = lower_effects(row, diags);
            Type::fun(a, e, lower_type(b, diags))
        }
        TypeExprKind::Error => Type::Error,
    })
}

fn named(id: &Ident, diags: &mut Vec<Diagnostic>) -> Type {
    match &*id.name {
        "Unit" => Type::Unit,
        "Bool" => Type::Bool,
        "Int" => Type::Int,
        "String" => Type::String,
        other => {
            let mut d = Diagnostic::error(Code::E0205, id.span, format!("unknown type `{other}`"))
                .with_label("not a type")
                .with_note("the types are Unit, Bool, Int, String, records {a: T}, List T, Result<T, E>, !T and A -{E}-> B");
            if let Some(s) = did_you_mean(other, BASE_TYPES) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else if matches!(
                other,
                "Float" | "Option" | "Json" | "Map" | "Dict" | "Tuple"
            ) {
                d = d.with_help(format!("`{other}` is not part of the language yet; use Int, String, a record or a List"));
            } else if matches!(other, "Integer" | "Number" | "Str" | "Boolean") {
                d = d.with_help("use Int, String or Bool");
            } else {
                d = d.with_help(
                    "use one of Unit, Bool, Int, String, or a record type {field: Type}",
                );
            }
            diags.push(d);
            Type::Error
        }
    }
}

/// Converts a written effect row; `Pure` adds nothing.
pub fn lower_effects(row: &EffectRowExpr, diags: &mut Vec<Diagnostic>) -> EffectSet {
    let mut set = EffectSet::pure();
    for label in &row.labels {
        match &*label.name {
            "Pure" => {}
            l if BUILTIN_EFFECTS.contains(&l) => set.insert(label.name.clone()),
            other => {
                let known = BUILTIN_EFFECTS.iter().copied().chain(["Pure"]);
                let help = match did_you_mean(other, known) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => {
                        "the effects are Read, Write and Network (write `Pure` or `{}` for none)"
                            .to_string()
                    }
                };
                diags.push(
                    Diagnostic::error(Code::E0212, label.span, format!("unknown effect `{other}`"))
                        .with_label("not an effect")
                        .with_help(help),
                );
            }
        }
    }
    set
}

/// Builds the tool table from the declarations (in order), reporting bad and
/// duplicate declarations.
pub fn tools(decls: &[Decl], diags: &mut Vec<Diagnostic>) -> Vec<ToolSig> {
    let mut out: Vec<ToolSig> = Vec::new();
    let mut index: rustc_hash::FxHashMap<Name, usize> = rustc_hash::FxHashMap::default();
    for decl in decls {
        let Decl::Tool(d) = decl else { continue };
        let (input, effects, output) = match &d.ty.kind {
            TypeExprKind::Fun(a, row, b) => (
                lower_type(a, diags),
                lower_effects(row, diags),
                lower_type(b, diags),
            ),
            TypeExprKind::Error => (Type::Error, EffectSet::pure(), Type::Error),
            _ => {
                let ty = lower_type(&d.ty, diags);
                diags.push(
                    Diagnostic::error(
                        Code::E0201,
                        d.ty.span,
                        format!("tool `{}` must have a function type", d.name.name),
                    )
                    .with_label(format!("this is `{ty}`"))
                    .with_expected_found("In -{Effects}-> Out", ty.to_string())
                    .with_help(format!(
                        "declare it as `tool {}: {ty} -{{Read}}-> Out;`",
                        d.name.name
                    )),
                );
                (Type::Error, EffectSet::pure(), Type::Error)
            }
        };
        for (what, t) in [("input", &input), ("output", &output)] {
            if t.contains_fun() {
                diags.push(
                    Diagnostic::error(
                        Code::E0201,
                        d.ty.span,
                        format!("tool `{}` has a function in its {what}", d.name.name),
                    )
                    .with_label("tool arguments and results must be data")
                    .with_help(
                        "tools exchange JSON data: use records, lists, Int, String, Bool or Unit",
                    ),
                );
            }
        }
        if input.contains_result() {
            diags.push(
                Diagnostic::error(Code::E0201, d.ty.span, format!("tool `{}` takes a Result as input", d.name.name))
                    .with_label("a Result can only be consumed by `match`")
                    .with_help("declare the input as the data the tool needs, and pass it from the `Ok` arm of a match"),
            );
        }
        if let Some(prev) = index.get(&d.name.name).map(|&i| &out[i]) {
            diags.push(
                Diagnostic::error(
                    Code::E0213,
                    d.name.span,
                    format!("tool `{}` is declared twice", d.name.name),
                )
                .with_label("second declaration")
                .with_secondary(prev.span, "first declared here")
                .with_help("remove one declaration, or give the tools different names"),
            );
            continue;
        }
        index.insert(d.name.name.clone(), out.len());
        out.push(ToolSig {
            name: d.name.name.clone(),
            input,
            effects,
            output,
            span: d.span,
        });
    }
    out
}
