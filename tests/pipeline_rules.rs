//! The constraint pipeline's rule names (`src/control/pipeline.rs`) are
//! the ones `docs/profiles.md` documents, in the same order, and the ones
//! the pipeline's module note lists: the names are written as literals
//! where each rule decides, so this test reads them from the source.

#[path = "support/doc_tables.rs"]
mod doc_tables;

use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The string literal at the start of `text` (after whitespace), if any.
fn literal(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('"')?;
    rest.split_once('"').map(|(name, _)| name)
}

/// The rule names in `src/control/pipeline.rs`, in source order: the first
/// argument of each `Decision::deny(` and each `rule: "…"` (the allowing
/// rules), outside comments.
fn rules_in_source() -> Vec<String> {
    let source = read("src/control/pipeline.rs");
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut found: Vec<(usize, String)> = Vec::new();
    for marker in ["Decision::deny(", "rule: "] {
        for (at, _) in code.match_indices(marker) {
            if let Some(name) = literal(&code[at + marker.len()..]) {
                found.push((at, name.to_string()));
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, name)| name).collect()
}

/// The first backquoted word of the rule column of the tables whose
/// header is `header` (`rule_column` counts cells from 1).
fn rules_in_table(text: &str, header: &str, rule_column: usize) -> Vec<String> {
    doc_tables::rows(text, header)
        .iter()
        .filter_map(|row| {
            row.get(rule_column - 1)?
                .split('`')
                .nth(1)
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn the_pipeline_rules_are_documented_in_order() {
    let source = rules_in_source();
    assert!(source.len() >= 9, "rules found in pipeline.rs: {source:?}");
    let mut distinct = source.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        source.len(),
        "a rule decides in two places: {source:?}"
    );

    let profiles = read("docs/profiles.md");
    let mut documented = rules_in_table(&profiles, "| order | rule | denies when | reason |", 2);
    documented.extend(rules_in_table(&profiles, "| rule | when | reason |", 1));
    assert_eq!(
        documented, source,
        "docs/profiles.md's rule tables and the rules of src/control/pipeline.rs"
    );

    // The module note's table lists the denying rules, then names the two
    // allowing ones.
    let note = read("src/control/pipeline.rs");
    let mut noted = rules_in_table(&note, "| order | rule | denies when |", 2);
    assert!(
        note.contains("is allowed by `dry_run`") && note.contains("`policy` (executed)"),
        "the module note names the allowing rules"
    );
    noted.extend(["dry_run".to_string(), "policy".to_string()]);
    assert_eq!(noted, source, "src/control/pipeline.rs's module note");
}
