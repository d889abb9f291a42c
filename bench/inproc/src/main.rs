//! In-process measurements for `bench/compare.py` (see docs/performance.md).
//!
//! Usage: lt-bench-inproc REPS PROGRAM_500.lt
//!
//! Prints one line per figure, `key value unit`, for compare.py to parse:
//!
//! * `calls_*`: 1,000 tool calls of a record-in, record-out tool in one
//!   program (`traverse` over `range 0 1000`), through
//!   - `inproc`: an in-process host answering every call with the same
//!     JSON object (`Host::call` returns a clone), and
//!   - `fixed`: the real executor host with a `fixed` executor (tokio),
//!   gross (whole run / 1,000) and net (minus the same traverse that
//!   builds the record itself instead of calling: `Ok({...})`).
//! * `compute_*`: the run (IR compile + evaluation; check and lowering
//!   are outside the timing) of `range 0 1000000` folded / mapped and
//!   filtered, and `range` alone.
//! * `check_*`: `lt::types::check_source` on the given program (parse +
//!   type check, what `lt check` does between reading and printing), its
//!   phases, and lowering to IR.
//! * `trivial_*`: check + lower + run of `1 + 1` in-process: the part of
//!   `lt run trivial.lt` that is not process start-up.

use lt::exec::{ExecutorHost, Registry};
use lt::ir::{lower::lower, Ir};
use lt::runtime::eval;
use lt::runtime::host::{CallRequest, Host, Outcome};
use lt::runtime::limits::Limits;
use serde_json::Value as Json;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

/// The allocator the `lt` binary uses (src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn compile(src: &str) -> Ir {
    let analysis = lt::types::check_source(src);
    assert!(
        analysis.is_ok(),
        "program rejected: {:?}",
        analysis.diagnostics
    );
    let checked = analysis.into_checked().expect("checked");
    lower(&checked).expect("lowered")
}

struct Constant(Json);

impl Host for Constant {
    fn call(&mut self, _: CallRequest<'_>) -> Outcome {
        Ok(self.0.clone())
    }
}

fn limits() -> Limits {
    Limits {
        max_calls: 10_000_000,
        max_steps: u64::MAX,
        timeout: None,
        ..Limits::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<F: FnMut()>(reps: usize, mut f: F) -> Duration {
    f(); // warm-up
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn time_run(ir: &Ir, host: &mut dyn Host, reps: usize) -> Duration {
    let limits = limits();
    time(reps, || {
        let (r, _) = eval::run(ir, host, &limits);
        assert!(r.is_ok(), "run failed: {r:?}");
        black_box(r.ok());
    })
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn emit(key: &str, value: f64, unit: &str) {
    println!("{key} {value:.4} {unit}");
}

const CALLS: usize = 1_000;
const TOOL: &str =
    "tool lookup: {id: Int, name: String} -{Read}-> {id: Int, name: String, balance: Int};\n";

fn tool_calls(reps: usize) {
    let with_calls = format!(
        "{TOOL}match traverse (fn i: Int => exec tool lookup {{id = i, name = \"cust\"}}) (range 0 {CALLS}) \
         {{ Ok(rs) => fold (fn acc: Int => fn r: {{id: Int, name: String, balance: Int}} => acc + r.balance) 0 rs, Err(e) => 0 }}"
    );
    let without = format!(
        "{TOOL}match traverse (fn i: Int => Ok({{id = i, name = \"cust\", balance = 1}})) (range 0 {CALLS}) \
         {{ Ok(rs) => fold (fn acc: Int => fn r: {{id: Int, name: String, balance: Int}} => acc + r.balance) 0 rs, Err(e) => 0 }}"
    );
    let ir = compile(&with_calls);
    let base_ir = compile(&without);
    let answer = serde_json::json!({"id": 7, "name": "cust", "balance": 1});
    let base = time_run(&base_ir, &mut Constant(answer.clone()), reps);
    let inproc = time_run(&ir, &mut Constant(answer), reps);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let registry = Registry::from_str(
        "[tools.lookup]\nfixed = { ok = { id = 7, name = \"cust\", balance = 1 } }\n",
        Path::new("."),
        "bench",
    )
    .expect("registry");
    let mut host = ExecutorHost::new(registry, runtime.handle().clone());
    let fixed = time_run(&ir, &mut host, reps);
    let per = |t: Duration| us(t) / CALLS as f64;
    emit("calls_baseline_run", us(base) / 1000.0, "ms");
    emit("calls_inproc_gross", per(inproc), "us/call");
    emit(
        "calls_inproc_net",
        per(inproc.saturating_sub(base)),
        "us/call",
    );
    emit("calls_fixed_gross", per(fixed), "us/call");
    emit(
        "calls_fixed_net",
        per(fixed.saturating_sub(base)),
        "us/call",
    );
}

fn compute(reps: usize) {
    let cases = [
        ("compute_range", "length (range 0 1000000)"),
        (
            "compute_fold_sum",
            "fold (fn acc: Int => fn x: Int => acc + x) 0 (range 0 1000000)",
        ),
        ("compute_stdlib_sum", "sum (range 0 1000000)"),
        (
            "compute_map_filter",
            "length (filter (fn y: Int => y % 2 == 0) (map (fn x: Int => x * 3) (range 0 1000000)))",
        ),
        ("compute_map", "length (map (fn x: Int => x * 3) (range 0 1000000))"),
    ];
    let mut host = Constant(Json::Null);
    for (key, src) in cases {
        let ir = compile(src);
        emit(key, us(time_run(&ir, &mut host, reps)) / 1000.0, "ms");
    }
}

fn check(reps: usize, path: &str) {
    let src = std::fs::read_to_string(path).expect("the 500-line program");
    let a = lt::types::check_source(&src);
    assert!(
        a.is_ok(),
        "{path} does not check: {:?}",
        a.diagnostics.first()
    );
    drop(a);
    let reps = reps.max(21);
    emit(
        "check_total",
        us(time(reps, || {
            black_box(lt::types::check_source(black_box(&src)));
        })) / 1000.0,
        "ms",
    );
    emit(
        "check_lex",
        us(time(reps, || {
            black_box(lt::syntax::token::lex(black_box(&src)));
        })) / 1000.0,
        "ms",
    );
    emit(
        "check_parse",
        us(time(reps, || {
            black_box(lt::syntax::parse(black_box(&src)));
        })) / 1000.0,
        "ms",
    );
    let mut samples = Vec::new();
    for _ in 0..reps {
        let (program, diags) = lt::syntax::parse(&src);
        let t = Instant::now();
        let a = lt::types::check_program(program, diags);
        samples.push(t.elapsed());
        black_box(a);
    }
    emit("check_types", us(median(samples)) / 1000.0, "ms");
    let mut samples = Vec::new();
    for _ in 0..reps {
        let checked = lt::types::check_source(&src)
            .into_checked()
            .expect("checked");
        let t = Instant::now();
        black_box(lower(&checked).expect("lowered"));
        samples.push(t.elapsed());
    }
    emit("check_lower", us(median(samples)) / 1000.0, "ms");
}

fn trivial(reps: usize) {
    let reps = reps.max(101);
    let limits = limits();
    let t = time(reps, || {
        let ir = compile(black_box("1 + 1"));
        let (r, _) = eval::run(&ir, &mut Constant(Json::Null), &limits);
        black_box(r.ok());
    });
    emit("trivial_inproc", us(t), "us");
    let t = time(reps, || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        black_box(&runtime);
    });
    emit("trivial_tokio_runtime", us(t), "us");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let reps: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(9);
    let only: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    let wanted = |s: &str| only.is_empty() || only.contains(&s);
    if wanted("trivial") {
        trivial(reps);
    }
    if wanted("calls") {
        tool_calls(reps);
    }
    if wanted("compute") {
        compute(reps);
    }
    if wanted("check") {
        if let Some(path) = args.get(1) {
            check(reps, path);
        }
    }
}
