//! The floors of `src/`: the top-level modules are stacked in [`FLOORS`],
//! lowest first, and a module may use (`crate::<module>`, in a `use` line
//! or in a path inside code) only modules on a floor below its own, or on
//! its own floor as long as the same-floor uses form no cycle.
//!
//! The test reads every `src/**/*.rs` file (and `grammar/*.lalrpop`, whose
//! actions are compiled into `syntax`), blanks out comments (`//`, `//!`,
//! `///`, `/* */`: doc links may point anywhere) and string and character
//! literals, finds every `crate::<top>` (and each top of a
//! `crate::{a::…, b::…}` group), maps the file to its top-level module and
//! fails with `file:line`, the edge and the two floors for each use that
//! climbs. `super::` paths cannot leave a top-level module, so they are not
//! looked at; `src/lib.rs`, `src/main.rs` and `src/bin/` belong to no
//! module.
//!
//! [`KNOWN_BACK_EDGES`] lists the edges still to be removed; the test also
//! fails when one of them is gone (so the list shrinks with the code).
//! docs/architecture.md ("Floors") states the same order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first. Modules on one floor may use each other
/// without a cycle.
const FLOORS: &[&[&str]] = &[
    &["source", "scope", "diag"],
    &["syntax"],
    &["stdlib"],
    &["types"],
    &["ir"],
    &["runtime"],
    &["log", "schema"],
    &["exec"],
    &["control"],
    &["agent", "eval", "frontend", "otlp"],
    &["serve", "mcp_server", "compat", "cli"],
];

/// Uses that break the floors today, each `(from, to)`. Empty: keep it so.
/// An edge listed here that the code no longer has fails the test.
const KNOWN_BACK_EDGES: &[(&str, &str)] = &[];

/// One `crate::<to>` in the file of module `from`.
#[derive(Clone, Debug)]
struct Use {
    file: String,
    line: usize,
    from: String,
    to: String,
}

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

fn floor_name(i: usize) -> String {
    format!("floor {i} [{}]", FLOORS[i].join(", "))
}

/// `text` with comments and string/char literals replaced by spaces
/// (newlines kept, so line numbers stay).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && is_ident(c[i - 1]);
        // Line comment (`//`, `///`, `//!`).
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
            continue;
        }
        // Block comment, nested.
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0usize;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            continue;
        }
        // Raw string: r"…", r#"…"#, br"…", cr#"…"# (not a raw identifier r#name).
        if !prev_ident
            && (c[i] == 'r' || ((c[i] == 'b' || c[i] == 'c') && c.get(i + 1) == Some(&'r')))
        {
            let mut j = if c[i] == 'r' { i + 1 } else { i + 2 };
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= c.len() {
                        break;
                    }
                    if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                for &ch in &c[i..j.min(c.len())] {
                    blank(&mut out, ch);
                }
                i = j;
                continue;
            }
        }
        // String (also b"…" and c"…": the prefix is kept as an identifier).
        if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' && i + 1 < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
            continue;
        }
        // Character literal ('x', '\n', '\u{1F600}'); a lifetime ('a) stays.
        if c[i] == '\'' {
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 2..c.len()).find(|&k| c[k] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for &ch in &c[i..=end] {
                    blank(&mut out, ch);
                }
                i = end + 1;
                continue;
            }
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// Every `crate::<name>` in `code` (already [`code_only`]), with its line
/// (1-based). `crate::{a::x, b}` gives `a` and `b`.
fn crate_refs(code: &str) -> Vec<(usize, String)> {
    #[derive(Debug, PartialEq)]
    enum Tok {
        Ident(String),
        Punct(char),
    }
    let mut toks: Vec<(usize, Tok)> = Vec::new();
    let mut line = 1;
    let mut chars = code.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\n' {
            line += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let mut s = String::from(ch);
            while let Some(&n) = chars.peek() {
                if n.is_alphanumeric() || n == '_' {
                    s.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            toks.push((line, Tok::Ident(s)));
        } else if ch.is_ascii_digit() {
            // Numbers (and their suffixes) are not names.
            while chars
                .peek()
                .is_some_and(|n| n.is_alphanumeric() || *n == '_')
            {
                chars.next();
            }
        } else if !ch.is_whitespace() {
            toks.push((line, Tok::Punct(ch)));
        }
    }
    let colons = |k: usize| {
        matches!(toks.get(k), Some((_, Tok::Punct(':'))))
            && matches!(toks.get(k + 1), Some((_, Tok::Punct(':'))))
    };
    let mut out = Vec::new();
    for k in 0..toks.len() {
        if toks[k].1 != Tok::Ident("crate".into()) || !colons(k + 1) {
            continue;
        }
        match toks.get(k + 3) {
            Some((l, Tok::Ident(name))) => out.push((*l, name.clone())),
            Some((_, Tok::Punct('{'))) => {
                // The first name of every item of the group, at depth 1.
                let mut depth = 0usize;
                let mut item_start = true;
                for (l, t) in &toks[k + 3..] {
                    match t {
                        Tok::Punct('{') => {
                            depth += 1;
                            item_start = depth == 1;
                        }
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Punct(',') if depth == 1 => item_start = true,
                        Tok::Ident(name) if item_start && depth == 1 => {
                            out.push((*l, name.clone()));
                            item_start = false;
                        }
                        _ => item_start = false,
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.map(|e| e.path()).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules `src/lib.rs` declares.
fn declared_modules(root: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_else(|e| panic!("{e}"));
    code_only(&lib)
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("pub ").unwrap_or(l.trim());
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

/// Every `crate::<module>` use between two different top-level modules.
fn uses(root: &Path, modules: &BTreeSet<String>) -> Vec<Use> {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut sources: Vec<(String, String)> = files
        .iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(root.join("src")).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?;
            let module = first.strip_suffix(".rs").unwrap_or(first).to_string();
            // lib.rs, main.rs, bin/: the crate root and the binaries.
            modules
                .contains(&module)
                .then(|| (p.display().to_string(), module))
        })
        .collect();
    // The grammar's actions are compiled into `syntax`.
    let grammar = root.join("grammar/lt.lalrpop");
    if grammar.exists() {
        sources.push((grammar.display().to_string(), "syntax".into()));
    }
    let mut out = Vec::new();
    for (file, from) in sources {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let shown = file
            .strip_prefix(&format!("{}/", root.display()))
            .unwrap_or(&file)
            .to_string();
        for (line, to) in crate_refs(&code_only(&text)) {
            if to != from && modules.contains(&to) {
                out.push(Use {
                    file: shown.clone(),
                    line,
                    from: from.clone(),
                    to,
                });
            }
        }
    }
    out
}

/// Whether `to` reaches `from` through `edges`.
fn reaches(edges: &BTreeSet<(String, String)>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut work = vec![from.to_string()];
    while let Some(m) = work.pop() {
        if m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            work.extend(
                edges
                    .iter()
                    .filter(|(a, _)| *a == m)
                    .map(|(_, b)| b.clone()),
            );
        }
    }
    false
}

/// What is wrong with `uses` under [`FLOORS`], `known` aside: one line per
/// offending use.
fn violations(uses: &[Use], known: &[(&str, &str)]) -> Vec<String> {
    let is_known = |u: &Use| known.contains(&(u.from.as_str(), u.to.as_str()));
    let mut problems = Vec::new();
    let same_floor: BTreeSet<(String, String)> = uses
        .iter()
        .filter(|u| !is_known(u) && floor_of(&u.from) == floor_of(&u.to))
        .map(|u| (u.from.clone(), u.to.clone()))
        .collect();
    for u in uses.iter().filter(|u| !is_known(u)) {
        let (Some(f), Some(t)) = (floor_of(&u.from), floor_of(&u.to)) else {
            continue; // reported as an unplaced module
        };
        if t > f {
            problems.push(format!(
                "{}:{}: {} → {}: `{}` is on {}, `{}` on {} above it",
                u.file,
                u.line,
                u.from,
                u.to,
                u.from,
                floor_name(f),
                u.to,
                floor_name(t)
            ));
        } else if t == f && reaches(&same_floor, &u.to, &u.from) {
            problems.push(format!(
                "{}:{}: {} → {}: both on {}, and `{}` leads back to `{}` (a cycle on one floor)",
                u.file,
                u.line,
                u.from,
                u.to,
                floor_name(f),
                u.to,
                u.from
            ));
        }
    }
    problems
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_module_is_on_exactly_one_floor() {
    let modules = declared_modules(&root());
    assert!(modules.len() >= 10, "modules of src/lib.rs: {modules:?}");
    let mut placed: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, floor) in FLOORS.iter().enumerate() {
        for m in *floor {
            if let Some(j) = placed.insert(m, i) {
                panic!("`{m}` is on floors {j} and {i}");
            }
        }
    }
    let missing: Vec<_> = modules
        .iter()
        .filter(|m| !placed.contains_key(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "top-level modules on no floor (add them to FLOORS in tests/floors.rs and to docs/architecture.md): {missing:?}"
    );
    let stale: Vec<_> = placed.keys().filter(|m| !modules.contains(**m)).collect();
    assert!(
        stale.is_empty(),
        "FLOORS names modules src/lib.rs does not declare: {stale:?}"
    );
}

#[test]
fn modules_use_only_floors_below() {
    let modules = declared_modules(&root());
    let uses = uses(&root(), &modules);
    assert!(
        uses.len() > 100,
        "only {} uses found: is the scanner broken?",
        uses.len()
    );
    let problems = violations(&uses, KNOWN_BACK_EDGES);
    assert!(
        problems.is_empty(),
        "{} use(s) against the floors (lowest first: {}):\n{}\n\
         move what is needed to the lower floor (re-export it from the old place if callers need the path)",
        problems.len(),
        FLOORS.iter().map(|f| f.join(", ")).collect::<Vec<_>>().join(" → "),
        problems.join("\n")
    );
}

#[test]
fn known_back_edges_are_still_there_and_still_wrong() {
    let modules = declared_modules(&root());
    let uses = uses(&root(), &modules);
    let unexcused = violations(&uses, &[]);
    for &(from, to) in KNOWN_BACK_EDGES {
        let these: Vec<Use> = uses
            .iter()
            .filter(|u| u.from == from && u.to == to)
            .cloned()
            .collect();
        assert!(
            !these.is_empty(),
            "{from} → {to} is in KNOWN_BACK_EDGES but the code no longer has it: remove it from the list in tests/floors.rs"
        );
        // Unexcused, it breaks the floors (upwards, or in a cycle).
        let edge = format!(": {from} → {to}: ");
        assert!(
            unexcused.iter().any(|p| p.contains(&edge)),
            "{from} → {to} is in KNOWN_BACK_EDGES but breaks no floor: remove it from the list"
        );
    }
}

#[test]
fn the_scanner_ignores_comments_and_strings() {
    let text = r##"//! [`crate::cli`] in a module note
/// [`crate::agent::run`] in a doc comment
use crate::types::Type; // crate::ir in a comment
use crate::{
    ir::{self, Ir},
    runtime::value::Value,
};
/* crate::log /* nested crate::exec */ crate::schema */
fn f() -> &'static str {
    let _c = '"';
    let _s = "crate::control \" crate::compat";
    let _r = r#"crate::cli "quoted" crate::agent"#;
    let _ok = crate::diag::Code::E0001;
    let _lt: &'static str = "x";
    crate::stdlib::lookup("map");
    r#type()
}
"##;
    let refs = crate_refs(&code_only(text));
    let got: Vec<(usize, &str)> = refs.iter().map(|(l, n)| (*l, n.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (3, "types"),
            (5, "ir"),
            (6, "runtime"),
            (13, "diag"),
            (15, "stdlib")
        ]
    );
}

#[test]
fn an_upward_use_and_a_same_floor_cycle_are_reported() {
    let u = |from: &str, to: &str| Use {
        file: format!("src/{from}/x.rs"),
        line: 7,
        from: from.into(),
        to: to.into(),
    };
    // Downwards: fine.
    assert!(violations(&[u("exec", "runtime"), u("diag", "source")], &[]).is_empty());
    // Upwards: reported with the file, the line and both floors.
    let p = violations(&[u("exec", "control")], &[]);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("src/exec/x.rs:7: exec → control"),
        "{}",
        p[0]
    );
    assert!(
        p[0].contains("floor 7 [exec]") && p[0].contains("floor 8 [control]"),
        "{}",
        p[0]
    );
    // Same floor one way: fine; both ways: both reported.
    assert!(violations(&[u("log", "schema")], &[]).is_empty());
    let p = violations(&[u("log", "schema"), u("schema", "log")], &[]);
    assert_eq!(p.len(), 2, "{p:?}");
    // A known edge is excused.
    assert!(violations(&[u("exec", "control")], &[("exec", "control")]).is_empty());
}
