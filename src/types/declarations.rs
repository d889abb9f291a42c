//! Declaration files: a text of `tool`, `type` and `effect` declarations
//! checked on their own, with no expression required.
//!
//! ```text
//! text ──syntax::parse_declarations──▶ Program (body optional)
//!      ──decls::type_env, decls::tools──▶ Declarations { tools, aliases, effects, diagnostics }
//! ```
//!
//! This is what tool-schema export (`lt tools export`), the import's tests
//! and prompts built from a tool set read. A declarations file is a program
//! without its expression:
//!
//! ```lt
//! effect Payment;
//! type Money = {cents: Int, currency: "EUR" | "USD"};
//! // Charges a customer.
//! tool charge: {customer: String, amount: Money} -{Write, Payment}-> {id: String};
//! ```
//!
//! A whole program is accepted too: its declarations are read, its
//! expression is parsed (syntax errors are reported) but not type-checked
//! (`lt check` does that). The declarations get exactly the checks they get
//! in a program (E0205 unknown type, E0212 unknown effect, E0213 declared
//! twice, E0201 a tool type that is not data, E0219 undo clauses, …).

use super::decls::{self, ToolSig, TypeEnv};
use super::{broken_lines, drop_guesses, Type, MAX_DIAGNOSTICS};
use crate::diag::Diagnostic;
use crate::source::Span;
use crate::syntax::ast::{Decl, Name, Program, ToolDecl, TypeExpr, TypeExprKind};
use crate::syntax::{self, doc::doc_comment};
use rustc_hash::FxHashMap;

/// A declared tool: its checked signature, its declaration as written, and
/// its doc comment.
#[derive(Clone, Debug)]
pub struct DeclaredTool {
    /// The checked signature: input, effects, output (aliases expanded).
    pub sig: ToolSig,
    /// The declaration as written (alias names kept: `{amount: Money}`).
    pub written: ToolDecl,
    /// The `//` lines directly above the declaration ([`syntax::doc`]).
    pub doc: Option<String>,
}

/// A `type Name = T;` declaration.
#[derive(Clone, Debug)]
pub struct DeclaredAlias {
    /// The alias.
    pub name: Name,
    /// What it stands for, as written (other aliases by name).
    pub written: TypeExpr,
    /// What it stands for, expanded.
    pub ty: Type,
    /// The `//` lines directly above the declaration.
    pub doc: Option<String>,
    /// The declaration.
    pub span: Span,
}

/// Everything a declarations file declares, and its diagnostics. The lists
/// are in declaration order; a name declared twice is listed once (the first
/// declaration; the second is E0213).
#[derive(Debug)]
pub struct Declarations {
    /// The parsed text (its body is an error node when there is no expression).
    pub program: Program,
    /// Whether the text ends with an expression (a whole program).
    pub has_expression: bool,
    /// Every diagnostic of the declarations (and syntax errors anywhere),
    /// sorted by position, at most [`MAX_DIAGNOSTICS`].
    pub diagnostics: Vec<Diagnostic>,
    /// How many diagnostics were dropped beyond [`MAX_DIAGNOSTICS`].
    pub truncated: usize,
    /// The declared tools.
    pub tools: Vec<DeclaredTool>,
    /// The declared type aliases.
    pub aliases: Vec<DeclaredAlias>,
    /// The declared effect labels (`effect Payment;`), beyond Read, Write, Network.
    pub effects: Vec<Name>,
    /// The names written types may use (aliases expanded, effect labels).
    pub env: TypeEnv,
    /// Doc comments of record fields in the declared types, by the field name's span.
    field_docs: FxHashMap<Span, String>,
}

impl Declarations {
    /// True when there are no errors.
    pub fn is_ok(&self) -> bool {
        self.diagnostics.is_empty() && self.truncated == 0
    }

    /// The tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&DeclaredTool> {
        self.tools.iter().find(|t| &*t.sig.name == name)
    }

    /// The alias named `name`.
    pub fn alias(&self, name: &str) -> Option<&DeclaredAlias> {
        self.aliases.iter().find(|a| &*a.name == name)
    }

    /// The doc comment of the record field whose name is written at `span`
    /// (a field of a tool's or an alias's written type).
    pub fn field_doc(&self, span: Span) -> Option<&str> {
        self.field_docs.get(&span).map(String::as_str)
    }
}

/// Parses and checks a declarations file (or a whole program, whose
/// expression is parsed but not checked). Never fails: problems are in
/// [`Declarations::diagnostics`], which render as `lt check`'s do.
pub fn check_declarations(text: &str) -> Declarations {
    let (program, has_expression, mut diags) = syntax::parse_declarations(text);
    let broken = broken_lines(text, &diags);
    let env = decls::type_env(&program.decls, &mut diags);
    let sigs = decls::tools(&program.decls, &env, &mut diags);
    drop_guesses(&mut diags, &broken);
    diags.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    diags.dedup_by(|a, b| a.span == b.span && a.code == b.code && a.message == b.message);
    let truncated = diags.len().saturating_sub(MAX_DIAGNOSTICS);
    diags.truncate(MAX_DIAGNOSTICS);

    let tools = sigs
        .into_iter()
        .filter_map(|sig| {
            let written = program.decls.iter().find_map(|d| match d {
                Decl::Tool(t) if t.span == sig.span => Some(t.clone()),
                _ => None,
            })?;
            let doc = doc_comment(text, written.span.start as usize);
            Some(DeclaredTool { sig, written, doc })
        })
        .collect();
    let mut aliases: Vec<DeclaredAlias> = Vec::new();
    let mut effects: Vec<Name> = Vec::new();
    for decl in &program.decls {
        match decl {
            Decl::Type(a) if env.alias_spans.get(&a.name.name) == Some(&a.span) => {
                aliases.push(DeclaredAlias {
                    name: a.name.name.clone(),
                    written: a.ty.clone(),
                    ty: env
                        .aliases
                        .get(&a.name.name)
                        .cloned()
                        .unwrap_or(Type::Error),
                    doc: doc_comment(text, a.span.start as usize),
                    span: a.span,
                });
            }
            Decl::Effect(labels, _) => {
                for l in labels {
                    if env.effects.contains(&l.name) && !effects.contains(&l.name) {
                        effects.push(l.name.clone());
                    }
                }
            }
            _ => {}
        }
    }
    let mut field_docs = FxHashMap::default();
    for decl in &program.decls {
        match decl {
            Decl::Tool(t) => collect_field_docs(text, &t.ty, &mut field_docs),
            Decl::Type(a) => collect_field_docs(text, &a.ty, &mut field_docs),
            Decl::Effect(..) | Decl::Error(_) => {}
        }
    }
    Declarations {
        program,
        has_expression,
        diagnostics: diags,
        truncated,
        tools,
        aliases,
        effects,
        env,
        field_docs,
    }
}

/// Records the doc comment of every record field inside `t`.
fn collect_field_docs(text: &str, t: &TypeExpr, out: &mut FxHashMap<Span, String>) {
    let mut work = vec![t];
    while let Some(t) = work.pop() {
        match &t.kind {
            TypeExprKind::Record(fields, _) => {
                for (name, ft) in fields {
                    if let Some(doc) = doc_comment(text, name.span.start as usize) {
                        out.insert(name.span, doc);
                    }
                    work.push(ft);
                }
            }
            TypeExprKind::Optional(e)
            | TypeExprKind::Option(e)
            | TypeExprKind::List(e)
            | TypeExprKind::Linear(e) => work.push(e),
            TypeExprKind::Result(a, b) | TypeExprKind::Fun(a, _, b) => {
                work.push(a);
                work.push(b);
            }
            TypeExprKind::Named(_)
            | TypeExprKind::Enum(_)
            | TypeExprKind::Unit
            | TypeExprKind::Error => {}
        }
    }
}
