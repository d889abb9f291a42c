//! Names: which JSON names lt can write as they are, and how tool and type
//! names are made from the others.
//!
//! A property name must be used as it is (the JSON key is the field name),
//! so an object with a property lt cannot write becomes `Json`. A tool's
//! name can change: `tools.toml` keeps the original for the server
//! (`mcp = { …, tool = "get-time" }`). Type alias names are made up.

use std::collections::BTreeSet;

/// Words that are never names (`docs/language/reference.md`, Lexical
/// structure; `src/syntax/token.rs`).
const RESERVED: [&str; 17] = [
    "tool", "let", "rec", "in", "fn", "if", "then", "else", "match", "exec", "true", "false", "Ok",
    "Err", "List", "Result", "while",
];

/// `for` is reserved too (kept apart so that [`RESERVED`] reads as the
/// reference lists it up to `while`).
const RESERVED_FOR: &str = "for";

/// Contextual keywords: names in most places, but a tool called `scope`
/// would turn `exec tool scope {…}` into a scope. Tool names avoid them.
const CONTEXTUAL: [&str; 10] = [
    "Option", "Some", "None", "type", "effect", "with", "gather", "scope", "undo", "approve",
];

/// Type names an alias may not take: the base types, and the type
/// constructors.
const TYPE_WORDS: [&str; 13] = [
    "Unit", "Bool", "Int", "String", "Float", "Json", "Approval", "List", "Result", "Option",
    "Some", "None", "Pure",
];

/// True for `[A-Za-z_][A-Za-z0-9_]*`, other than `_`.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    s != "_" && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_reserved(s: &str) -> bool {
    RESERVED.contains(&s) || s == RESERVED_FOR
}

/// True when `name` can be written as a record field (`name: T`, `r.name`).
pub fn is_field_name(name: &str) -> bool {
    is_identifier(name) && !is_reserved(name)
}

/// Why `name` cannot be a field, for a comment.
pub fn field_name_problem(name: &str) -> &'static str {
    if is_identifier(name) {
        "a keyword"
    } else {
        "not an lt name"
    }
}

/// True when `name` can be a tool's name as it is.
pub fn is_tool_name(name: &str) -> bool {
    is_field_name(name) && !CONTEXTUAL.contains(&name)
}

/// The names given out so far (tools and type aliases share one set, so
/// that no two declarations have the same name).
#[derive(Debug, Default)]
pub struct Names {
    taken: BTreeSet<String>,
}

impl Names {
    /// True when `name` is given out.
    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }

    /// Marks `name` as given out.
    pub fn take(&mut self, name: &str) {
        self.taken.insert(name.to_string());
    }

    /// `base`, or `base_2`, `base_3`, … (with `sep` between), the first
    /// not given out; marks it given out.
    pub fn fresh(&mut self, base: &str, sep: &str) -> String {
        let mut name = base.to_string();
        let mut n = 2usize;
        while self.taken.contains(&name) {
            name = format!("{base}{sep}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

/// A tool name lt can write, made from `original`: characters other than
/// ASCII letters, digits and `_` become `_` (`get-time` → `get_time`), a
/// leading digit gets `tool_` before it, a keyword gets `_` after it.
pub fn tool_name(original: &str) -> String {
    let mut name: String = original
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !name.chars().any(|c| c.is_ascii_alphanumeric()) {
        return "tool".to_string();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "tool_");
    }
    if !is_tool_name(&name) {
        name.push('_');
    }
    name
}

/// A type name made from `text` (a title, a `$defs` key, a path):
/// PascalCase, ASCII, starting with a capital letter, never a base type.
/// `get_current_timeArguments` → `GetCurrentTimeArguments`,
/// `time result` → `TimeResult`, `String` → `StringType`.
pub fn type_name(text: &str) -> String {
    let mut out = String::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() {
        return "Type".to_string();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    if TYPE_WORDS.contains(&out.as_str()) || is_reserved(&out) {
        out.push_str("Type");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names() {
        assert!(is_field_name("repo_path"));
        assert!(is_field_name("type"));
        assert!(is_field_name("None"));
        assert!(is_field_name("_private"));
        assert!(!is_field_name("match"));
        assert!(!is_field_name("in"));
        assert!(!is_field_name("for"));
        assert!(!is_field_name("foo-bar"));
        assert!(!is_field_name("_"));
        assert!(!is_field_name(""));
        assert!(!is_field_name("2fa"));
        assert!(!is_field_name("名前"));
    }

    #[test]
    fn tool_names() {
        assert_eq!(tool_name("get-time"), "get_time");
        assert_eq!(tool_name("fs.read"), "fs_read");
        assert_eq!(tool_name("3d"), "tool_3d");
        assert_eq!(tool_name("match"), "match_");
        assert_eq!(tool_name("scope"), "scope_");
        assert_eq!(tool_name("---"), "tool");
        assert!(is_tool_name(&tool_name("名前x")));
    }

    #[test]
    fn type_names() {
        assert_eq!(
            type_name("get_current_timeArguments"),
            "GetCurrentTimeArguments"
        );
        assert_eq!(type_name("Time Result"), "TimeResult");
        assert_eq!(type_name("String"), "StringType");
        assert_eq!(type_name("result"), "ResultType");
        assert_eq!(type_name("1st"), "T1st");
        assert_eq!(type_name("—"), "Type");
    }

    #[test]
    fn fresh_names() {
        let mut names = Names::default();
        assert_eq!(names.fresh("a", "_"), "a");
        assert_eq!(names.fresh("a", "_"), "a_2");
        assert_eq!(names.fresh("A", ""), "A");
        assert_eq!(names.fresh("A", ""), "A2");
    }
}
