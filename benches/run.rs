//! Benchmark: the interpreter and the executors (issue 3).
//!
//! Run with `cargo bench --bench run` (add `-- --quick` for fewer
//! repetitions, and `compute`, `exec`, `control` or `subprocess` to run only those
//! parts). Four figures:
//!
//! * **(a) pure compute** — `fold` summing 1,000,000 Ints, and
//!   `map`/`filter`/`fold` over them, against CPython doing the same with
//!   comprehensions (`bench/compute.py`, run side by side when `python3` is
//!   on the PATH). The list reaches the program from a tool; each case runs
//!   once and six times in one program and the figure is the difference
//!   over five, so receiving the list cancels out and the figure is the
//!   computation alone, as in the Python script.
//! * **(b) `exec` overhead** — 10,000 calls in one program (`traverse` over
//!   10,000 items) with a `fixed` executor through the real executor host
//!   (tokio `block_on` per call), and with an in-process host, per call.
//!   Target: under 2 µs per call.
//! * **(c) subprocess cost** — per call of a `command` tool (`cat`, and a
//!   Python script that echoes its input).
//! * **(d) control plane** — the same 10,000 calls through the policy
//!   pipeline, per call over the executor host alone, recording to: the
//!   Discard sink (no log), a sink that drops the events it is handed (the
//!   cost of building them), a MemoryLog (chained and hashed in memory),
//!   and the hash-chained JSONL file (`scheduled` and each outcome written
//!   before `lt` goes on: two `write`s per call, no fsync). Target: under
//!   5 µs per call with the file log; the Python control plane of seed 001
//!   (in-memory log, no hashing) takes 3.6 µs per step.

use lt::exec::{ExecutorHost, Registry};
use lt::ir::{lower::lower, Ir};
use lt::runtime::eval;
use lt::runtime::host::{CallRequest, Host, Outcome};
use lt::runtime::limits::Limits;
use serde_json::Value as Json;
use std::path::Path;
use std::time::{Duration, Instant};

fn compile(src: &str) -> Ir {
    let analysis = lt::types::check_source(src);
    assert!(
        analysis.is_ok(),
        "benchmark program rejected: {:?}",
        analysis.diagnostics
    );
    let checked = analysis.into_checked().expect("checked");
    lower(&checked).expect("lowered")
}

/// Answers every call with the same JSON.
struct Constant(Json);

impl Host for Constant {
    fn call(&mut self, _: CallRequest<'_>) -> Outcome {
        Ok(self.0.clone())
    }
}

fn limits() -> Limits {
    Limits {
        max_calls: 1_000_000,
        max_steps: u64::MAX,
        timeout: None,
        ..Limits::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_run(ir: &Ir, host: &mut dyn Host, reps: usize) -> Duration {
    let limits = limits();
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                let (r, _) = eval::run(ir, host, &limits);
                let d = t.elapsed();
                assert!(r.is_ok(), "run failed: {r:?}");
                std::hint::black_box(r.ok());
                d
            })
            .collect(),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

const NUMS: &str = "tool nums: Unit -{Read}-> List Int;\n";

/// A program that receives the list and computes `expr` (over `xs`) `k`
/// times, each result bound by a `let` and all summed.
fn repeated(expr: &str, k: usize) -> String {
    let mut body = String::new();
    for i in 0..k {
        body.push_str(&format!("let r{i} = {expr} in\n"));
    }
    let sum: Vec<String> = (0..k).map(|i| format!("r{i}")).collect();
    format!(
        "{NUMS}match exec tool nums () {{ Ok(xs) => {body}{}, Err(e) => 0 }}",
        sum.join(" + ")
    )
}

fn pure_compute(reps: usize) {
    println!("(a) pure compute over 1,000,000 Ints (median of {reps})");
    let list = Json::Array((0..1_000_000).map(Json::from).collect());
    let mut host = Constant(list);
    let py = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/compute.py"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string());
    let py_time = |case: &str| -> Option<f64> {
        py.as_ref()?
            .lines()
            .find_map(|l| l.strip_prefix(case)?.trim().parse().ok())
    };
    let cases = [
        (
            "fold_sum",
            "fold (fn acc: Int => fn x: Int => acc + x) 0 xs",
            "sum([x for x in xs])",
        ),
        (
            "map_filter_fold",
            "fold (fn acc: Int => fn x: Int => acc + x) 0 (filter (fn y: Int => y % 2 == 0) (map (fn x: Int => x * 3) xs))",
            "sum([y for y in [x * 3 for x in xs] if y % 2 == 0])",
        ),
    ];
    // Each case runs once and six times in one program; the difference over
    // five is the computation alone (receiving the list cancels out).
    for (case, expr, python) in cases {
        let once = compile(&repeated(expr, 1));
        let six = compile(&repeated(expr, 6));
        let t1 = time_run(&once, &mut host, reps);
        let t6 = time_run(&six, &mut host, reps);
        let t = t6.saturating_sub(t1) / 5;
        match py_time(case) {
            Some(p) => println!(
                "  {case:<16} lt {:>8.2} ms   CPython {:>8.2} ms ({python})   lt/CPython {:.2}",
                ms(t),
                p,
                ms(t) / p
            ),
            None => println!(
                "  {case:<16} lt {:>8.2} ms   (python3 not available)",
                ms(t)
            ),
        }
    }
}

fn exec_overhead(reps: usize) {
    const CALLS: usize = 10_000;
    println!("(b) exec overhead: {CALLS} calls in one program (median of {reps})");
    let items: Vec<String> = (0..CALLS).map(|i| i.to_string()).collect();
    let src = format!(
        "tool ping: Int -{{Read}}-> Int;\nmatch traverse (fn x: Int => exec tool ping x) [{}] {{ Ok(ys) => 1, Err(e) => 0 }}",
        items.join(", ")
    );
    let ir = compile(&src);
    let base_src = format!(
        "tool ping: Int -{{Read}}-> Int;\nmatch traverse (fn x: Int => Ok(x)) [{}] {{ Ok(ys) => 1, Err(e) => 0 }}",
        items.join(", ")
    );
    let base_ir = compile(&base_src);
    let t_base = time_run(&base_ir, &mut Constant(Json::from(1)), reps);
    let t_inproc = time_run(&ir, &mut Constant(Json::from(1)), reps);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let registry = Registry::from_str(
        "[tools.ping]\nfixed = { ok = 1 }\n",
        Path::new("."),
        "bench",
    )
    .expect("registry");
    let mut host = ExecutorHost::new(registry, runtime.handle().clone());
    let t_fixed = time_run(&ir, &mut host, reps);
    let per = |t: Duration| t.saturating_sub(t_base).as_secs_f64() * 1e6 / CALLS as f64;
    println!(
        "  the same traverse without calls (subtracted): {:.2} ms",
        ms(t_base)
    );
    println!(
        "  in-process host:          {:.3} µs per call",
        per(t_inproc)
    );
    println!(
        "  fixed executor (tokio):   {:.3} µs per call   target < 2 µs",
        per(t_fixed)
    );
}

/// A sink that keeps nothing but says it records: the control plane builds
/// every event and hands it over, so this isolates the cost of building
/// events from the cost of sealing and writing them.
struct BuildOnly;

impl lt::log::EventSink for BuildOnly {
    fn append(&mut self, body: lt::log::EventBody) -> std::io::Result<()> {
        drop(body);
        Ok(())
    }
}

/// (d) the control plane: the same 10,000 `fixed` calls through the
/// policy pipeline, recording to each kind of sink: none (Discard), events
/// built and dropped, a MemoryLog (chained and hashed, kept in memory), and
/// the hash-chained JSONL file (`scheduled` and each outcome written before
/// the call goes on, no fsync).
fn control_plane_overhead(reps: usize) {
    use lt::control::{profile::Profile, ControlPlane};
    use lt::log::{Discard, EventBody, EventSink, LogWriter, MemoryLog};
    const CALLS: usize = 10_000;
    /// The Python control plane of seed 001 (ToolCallControl, in-memory
    /// log, no hashing), measured on the benchmark machine.
    const PYTHON_SEED_001_US: f64 = 3.6;
    println!("(d) control plane: {CALLS} calls with a fixed executor (median of {reps})");
    let items: Vec<String> = (0..CALLS).map(|i| i.to_string()).collect();
    let src = format!(
        "tool ping: Int -{{Read}}-> Int;\nmatch traverse (fn x: Int => exec tool ping x) [{}] {{ Ok(ys) => 1, Err(e) => 0 }}",
        items.join(", ")
    );
    let ir = compile(&src);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let registry = || {
        Registry::from_str(
            "[tools.ping]\nfixed = { ok = 1 }\n",
            Path::new("."),
            "bench",
        )
        .expect("registry")
    };
    let session = "0123456789abcdef0123456789abcdef".to_string();
    let limits = limits();
    let bare = {
        let mut host = ExecutorHost::new(registry(), runtime.handle().clone());
        time_run(&ir, &mut host, reps)
    };
    // One timed run through a control plane recording to `sink`; the sink
    // comes back so that dropping it (a MemoryLog's 40,000 events, closing
    // the file) is not timed.
    let timed = |sink: Box<dyn EventSink>| -> (Duration, Box<dyn EventSink>) {
        let host = ExecutorHost::new(registry(), runtime.handle().clone());
        let mut plane =
            ControlPlane::new(host, Profile::default(), &ir.tools, sink, session.clone());
        let t = Instant::now();
        let (r, _) = eval::run(&ir, &mut plane, &limits);
        let elapsed = t.elapsed();
        assert!(r.is_ok() && plane.log_error().is_none(), "{r:?}");
        (elapsed, plane.into_sink())
    };
    let path = std::env::temp_dir().join(format!("lt-bench-log-{}.jsonl", std::process::id()));
    // What `lt run` writes before the first call (not timed).
    let started = || EventBody::SessionStarted {
        lt_version: env!("CARGO_PKG_VERSION").to_string(),
        program: src.clone(),
        program_hash: lt::log::sha256_hex(src.as_bytes()),
        profile: serde_json::json!({}),
        registry_hash: lt::log::sha256_hex(b""),
        limits: serde_json::json!({}),
    };
    let mut times: [Vec<Duration>; 4] = Default::default();
    for _ in 0..reps {
        times[0].push(timed(Box::new(Discard)).0);
        times[1].push(timed(Box::new(BuildOnly)).0);
        let mut memory = MemoryLog::new(session.clone()).expect("session id");
        memory.append(started()).expect("memory");
        times[2].push(timed(Box::new(memory)).0);
        let mut file = LogWriter::create(&path, session.clone()).expect("log");
        file.append(started()).expect("log");
        times[3].push(timed(Box::new(file)).0);
    }
    let (writes, hashing) = log_floor(&path, reps);
    let _ = std::fs::remove_file(&path);
    let us = |t: Duration| t.as_secs_f64() * 1e6 / CALLS as f64;
    let [discard, build, memory, file] = times.map(median);
    println!(
        "  executor host alone, no control plane: {:>7.3} µs per call (the baseline)",
        us(bare)
    );
    println!("  control plane, per call over the baseline:");
    for (label, t, note) in [
        ("Discard sink (no log)", discard, ""),
        ("events built, then dropped", build, ""),
        ("MemoryLog (chained, hashed)", memory, ""),
        (
            "JSONL file (hash-chained)",
            file,
            "   target < 5 µs (2 writes per call, no fsync)",
        ),
    ] {
        println!(
            "    {label:<30} {:>7.3} µs{note}",
            us(t.saturating_sub(bare))
        );
    }
    println!(
        "      of which, measured alone on its bytes: 2 write(2)s {:.3} µs, SHA-256 of 4 events {:.3} µs",
        us(writes),
        us(hashing)
    );
    println!("  (Python seed 001 ToolCallControl, in-memory log, no hashing: {PYTHON_SEED_001_US} µs per step)");
}

/// The part of the JSONL log's cost that no encoder can remove, measured on
/// the log at `path`: writing its bytes with the same `write`s (each
/// `scheduled` with the proposal and decision before it, each outcome
/// alone) to a new file, and hashing its events' canonical bytes. Medians
/// of `reps` runs.
fn log_floor(path: &Path, reps: usize) -> (Duration, Duration) {
    use lt::log::{read_log, Decision, EventBody};
    use std::io::Write;
    let text = std::fs::read_to_string(path).expect("the log");
    let events = read_log(&text).expect("a valid log");
    // The calls' events: `session_started` is written before them.
    let mut writes: Vec<Vec<u8>> = vec![Vec::new()];
    for (event, line) in events.iter().zip(text.lines()).skip(1) {
        let chunk = writes.last_mut().expect("a chunk");
        chunk.extend_from_slice(line.as_bytes());
        chunk.push(b'\n');
        let buffered = match &event.body {
            EventBody::Proposed { .. } => true,
            EventBody::Decided { decision, .. } => *decision == Decision::Allow,
            _ => false,
        };
        if !buffered {
            writes.push(Vec::new());
        }
    }
    let canonical: Vec<Vec<u8>> = events.iter().skip(1).map(|e| e.canonical_bytes()).collect();
    let copy = path.with_extension("floor");
    let mut write_times = Vec::new();
    let mut hash_times = Vec::new();
    for _ in 0..reps {
        let mut file = std::fs::File::create(&copy).expect("file");
        let t = Instant::now();
        for chunk in &writes {
            file.write_all(chunk).expect("write");
        }
        write_times.push(t.elapsed());
        let t = Instant::now();
        for bytes in &canonical {
            std::hint::black_box(lt::log::sha256_hex(std::hint::black_box(bytes)));
        }
        hash_times.push(t.elapsed());
    }
    let _ = std::fs::remove_file(&copy);
    (median(write_times), median(hash_times))
}

fn subprocess_cost(reps: usize) {
    const CALLS: usize = 50;
    println!("(c) subprocess tool: {CALLS} calls (median of {reps})");
    let dir = std::env::temp_dir().join(format!("lt-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(
        dir.join("echo.py"),
        "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n",
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let items: Vec<String> = (0..CALLS).map(|i| i.to_string()).collect();
    let src = format!(
        "tool echo: Int -{{Read}}-> Int;\nmatch traverse (fn x: Int => exec tool echo x) [{}] {{ Ok(ys) => 1, Err(e) => 0 }}",
        items.join(", ")
    );
    let ir = compile(&src);
    for (label, command) in [
        ("cat", r#"["cat"]"#),
        ("python3 echo.py", r#"["python3", "echo.py"]"#),
    ] {
        let toml = format!("[tools.echo]\ncommand = {command}\n");
        let registry = Registry::from_str(&toml, &dir, "bench").expect("registry");
        let mut host = ExecutorHost::new(registry, runtime.handle().clone());
        let t = time_run(&ir, &mut host, reps);
        println!(
            "  {label:<16} {:.3} ms per call",
            t.as_secs_f64() * 1000.0 / CALLS as f64
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    if cfg!(debug_assertions) {
        println!("warning: debug build; run `cargo bench` for release figures");
    }
    let only: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["compute", "exec", "control", "subprocess"].contains(a))
        .collect();
    let wanted = |case: &str| only.is_empty() || only.contains(&case);
    if wanted("compute") {
        pure_compute(if quick { 3 } else { 9 });
    }
    if wanted("exec") {
        exec_overhead(if quick { 3 } else { 9 });
    }
    if wanted("control") {
        control_plane_overhead(if quick { 3 } else { 9 });
    }
    if wanted("subprocess") {
        subprocess_cost(if quick { 1 } else { 3 });
    }
}
