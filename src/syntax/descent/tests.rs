//! The fast path against the LR parser.

use super::super::{build::ParseState, grammar, token};
use std::path::Path;

fn lt_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            lt_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "lt") {
            out.push(path);
        }
    }
}

/// Wherever the fast path parses a text, the LR parser parses it too,
/// without a diagnostic, into the same tree.
#[test]
fn descent_agrees_with_lr() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests", "examples", "stdlib", "docs"] {
        lt_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "too few inputs: {}", files.len());
    let mut fast = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let (tokens, _) = token::lex(&text);
        let Some((program, st)) = super::parse(&tokens, false) else {
            continue;
        };
        fast += 1;
        let mut lr = ParseState::default();
        let parsed = grammar::lt::ProgramParser::new()
            .parse(&mut lr, tokens.into_iter().map(Ok::<_, token::LexError>));
        let Ok(expected) = parsed else {
            panic!(
                "{}: the fast path accepts what the grammar rejects",
                path.display()
            );
        };
        assert!(
            lr.diags.is_empty() && lr.recovered.is_empty(),
            "{}",
            path.display()
        );
        assert!(st.recovered.is_empty() && !st.expression_missing);
        assert_eq!(
            format!("{program:?}"),
            format!("{expected:?}"),
            "{}: the two parsers disagree",
            path.display()
        );
    }
    assert!(
        fast * 2 > files.len(),
        "the fast path parsed only {fast} of {}",
        files.len()
    );
}
