//! The part of the standard library written in lt: the files under
//! `stdlib/` (extension).
//!
//! A file is an lt program made of one `let` chain ending in `()`:
//!
//! ```text
//! // `with_default d opt`: the value inside, or `d` for None     ← doc
//! let with_default: a -> Option a -> a =                           ← name, signature
//!   fn d => fn opt => match opt { Some(x) => x, None => d }        ← definition
//! in
//! ```
//!
//! * The annotation is the function's signature, in the same syntax as a
//!   native's (lowercase names are type parameters, plain data at every use).
//! * The definition must be a `fn`, closed: it may use the builtins, the
//!   natives and the definitions *above* it (earlier files come first), so
//!   inlining terminates.
//! * The `//` lines right above the `let` are its documentation.
//!
//! Two views of the same files:
//!
//! * [`entries`]: name, signature text and doc of every definition, read once
//!   per process from the text (no checking: the checker asks for these while
//!   typing a program, and typing a use needs only the signature);
//! * [`definition`]: the parsed and *checked* definition, once per thread
//!   (syntax trees are `Rc`), which lowering inlines at each use.
//!
//! Checking a definition ([`crate::types::check_definition`]) proves it has
//! its signature for every instantiation of the type parameters; a
//! definition that fails is a bug in lt, reported by lowering as an internal
//! error and caught before release by the test `stdlib_lt_definitions_check`.

use super::Native;
use crate::diag::Diagnostic;
use crate::source::Span;
use crate::syntax::ast::{Expr, ExprKind, Name};
use std::collections::HashMap;
use std::rc::Rc;

/// The files, in the order their definitions may depend on each other.
pub const FILES: [(&str, &str); 4] = [
    ("stdlib/option.lt", include_str!("../../stdlib/option.lt")),
    ("stdlib/result.lt", include_str!("../../stdlib/result.lt")),
    ("stdlib/number.lt", include_str!("../../stdlib/number.lt")),
    ("stdlib/list.lt", include_str!("../../stdlib/list.lt")),
];

/// One definition as read from its file (before checking).
struct Parsed {
    file: &'static str,
    name: &'static str,
    signature: &'static str,
    doc: String,
    value: Expr,
    /// Problems with the file's shape (not a `let` chain, not a `fn`, a
    /// missing signature, a syntax error).
    problems: Vec<String>,
}

fn slice(text: &'static str, span: Span) -> &'static str {
    text.get(span.start as usize..span.end as usize)
        .unwrap_or("")
}

/// The `//` comment lines directly above byte `at` of `text`, joined.
fn doc_above(text: &str, at: usize) -> String {
    let before = &text[..at.min(text.len())];
    // Up to the end of the line before the one `at` is on.
    let before = &before[..before.rfind('\n').unwrap_or(0)];
    let mut lines: Vec<&str> = Vec::new();
    for line in before.lines().rev() {
        match line.trim_start().strip_prefix("//") {
            Some(doc) => lines.push(doc.trim()),
            None => break,
        }
    }
    lines.reverse();
    lines.join(" ")
}

/// Parses every file into its definitions.
fn parse_all() -> Vec<Parsed> {
    let mut out = Vec::new();
    for (file, text) in FILES {
        let (program, diags) = crate::syntax::parse(text);
        let mut file_problems: Vec<String> = diags
            .iter()
            .map(|d| format!("{file}: {}", d.message))
            .collect();
        if !program.decls.is_empty() {
            file_problems.push(format!("{file}: declarations are not allowed"));
        }
        let ExprKind::Let(chain) = &program.body.kind else {
            file_problems.push(format!("{file}: not a `let` chain"));
            out.push(Parsed {
                file,
                name: "",
                signature: "",
                doc: String::new(),
                value: program.body.clone(),
                problems: file_problems,
            });
            continue;
        };
        if !matches!(chain.body.kind, ExprKind::Unit) {
            file_problems.push(format!("{file}: the chain must end in `()`"));
        }
        for (i, b) in chain.bindings.iter().enumerate() {
            let mut problems = if i == 0 {
                std::mem::take(&mut file_problems)
            } else {
                Vec::new()
            };
            let name = slice(text, b.name.span);
            let signature = match &b.annot {
                Some(t) => slice(text, t.span),
                None => {
                    problems.push(format!("{file}: `{name}` has no signature"));
                    ""
                }
            };
            if !matches!(b.value.kind, ExprKind::Fn { .. }) {
                problems.push(format!("{file}: `{name}` must be defined by a `fn`"));
            }
            out.push(Parsed {
                file,
                name,
                signature,
                doc: doc_above(text, b.span.start as usize),
                value: b.value.clone(),
                problems,
            });
        }
    }
    out
}

/// Name, signature and doc of every definition written in lt, in file order.
pub fn entries() -> &'static [Native] {
    static ENTRIES: std::sync::OnceLock<Vec<Native>> = std::sync::OnceLock::new();
    ENTRIES.get_or_init(|| {
        parse_all()
            .into_iter()
            .filter(|p| !p.name.is_empty())
            .map(|p| Native {
                name: p.name,
                signature: p.signature,
                doc: Box::leak(p.doc.into_boxed_str()),
                file: Some(p.file),
            })
            .collect()
    })
}

/// The entry of the definition called `name`.
pub fn lookup(name: &str) -> Option<&'static Native> {
    static INDEX: std::sync::OnceLock<HashMap<&'static str, usize>> = std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| {
            entries()
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name, i))
                .collect()
        })
        .get(name)
        .map(|&i| &entries()[i])
}

/// A checked definition, ready to inline.
#[derive(Debug)]
pub struct Definition {
    /// The `fn` (spans point into [`Definition::file`]).
    pub value: Expr,
    /// Record literals in `value` that omit `Option` fields (as
    /// [`crate::types::CheckedProgram::omitted_fields`]).
    pub omitted_fields: rustc_hash::FxHashMap<Span, Vec<Name>>,
    /// The file it is written in.
    pub file: &'static str,
}

/// What checking a definition found wrong (a bug in lt's library).
#[derive(Clone, Debug)]
pub struct DefinitionError {
    /// The definition's name.
    pub name: &'static str,
    /// Its file.
    pub file: &'static str,
    /// The problems, one line each.
    pub problems: Vec<String>,
}

type Checked = Result<Rc<Definition>, DefinitionError>;

thread_local! {
    static CHECKED: std::cell::RefCell<Option<HashMap<&'static str, Checked>>> =
        const { std::cell::RefCell::new(None) };
}

/// Every definition, checked (once per thread).
pub fn checked() -> Vec<(&'static str, Checked)> {
    with_checked(|m| {
        let mut v: Vec<_> = m.iter().map(|(k, c)| (*k, c.clone())).collect();
        v.sort_by_key(|(k, _)| *k);
        v
    })
}

/// The checked definition of `name`, or why it cannot be used; `None` when
/// `name` is not written in lt.
pub fn definition(name: &str) -> Option<Checked> {
    with_checked(|m| m.get(name).cloned())
}

fn with_checked<R>(f: impl FnOnce(&HashMap<&'static str, Checked>) -> R) -> R {
    CHECKED.with(|cell| {
        if cell.borrow().is_none() {
            let map = check_all();
            *cell.borrow_mut() = Some(map);
        }
        f(cell.borrow().as_ref().expect("filled above"))
    })
}

fn check_all() -> HashMap<&'static str, Checked> {
    let parsed = parse_all();
    let order: HashMap<&str, usize> = parsed
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name, i))
        .collect();
    let mut out = HashMap::new();
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
        let mut omitted_fields = rustc_hash::FxHashMap::default();
        if problems.is_empty() {
            match crate::types::check_definition(p.signature, &p.value) {
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
            if super::lookup(&id.name).is_some() && !out.contains(&id.name) {
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
        let all = checked();
        assert_eq!(all.len(), entries().len());
        assert!(all.len() >= 20, "{} definitions", all.len());
        for (name, c) in all {
            if let Err(e) = c {
                panic!("`{name}` in {}: {}", e.file, e.problems.join("\n"));
            }
        }
        for e in entries() {
            assert!(!e.doc.is_empty(), "`{}` has no doc", e.name);
            assert!(
                super::super::index(e.name).is_none(),
                "`{}` is also native",
                e.name
            );
        }
    }

    fn problems_of(signature: &'static str, value: &str) -> Vec<Diagnostic> {
        let (program, diags) = crate::syntax::parse(value);
        assert!(diags.is_empty(), "{diags:?}");
        crate::types::check_definition(signature, &program.body)
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

    #[test]
    fn doc_is_the_comment_block_above() {
        let text = "x\n// one\n// two\nlet f: Int = 1 in ()";
        let at = text.find("let").unwrap_or(0);
        assert_eq!(doc_above(text, at), "one two");
    }
}
