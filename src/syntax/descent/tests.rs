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
    let repo_files = files.len();
    // Every file of `LT_PARSE_CORPUS` too (any name): e.g. a fuzzing corpus,
    // `LT_PARSE_CORPUS=fuzz/corpus/parse cargo test --lib descent_agrees`.
    if let Some(dir) = std::env::var_os("LT_PARSE_CORPUS") {
        let entries = std::fs::read_dir(&dir).expect("LT_PARSE_CORPUS names a directory");
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    let mut fast = 0;
    for (i, path) in files.iter().enumerate() {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let (tokens, _) = token::lex(&text);
        let Some((program, st)) = super::parse(&tokens, false) else {
            continue;
        };
        fast += usize::from(i < repo_files);
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
        fast * 2 > repo_files,
        "the fast path parsed only {fast} of {repo_files}"
    );
}
