//! Generated programs (issue 10): random well-typed programs over every
//! construct, run against random tool outcomes, with quickcheck.
//!
//! * `gen.rs`: the generator (type-directed, syntax trees printed with
//!   `lt::syntax::print`);
//! * `host.rs`: the scripted tools and the value-against-type check;
//! * `props.rs`: the properties of one program: (a) it ends with a value of
//!   its type or a resource limit, never an internal error; (b) the calls it
//!   makes are within its static effects; (c) every linear value handed out
//!   is consumed exactly once; (d) two runs with the same outcomes agree;
//!   (e) the control plane's log replays to the same run; (f) printing and
//!   reparsing gives the same program;
//! * `mutate.rs`: the classic bugs made in well-typed programs, each
//!   rejected with its code;
//! * `stats.rs`: the figures of the long run.
//!
//! Each property is a quickcheck test over `LT_GEN_QC` cases (default 400);
//! `long_run` (ignored; `LT_GEN_CASES`, default 200,000) checks them all on
//! many programs and prints the figures of `docs/testing.md`. The
//! quickcheck tests also assert coverage floors (runs ending in a value,
//! making calls, handing out and spending tokens, seeing refusals, calls
//! denied by the control plane's profile), so that a generator drifting
//! into trivial programs fails.

mod gen;
mod host;
mod mutate;
mod props;
mod regressions;
mod stats;

use mutate::Bug;
use props::{prepare, run_scripted, Case, Prepared};
use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use stats::Stats;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

impl Arbitrary for Case {
    fn arbitrary(g: &mut Gen) -> Case {
        Case {
            seed: u64::arbitrary(g),
            size: 1 + u32::arbitrary(g) % 7,
            outcomes: u64::arbitrary(g),
        }
    }

    /// The same seeds at smaller sizes: a smaller program of the same kind.
    fn shrink(&self) -> Box<dyn Iterator<Item = Case>> {
        let c = *self;
        Box::new((1..c.size).rev().map(move |size| Case { size, ..c }))
    }
}

/// Quickcheck cases per property (`LT_GEN_QC`, default 400).
fn qc_cases() -> u64 {
    std::env::var("LT_GEN_QC")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

fn quickcheck(prop: fn(Case) -> TestResult) {
    QuickCheck::new()
        .tests(qc_cases())
        .max_tests(qc_cases() * 2)
        .quickcheck(prop);
}

/// Coverage of the quickcheck runs: how many runs showed each thing.
static COVERAGE: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

/// Counts one run that showed `what`.
fn cover(what: &'static str) {
    *COVERAGE.lock().expect("lock").entry(what).or_insert(0) += 1;
}

/// Asserts that at least `min` of the `LT_GEN_QC` runs showed `what`.
fn floor(what: &'static str, min: f64) {
    let n = qc_cases() as f64;
    let seen = COVERAGE
        .lock()
        .expect("lock")
        .get(what)
        .copied()
        .unwrap_or(0) as f64;
    assert!(
        seen >= min * n,
        "coverage floor: only {seen} of {n} runs showed `{what}` (at least {min} expected): \
         has the generator drifted into trivial programs?"
    );
}

/// Runs `check` on the prepared program of `case`.
fn with_program(case: Case, check: impl FnOnce(&Prepared) -> Result<(), String>) -> TestResult {
    match prepare(case).and_then(|p| check(&p)) {
        Ok(()) => TestResult::passed(),
        Err(e) => TestResult::error(e),
    }
}

#[test]
fn a_runs_end_with_a_value_of_the_type_or_a_limit() {
    fn prop(case: Case) -> TestResult {
        with_program(case, |p| {
            let run = run_scripted(p);
            if run.result.is_ok() {
                cover("value");
            }
            props::value_of_its_type(p, &run)
        })
    }
    quickcheck(prop);
    floor("value", 0.6);
}

#[test]
fn b_calls_stay_within_the_static_effects() {
    fn prop(case: Case) -> TestResult {
        with_program(case, |p| {
            let run = run_scripted(p);
            if !run.calls.is_empty() {
                cover("calls");
            }
            if run
                .outcomes
                .keys()
                .any(|k| *k != "ok" && *k != "approval_granted")
            {
                cover("failed or refused");
            }
            if run.outcomes.contains_key("approval_refused") {
                cover("approval refused");
            }
            props::effects_within(p, &run)
        })
    }
    quickcheck(prop);
    floor("calls", 0.6);
    floor("failed or refused", 0.2);
    floor("approval refused", 0.01);
}

#[test]
fn c_linear_values_are_consumed_exactly_once() {
    fn prop(case: Case) -> TestResult {
        with_program(case, |p| {
            let run = run_scripted(p);
            if !run.minted.is_empty() {
                cover("tokens handed out");
            }
            let spent = run.minted.iter().any(|t| {
                run.calls
                    .iter()
                    .any(|c| !c.undo && c.arg.to_string().contains(t.as_str()))
            });
            if spent {
                cover("tokens spent");
            }
            if run.minted_in_iteration > 0 {
                cover("token handed out inside an iteration");
            }
            props::linear_once(p, &run)
        })
    }
    quickcheck(prop);
    floor("tokens handed out", 0.03);
    floor("tokens spent", 0.02);
    // About 3 % of the runs: a token minted inside a `traverse` callback.
    floor("token handed out inside an iteration", 0.005);
}

#[test]
fn d_runs_are_deterministic_given_the_outcomes() {
    fn prop(case: Case) -> TestResult {
        with_program(case, |p| props::deterministic(p, &run_scripted(p)))
    }
    quickcheck(prop);
}

#[test]
fn e_replay_of_the_log_reproduces_the_run() {
    fn prop(case: Case) -> TestResult {
        with_program(case, |p| {
            let replayed = props::replay_reproduces(p)?;
            if !replayed.denied.is_empty() {
                cover("call denied");
            }
            let by = |rules: &[&str]| rules.iter().any(|r| replayed.denied.contains_key(*r));
            if by(&["allowlist", "denylist", "effects"]) {
                cover("call denied by a tool list or the effects");
            }
            if by(&["session_budget", "tool_budget"]) {
                cover("call denied by a budget");
            }
            Ok(())
        })
    }
    quickcheck(prop);
    // About 47 %, 30 % and 19 % of the runs (2,000 programs of `long_run`).
    floor("call denied", 0.3);
    floor("call denied by a tool list or the effects", 0.12);
    floor("call denied by a budget", 0.08);
}

#[test]
fn f_printing_and_reparsing_gives_the_same_program() {
    fn prop(case: Case) -> TestResult {
        with_program(case, props::round_trips)
    }
    quickcheck(prop);
}

/// Per bug: (applied, rejected with the expected code).
static MUTATIONS: Mutex<BTreeMap<Bug, (u64, u64)>> = Mutex::new(BTreeMap::new());

/// Makes `bug` in the program and checks it: `Ok(None)` when the program
/// has no place for it, `Ok(Some(codes))` when rejected with the bug's code.
fn mutation(p: &Prepared, bug: Bug) -> Result<Option<Vec<String>>, String> {
    let seed = p.case.seed ^ (bug as u64 + 1).wrapping_mul(0x9E37_79B9);
    let Some(mutated) = mutate::mutate(&p.gen.program, &p.gen.tools, bug, seed) else {
        return Ok(None);
    };
    let text = lt::syntax::print::print_program(&mutated);
    let analysis = lt::types::check_source(&text);
    let codes: Vec<String> = analysis
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    if codes.iter().any(|c| c == bug.code()) {
        Ok(Some(codes))
    } else {
        Err(format!(
            "mutation `{}` was not rejected with {} (codes: {codes:?})\n--- mutated ---\n{text}---\n{}",
            bug.name(),
            bug.code(),
            p.describe()
        ))
    }
}

#[test]
fn mutations_into_classic_bugs_are_rejected_with_their_code() {
    fn prop(case: Case) -> TestResult {
        with_program(case, |p| {
            for bug in Bug::ALL {
                if let Some(_codes) = mutation(p, bug)? {
                    let mut m = MUTATIONS.lock().expect("lock");
                    let e = m.entry(bug).or_insert((0, 0));
                    e.0 += 1;
                    e.1 += 1;
                }
            }
            Ok(())
        })
    }
    let before = Instant::now();
    quickcheck(prop);
    let m = MUTATIONS.lock().expect("lock").clone();
    let n = qc_cases() as f64;
    eprintln!(
        "mutations over {n} programs in {:?}: {m:?}",
        before.elapsed()
    );
    // Each bug could be made in a fair share of the programs.
    for (bug, min) in [
        (Bug::RenameField, 0.4),
        (Bug::DropErrArm, 0.4),
        (Bug::TokenTwice, 0.05),
        (Bug::ToolInMap, 0.03),
        (Bug::Recursion, 0.4),
        (Bug::CollectToken, 0.05),
        (Bug::IrrevocableInScope, 0.1),
    ] {
        let applied = m.get(&bug).map_or(0, |x| x.0) as f64;
        assert!(
            applied >= min * n,
            "`{}` applied to only {applied} of {n} programs",
            bug.name()
        );
    }
}

/// The printer on every program of the examples and the UI suite that
/// parses: printing the tree and parsing the text gives the same tree, and
/// the checker says the same of both texts.
#[test]
fn the_printer_round_trips_every_example_and_ui_case() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("examples"), root.join("tests/ui")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "lt") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut checked = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable");
        let (tree, diags) = lt::syntax::parse(&text);
        if !diags.is_empty() {
            continue;
        }
        let printed = lt::syntax::print::print_program(&tree);
        let (again, diags) = lt::syntax::parse(&printed);
        assert!(
            diags.is_empty(),
            "{}: the printed program does not parse: {diags:?}\n{printed}",
            path.display()
        );
        assert_eq!(
            lt::syntax::print::print_program(&again),
            printed,
            "{}: printing is not a fixed point",
            path.display()
        );
        let codes = |t: &str| {
            let a = lt::types::check_source(t);
            let mut c: Vec<&str> = a.diagnostics.iter().map(|d| d.code.as_str()).collect();
            c.sort();
            (c, a.ty.to_string(), a.effects.to_string())
        };
        assert_eq!(
            codes(&text),
            codes(&printed),
            "{}: the printed program checks differently\n{printed}",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 200, "only {checked} programs");
}

/// The long run: `LT_GEN_CASES` programs (default 200,000) from master
/// seed `LT_GEN_SEED`, on `LT_GEN_THREADS` threads (default: every core),
/// every property and mutation on each; prints the figures (and writes them
/// to `LT_GEN_REPORT` when set).
/// `cargo test --release --test generated -- --ignored --nocapture long_run`
#[test]
#[ignore]
fn long_run() {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let total = env("LT_GEN_CASES").unwrap_or(200_000);
    let master = env("LT_GEN_SEED").unwrap_or(10);
    let threads = env("LT_GEN_THREADS")
        .map(|t| t as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn(move || {
                    let mut stats = Stats::default();
                    let mut i = t as u64;
                    while i < total {
                        let mut r = gen::Rng::new(master.wrapping_mul(1_000_003).wrapping_add(i));
                        let case = Case {
                            seed: r.next(),
                            size: 1 + (i % 8) as u32,
                            outcomes: r.next(),
                        };
                        stats.case(case);
                        if t == 0 && i.is_multiple_of(10_000) {
                            eprintln!(
                                "{i} / {total} after {:.0} s, {} failures",
                                started.elapsed().as_secs_f64(),
                                stats.failures.len()
                            );
                        }
                        i += threads as u64;
                    }
                    stats
                })
                .expect("thread")
        })
        .collect();
    let mut stats = Stats::default();
    for h in handles {
        stats.merge(h.join().expect("no panic"));
    }
    let report = stats.report(started.elapsed().as_secs_f64(), threads, master);
    println!("{report}");
    if let Ok(path) = std::env::var("LT_GEN_REPORT") {
        std::fs::write(path, &report).expect("report written");
    }
    assert!(
        stats.failures.is_empty(),
        "{} failures",
        stats.failures.len()
    );
}

/// For work on the generator: generates `N` programs (default 300) and
/// prints, per diagnostic code, how many did not check and the smallest of
/// them. `N=3000 cargo test --test generated -- --ignored --nocapture survey`
#[test]
#[ignore]
fn survey() {
    let n: u64 = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut by_code: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut ok = 0;
    for i in 0..n {
        let mut r = gen::Rng::new(i);
        let case = Case {
            seed: r.next(),
            size: 1 + (i % 4) as u32,
            outcomes: r.next(),
        };
        match prepare(case) {
            Ok(_) => ok += 1,
            Err(e) => {
                let diag = e
                    .split("--- diagnostics ---\n")
                    .nth(1)
                    .unwrap_or(&e)
                    .to_string();
                let code = diag.split_whitespace().next().unwrap_or("?").to_string();
                let entry = by_code.entry(code).or_insert((0, String::new()));
                entry.0 += 1;
                if entry.1.is_empty() || e.len() < entry.1.len() {
                    entry.1 = e;
                }
            }
        }
    }
    eprintln!("{ok} of {n} check");
    for (code, (count, example)) in by_code {
        eprintln!("==== {code}: {count}\n{example}\n");
    }
}

/// Reproduces one case: `LT_GEN_SHOW="SEED SIZE OUTCOMES"` (as a failure
/// report prints them) prints the program, its type and effects, how the
/// in-process run ended and the calls it made, then checks every property.
/// `LT_GEN_SHOW="1 2 3" cargo test --test generated -- --ignored --nocapture show_case`
#[test]
#[ignore]
fn show_case() {
    let spec = std::env::var("LT_GEN_SHOW").unwrap_or_else(|_| "1 2 3".into());
    let n: Vec<u64> = spec
        .split_whitespace()
        .map(|x| x.parse().expect("three numbers"))
        .collect();
    let case = Case {
        seed: n[0],
        size: n[1] as u32,
        outcomes: n[2],
    };
    let p = prepare(case).unwrap_or_else(|e| panic!("{e}"));
    println!("{}", p.gen.source);
    println!("type: {}\neffects: {}", p.ir.ty, p.ir.effects);
    let run = run_scripted(&p);
    println!("ended: {:?}", run.ending());
    for c in &run.calls {
        println!(
            "  {} {} {}{}",
            c.id,
            c.tool,
            c.arg,
            if c.undo { " (undo)" } else { "" }
        );
    }
    let mut stats = Stats::default();
    stats.case(case);
    assert!(stats.failures.is_empty(), "{}", stats.failures[0]);
}
