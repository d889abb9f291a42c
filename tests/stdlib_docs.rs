//! `docs/language/stdlib.md` is true: it documents every library function
//! (native or written in lt) under `### name` with its exact signature,
//! names the `stdlib/` file of each one written in lt, and every example
//! line `expr    // value` evaluates to that value; it documents nothing
//! else, and the natives in the order of `lt::stdlib::NATIVES`.

use lt::ir::lower::lower;
use lt::runtime::eval::run;
use lt::runtime::host::{CallRequest, FailureKind, Host, Outcome, ToolFailure};
use lt::runtime::limits::Limits;
use lt::types::check_source;
use std::collections::BTreeMap;

/// A host for programs that call no tool.
struct NoTools;

impl Host for NoTools {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        Err(ToolFailure {
            stderr: None,
            kind: FailureKind::Unavailable,
            message: format!("no tool {}", request.tool),
        })
    }
}

struct Section {
    signature: String,
    body: String,
    examples: Vec<(String, String)>,
}

/// `### name` sections: the first line in backquotes is the signature.
fn sections() -> BTreeMap<String, Section> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/language/stdlib.md"
    ))
    .expect("docs/language/stdlib.md");
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Section)> = None;
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code && line.trim() == "```lt";
            continue;
        }
        if let Some(name) = line.strip_prefix("### ") {
            if let Some((n, s)) = current.take() {
                out.insert(n, s);
            }
            current = Some((
                name.trim().to_string(),
                Section {
                    signature: String::new(),
                    body: String::new(),
                    examples: Vec::new(),
                },
            ));
            continue;
        }
        if line.starts_with("## ") {
            if let Some((n, s)) = current.take() {
                out.insert(n, s);
            }
            continue;
        }
        let Some((_, s)) = current.as_mut() else {
            continue;
        };
        if in_code {
            if let Some((expr, value)) = line.split_once("//") {
                s.examples
                    .push((expr.trim().to_string(), value.trim().to_string()));
            }
        } else if s.signature.is_empty() && line.starts_with('`') && line.ends_with('`') {
            s.signature = line.trim_matches('`').to_string();
        } else {
            s.body.push_str(line);
            s.body.push('\n');
        }
    }
    if let Some((n, s)) = current.take() {
        out.insert(n, s);
    }
    out
}

#[test]
fn every_library_function_is_documented_with_its_signature() {
    let docs = sections();
    for f in lt::stdlib::all() {
        let Some(s) = docs.get(f.name) else {
            panic!("`{}` has no `### {}` section", f.name, f.name);
        };
        assert_eq!(s.signature, f.signature, "signature of `{}`", f.name);
        if let Some(file) = f.file {
            assert!(
                s.body.contains(file),
                "`{}` is written in lt: its section should name {file}",
                f.name
            );
        }
        assert!(!s.examples.is_empty(), "`{}` has no example", f.name);
    }
}

/// The names of the `### name` sections, in the order of the document.
fn section_order() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/language/stdlib.md"
    ))
    .expect("docs/language/stdlib.md");
    text.lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|n| n.trim().to_string())
        .collect()
}

#[test]
fn every_section_is_a_library_function_and_the_natives_are_in_table_order() {
    let order = section_order();
    for name in &order {
        assert!(
            lt::stdlib::lookup(name).is_some(),
            "docs/language/stdlib.md documents `{name}`, which is not a library function"
        );
    }
    let natives: Vec<&str> = order
        .iter()
        .map(String::as_str)
        .filter(|n| lt::stdlib::NativeId::from_name(n).is_some())
        .collect();
    let table: Vec<&str> = lt::stdlib::NATIVES.iter().map(|n| n.name).collect();
    assert_eq!(
        natives, table,
        "the natives of docs/language/stdlib.md, in order, and lt::stdlib::NATIVES"
    );
}

#[test]
fn every_example_evaluates_to_the_value_shown() {
    let mut failures = Vec::new();
    let mut n = 0;
    for (name, s) in sections() {
        for (expr, want) in &s.examples {
            n += 1;
            let checked = match check_source(expr).into_checked() {
                Ok(c) => c,
                Err(d) => {
                    failures.push(format!("{name}: `{expr}` does not check: {}", d[0].message));
                    continue;
                }
            };
            let ir = lower(&checked).expect("lowers");
            let (value, _) = run(&ir, &mut NoTools, &Limits::default());
            match value {
                Ok(v) if v.to_string() == *want => {}
                Ok(v) => failures.push(format!("{name}: `{expr}` is {v}, the docs say {want}")),
                Err(e) => failures.push(format!("{name}: `{expr}` fails: {}", e.message)),
            }
        }
    }
    assert!(n >= 70, "only {n} examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn find_any_and_all_stop_calling_the_predicate_once_the_answer_is_known() {
    // The predicate overflows on the second element: only a call on it fails.
    for (expr, want) in [
        (
            "find (fn x => x + 9223372036854775806 > 0) [1, 2]",
            "Some(1)",
        ),
        ("any (fn x => x + 9223372036854775806 > 0) [1, 2]", "true"),
        ("all (fn x => x + 9223372036854775806 < 0) [1, 2]", "false"),
    ] {
        let checked = check_source(expr).into_checked().expect("checks");
        let ir = lower(&checked).expect("lowers");
        let (value, _) = run(&ir, &mut NoTools, &Limits::default());
        assert_eq!(
            value.map(|v| v.to_string()).ok().as_deref(),
            Some(want),
            "{expr}"
        );
    }
}
