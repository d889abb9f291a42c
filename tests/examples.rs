//! Every `examples/*.lt` is checked and compared with the expectation in its
//! header comment:
//!
//! ```text
//! // expect-type: List String
//! // expect-effects: Read, Write        (comma-separated, or `none`)
//! ```
//!
//! for a program that must be accepted, or
//!
//! ```text
//! // expect-error: E0401                (every distinct code reported, comma-separated)
//! ```
//!
//! for one that must be rejected with exactly those diagnostic codes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod common;
#[allow(unused_imports)]
use common::{parse_expect, split_list, Expect};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn example_files() -> Vec<PathBuf> {
    let dir = examples_dir();
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lt"))
        .collect();
    out.sort();
    out
}

fn rendered(name: &str, text: &str, a: &lt::types::Analysis) -> String {
    let file = lt::source::SourceFile::new(name, text);
    lt::diag::render::render(&file, &a.diagnostics, false)
}

/// Checks one example; returns a description of what went wrong, if anything.
fn check_example(path: &Path) -> Option<String> {
    let name = format!(
        "examples/{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Some(format!("{name}: cannot read: {e}")),
    };
    let exp = parse_expect(&text);
    let a = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lt::types::check_source(&text)
    })) {
        Ok(a) => a,
        Err(_) => return Some(format!("{name}: the checker panicked")),
    };
    let codes: BTreeSet<String> = a
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    match (exp.errors, exp.ty, exp.effects) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            Some(format!("{name}: header mixes `expect-error` with `expect-type`/`expect-effects`"))
        }
        (None, None, _) => Some(format!(
            "{name}: header has no `// expect-type:` + `// expect-effects:` lines and no `// expect-error:` line"
        )),
        (None, Some(_), None) => Some(format!("{name}: header has `// expect-type:` but no `// expect-effects:`")),
        (Some(want), None, None) => {
            if a.is_ok() {
                Some(format!(
                    "{name}: expected rejection with {want:?}, but it was accepted with type `{}` and effects {}",
                    a.ty, a.effects
                ))
            } else if codes != want {
                Some(format!("{name}: expected error codes {want:?}, got {codes:?}:\n{}", rendered(&name, &text, &a)))
            } else {
                None
            }
        }
        (None, Some(want_ty), Some(want_eff)) => {
            if !a.is_ok() {
                return Some(format!(
                    "{name}: expected type `{want_ty}`, but it was rejected with {codes:?}:\n{}",
                    rendered(&name, &text, &a)
                ));
            }
            let mut problems = Vec::new();
            if a.ty.to_string() != want_ty {
                problems.push(format!("expected type `{want_ty}`, got `{}`", a.ty));
            }
            let got: Vec<String> = a.effects.labels().map(str::to_string).collect();
            if got != want_eff {
                problems.push(format!("expected effects {want_eff:?}, got {got:?}"));
            }
            if problems.is_empty() {
                None
            } else {
                Some(format!("{name}: {}", problems.join("; ")))
            }
        }
    }
}

#[test]
fn examples_match_their_headers() {
    let files = example_files();
    assert!(
        !files.is_empty(),
        "no examples/*.lt found in {}",
        examples_dir().display()
    );
    let failures: Vec<String> = files.iter().filter_map(|p| check_example(p)).collect();
    assert!(
        failures.is_empty(),
        "{} of {} example(s) do not match their header:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn required_examples_exist() {
    for name in [
        "support_agent",
        "refund_flow",
        "map_effectful_callback",
        "linear_token",
        "traverse_orders",
        "readme_query",
        "let_arithmetic",
        "record_literal",
        "traverse_hosts",
        "batch_processing",
        "data_filtering",
        "early_termination_fold",
        "conditional_tool_selection",
        "rpg_roll_stats",
        "rpg_classify",
    ] {
        let p = examples_dir().join(format!("{name}.lt"));
        assert!(p.exists(), "missing example {}", p.display());
    }
}

#[test]
fn header_parsing() {
    let e = parse_expect("// expect-type: List {a: Int}\n// expect-effects: Read, Write\n1");
    assert_eq!(e.ty.as_deref(), Some("List {a: Int}"));
    assert_eq!(
        e.effects,
        Some(vec!["Read".to_string(), "Write".to_string()])
    );
    assert!(e.errors.is_none());
    let e = parse_expect("// expect-effects: none\n");
    assert_eq!(e.effects, Some(Vec::new()));
    let e = parse_expect("// expect-error: E0401, E0602\n");
    assert_eq!(
        e.errors,
        Some(
            ["E0401".to_string(), "E0602".to_string()]
                .into_iter()
                .collect()
        )
    );
}

/// Every example folder has a README that says how to run it with `lt` on
/// the PATH (one spelling: `lt run …`, not `./target/…/lt`) and, on a line
/// of its own starting `Reset:`, how to put the folder back as it was.
#[test]
fn every_example_folder_has_a_readme_that_says_how_to_reset_it() {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(folders.len() >= 10, "{folders:?}");
    for folder in folders {
        let readme = folder.join("README.md");
        let text = std::fs::read_to_string(&readme)
            .unwrap_or_else(|e| panic!("{}: {e}", readme.display()));
        assert!(
            text.lines()
                .any(|l| l.starts_with("Reset:") || l.contains(". Reset: ")),
            "{}: no `Reset:` line saying how to reset the example",
            readme.display()
        );
        assert!(
            !text.contains("target/debug/lt ") && !text.contains("target/release/lt "),
            "{}: spell the command `lt …` (installed with `cargo install --path .`)",
            readme.display()
        );
    }
}
