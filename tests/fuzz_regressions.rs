//! Every input in `tests/fuzz_regressions/*.lt` (found by the cargo-fuzz
//! targets, see that folder's README) goes through what the `check` and
//! `run` fuzz targets do: `check_source`, span sanity, both renderings of the
//! diagnostics, and, when the program checks, lowering and a run under small
//! limits against a host that answers every call with `null` (a wrong shape
//! for most tools, so the program sees an `Err`).
//!
//! Each input terminates without a panic, with the outcome its
//! `// expect-error: CODES` header names (every distinct code, comma-separated;
//! no header: the program checks), and within [`TIME_BOUND`]: the slow
//! inputs recorded here were slow checks. The time each file took is also
//! printed (`cargo test --test fuzz_regressions -- --nocapture`).

use lt::diag::{json, render};
use lt::runtime::host::{CallRequest, Host, Outcome};
use lt::runtime::limits::Limits;
use lt::source::{SourceFile, Span};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The most one input may take, in a debug build on a loaded machine: far
/// above what the inputs take now (about 0.1 s), far below what they took
/// when they were found (seconds to minutes: the work was exponential).
const TIME_BOUND: Duration = Duration::from_secs(10);

/// The codes an input's `// expect-error:` header names, in order.
fn expected_codes(text: &str) -> Vec<String> {
    let mut codes: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("// expect-error:"))
        .flat_map(|l| l.split(','))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

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

/// What the `check` and `run` fuzz targets do with one input; returns the
/// distinct diagnostic codes (sorted) and a summary.
fn exercise(text: &str) -> (Vec<String>, String) {
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
    let mut codes: Vec<String> = analysis
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    codes.sort();
    codes.dedup();
    let summary = if codes.is_empty() {
        "checks".to_string()
    } else {
        codes.join(" ")
    };
    let Ok(checked) = analysis.into_checked() else {
        return (codes, summary);
    };
    let ir = match lt::ir::lower::lower(&checked) {
        Ok(ir) => ir,
        Err(e) => panic!("checked program failed to lower: {e:?}"),
    };
    let (result, _) = lt::runtime::eval::run(&ir, &mut NullHost, &limits());
    let summary = match result {
        Ok(_) => format!("{summary}, ran"),
        Err(e) => format!("{summary}, run stopped: {e:?}"),
    };
    (codes, summary)
}

#[test]
fn every_fuzz_regression_terminates_in_time_with_its_expected_outcome() {
    let files = inputs();
    assert!(!files.is_empty(), "no inputs in tests/fuzz_regressions");
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path
            .file_name()
            .map_or_else(Default::default, |n| n.to_string_lossy());
        let started = Instant::now();
        let (codes, outcome) = exercise(&text);
        let took = started.elapsed();
        println!("{name}: {outcome} ({:.1} ms)", took.as_secs_f64() * 1e3);
        assert_eq!(codes, expected_codes(&text), "{name}: {outcome}");
        assert!(took < TIME_BOUND, "{name} took {took:?}");
    }
}
