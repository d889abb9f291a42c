//! IR tests: every `tests/ir/<mapping>.lt` is checked, lowered
//! (`lt::ir::lower::lower`) and printed (`lt::ir::print::print`), and the
//! printed IR is compared with the snapshot `tests/ir/<mapping>.snap` beside it.
//!
//! A file holds one program, or several cases, each starting with a line
//!
//! ```text
//! // --- case: NAME
//! ```
//!
//! Each case is checked and lowered on its own, with the other cases' lines
//! blanked, so the positions in the printed IR are the file's line numbers.
//! Each case states the node kinds it must lower to, so that accepting a new
//! snapshot can never silently change the mapping (the printed kind of a
//! `for_each` includes its mode, `for_each[map]`; `for_each` alone matches
//! every mode):
//!
//! ```text
//! // expect-root: pipe                     (the kind of the root node)
//! // expect-kinds: for_each[map], lambda   (present, at least as often as listed)
//! // expect-absent: gather, try_and_check  (not present anywhere)
//! ```
//!
//! Updating: `INSTA_UPDATE=always cargo test --test ir`, then read every
//! changed `.snap`.

#[path = "support/doc_tables.rs"]
mod doc_tables;

use lt::ir::{Ir, NodeId, NodeKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One file per row of the mapping table in `src/ir/mod.rs` (and the pure nodes).
const REQUIRED: [&str; 13] = [
    "sequence",
    "pipe",
    "for_each_map",
    "for_each_filter",
    "for_each_traverse",
    "reduce",
    "gather",
    "try_and_check",
    "exec",
    "lambda_curried",
    "partial_builtin",
    "apply",
    "pure_nodes",
];

fn ir_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("ir")
}

fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Every `.lt` file under `tests/ir`, sorted.
fn files() -> Vec<PathBuf> {
    let dir = ir_dir();
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lt"))
        .collect();
    out.sort();
    out
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What a case's header says it lowers to.
#[derive(Debug, Default)]
struct Expect {
    root: Option<String>,
    kinds: Vec<String>,
    absent: Vec<String>,
}

/// One program of a file.
#[derive(Debug)]
struct Case {
    /// `file.lt` or `file.lt#case`.
    name: String,
    /// The case's own lines (for the snapshot).
    source: String,
    /// The whole file with every other case's lines blanked.
    masked: String,
    /// 1-based first and last line of the case.
    lines: (usize, usize),
    expect: Expect,
}

const CASE_MARKER: &str = "// --- case:";

fn header_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.trim().strip_prefix("//")?.trim_start();
    rest.strip_prefix(key)?.strip_prefix(':').map(str::trim)
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parse_expect(lines: &[&str]) -> Expect {
    let mut e = Expect::default();
    for line in lines {
        if let Some(v) = header_value(line, "expect-root") {
            e.root = Some(v.to_string());
        } else if let Some(v) = header_value(line, "expect-kinds") {
            e.kinds.extend(list(v));
        } else if let Some(v) = header_value(line, "expect-absent") {
            e.absent.extend(list(v));
        }
    }
    e
}

/// Splits a file into its cases (the whole file when it has no marker).
fn cases_of(file_name: &str, text: &str) -> Vec<Case> {
    let lines: Vec<&str> = text.lines().collect();
    let mut starts: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            l.trim()
                .strip_prefix(CASE_MARKER)
                .map(|n| (i, n.trim().to_string()))
        })
        .collect();
    let single = starts.is_empty();
    if single {
        starts.push((0, String::new()));
    } else {
        // Only comments and blank lines may come before the first case.
        for l in &lines[..starts[0].0] {
            let t = l.trim();
            assert!(
                t.is_empty() || t.starts_with("//"),
                "{file_name}: code before the first `{CASE_MARKER}` line: {l}"
            );
        }
    }
    let mut out = Vec::new();
    for (k, (start, name)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(lines.len(), |(s, _)| *s);
        let masked: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if (*start..end).contains(&i) {
                    format!("{l}\n")
                } else {
                    "\n".to_string()
                }
            })
            .collect();
        let own = &lines[*start..end];
        out.push(Case {
            name: if single {
                file_name.to_string()
            } else {
                format!("{file_name}#{name}")
            },
            source: own.join("\n").trim_end().to_string(),
            masked,
            lines: (start + 1, end),
            expect: parse_expect(own),
        });
    }
    out
}

/// Checks and lowers `text`; panics with the diagnostics if it is rejected.
fn lower_text(name: &str, text: &str) -> Ir {
    let analysis = lt::types::check_source(text);
    if !analysis.is_ok() {
        let file = lt::source::SourceFile::new(name, text);
        panic!(
            "{name}: the checker rejected the program:\n{}",
            lt::diag::render::render(&file, &analysis.diagnostics, false)
        );
    }
    let checked = analysis
        .into_checked()
        .unwrap_or_else(|_| panic!("{name}: into_checked failed on an accepted program"));
    lt::ir::lower::lower(&checked).unwrap_or_else(|e| panic!("{name}: lowering failed: {e:?}"))
}

fn print_ir(name: &str, text: &str, ir: &Ir) -> String {
    lt::ir::print::print(ir, &lt::source::SourceFile::new(name, text))
}

/// The kind as the expectations name it: `for_each[map]` for a `for_each`.
fn label(kind: &NodeKind) -> String {
    match kind {
        NodeKind::ForEach { mode, .. } => format!("for_each[{}]", mode.as_str()),
        k => k.name().to_string(),
    }
}

/// `for_each` matches every `for_each[…]`; anything else matches exactly.
fn matches_label(want: &str, got: &str) -> bool {
    got == want
        || got
            .strip_prefix(want)
            .is_some_and(|rest| rest.starts_with('['))
}

/// Compares a lowered case with its header; one message per mismatch.
fn expectation_problems(case: &Case, ir: &Ir) -> Vec<String> {
    let name = &case.name;
    let labels: Vec<String> = ir.nodes.iter().map(|n| label(&n.kind)).collect();
    let mut problems = Vec::new();
    match &case.expect.root {
        None => problems.push(format!("{name}: no `// expect-root:` line")),
        Some(want) => {
            let got = label(&ir.node(ir.root).kind);
            if !matches_label(want, &got) {
                problems.push(format!(
                    "{name}: expected the root to be `{want}`, got `{got}`"
                ));
            }
        }
    }
    let mut wanted: BTreeMap<&str, usize> = BTreeMap::new();
    for k in &case.expect.kinds {
        *wanted.entry(k.as_str()).or_default() += 1;
    }
    for (want, n) in wanted {
        let got = labels.iter().filter(|l| matches_label(want, l)).count();
        if got < n {
            problems.push(format!(
                "{name}: expected at least {n} `{want}` node(s), found {got} (kinds: {labels:?})"
            ));
        }
    }
    for want in &case.expect.absent {
        if labels.iter().any(|l| matches_label(want, l)) {
            problems.push(format!(
                "{name}: expected no `{want}` node (kinds: {labels:?})"
            ));
        }
    }
    problems
}

/// The snapshot text of one file: each case's source, type, effects and IR.
fn snapshot_text(file_name: &str, cases: &[(Case, Ir)]) -> String {
    let mut out = String::new();
    for (case, ir) in cases {
        let title = if case.name == file_name {
            file_name.to_string()
        } else {
            case.name.clone()
        };
        out.push_str(&format!(
            "==================== {title} (lines {}-{}) ====================\n",
            case.lines.0, case.lines.1
        ));
        out.push_str(&case.source);
        out.push_str("\n-------------------- ir --------------------\n");
        out.push_str(&format!("type: {}\neffects: {}\n", ir.ty, ir.effects));
        out.push_str(&print_ir(file_name, &case.masked, ir));
        out.push('\n');
    }
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every case of every file under `tests/ir`, lowered.
fn all_cases() -> Vec<(String, Vec<(Case, Ir)>)> {
    files()
        .iter()
        .map(|path| {
            let file_name = format!("{}.lt", stem(path));
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let lowered = cases_of(&file_name, &text)
                .into_iter()
                .map(|c| {
                    let ir = lower_text(&c.name, &c.masked);
                    (c, ir)
                })
                .collect();
            (file_name, lowered)
        })
        .collect()
}

#[test]
fn ir_snapshots() {
    let present: Vec<String> = files().iter().map(|p| stem(p)).collect();
    for r in REQUIRED {
        assert!(
            present.iter().any(|p| p == r),
            "tests/ir/{r}.lt is missing (one file per mapping)"
        );
    }
    let mut failures: Vec<String> = Vec::new();
    for (file_name, cases) in all_cases() {
        for (case, ir) in &cases {
            failures.extend(expectation_problems(case, ir));
        }
        let snap = snapshot_text(&file_name, &cases);
        let stem = file_name.trim_end_matches(".lt").to_string();
        let input = ir_dir().join(&file_name);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            insta::with_settings!({
                snapshot_path => ir_dir(),
                prepend_module_to_snapshot => false,
                snapshot_suffix => "",
                input_file => input.clone(),
                omit_expression => true,
                description => format!("lt check --emit ir tests/ir/{file_name}"),
            }, {
                insta::assert_snapshot!(stem.clone(), snap);
            });
        }));
        if result.is_err() {
            failures.push(format!(
                "{file_name}: the IR differs from tests/ir/{stem}.snap (see the diff above; \
                 `INSTA_UPDATE=always cargo test --test ir` to accept, then review)"
            ));
        }
    }
    // A snapshot without its program is stale.
    if let Ok(entries) = std::fs::read_dir(ir_dir()) {
        for entry in entries.flatten() {
            let p = entry.path();
            if p.extension().is_some_and(|e| e == "snap") && !p.with_extension("lt").exists() {
                failures.push(format!("{}: snapshot without a .lt program", p.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} IR problem(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// The children of a node in the order lowering visits them (source order).
fn children(kind: &NodeKind) -> Vec<NodeId> {
    match kind {
        NodeKind::Sequence { steps, body } | NodeKind::Pipe { steps, body } => steps
            .iter()
            .map(|s| s.value)
            .chain(std::iter::once(*body))
            .collect(),
        NodeKind::ForEach { func, items, .. } => vec![*func, *items],
        NodeKind::Reduce { func, init, items } => vec![*func, *init, *items],
        NodeKind::Gather { fields } | NodeKind::Record(fields) => {
            fields.iter().map(|(_, v)| *v).collect()
        }
        NodeKind::TryAndCheck { call, arms } => std::iter::once(*call)
            .chain(arms.iter().map(|a| a.body))
            .collect(),
        NodeKind::Match { scrutinee, arms } => std::iter::once(*scrutinee)
            .chain(arms.iter().map(|a| a.body))
            .collect(),
        NodeKind::Exec { arg, .. } | NodeKind::Approve { arg, .. } => vec![*arg],
        NodeKind::Annotate { body, .. } | NodeKind::Scope { body } => vec![*body],
        NodeKind::BoundedLoop { init, step, .. } => vec![*init, *step],
        NodeKind::Const(_) | NodeKind::Local(..) | NodeKind::Capture(..) => vec![],
        NodeKind::Field(r, _) => vec![*r],
        NodeKind::List(items) => items.clone(),
        NodeKind::Ok(x) | NodeKind::Err(x) | NodeKind::Some(x) | NodeKind::Neg(x) => vec![*x],
        NodeKind::Update(base, fields) => std::iter::once(*base)
            .chain(fields.iter().map(|(_, v)| *v))
            .collect(),
        NodeKind::Native { args, .. } => args.clone(),
        NodeKind::Binary(_, a, b) => vec![*a, *b],
        NodeKind::If(c, a, b) => vec![*c, *a, *b],
        NodeKind::Lambda(l) => vec![l.body],
        NodeKind::Apply(f, args) => std::iter::once(*f).chain(args.iter().copied()).collect(),
    }
}

/// Checks that a pre-order walk from the root visits 0, 1, 2, … n-1: every
/// node reachable exactly once, and each id taken before its children's.
fn preorder_problem(name: &str, ir: &Ir) -> Option<String> {
    let mut order = Vec::with_capacity(ir.nodes.len());
    let mut stack = vec![ir.root];
    while let Some(id) = stack.pop() {
        if id as usize >= ir.nodes.len() {
            return Some(format!("{name}: node id #{id} out of range"));
        }
        order.push(id);
        let mut ch = children(&ir.node(id).kind);
        ch.reverse();
        stack.extend(ch);
    }
    let expected: Vec<NodeId> = (0..ir.nodes.len() as NodeId).collect();
    if order != expected {
        return Some(format!(
            "{name}: a pre-order walk visits {order:?}, expected 0..{}",
            ir.nodes.len()
        ));
    }
    if ir.root != 0 {
        return Some(format!("{name}: the root is #{}, expected #0", ir.root));
    }
    None
}

/// The accepted programs under `examples/` (top-level and in folders).
fn example_programs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let dir = repo_path("examples");
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("examples/").flatten() {
        let p = entry.path();
        if p.is_dir() {
            for e in std::fs::read_dir(&p).expect("example folder").flatten() {
                paths.push(e.path());
            }
        } else {
            paths.push(p);
        }
    }
    paths.sort();
    for p in paths {
        if p.extension().is_none_or(|e| e != "lt") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("example text");
        if lt::types::check_source(&text).is_ok() {
            let rel = p
                .strip_prefix(repo_path(""))
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, text));
        }
    }
    out
}

/// Every program these tests lower: the IR cases and the accepted examples.
fn every_program() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = all_cases()
        .into_iter()
        .flat_map(|(_, cases)| cases.into_iter().map(|(c, _)| (c.name, c.masked)))
        .collect();
    let examples = example_programs();
    assert!(
        examples.len() >= 10,
        "expected the accepted examples, found {}",
        examples.len()
    );
    out.extend(examples);
    out
}

#[test]
fn node_ids_are_preorder() {
    let mut failures = Vec::new();
    for (name, text) in every_program() {
        let ir = lower_text(&name, &text);
        failures.extend(preorder_problem(&name, &ir));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lowering_is_stable() {
    for (name, text) in every_program() {
        let a = lower_text(&name, &text);
        let b = lower_text(&name, &text);
        assert_eq!(
            print_ir(&name, &text, &a),
            print_ir(&name, &text, &b),
            "{name}: two lowerings print differently"
        );
        assert_eq!(
            format!("{:?}", a.nodes),
            format!("{:?}", b.nodes),
            "{name}: two lowerings differ"
        );
    }
}

/// `#N kind` at the start of a printed node (after its role).
fn printed_nodes(printed: &str) -> Vec<(NodeId, String)> {
    let mut out = Vec::new();
    for line in printed.lines() {
        let Some(pos) = line.find('#') else { continue };
        let rest = &line[pos + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(id) = digits.parse::<NodeId>() else {
            continue;
        };
        let kind: String = rest[digits.len()..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        out.push((id, kind));
    }
    out
}

#[test]
fn every_node_is_printed_once_with_its_kind() {
    for (name, text) in every_program() {
        let ir = lower_text(&name, &text);
        let printed = print_ir(&name, &text, &ir);
        let shown = printed_nodes(&printed);
        let ids: Vec<NodeId> = shown.iter().map(|(id, _)| *id).collect();
        let expected: Vec<NodeId> = (0..ir.nodes.len() as NodeId).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted, expected,
            "{name}: every node must be printed exactly once:\n{printed}"
        );
        for (id, kind) in &shown {
            assert_eq!(
                kind,
                ir.node(*id).kind.name(),
                "{name}: #{id} is printed as `{kind}`:\n{printed}"
            );
        }
        for (id, node) in ir.nodes.iter().enumerate() {
            if let NodeKind::Exec { tool, .. } = node.kind {
                let tool = &ir.tools[tool as usize].name;
                let want = format!("#{id} exec {tool}");
                assert!(
                    printed.lines().any(|l| l.contains(&want)),
                    "{name}: `{want}` is not in the printed IR:\n{printed}"
                );
            }
        }
    }
}

#[test]
fn case_splitting_keeps_file_positions() {
    let text =
        "// --- case: a\n// expect-root: const\n1\n\n// --- case: b\n// expect-root: const\n2\n";
    let cases = cases_of("t.lt", text);
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[1].name, "t.lt#b");
    assert_eq!(cases[1].lines, (5, 7));
    assert_eq!(cases[1].expect.root.as_deref(), Some("const"));
    assert_eq!(cases[1].masked.lines().count(), text.lines().count());
    let ir = lower_text("t.lt", &cases[1].masked);
    assert!(print_ir("t.lt", &cases[1].masked, &ir).contains("#0 const 2"));
    assert!(print_ir("t.lt", &cases[1].masked, &ir)
        .lines()
        .any(|l| l.trim_end().ends_with("7:1")));
    assert!(matches_label("for_each", "for_each[map]"));
    assert!(!matches_label("for_each[map]", "for_each[filter]"));
    assert!(!matches_label("match", "matcher"));
}

fn lt_bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lt"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn cli_emit_ir() {
    let out = lt_bin()
        .args(["check", "--emit", "ir", "examples/support_desk/program.lt"])
        .output()
        .expect("run lt");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("type: String\neffects: {Read, Write}\n"),
        "{stdout}"
    );
    assert!(stdout.contains("#0 try_and_check"), "{stdout}");
    assert!(stdout.contains("exec lookup_account"), "{stdout}");

    // The same text as the library prints.
    let text = std::fs::read_to_string(repo_path("examples/support_desk/program.lt"))
        .expect("support_desk program");
    let ir = lower_text("examples/support_desk/program.lt", &text);
    let lib = print_ir("examples/support_desk/program.lt", &text, &ir);
    assert!(
        stdout.contains(lib.trim_end()),
        "CLI:\n{stdout}\nlibrary:\n{lib}"
    );

    let out = lt_bin()
        .args([
            "check",
            "--json",
            "--emit",
            "ir",
            "examples/support_desk/program.lt",
        ])
        .output()
        .expect("run lt");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["ok"], serde_json::json!(true));
    let ir_field = v["ir"].as_str().expect("an \"ir\" string field");
    assert!(ir_field.contains("try_and_check"), "{ir_field}");
    assert_eq!(ir_field.trim_end(), lib.trim_end());
}

/// Every node kind, numbered from 0: the match is exhaustive, so a kind
/// added to `NodeKind` does not compile here until it is numbered (and
/// [`NODE_KINDS`] raised), and then the test below wants it lowered by
/// some program and documented.
fn kind_number(kind: &NodeKind) -> usize {
    match kind {
        NodeKind::Sequence { .. } => 0,
        NodeKind::Pipe { .. } => 1,
        NodeKind::ForEach { .. } => 2,
        NodeKind::Reduce { .. } => 3,
        NodeKind::Gather { .. } => 4,
        NodeKind::TryAndCheck { .. } => 5,
        NodeKind::Annotate { .. } => 6,
        NodeKind::Approve { .. } => 7,
        NodeKind::Scope { .. } => 8,
        NodeKind::BoundedLoop { .. } => 9,
        NodeKind::Exec { .. } => 10,
        NodeKind::Const(_) => 11,
        NodeKind::Local(..) => 12,
        NodeKind::Capture(..) => 13,
        NodeKind::Record(_) => 14,
        NodeKind::Field(..) => 15,
        NodeKind::List(_) => 16,
        NodeKind::Ok(_) => 17,
        NodeKind::Err(_) => 18,
        NodeKind::Some(_) => 19,
        NodeKind::Update(..) => 20,
        NodeKind::Native { .. } => 21,
        NodeKind::Binary(..) => 22,
        NodeKind::Neg(_) => 23,
        NodeKind::If(..) => 24,
        NodeKind::Match { .. } => 25,
        NodeKind::Lambda(_) => 26,
        NodeKind::Apply(..) => 27,
    }
}

/// How many node kinds [`kind_number`] numbers.
const NODE_KINDS: usize = 28;

/// The node kinds named in the "IR node" column of the mapping table of
/// `docs/ir.md` (`for_each[map]` names `for_each`, `bounded_loop max=N`
/// names `bounded_loop`, `const None` names `const`).
fn documented_node_kinds() -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(repo_path("docs/ir.md")).expect("docs/ir.md");
    let mut out = std::collections::BTreeSet::new();
    for row in doc_tables::rows(&text, "| surface | IR node |") {
        let Some(cell) = row.get(1) else {
            continue;
        };
        for code in cell.split('`').skip(1).step_by(2) {
            let name: String = code
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            // Code that is not a node's name (`Option` in a remark).
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_node_kind_is_lowered_by_some_program_and_documented() {
    let mut seen: BTreeMap<usize, &'static str> = BTreeMap::new();
    for (name, text) in every_program() {
        let ir = lower_text(&name, &text);
        for node in &ir.nodes {
            seen.insert(kind_number(&node.kind), node.kind.name());
        }
    }
    let missing: Vec<usize> = (0..NODE_KINDS).filter(|n| !seen.contains_key(n)).collect();
    assert!(
        missing.is_empty(),
        "node kinds number {missing:?} (see kind_number) are lowered by no program under tests/ir or examples/"
    );
    assert_eq!(
        seen.len(),
        NODE_KINDS,
        "kind_number numbers past NODE_KINDS"
    );
    let names: std::collections::BTreeSet<&str> = seen.values().copied().collect();
    assert_eq!(names.len(), NODE_KINDS, "two node kinds share a name");
    let documented = documented_node_kinds();
    let documented: std::collections::BTreeSet<&str> =
        documented.iter().map(String::as_str).collect();
    assert_eq!(
        documented, names,
        "the IR node column of docs/ir.md's mapping table and NodeKind::name"
    );
}
