//! Checker: `check_source` on any text, then both renderings of the
//! diagnostics (ariadne text and JSON), as `lt check` and `lt check --json` do.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lt::diag::{json, render};
use lt::source::SourceFile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let analysis = lt::types::check_source(text);
    for d in &analysis.diagnostics {
        lt_fuzz::assert_span_ok(text, d.span, "check diagnostic");
    }
    let file = SourceFile::new("fuzz.lt", text);
    std::hint::black_box(render::render(&file, &analysis.diagnostics, false));
    for d in &analysis.diagnostics {
        std::hint::black_box(json::to_line(&file, d));
    }
    std::hint::black_box(analysis.ty.to_string());
    if let Ok(checked) = analysis.into_checked() {
        // A checked program must lower (lowering errors are internal bugs).
        if let Err(e) = lt::ir::lower::lower(&checked) {
            panic!("checked program failed to lower: {e:?}");
        }
    }
});
