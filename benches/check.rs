//! Benchmark: parse + check time of generated, realistic `lt` programs of
//! about 1,000, 10,000 and 100,000 lines.
//!
//! Run with `cargo bench --bench check`. No benchmarking framework: each size
//! is checked several times and the median is reported, together with the
//! time per 1,000 lines (which should stay flat if checking is linear), the
//! growth between sizes, and a breakdown by phase (lex, parse, check, drop).
//! Every generated program is asserted to check without errors.
//!
//! Two series are measured: realistic programs (with linear `!String`
//! tokens), and the same programs without linear binders.
//!
//! Options (after `--`): `--quick` runs fewer iterations; `--no-linear` runs
//! only the second series; `--dump DIR` writes the generated programs to
//! `DIR/bench_<lines>.lt` and `DIR/bench_nolinear_<lines>.lt` (to profile the
//! `lt` binary on them, e.g. with `perf record --call-graph dwarf lt check
//! FILE`); any other number is a size filter, e.g. `100000`.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The sizes (in lines) that are generated and measured.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// The target from the project brief: a 10k-line program checks in < 20 ms.
const TARGET_10K: Duration = Duration::from_millis(20);

/// Generates a well-typed program of at least `target_lines` lines.
///
/// The program is a tool-declaration header followed by one long `let … in`
/// chain of "blocks", each about 25 lines: records, field access, lists,
/// `map`/`filter`/`fold`/`traverse`, `match exec tool …` with both arms,
/// `if`/`else`, arithmetic, string concatenation, a linear `!String` token
/// consumed once, a lambda applied to a record, and comments. The number of
/// declared tools grows with the program (one tool triple per 20 blocks,
/// i.e. roughly 6 tools per 1,000 lines), as in real generated agents.
///
/// With `linear == false` the token is a plain `String`: the same program
/// without any `!T` binder, to separate the cost of the linearity pass.
fn generate(target_lines: usize, linear: bool) -> String {
    const LINES_PER_BLOCK: usize = 25;
    let blocks = (target_lines / LINES_PER_BLOCK).max(1);
    let groups = blocks.div_ceil(20).max(1);
    let mut s = String::with_capacity(target_lines * 64);
    let _ = writeln!(
        s,
        "// Generated benchmark program: {blocks} blocks, {} tools.",
        groups * 3
    );
    for k in 0..groups {
        let _ = writeln!(
            s,
            "tool lookup_{k}: String -{{Read}}-> {{name: String, balance: Int, tier: String}};"
        );
        let _ = writeln!(s, "tool refund_{k}: {{account: String, amount: Int}} -{{Write}}-> {{tx: String, ok: Bool}};");
        let _ = writeln!(
            s,
            "tool send_{k}: {{token: String, body: String}} -{{Network}}-> Unit;"
        );
    }
    let tok_ty = if linear { "!String" } else { "String" };
    s.push_str("let acc_0 = 0 in\n");
    for i in 1..=blocks {
        let k = (i - 1) / 20;
        let p = i - 1;
        let _ = write!(
            s,
            r#"(* block {i}: look up an account, refund, notify *)
let cfg_{i} = {{id = "cust_{i}", limit = {i} % 50 + 10, verbose = false}} in
let xs_{i} = [1, 2, 3, cfg_{i}.limit, {i}] in
let doubled_{i} = map (fn x: Int => x * 2 + 1) xs_{i} in
let big_{i} = filter (fn x: Int => x > 3 && x != 7) doubled_{i} in
let total_{i} = fold (fn acc: Int => fn x: Int => acc + x) 0 big_{i} in
let acct_{i} = match exec tool lookup_{k} cfg_{i}.id {{
    Ok(a) => {{name = a.name, cents = a.balance + total_{i}}},
    Err(e) => {{name = e, cents = 0}}
  }} in
let refunds_{i} =
  match traverse (fn n: Int => exec tool refund_{k} {{account = acct_{i}.name, amount = n}}) big_{i} {{
    Ok(rs) => fold (fn acc: Int => fn r: {{tx: String, ok: Bool}} =>
                      if r.ok then acc + 1 else acc) 0 rs,
    Err(e) => 0 - 1
  }} in
let score_{i} = if total_{i} > 100 && acct_{i}.cents >= 0
                then total_{i} * 3 - acct_{i}.cents / 2
                else (total_{i} + {i}) % 7 in
let label_{i} = if refunds_{i} > 0 then acct_{i}.name ++ " refunded" else "no refund for " ++ acct_{i}.name in
let tok_{i}: {tok_ty} = "tok_{i}" in
let sent_{i} = match exec tool send_{k} {{token = tok_{i}, body = label_{i}}} {{ Ok(u) => 1, Err(e) => 0 }} in
let acc_{i} = acc_{p} + score_{i} + refunds_{i} + sent_{i} in // running total
let fnc_{i} = fn r: {{name: String, cents: Int}} => r.cents + acc_{i} in
let applied_{i} = fnc_{i} acct_{i} in
"#
        );
    }
    let _ = writeln!(s, "acc_{blocks} + applied_{blocks}");
    s
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Row {
    lines: usize,
    median: Duration,
}

/// Measures one generated program; returns its line count and median time.
fn measure(size: usize, linear: bool, quick: bool, dump: Option<&str>) -> Row {
    let src = generate(size, linear);
    let lines = src.lines().count();
    if let Some(dir) = dump {
        let tag = if linear { "" } else { "nolinear_" };
        let path = std::path::Path::new(dir).join(format!("bench_{tag}{size}.lt"));
        std::fs::write(&path, &src).expect("cannot write the dumped program");
        println!("wrote {}", path.display());
    }

    // The generator must produce a well-typed program.
    let analysis = lt::types::check_source(&src);
    assert!(
        analysis.is_ok(),
        "generated {size}-line program does not check: {:#?}",
        analysis.diagnostics.iter().take(3).collect::<Vec<_>>()
    );
    assert_eq!(analysis.ty.to_string(), "Int");
    assert_eq!(analysis.effects.to_string(), "{Read, Write, Network}");
    assert!(
        analysis.let_types.len() > size / 2,
        "the program should be one long let chain"
    );
    drop(analysis);

    // Iterations: many for small programs, and never more than ~20 s per
    // size (but always at least 3) so that a slow checker still finishes.
    let max_iters = match (size, quick) {
        (s, false) if s <= 1_000 => 101,
        (s, false) if s <= 10_000 => 31,
        (_, false) => 7,
        (s, true) if s <= 10_000 => 11,
        _ => 3,
    };
    let budget = Duration::from_secs(if quick { 5 } else { 20 });
    let started = Instant::now();
    let (mut total, mut lex, mut parse, mut check, mut dropt) =
        (vec![], vec![], vec![], vec![], vec![]);
    while total.len() < max_iters && (total.len() < 3 || started.elapsed() < budget) {
        // The headline figure: parse + check, exactly what `lt check` does
        // between reading the file and printing.
        let t = Instant::now();
        let a = lt::types::check_source(black_box(&src));
        total.push(t.elapsed());
        let t = Instant::now();
        drop(black_box(a));
        dropt.push(t.elapsed());

        // The same work phase by phase: `check_source` is `syntax::parse`
        // (which lexes first) followed by `types::check_program` (validation,
        // inference, the usage pass, zonking and sorting diagnostics).
        let t = Instant::now();
        let toks = lt::syntax::token::lex(black_box(&src));
        lex.push(t.elapsed());
        drop(toks);
        let t = Instant::now();
        let (program, diags) = lt::syntax::parse(black_box(&src));
        parse.push(t.elapsed());
        let t = Instant::now();
        let a = lt::types::check_program(program, diags);
        check.push(t.elapsed());
        drop(black_box(a));
    }
    let iters = total.len();
    let m = median(&mut total);
    let min = total[0];
    let (ml, mp, mc, md) = (
        median(&mut lex),
        median(&mut parse),
        median(&mut check),
        median(&mut dropt),
    );
    println!(
        "{lines:>7} lines ({:>4.1} MB, {iters:>3} iters): median {:>10.3} ms  min {:>10.3} ms  = {:>8.3} ms per 1k lines",
        src.len() as f64 / 1e6,
        ms(m),
        ms(min),
        ms(m) * 1000.0 / lines as f64,
    );
    println!(
        "        phases (median): syntax::parse {:.3} ms (of which lex {:.3}) | types::check_program {:.3} ms \
         | dropping the Analysis {:.3} ms",
        ms(mp),
        ms(ml),
        ms(mc),
        ms(md)
    );
    Row { lines, median: m }
}

fn report_growth(rows: &[Row]) {
    if let Some(r) = rows.iter().find(|r| (9_000..=11_000).contains(&r.lines)) {
        let verdict = if r.median < TARGET_10K {
            "met"
        } else {
            "MISSED"
        };
        println!(
            "  target: 10k lines in < {} ms: {verdict} ({:.3} ms)",
            TARGET_10K.as_millis(),
            ms(r.median)
        );
    }
    for w in rows.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let per_a = a.median.as_secs_f64() / a.lines as f64;
        let per_b = b.median.as_secs_f64() / b.lines as f64;
        println!(
            "  growth {} -> {} lines: x{:.1} lines, x{:.1} time (per-line cost ratio {:.2}; 1.0 = linear)",
            a.lines,
            b.lines,
            b.lines as f64 / a.lines as f64,
            b.median.as_secs_f64() / a.median.as_secs_f64(),
            per_b / per_a
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; unknown flags are ignored.
    let quick = args.iter().any(|a| a == "--quick");
    let dump = args
        .iter()
        .position(|a| a == "--dump")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let filters: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let only_plain = args.iter().any(|a| a == "--no-linear");

    println!("lt check benchmark: parse + check (lt::types::check_source = syntax::parse + types::check_program)");
    if cfg!(debug_assertions) {
        println!("warning: debug build; run `cargo bench` for release figures");
    }
    let series: &[(bool, &str)] = if only_plain {
        &[(
            false,
            "the same programs with `String` instead of `!String` tokens (no linear binders)",
        )]
    } else {
        &[
            (
                true,
                "realistic programs (one linear `!String` token per block)",
            ),
            (
                false,
                "the same programs with `String` instead of `!String` tokens (no linear binders)",
            ),
        ]
    };
    for &(linear, title) in series {
        println!("\n== {title}");
        let rows: Vec<Row> = SIZES
            .iter()
            .filter(|s| filters.is_empty() || filters.contains(s))
            .map(|&size| measure(size, linear, quick, dump.as_deref()))
            .collect();
        report_growth(&rows);
    }
}
