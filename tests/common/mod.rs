//! Shared by `tests/ui.rs` and `tests/examples.rs`: the expectation a case
//! states in its header comment:
//!
//! ```text
//! // expect-type: List String
//! // expect-effects: Read, Write        (or `none`)
//! // expect-error: E0501, E0503         (every distinct code reported)
//! ```

use std::collections::BTreeSet;

/// What a header says the checker must conclude.
#[derive(Debug, Default)]
pub struct Expect {
    pub ty: Option<String>,
    pub effects: Option<Vec<String>>,
    pub errors: Option<BTreeSet<String>>,
}

fn header_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.trim().strip_prefix("//")?.trim_start();
    rest.strip_prefix(key)?.strip_prefix(':').map(str::trim)
}

/// `Read, Write` → `["Read", "Write"]`; `none` → `[]`.
pub fn split_list(v: &str) -> Vec<String> {
    if v.eq_ignore_ascii_case("none") {
        return Vec::new();
    }
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Reads the `expect-*` lines of a source text.
pub fn parse_expect(text: &str) -> Expect {
    let mut e = Expect::default();
    for line in text.lines() {
        if let Some(v) = header_value(line, "expect-type") {
            e.ty = Some(v.to_string());
        } else if let Some(v) = header_value(line, "expect-effects") {
            e.effects = Some(split_list(v));
        } else if let Some(v) = header_value(line, "expect-error") {
            e.errors
                .get_or_insert_with(BTreeSet::new)
                .extend(split_list(v));
        }
    }
    e
}
