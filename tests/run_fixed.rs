//! Every accepted `examples/*.lt` runs end to end through `fixed` executors
//! (the real `tools.toml` parser and executor host): once with every tool
//! answering a well-typed "zero" result of its declared output type, once
//! with every tool failing. Either way the program must finish with a value
//! of its type: all failures are handled, nothing crashes.

use lt::exec::{ExecutorHost, Registry};
use lt::runtime::eval;
use lt::runtime::limits::Limits;
use lt::types::Type;
use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lt"))
        .collect();
    out.sort();
    out
}

/// A TOML value of type `ty`: 0, false, "", {} for Unit, empty lists,
/// records of zeros, `{ Ok = … }` for Results.
fn zero(ty: &Type) -> String {
    match ty {
        Type::Unit => "{}".into(),
        Type::Bool => "false".into(),
        Type::Int => "0".into(),
        Type::String => "\"\"".into(),
        Type::Record(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(n, t)| format!("{n} = {}", zero(t)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        Type::List(_) => "[]".into(),
        Type::Result(ok, _) => format!("{{ Ok = {} }}", zero(ok)),
        Type::Linear(t) => zero(t),
        other => panic!("no zero value for {other}"),
    }
}

fn run_all(answer: impl Fn(&lt::types::ToolSig) -> String) -> usize {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut ran = 0;
    for path in examples() {
        let text = std::fs::read_to_string(&path).expect("read");
        let analysis = lt::types::check_source(&text);
        if !analysis.is_ok() {
            continue; // examples of rejected programs
        }
        let checked = analysis.into_checked().expect("checked");
        let ir = lt::ir::lower::lower(&checked).expect("lowered");
        let toml: String = ir
            .tools
            .iter()
            .map(|t| format!("[tools.{}]\n{}\n", t.name, answer(t)))
            .collect();
        let registry = Registry::from_str(&toml, Path::new("."), "generated").unwrap_or_else(|e| {
            panic!(
                "{}: generated tools.toml rejected: {e}\n{toml}",
                path.display()
            )
        });
        let mut host = ExecutorHost::new(registry, runtime.handle().clone());
        let (result, stats) = eval::run(&ir, &mut host, &Limits::default());
        let value = result.unwrap_or_else(|e| panic!("{}: run failed: {e:?}", path.display()));
        // The value has the program's type: it converts back through the boundary.
        let json = value.to_json();
        lt::runtime::boundary::from_json(&json, &ir.ty).unwrap_or_else(|e| {
            panic!(
                "{}: value {value} does not have type {}: {e}",
                path.display(),
                ir.ty
            )
        });
        assert!(stats.steps > 0);
        ran += 1;
    }
    ran
}

#[test]
fn every_example_runs_with_well_typed_answers() {
    let ran = run_all(|t| format!("fixed = {{ ok = {} }}", zero(&t.output)));
    assert!(ran >= 10, "only {ran} examples ran");
}

#[test]
fn every_example_handles_every_tool_failing() {
    let ran = run_all(|_| "fixed = { error = \"service unavailable\" }".to_string());
    assert!(ran >= 10, "only {ran} examples ran");
}
