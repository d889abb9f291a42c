//! Lexer: any UTF-8 text must lex without panicking, every token and
//! diagnostic span must lie inside the text on char boundaries.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (tokens, diags) = lt::syntax::token::lex(text);
    let _ = std::hint::black_box(tokens.len());
    for d in &diags {
        lt_fuzz::assert_span_ok(text, d.span, "lex diagnostic");
    }
});
