//! Small text helpers: comments made from descriptions, short renderings of
//! JSON values, lt string literals.

use serde_json::Value as Json;

/// How deep [`short_json`] looks into a value before writing `…`.
const SHORT_DEPTH: usize = 4;

/// `value` as compact JSON, at most about `max` characters (cut with `…`),
/// nested parts deeper than a few levels written `…`. Bounded recursion,
/// so any value is safe.
pub(super) fn short_json(value: &Json, max: usize) -> String {
    let mut out = String::new();
    write_short(value, SHORT_DEPTH, max, &mut out);
    cut(&out, max)
}

fn write_short(value: &Json, depth: usize, max: usize, out: &mut String) {
    if out.len() > max {
        return;
    }
    match value {
        Json::Array(items) if depth == 0 && !items.is_empty() => out.push_str("[…]"),
        Json::Object(map) if depth == 0 && !map.is_empty() => out.push_str("{…}"),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() > max {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_short(item, depth - 1, max, out);
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if out.len() > max {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Json::String(k.clone()).to_string());
                out.push_str(": ");
                write_short(v, depth - 1, max, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_string(),
    }
}

/// One line of text fit for a `//` comment: control characters become
/// spaces, runs of spaces are kept.
fn clean_line(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A description as comment lines (without the `//`): at most `max_lines`
/// lines (the rest replaced by `…`), blank lines inside kept as empty lines,
/// leading and trailing ones dropped.
pub(super) fn comment_lines(text: &str, max_lines: usize, max_line_chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = text
        .split(['\n', '\r', '\u{2028}', '\u{2029}'])
        .map(|l| cut(&clean_line(l), max_line_chars))
        .collect();
    // "\r\n" split in two leaves an empty line after each: drop blank runs
    // down to one.
    lines.dedup_by(|a, b| a.is_empty() && b.is_empty());
    while lines.first().is_some_and(String::is_empty) {
        lines.remove(0);
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        lines.push("…".to_string());
    }
    lines
}

/// The first line of a description (the whole of a one-line one), cut to
/// `max` characters: what a field's comment says.
pub(super) fn brief(text: &str, max: usize) -> Option<String> {
    let first = comment_lines(text, 1, usize::MAX).into_iter().next()?;
    let first = first.trim();
    (!first.is_empty()).then(|| cut(first, max))
}

/// `s` as an lt string literal (the printer's escaping,
/// [`crate::syntax::print::write_string`]).
pub(super) fn lt_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    crate::syntax::print::write_string(s, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_json_is_bounded() {
        assert_eq!(short_json(&json!({"a": [1, 2]}), 100), "{\"a\": [1, 2]}");
        assert_eq!(short_json(&json!([[[[[[1]]]]]]), 100), "[[[[[…]]]]]");
        assert!(short_json(&json!("x".repeat(500)), 20).ends_with('…'));
    }

    #[test]
    fn comments_from_descriptions() {
        assert_eq!(
            comment_lines("\r\nFirst\r\n\r\nsecond\u{7}\n\n", 10, 100),
            vec!["First", "", "second"]
        );
        assert_eq!(comment_lines("a\nb\nc", 2, 100), vec!["a", "b", "…"]);
        assert_eq!(brief("  One.\nTwo.", 100).as_deref(), Some("One."));
        assert_eq!(brief("\n\n", 100), None);
    }

    #[test]
    fn lt_strings() {
        assert_eq!(lt_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u{1}\"");
    }
}
