//! The words of a TOML file's errors (tools.toml, a profile, serve.toml,
//! an agent or eval file): the `toml` crate's message with serde's Rust
//! type names said as a user of the file would (`expected u64` → `expected
//! a non-negative integer`).

/// `e`'s message in the file's words (see the module note).
pub fn message(e: &toml::de::Error) -> String {
    plain_types(e.message())
}

/// `text` with serde's Rust type names (`u64`, `i32`, `f64`, …, after
/// "expected") in words.
pub fn plain_types(text: &str) -> String {
    const WORDS: [(&str, &str); 11] = [
        ("expected u8", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected i8", "expected an integer"),
        ("expected i16", "expected an integer"),
        ("expected i32", "expected an integer"),
        ("expected i64", "expected an integer"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
    ];
    let mut out = text.to_string();
    for (rust, words) in WORDS {
        // Whole words only (`expected u8` is not `expected u80…`).
        let mut from = 0;
        while let Some(at) = out[from..].find(rust).map(|i| i + from) {
            let end = at + rust.len();
            if out[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
                from = end;
                continue;
            }
            out.replace_range(at..end, words);
            from = at + words.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::plain_types;

    #[test]
    fn rust_type_names_after_expected_are_said_in_words() {
        assert_eq!(
            plain_types("invalid value: integer `-5`, expected u64"),
            "invalid value: integer `-5`, expected a non-negative integer"
        );
        assert_eq!(
            plain_types("invalid type: string \"x\", expected i64 or f64"),
            "invalid type: string \"x\", expected an integer or f64"
        );
        assert_eq!(plain_types("expected u8s"), "expected u8s");
        assert_eq!(plain_types("expected a string"), "expected a string");
    }
}
