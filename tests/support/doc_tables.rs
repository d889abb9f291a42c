//! Shared by the tests that hold a table of the docs against the code
//! (`tests/ir.rs`, `tests/log.rs`, `tests/pipeline_rules.rs`): the rows of
//! the markdown tables that follow a given header line.

/// The data rows of every table whose header line starts with `header`, in
/// the order of `text`: each row its cells, trimmed, split at the `|` that
/// are not escaped (`\|` stays in its cell as `|`). A line's leading `//!`
/// (a module note's table) is left out before it is read.
pub fn rows(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let line = line.trim_start_matches("//!").trim_start();
        if line.starts_with(header) {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        let line = line.replace("\\|", "\u{0}");
        let cells = line.split('|').map(|c| c.trim().replace('\u{0}', "|"));
        // The text before the first `|` is no cell.
        out.push(cells.skip(1).collect());
    }
    out
}
