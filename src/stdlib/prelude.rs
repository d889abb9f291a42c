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
//! * the parsed and *checked* definition, once per thread (syntax trees are
//!   `Rc`), which lowering inlines at each use: the checker's business, in
//!   `types/definition.rs` (`library_definition`), from the parsed files
//!   this module reads (`parse_all`).
//!
//! Checking a definition (`types::check_definition`) proves it has its
//! signature for every instantiation of the type parameters; a definition
//! that fails is a bug in lt, reported by lowering as an internal error and
//! caught before release by the test `stdlib_lt_definitions_check`.

use super::Native;
use crate::source::Span;
use crate::syntax::ast::{Expr, ExprKind};
use std::collections::HashMap;

/// The files, in the order their definitions may depend on each other.
pub const FILES: [(&str, &str); 4] = [
    ("stdlib/option.lt", include_str!("../../stdlib/option.lt")),
    ("stdlib/result.lt", include_str!("../../stdlib/result.lt")),
    ("stdlib/number.lt", include_str!("../../stdlib/number.lt")),
    ("stdlib/list.lt", include_str!("../../stdlib/list.lt")),
];

/// One definition as read from its file (before checking).
pub(crate) struct Parsed {
    /// The file it is written in.
    pub(crate) file: &'static str,
    /// Its name (empty when the file is not a `let` chain).
    pub(crate) name: &'static str,
    /// Its signature as written.
    pub(crate) signature: &'static str,
    /// The `//` lines above it.
    pub(crate) doc: String,
    /// The `fn` (or, for a malformed file, whatever the file holds).
    pub(crate) value: Expr,
    /// Problems with the file's shape (not a `let` chain, not a `fn`, a
    /// missing signature, a syntax error).
    pub(crate) problems: Vec<String>,
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

/// Parses every file into its definitions, in file order.
pub(crate) fn parse_all() -> Vec<Parsed> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_has_a_doc_and_is_not_native() {
        assert!(entries().len() >= 20, "{} definitions", entries().len());
        for e in entries() {
            assert!(!e.doc.is_empty(), "`{}` has no doc", e.name);
            assert!(
                super::super::index(e.name).is_none(),
                "`{}` is also native",
                e.name
            );
        }
    }

    #[test]
    fn doc_is_the_comment_block_above() {
        let text = "x\n// one\n// two\nlet f: Int = 1 in ()";
        let at = text.find("let").unwrap_or(0);
        assert_eq!(doc_above(text, at), "one two");
    }
}
