//! Parser: `parse` and `parse_declarations` never fail and never panic
//! (src/syntax/mod.rs); every diagnostic span lies inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (program, diags) = lt::syntax::parse(text);
    std::hint::black_box(&program);
    for d in &diags {
        lt_fuzz::assert_span_ok(text, d.span, "parse diagnostic");
    }
    let (program, _has_expr, diags) = lt::syntax::parse_declarations(text);
    std::hint::black_box(&program);
    for d in &diags {
        lt_fuzz::assert_span_ok(text, d.span, "parse_declarations diagnostic");
    }
});
