//! Doc comments: the `//` lines directly above a declaration or a record
//! field, read from the source text (the lexer drops comments).
//!
//! ```text
//! // Looks an account up by its id.        ┐ the doc of `lookup`:
//! // Read-only.                            ┘ "Looks an account up by its id.\nRead-only."
//! tool lookup: {
//!   // The account id, e.g. "cust_1".        the doc of the field `id`
//!   id: String
//! } -{Read}-> {email: String};
//! ```
//!
//! A doc is the run of lines, each starting (after indentation) with `//`,
//! that ends on the line just above the item, with no blank line between;
//! the item must start its own line. Each line loses its `//` (and any
//! further `/`) and one space; the lines are joined with `\n`. Block
//! comments `(* … *)` are not docs.

/// The doc comment of the item that starts at byte `start` of `text`, if
/// the item starts its line and `//` lines stand directly above it.
pub fn doc_comment(text: &str, start: usize) -> Option<String> {
    let start = start.min(text.len());
    if !text.is_char_boundary(start) {
        return None;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..start].trim().is_empty() {
        return None;
    }
    let mut lines: Vec<&str> = Vec::new();
    let mut end = line_start;
    while end > 0 {
        // The line ending at `end - 1` (its `\n`).
        let above = &text[..end - 1];
        let from = above.rfind('\n').map_or(0, |i| i + 1);
        let Some(body) = above[from..].trim().strip_prefix("//") else {
            break;
        };
        let body = body.trim_start_matches('/');
        lines.push(body.strip_prefix(' ').unwrap_or(body).trim_end());
        end = from;
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.reverse();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::doc_comment;

    fn doc_of(text: &str, item: &str) -> Option<String> {
        doc_comment(text, text.find(item).unwrap_or(0))
    }

    #[test]
    fn lines_directly_above() {
        let text = "// header\n\n// Looks up.\n//   indented\n/// three\ntool t: Unit -> Unit;";
        assert_eq!(
            doc_of(text, "tool").as_deref(),
            Some("Looks up.\n  indented\nthree")
        );
    }

    #[test]
    fn none_without_comment_or_when_not_first_on_line() {
        assert_eq!(doc_of("\ntool t: Unit -> Unit;", "tool"), None);
        assert_eq!(doc_of("// x\n\ntool t: Unit -> Unit;", "tool"), None);
        assert_eq!(doc_of("// x\ntype A = Int; tool t: A -> A;", "tool"), None);
    }

    #[test]
    fn fields_and_crlf() {
        let text = "tool t: {\r\n  // the id\r\n  id: String\r\n} -> Unit;";
        assert_eq!(doc_of(text, "id:").as_deref(), Some("the id"));
        assert_eq!(doc_of(text, "tool"), None);
    }
}
