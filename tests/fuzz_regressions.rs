//! Every input in `tests/fuzz_regressions/*.lt` (found by the cargo-fuzz
//! targets, see that folder's README) goes through what the `check` and
//! `run` fuzz targets do: `check_source`, span sanity, both renderings of the
//! diagnostics, and, when the program checks, lowering and a run under small
//! limits against a host that answers every call with `null` (a wrong shape
//! for most tools, so the program sees an `Err`).
//!
//! The test asserts only that each input terminates without a panic. The
//! time each file took is printed (`cargo test --test fuzz_regressions --
//! --nocapture`), not asserted: the slow inputs recorded here were slow
//! checks, and the figure shows whether one has regressed.

use lt::diag::{json, render};
use lt::runtime::host::{CallRequest, Host, Outcome};
use lt::runtime::limits::Limits;
use lt::source::{SourceFile, Span};
use std::path::PathBuf;
use std::time::Instant;

/// The fuzz harness's limits.
fn limits() -> Limits {
    Limits::fuzz()
}

/// Answers every call with `null`.
struct NullHost;

impl Host for NullHost {
    fn call(&mut self, _: CallRequest<'_>) -> Outcome {
        Ok(serde_json::Value::Null)
    }
}

fn span_ok(text: &str, span: Span) -> bool {
    let (s, e) = (span.start as usize, span.end as usize);
    s <= e && e <= text.len() && text.is_char_boundary(s) && text.is_char_boundary(e)
}

fn inputs() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "lt"))
        .collect();
    files.sort();
    files
}

/// What the `check` and `run` fuzz targets do with one input.
fn exercise(text: &str) -> String {
    let analysis = lt::types::check_source(text);
    for d in &analysis.diagnostics {
        assert!(
            span_ok(text, d.span),
            "diagnostic span {:?} out of the text",
            d.span
        );
    }
    let file = SourceFile::new("fuzz.lt", text);
    std::hint::black_box(render::render(&file, &analysis.diagnostics, false));
    for d in &analysis.diagnostics {
        std::hint::black_box(json::to_line(&file, d));
    }
    std::hint::black_box(analysis.ty.to_string());
    let codes: Vec<&str> = analysis
        .diagnostics
        .iter()
        .map(|d| d.code.as_str())
        .collect();
    let summary = if codes.is_empty() {
        "checks".to_string()
    } else {
        codes.join(" ")
    };
    let Ok(checked) = analysis.into_checked() else {
        return summary;
    };
    let ir = match lt::ir::lower::lower(&checked) {
        Ok(ir) => ir,
        Err(e) => panic!("checked program failed to lower: {e:?}"),
    };
    let (result, _) = lt::runtime::eval::run(&ir, &mut NullHost, &limits());
    match result {
        Ok(_) => format!("{summary}, ran"),
        Err(e) => format!("{summary}, run stopped: {e:?}"),
    }
}

#[test]
fn every_fuzz_regression_terminates_without_panicking() {
    let files = inputs();
    assert!(!files.is_empty(), "no inputs in tests/fuzz_regressions");
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let started = Instant::now();
        let outcome = exercise(&text);
        println!(
            "{}: {outcome} ({:.1} ms)",
            path.file_name()
                .map_or_else(Default::default, |n| n.to_string_lossy()),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}
