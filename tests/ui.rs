//! UI tests: every `tests/ui/<phase>/<case>.lt` is checked with
//! `lt::types::check_source` and the result is compared with the snapshot
//! `tests/ui/<phase>/<case>.snap` beside it.
//!
//! A snapshot holds the case's source followed by the checker's verdict:
//! `type: …` and `effects: …` for an accepted program, or the rendered
//! diagnostics (no colour) for a rejected one.
//!
//! Each case also states its expected verdict in its header comment, in the
//! same machine-readable form as `examples/*.lt`:
//!
//! ```text
//! // expect-type: List String
//! // expect-effects: Read, Write        (or `none`)
//! // expect-error: E0501, E0503         (every distinct code reported)
//! ```
//!
//! so that accepting a new snapshot can never silently turn a rejection into
//! an acceptance (or change which errors are reported).
//!
//! Updating: `INSTA_UPDATE=always cargo test --test ui` (or `cargo insta
//! review`), then read every changed `.snap`. Under CI (`CI=true`) insta never
//! writes snapshots, so any change in output fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod common;
#[allow(unused_imports)]
use common::{parse_expect, split_list, Expect};

const PHASES: [&str; 10] = [
    "lex",
    "parse",
    "validate",
    "types",
    "effects",
    "linear",
    "result",
    "accept",
    "extensions",
    "combinators",
];

fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("ui")
}

/// Every `.lt` case, sorted by path.
fn cases() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for phase in PHASES {
        let dir = ui_dir().join(phase);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "lt") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `tests/ui/types/foo.lt` → `types/foo.lt` (stable across machines).
fn display_name(path: &Path) -> String {
    let rel = path.strip_prefix(ui_dir()).unwrap_or(path);
    rel.to_string_lossy().replace('\\', "/")
}

/// Compares the analysis with the header; returns a description of each mismatch.
fn verdict_problems(name: &str, text: &str, a: &lt::types::Analysis) -> Vec<String> {
    let exp = parse_expect(text);
    let mut problems = Vec::new();
    let codes: BTreeSet<String> = a
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    match (&exp.errors, &exp.ty) {
        (Some(_), Some(_)) => problems.push(format!(
            "{name}: header has both expect-error and expect-type"
        )),
        (None, None) => problems.push(format!(
            "{name}: header has neither `// expect-type:` nor `// expect-error:`"
        )),
        (Some(want), None) => {
            if a.is_ok() {
                problems.push(format!(
                    "{name}: expected errors {want:?} but the program was accepted with type {} and effects {}",
                    a.ty, a.effects
                ));
            } else if &codes != want {
                problems.push(format!(
                    "{name}: expected error codes {want:?}, got {codes:?}"
                ));
            }
        }
        (None, Some(want_ty)) => {
            if !a.is_ok() {
                problems.push(format!(
                    "{name}: expected type {want_ty}, but the program was rejected with {codes:?}"
                ));
            } else {
                if a.ty.to_string() != *want_ty {
                    problems.push(format!("{name}: expected type `{want_ty}`, got `{}`", a.ty));
                }
                let got: Vec<String> = a.effects.labels().map(str::to_string).collect();
                match &exp.effects {
                    None => problems.push(format!(
                        "{name}: header has expect-type but no `// expect-effects:`"
                    )),
                    Some(want) if *want != got => {
                        problems.push(format!("{name}: expected effects {want:?}, got {got:?}"));
                    }
                    Some(_) => {}
                }
            }
        }
    }
    problems
}

/// The snapshot text: the source, then the verdict. Trailing spaces (which
/// the renderer leaves after underlines) are removed from every line, so that
/// editors that strip them do not break the snapshots.
fn snapshot_text(name: &str, text: &str, a: &lt::types::Analysis) -> String {
    let verdict = if a.is_ok() {
        format!("type: {}\neffects: {}\n", a.ty, a.effects)
    } else {
        let file = lt::source::SourceFile::new(name, text);
        let mut out = lt::diag::render::render(&file, &a.diagnostics, false);
        if a.truncated > 0 {
            out.push_str(&format!("… and {} more errors not shown\n", a.truncated));
        }
        out
    };
    let whole = format!(
        "{}\n\n==================== {} ====================\n{}",
        text.trim_end(),
        if a.is_ok() { "accepted" } else { "rejected" },
        verdict
    );
    whole
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn ui() {
    let cases = cases();
    assert!(
        cases.len() >= 60,
        "expected at least 60 UI cases under tests/ui, found {}",
        cases.len()
    );
    let mut failures: Vec<String> = Vec::new();
    for path in &cases {
        let name = display_name(path);
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
        let analysis = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lt::types::check_source(&text)
        })) {
            Ok(a) => a,
            Err(_) => {
                failures.push(format!("{name}: the checker panicked"));
                continue;
            }
        };
        failures.extend(verdict_problems(&name, &text, &analysis));
        let snap = snapshot_text(&name, &text, &analysis);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(ui_dir);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            insta::with_settings!({
                snapshot_path => dir.clone(),
                prepend_module_to_snapshot => false,
                snapshot_suffix => "",
                input_file => path.clone(),
                omit_expression => true,
                description => format!("lt check {name}"),
            }, {
                insta::assert_snapshot!(stem.clone(), snap);
            });
        }));
        if result.is_err() {
            let snap_file = dir.join(format!("{stem}.snap"));
            failures.push(if snap_file.exists() {
                format!("{name}: output differs from {} (see the diff above)", display_name(&snap_file))
            } else {
                format!(
                    "{name}: no snapshot {} yet: run `INSTA_UPDATE=always cargo test --test ui` and review it",
                    display_name(&snap_file)
                )
            });
        }
    }
    // A snapshot without its case is stale (the case was renamed or removed).
    for phase in PHASES {
        let Ok(entries) = std::fs::read_dir(ui_dir().join(phase)) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.extension().is_some_and(|e| e == "snap") && !p.with_extension("lt").exists() {
                failures.push(format!(
                    "{}: snapshot has no matching .lt case",
                    display_name(&p)
                ));
            }
        }
    }
    // Phases are the only directories.
    if let Ok(entries) = std::fs::read_dir(ui_dir()) {
        for entry in entries.flatten() {
            let p = entry.path();
            let ok = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| PHASES.contains(&n));
            if !ok {
                failures.push(format!(
                    "{}: not a phase directory ({})",
                    display_name(&p),
                    PHASES.join(", ")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} UI case(s) failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
