//! Benchmark: `lt eval` (issue 26), through the library (`lt::eval`), as
//! the command runs a suite.
//!
//! Run with `cargo bench --bench eval` (add `-- --quick` for 200 runs per
//! case instead of 1,000). Two fixed-program cases, each run N times with
//! `--jobs 2`:
//!
//! * `pure`: a program with no tool call;
//! * `one_call`: one call of a `fixed` tool, ready-made criteria and an lt
//!   criterion and reward (each evaluated on every run).
//!
//! Figures per case: the wall-clock time of all N runs, runs per second,
//! the mean session time, and **`lt eval`'s overhead per run beyond the
//! run itself** (reading and verifying the log, the invariants, replaying
//! it, the criteria; not setup): mean, median and 99th percentile. Target:
//! under 1 ms per run.

use std::time::Instant;

const PURE: &str = "let xs = [1, 2, 3, 4, 5] in\nfold (fn acc => fn x => acc + x) 0 xs\n";

const ONE_CALL: &str = "tool lookup_account: String -{Read}-> {id: String, email: String};
match exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => \"lookup failed\" }
";

const TOOLS: &str =
    "[tools.lookup_account]\nfixed = { ok = { id = \"acc_1\", email = \"ada@example.com\" } }\n";

const SUITE: &str = r#"[[case]]
name = "pure"
program = "pure.lt"
[case.expect]
value = 15

[[case]]
name = "one_call"
program = "one_call.lt"
executors = "tools.toml"
[case.expect]
value = "ada@example.com"
calls = ["lookup_account"]
no_denials = true
criteria = ["length session.calls == 1"]
reward = "if session.ok then 1.0 else 0.0"
"#;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 200 } else { 1000 };
    let dir = std::env::temp_dir().join(format!("lt-bench-eval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, text) in [
        ("pure.lt", PURE),
        ("one_call.lt", ONE_CALL),
        ("tools.toml", TOOLS),
        ("suite.toml", SUITE),
    ] {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let path = dir.join("suite.toml").display().to_string();
    let suite = lt::eval::load(&path).unwrap_or_else(|e| panic!("{e}"));
    lt::eval::prepare(&suite, false).unwrap_or_else(|e| panic!("{e:?}"));
    // Warm up: the first runs start threads and load files.
    lt::eval::run_suite(&suite, 20, 2, &|_, _| {}).expect("warm-up");
    let began = Instant::now();
    let summary = lt::eval::run_suite(&suite, runs, 2, &|_, _| {}).expect("runs");
    let total = began.elapsed();
    println!(
        "lt eval: {} cases x {runs} runs, --jobs 2: {:.2} s in all, {:.0} runs/s",
        suite.cases.len(),
        total.as_secs_f64(),
        (runs * suite.cases.len()) as f64 / total.as_secs_f64()
    );
    println!(
        "{:<10} {:>7} {:>9} {:>13} {:>14} {:>12} {:>12}",
        "case", "passed", "session", "overhead mean", "overhead p50", "overhead p99", "target"
    );
    for case in &summary.cases {
        let mut over: Vec<f64> = case.records.iter().map(|r| r.overhead_ms).collect();
        over.sort_by(f64::total_cmp);
        let mean = over.iter().sum::<f64>() / over.len().max(1) as f64;
        println!(
            "{:<10} {:>7} {:>7.3}ms {:>11.3}ms {:>12.3}ms {:>10.3}ms {:>12}",
            case.name,
            format!("{}/{}", case.passed, case.runs),
            case.mean_ms,
            mean,
            percentile(&over, 0.5),
            percentile(&over, 0.99),
            if mean < 1.0 {
                "< 1 ms: met"
            } else {
                "< 1 ms: MISSED"
            }
        );
        assert_eq!(
            case.passed,
            case.runs,
            "every run passes: {:?}",
            case.records.first()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
