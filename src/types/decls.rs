//! Written types → semantic types, the declared names (type aliases and
//! effect labels), and the tool table.
//!
//! `Unit Bool Int String` are the base types, `Float` and `Json` extensions;
//! `List T` and `[T]` are the same type; `A -> B` is the pure function type
//! `A -{}-> B`; `Pure` in an effect row means "no effect". `type Name = T;`
//! names a type for every later declaration and the program (an alias is
//! expanded where it is used, so types print structurally); `effect Payment;`
//! declares an effect label beyond `Read`, `Write`, `Network`. A field
//! `f?: T` reads as `Option T` and may be absent. A tool's declared type must
//! be a function type whose input and output are data (no functions inside)
//! and exact (no open record `{a: T, ..}`).

use super::ty::{EffectSet, Type, BUILTIN_EFFECTS};
use crate::diag::{did_you_mean, Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Decl, EffectRowExpr, Ident, Name, TypeExpr, TypeExprKind};
use rustc_hash::{FxHashMap, FxHashSet};

const BASE_TYPES: [&str; 7] = ["Unit", "Bool", "Int", "String", "Float", "Json", "Approval"];

/// The names written types may use besides the base types: `type` aliases,
/// declared effect labels, and (for the standard library's signatures only)
/// type variables.
#[derive(Clone, Debug, Default)]
pub struct TypeEnv {
    /// `type Name = T;`, expanded.
    pub aliases: FxHashMap<Name, Type>,
    /// Where each alias is declared.
    pub alias_spans: FxHashMap<Name, Span>,
    /// Labels declared with `effect L;`.
    pub effects: FxHashSet<Name>,
    /// Type variables (lowercase names in a standard-library signature),
    /// each standing for a fresh metavariable of one use.
    pub vars: FxHashMap<Name, Type>,
}

impl TypeEnv {
    /// True when `label` is a built-in or declared effect label.
    pub fn has_effect(&self, label: &str) -> bool {
        BUILTIN_EFFECTS.contains(&label) || self.effects.contains(label)
    }
}

/// Reads the `effect` and `type` declarations, in order: an alias may use the
/// aliases declared before it (so none is recursive) and any declared effect.
pub fn type_env(decls: &[Decl], diags: &mut Vec<Diagnostic>) -> TypeEnv {
    let mut env = TypeEnv::default();
    for decl in decls {
        let Decl::Effect(labels, _) = decl else {
            continue;
        };
        for l in labels {
            if BUILTIN_EFFECTS.contains(&&*l.name) || &*l.name == "Pure" {
                diags.push(
                    Diagnostic::error(Code::E0212, l.span, format!("`{}` is a built-in effect", l.name))
                        .with_label("already an effect")
                        .with_help("remove it from the `effect` declaration; Read, Write and Network need no declaration"),
                );
            } else if !l.name.starts_with(|c: char| c.is_ascii_uppercase()) {
                diags.push(
                    Diagnostic::error(
                        Code::E0212,
                        l.span,
                        format!("effect label `{}` must start with a capital letter", l.name),
                    )
                    .with_label("not an effect label")
                    .with_help(format!("write it as `{}`", capitalize(&l.name))),
                );
            } else if !env.effects.insert(l.name.clone()) {
                diags.push(
                    Diagnostic::error(
                        Code::E0213,
                        l.span,
                        format!("effect `{}` is declared twice", l.name),
                    )
                    .with_label("second declaration")
                    .with_help("remove one of the two"),
                );
            }
        }
    }
    for decl in decls {
        let Decl::Type(alias) = decl else { continue };
        let name = &alias.name;
        if BASE_TYPES.contains(&&*name.name) {
            diags.push(
                Diagnostic::error(
                    Code::E0213,
                    name.span,
                    format!("`{}` is a built-in type", name.name),
                )
                .with_label("cannot be redefined")
                .with_help("give the alias another name"),
            );
            continue;
        }
        let mut ty = lower_type(&alias.ty, &env, diags);
        if type_size(&ty, super::MAX_TYPE_SIZE) > super::MAX_TYPE_SIZE {
            diags.push(
                Diagnostic::error(
                    Code::E0215,
                    alias.span,
                    format!(
                        "type `{}` has more than {} parts",
                        name.name,
                        super::MAX_TYPE_SIZE
                    ),
                )
                .with_label("type too large")
                .with_help("an alias used twice in another doubles it; declare smaller types"),
            );
            ty = Type::Error;
        }
        if let Some(prev) = env.alias_spans.get(&name.name) {
            diags.push(
                Diagnostic::error(
                    Code::E0213,
                    name.span,
                    format!("type `{}` is declared twice", name.name),
                )
                .with_label("second declaration")
                .with_secondary(*prev, "first declared here")
                .with_help("remove one declaration, or give the types different names"),
            );
            continue;
        }
        env.alias_spans.insert(name.name.clone(), alias.span);
        env.aliases.insert(name.name.clone(), ty);
    }
    env
}

/// The number of nodes of `t`, counted no further than just past `cap`.
fn type_size(t: &Type, cap: usize) -> usize {
    let mut n = 0usize;
    let mut work = vec![t];
    while let Some(t) = work.pop() {
        n += 1;
        if n > cap {
            break;
        }
        match t {
            Type::Record(fs) | Type::OpenRecord(fs) => work.extend(fs.iter().map(|(_, t)| t)),
            Type::List(t) | Type::Linear(t) | Type::Option(t) => work.push(t),
            Type::Result(a, b) | Type::Fun(a, _, b) => {
                work.push(a);
                work.push(b);
            }
            _ => {}
        }
    }
    n
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

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
    /// The tool that undoes a completed call inside a `scope` (extension).
    pub undo: Option<Undo>,
    /// The declaration.
    pub span: Span,
}

/// `undo OTHER(input)` / `undo OTHER(output)` of a tool declaration, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Undo {
    /// The undo tool's name (declared in the program).
    pub tool: Name,
    /// Whether the undo is given the call's output (else its input).
    pub from_output: bool,
}

/// True when a value of type `have` can be given to a tool taking `want`:
/// the same type, or records where `want`'s fields are among `have`'s with
/// the same types (the undo is given only the fields it declares).
pub fn fits_undo(have: &Type, want: &Type) -> bool {
    match (have, want) {
        (Type::Record(h), Type::Record(w)) => w
            .iter()
            .all(|(n, t)| h.iter().any(|(m, u)| m == n && fits_undo(u, t))),
        _ => have == want,
    }
}

/// Resolves and checks every `undo` clause (E0219): the undo tool is
/// declared and takes the call's input or output.
fn check_undos(decls: &[Decl], out: &mut [ToolSig], diags: &mut Vec<Diagnostic>) {
    for decl in decls {
        let Decl::Tool(d) = decl else { continue };
        let Some(u) = &d.undo else { continue };
        let Some(i) = out.iter().position(|t| t.name == d.name.name) else {
            continue;
        };
        let from_output = match &*u.from.name {
            "output" => true,
            "input" => false,
            other => {
                diags.push(
                    Diagnostic::error(
                        Code::E0219,
                        u.from.span,
                        format!(
                            "`undo {}({other})`: an undo is given the call's `input` or `output`",
                            u.tool.name
                        ),
                    )
                    .with_label("not `input` or `output`")
                    .with_help(format!(
                        "write `undo {}(output)` to give it what the call returned",
                        u.tool.name
                    )),
                );
                continue;
            }
        };
        let Some(undo) = out.iter().find(|t| t.name == u.tool.name) else {
            let names: Vec<&str> = out.iter().map(|t| &*t.name).collect();
            let mut diag = Diagnostic::error(
                Code::E0219,
                u.tool.span,
                format!("the undo tool `{}` is not declared", u.tool.name),
            )
            .with_label("no tool with this name");
            diag = match did_you_mean(&u.tool.name, names.iter().copied()) {
                Some(s) => diag.with_help(format!("did you mean `{s}`?")),
                None => diag.with_help(format!(
                    "declare it too: `tool {}: In -{{Write}}-> Out;`",
                    u.tool.name
                )),
            };
            diags.push(diag);
            continue;
        };
        if undo.input.holds(|t| matches!(t, Type::Linear(_))) {
            diags.push(
                Diagnostic::error(Code::E0219, u.span, format!("`{}` takes a `!` value, so lt cannot run it as an undo", u.tool.name))
                    .with_label("the undo would need a token the program has spent")
                    .with_help("an undo is called by lt with the call's input or output; give the undo tool an input of plain data"),
            );
            continue;
        }
        let have = if from_output {
            &out[i].output
        } else {
            &out[i].input
        };
        if !matches!(have, Type::Error)
            && !matches!(undo.input, Type::Error)
            && !fits_undo(have, &undo.input)
        {
            diags.push(
                Diagnostic::error(
                    Code::E0219,
                    u.span,
                    format!("`{}` cannot undo `{}`: it takes {}, and the call's {} is {have}", u.tool.name, d.name.name, undo.input, u.from.name),
                )
                .with_label("the undo does not fit")
                .with_expected_found(undo.input.to_string(), have.to_string())
                .with_help("the undo's input must be the call's input or output, or a record of some of its fields (same names and types)"),
            );
            continue;
        }
        out[i].undo = Some(Undo {
            tool: u.tool.name.clone(),
            from_output,
        });
    }
}

/// Converts a written type, reporting unknown names and effects.
pub fn lower_type(t: &TypeExpr, env: &TypeEnv, diags: &mut Vec<Diagnostic>) -> Type {
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || match &t.kind {
        TypeExprKind::Named(id) => named(id, env, diags),
        TypeExprKind::Unit => Type::Unit,
        TypeExprKind::Option(e) | TypeExprKind::Optional(e) => {
            Type::option(lower_type(e, env, diags))
        }
        TypeExprKind::Enum(lits) => {
            let mut seen: FxHashSet<&str> = FxHashSet::default();
            for (l, span) in lits {
                if !seen.insert(l) {
                    diags.push(
                        Diagnostic::error(Code::E0207, *span, format!("\"{l}\" is listed twice"))
                            .with_label("duplicate literal")
                            .with_help("remove one of the two"),
                    );
                }
            }
            Type::enumeration(lits.iter().map(|(l, _)| Name::from(l.as_str())).collect())
        }
        TypeExprKind::Record(fields, open) => {
            let mut out: Vec<(Name, Type)> = Vec::with_capacity(fields.len());
            let mut seen: rustc_hash::FxHashSet<Name> = rustc_hash::FxHashSet::default();
            for (name, ft) in fields {
                let ty = lower_type(ft, env, diags);
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
            if *open {
                Type::OpenRecord(out)
            } else {
                Type::Record(out)
            }
        }
        TypeExprKind::List(e) => Type::list(lower_type(e, env, diags)),
        TypeExprKind::Result(a, b) => {
            Type::result(lower_type(a, env, diags), lower_type(b, env, diags))
        }
        TypeExprKind::Linear(e) => match lower_type(e, env, diags) {
            Type::Linear(inner) => Type::Linear(inner),
            inner => Type::Linear(Box::new(inner)),
        },
        TypeExprKind::Fun(a, row, b) => {
            let a = lower_type(a, env, diags);
            let e = lower_effects(row, env, diags);
            Type::fun(a, e, lower_type(b, env, diags))
        }
        TypeExprKind::Error => Type::Error,
    })
}

fn named(id: &Ident, env: &TypeEnv, diags: &mut Vec<Diagnostic>) -> Type {
    match &*id.name {
        "Unit" => Type::Unit,
        "Bool" => Type::Bool,
        "Int" => Type::Int,
        "String" => Type::String,
        "Float" => Type::Float,
        "Json" => Type::Json,
        "Approval" => Type::Approval,
        other if env.aliases.contains_key(other) => {
            env.aliases.get(other).cloned().unwrap_or(Type::Error)
        }
        other if env.vars.contains_key(other) => {
            env.vars.get(other).cloned().unwrap_or(Type::Error)
        }
        other => {
            let mut d = Diagnostic::error(Code::E0205, id.span, format!("unknown type `{other}`"))
                .with_label("not a type")
                .with_note("the types are Unit, Bool, Int, Float, String, Json, records {a: T}, List T, Option T, Result<T, E>, \"a\" | \"b\", !T, A -{E}-> B and the names declared with `type`");
            let names = BASE_TYPES
                .iter()
                .copied()
                .chain(env.aliases.keys().map(|k| &**k));
            if let Some(s) = did_you_mean(other, names) {
                d = d.with_help(format!("did you mean `{s}`?"));
            } else if matches!(other, "Map" | "Dict" | "Tuple" | "Any" | "Object") {
                d = d.with_help(format!("`{other}` is not part of the language; use a record, a List, or `Json` for data of unknown shape"));
            } else if matches!(other, "Optional" | "Maybe" | "Nullable") {
                d = d.with_help("write `Option T` (values `Some(x)` and `None`)");
            } else if matches!(other, "Integer" | "Number" | "Str" | "Boolean") {
                d = d.with_help("use Int, String or Bool");
            } else {
                d = d.with_help(format!(
                    "use one of Unit, Bool, Int, Float, String, Json, a record type {{field: Type}}, or declare it first: `type {other} = …;`"
                ));
            }
            diags.push(d);
            Type::Error
        }
    }
}

/// Converts a written effect row; `Pure` adds nothing.
pub fn lower_effects(row: &EffectRowExpr, env: &TypeEnv, diags: &mut Vec<Diagnostic>) -> EffectSet {
    let mut set = EffectSet::pure();
    for label in &row.labels {
        match &*label.name {
            "Pure" => {}
            l if env.has_effect(l) => set.insert(label.name.clone()),
            other => {
                let known = BUILTIN_EFFECTS
                    .iter()
                    .copied()
                    .chain(["Pure"])
                    .chain(env.effects.iter().map(|e| &**e));
                let help = match did_you_mean(other, known) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!(
                        "declare it before its use: `effect {other};` (the built-in effects are Read, Write and \
                         Network; write `Pure` or `{{}}` for none)"
                    ),
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
pub fn tools(decls: &[Decl], env: &TypeEnv, diags: &mut Vec<Diagnostic>) -> Vec<ToolSig> {
    let mut out: Vec<ToolSig> = Vec::new();
    let mut index: rustc_hash::FxHashMap<Name, usize> = rustc_hash::FxHashMap::default();
    for decl in decls {
        let Decl::Tool(d) = decl else { continue };
        let (input, effects, output) = match &d.ty.kind {
            TypeExprKind::Fun(a, row, b) => (
                lower_type(a, env, diags),
                lower_effects(row, env, diags),
                lower_type(b, env, diags),
            ),
            TypeExprKind::Error => (Type::Error, EffectSet::pure(), Type::Error),
            _ => {
                let ty = lower_type(&d.ty, env, diags);
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
        for (what, t) in [("input", &input), ("output", &output)] {
            if t.holds(|t| matches!(t, Type::OpenRecord(_))) {
                diags.push(
                    Diagnostic::error(
                        Code::E0201,
                        d.ty.span,
                        format!("tool `{}` has an open record `{{…, ..}}` in its {what}", d.name.name),
                    )
                    .with_label("tool types are exact")
                    .with_help("list the tool's fields exactly; mark the ones that may be absent with `?`: `{email?: String}`"),
                );
            }
        }
        // Approvals (extension): minted by the control plane, so never in an
        // output; in an input only as a top-level `!Approval` field.
        let nested_approval = match &input {
            Type::Record(fs) => fs
                .iter()
                .any(|(_, t)| !t.is_approval() && t.holds(|x| matches!(x, Type::Approval))),
            other => other.holds(|x| matches!(x, Type::Approval)),
        };
        if output.holds(|x| matches!(x, Type::Approval)) || nested_approval {
            diags.push(
                Diagnostic::error(Code::E0201, d.ty.span, format!("tool `{}` has an `Approval` where only an input field `!Approval` may be", d.name.name))
                    .with_label("approvals are minted by the control plane, for one call")
                    .with_help("declare the token as a field of the input record: `{…, approval: !Approval}`; obtain it with `approve tool NAME arg`"),
            );
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
            undo: None,
            span: d.span,
        });
    }
    check_undos(decls, &mut out, diags);
    out
}
