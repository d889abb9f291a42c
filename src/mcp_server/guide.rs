//! What the model reads about the server's tools: the generated
//! description of `run_program` (a short guide to lt, an example that
//! checks, and the tools' declarations), and for catalogs too large for
//! one description, `search_tools` (a ranked search over names and doc
//! comments) and `describe_tools` (declarations by name).
//!
//! ```text
//! Catalog ──description──▶ GUIDE + ```lt example``` + ```lt declarations```   (≤ SEARCH_FIRST_CHARS)
//!                        └▶ GUIDE + ```lt example``` + "call search_tools first"  (larger)
//! query ──search──▶ entries ranked (name words ×3, doc words ×1, BM25-like) ──▶ declarations
//! ```
//!
//! Every ```` ```lt ```` block of a description is lt the checker accepts
//! with the catalog's declarations (the example is checked when it is
//! made; `tests/mcp_server/basics.rs` checks the whole description).

use super::catalog::{Catalog, Entry};
use crate::types::ty::Type;
use crate::types::with_tools::check_with_tools;
use crate::types::ToolSig;

/// Past this many characters of declarations, the description tells the
/// model to search first instead of listing them.
pub const SEARCH_FIRST_CHARS: usize = 16_000;

/// Most tools `search_tools` returns.
pub const MAX_RESULTS: usize = 10;

/// The guide at the top of `run_program`'s description.
pub const GUIDE: &str = "Runs a program in lt, a small typed language in which one program makes many tool calls, and returns its value. The whole program is checked before anything runs (every field read exists, every tool failure is handled, every call is allowed by this session's policy): a rejected program runs nothing and comes back with every error (code, line, message, fix); fix them all and call again. Prefer one program that makes all the calls a task needs over many round trips.

The tools' declarations are part of every program: send only the expression (a declaration you repeat must be unchanged).

- `exec tool NAME ARG` calls a tool and yields a Result that must be matched: `match exec tool NAME ARG { Ok(v) => ..., Err(e) => ... }` (`e` is a String).
- `let x = e in body`, `if c then a else b`, records `{id = \"a\", n = 1}` and fields `r.id`, lists `[1, 2]`, `\"a\" ++ \"b\"`, `+ - * / == != < <= > >= && || not`.
- Functions `fn x: T => e`, applied by juxtaposition `f x`. No loops, no recursion: `map f xs`, `filter p xs` and `fold f init xs` take pure functions; `traverse f xs` calls a tool per element in order and stops at the first Err (a `Result<List B, String>`).
- The program's value comes back as JSON: make it a record of what the task needs.";

/// `run_program`'s description for `catalog`.
pub fn description(catalog: &Catalog) -> String {
    compose(&example(catalog), &catalog.shown, catalog.entries.len())
}

/// The description from its parts: the guide, `example`, then the
/// declarations `shown` when they are at most [`SEARCH_FIRST_CHARS`]
/// long, else the instruction to search the `tools` tools first.
pub fn compose(example: &str, shown: &str, tools: usize) -> String {
    let mut out = String::from(GUIDE);
    out.push_str("\n\nExample:\n```lt\n");
    out.push_str(example);
    out.push_str("\n```\n\n");
    if shown.len() <= SEARCH_FIRST_CHARS {
        out.push_str(
            "The tools (`tool NAME: Input -{Effects}-> Output;`, doc comments above):\n```lt\n",
        );
        out.push_str(shown.trim());
        out.push_str("\n```");
    } else {
        out.push_str(&format!(
            "This server has {tools} tools, too many to list here. Call search_tools with a few words of the task to find the ones you need (it returns their declarations), or describe_tools with their names; then write the program."
        ));
    }
    out
}

/// An example program over the catalog's first tool whose input can be
/// written as a literal, checked against the declarations; a pure one
/// when none can.
pub fn example(catalog: &Catalog) -> String {
    let decls = crate::types::check_declarations(&catalog.tools_text);
    for t in &decls.tools {
        if let Some(program) = example_for(&t.sig) {
            let checks = check_with_tools(
                &catalog.tools_name,
                &catalog.tools_text,
                "example.lt",
                &program,
            )
            .is_ok_and(|w| w.analysis.is_ok());
            if checks {
                return program;
            }
        }
    }
    "let xs = [1, 2, 3] in\nfold (fn acc: Int => fn x: Int => acc + x) 0 xs".to_string()
}

/// `match exec tool t ARG {…}` for `sig`, if its input has a literal: the
/// result's first scalar field (or the result itself, when it is a
/// scalar) in a record, the error beside it.
fn example_for(sig: &ToolSig) -> Option<String> {
    let arg = literal(&sig.input, 0)?;
    let (read, default) = match &sig.output {
        Type::Record(fields) => fields
            .iter()
            .find_map(|(n, t)| scalar(t).map(|d| (format!("result.{n}"), d)))?,
        t => (String::from("result"), scalar(t)?),
    };
    Some(format!(
        "match exec tool {} {arg} {{\n  Ok(result) => {{ok = true, found = {read}, error = \"\"}},\n  Err(e) => {{ok = false, found = {default}, error = e}}\n}}",
        sig.name
    ))
}

/// A literal of a scalar type.
fn scalar(ty: &Type) -> Option<String> {
    match ty {
        Type::Bool | Type::Int | Type::Float | Type::String => literal(ty, 0),
        _ => None,
    }
}

/// A literal of type `ty` (scalars, records, lists of them).
fn literal(ty: &Type, depth: usize) -> Option<String> {
    if depth > 4 {
        return None;
    }
    Some(match ty {
        Type::Unit => "()".into(),
        Type::Bool => "true".into(),
        Type::Int => "1".into(),
        Type::Float => "1.5".into(),
        Type::String => "\"text\"".into(),
        Type::Enum(lits) => format!("\"{}\"", lits.first()?),
        Type::Record(fields) => {
            let parts: Option<Vec<String>> = fields
                .iter()
                .map(|(n, t)| literal(t, depth + 1).map(|v| format!("{n} = {v}")))
                .collect();
            format!("{{{}}}", parts?.join(", "))
        }
        Type::List(t) => format!("[{}]", literal(t, depth + 1)?),
        _ => return None,
    })
}

/// Words of `text`, lowercased (a word: letters and digits; `snake_case`
/// and `camelCase` names split into their parts).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a query word matches a document word (equal, or one a prefix of
/// the other when both have at least 4 letters: `refund` ~ `refunds`).
fn matches(q: &str, w: &str) -> bool {
    q == w || (q.len() >= 4 && w.len() >= 4 && (w.starts_with(q) || q.starts_with(w)))
}

/// Query words that say nothing about a tool.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "and", "or", "is",
    "it", "its", "me", "my", "this", "that", "all", "some", "please",
];

/// The entries matching `query`, best first (at most [`MAX_RESULTS`]):
/// each query word (stop words left out) scores by how rare it is among the tools (IDF), three
/// times in the name, once per doc word; ties in declaration order.
pub fn search<'c>(entries: &'c [Entry], query: &str) -> Vec<&'c Entry> {
    let qs: Vec<String> = words(query)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    let docs: Vec<(Vec<String>, Vec<String>)> = entries
        .iter()
        .map(|e| (words(&e.name), words(e.doc.as_deref().unwrap_or(""))))
        .collect();
    let n = entries.len() as f64;
    let mut scored: Vec<(f64, usize)> = Vec::new();
    for (i, (name, doc)) in docs.iter().enumerate() {
        let mut score = 0.0;
        for q in &qs {
            let df = docs
                .iter()
                .filter(|(nm, d)| nm.iter().chain(d).any(|w| matches(q, w)))
                .count() as f64;
            if df == 0.0 {
                continue;
            }
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            let in_name = name.iter().filter(|w| matches(q, w)).count() as f64;
            let in_doc = doc.iter().filter(|w| matches(q, w)).count() as f64;
            let tf = 3.0 * in_name + in_doc;
            score += idf * tf * 2.2 / (tf + 1.2);
        }
        if score > 0.0 {
            scored.push((score, i));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(MAX_RESULTS)
        .filter_map(|(_, i)| entries.get(i))
        .collect()
}

/// The declarations of `entries` as one lt text: the `type` and `effect`
/// declarations they need (once each), then each tool with its doc comment.
pub fn declarations(entries: &[&Entry]) -> String {
    let mut out = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for e in entries {
        for s in &e.needs {
            if !seen.contains(&s.as_str()) {
                seen.push(s);
                out.push_str(s);
                out.push('\n');
            }
        }
    }
    for e in entries {
        if let Some(doc) = &e.doc {
            for line in doc.lines() {
                out.push_str("// ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push_str(&e.declaration);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, doc: &str) -> Entry {
        Entry {
            name: name.into(),
            doc: Some(doc.into()),
            declaration: format!("tool {name}: String -{{Read}}-> String;"),
            needs: Vec::new(),
        }
    }

    #[test]
    fn past_a_size_the_description_says_to_search_first() {
        let small = compose("1", "tool t: String -{Read}-> String;", 1);
        assert!(
            small.ends_with("```lt\ntool t: String -{Read}-> String;\n```"),
            "{small}"
        );
        let big = "tool t: String -{Read}-> String;\n".repeat(SEARCH_FIRST_CHARS / 20);
        let d = compose("1", &big, 800);
        assert!(d.ends_with("This server has 800 tools, too many to list here. Call search_tools with a few words of the task to find the ones you need (it returns their declarations), or describe_tools with their names; then write the program."), "{d}");
        assert!(d.len() < GUIDE.len() + 500);
    }

    #[test]
    fn names_count_more_than_docs_and_rare_words_more_than_common_ones() {
        let es = vec![
            entry("get_weather", "The weather of a city."),
            entry("issue_refund", "Refunds a charge of an account."),
            entry("lookup_account", "An account by id, with its last charge."),
        ];
        let names = |q: &str| {
            search(&es, q)
                .iter()
                .map(|e| e.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("refund the last charge"),
            vec!["issue_refund", "lookup_account"]
        );
        assert_eq!(names("account"), vec!["lookup_account", "issue_refund"]);
        assert_eq!(names("Weather"), vec!["get_weather"]);
        assert!(names("nothing here").is_empty());
        assert_eq!(
            words("getCurrentTime v2"),
            vec!["get", "current", "time", "v2"]
        );
    }
}
