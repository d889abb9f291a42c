//! The figures of a run of many programs (`long_run`): what was
//! generated, how the runs ended, the tools' outcomes, the mutations, and
//! the tallies of issue 21 (tokens minted inside a `traverse`, functions
//! applied in a `scope`, calls denied by the control plane's profile).

use crate::mutate::Bug;
use crate::props::{self, prepare, run_scripted, Case};
use std::collections::BTreeMap;

/// The figures of a run of many programs.
#[derive(Default)]
pub struct Stats {
    programs: u64,
    lines: u64,
    constructs: BTreeMap<&'static str, (u64, u64)>,
    endings: BTreeMap<&'static str, u64>,
    plane_endings: BTreeMap<String, u64>,
    outcomes: BTreeMap<&'static str, u64>,
    calls: u64,
    events: u64,
    tokens: u64,
    mutations: BTreeMap<Bug, (u64, u64)>,
    mutation_codes: BTreeMap<Bug, BTreeMap<String, u64>>,
    /// Programs (or calls) that showed each thing of [`Stats::tally`].
    tallies: BTreeMap<String, u64>,
    pub failures: Vec<String>,
}

impl Stats {
    pub fn merge(&mut self, o: Stats) {
        self.programs += o.programs;
        self.lines += o.lines;
        for (k, v) in o.constructs {
            let e = self.constructs.entry(k).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
        for (k, v) in o.endings {
            *self.endings.entry(k).or_default() += v;
        }
        for (k, v) in o.plane_endings {
            *self.plane_endings.entry(k).or_default() += v;
        }
        for (k, v) in o.outcomes {
            *self.outcomes.entry(k).or_default() += v;
        }
        self.calls += o.calls;
        self.events += o.events;
        self.tokens += o.tokens;
        for (k, v) in o.mutations {
            let e = self.mutations.entry(k).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
        for (k, v) in o.mutation_codes {
            let e = self.mutation_codes.entry(k).or_default();
            for (c, n) in v {
                *e.entry(c).or_default() += n;
            }
        }
        for (k, v) in o.tallies {
            *self.tallies.entry(k).or_default() += v;
        }
        self.failures.extend(o.failures);
    }

    /// Adds `n` to the tally `what`.
    fn tally(&mut self, what: impl Into<String>, n: u64) {
        *self.tallies.entry(what.into()).or_default() += n;
    }

    /// Every property on one case, counted.
    pub fn case(&mut self, case: Case) {
        if let Err(e) = self.case_inner(case) {
            self.failures.push(e);
        }
    }

    fn case_inner(&mut self, case: Case) -> Result<(), String> {
        let p = prepare(case)?;
        self.programs += 1;
        self.lines += p.gen.source.lines().count() as u64;
        for (k, n) in &p.gen.constructs {
            let e = self.constructs.entry(k).or_default();
            e.0 += u64::from(*n);
            e.1 += 1;
        }
        let run = run_scripted(&p);
        self.tally_run(&p, &run);
        *self.endings.entry(props::ending_kind(&run)).or_default() += 1;
        for (k, n) in &run.outcomes {
            *self.outcomes.entry(k).or_default() += n;
        }
        self.calls += run.calls.len() as u64;
        self.tokens += run.minted.len() as u64;
        props::value_of_its_type(&p, &run)?;
        props::effects_within(&p, &run)?;
        props::linear_once(&p, &run)?;
        props::deterministic(&p, &run)?;
        let replayed = props::replay_reproduces(&p)?;
        self.events += replayed.events as u64;
        let ending = match &replayed.live {
            Ok(_) => "value".to_string(),
            Err(e) => e.split(':').next().unwrap_or("error").to_string(),
        };
        *self.plane_endings.entry(ending).or_default() += 1;
        if !replayed.denied.is_empty() {
            self.tally("programs with a call denied by the profile", 1);
        }
        for (rule, n) in &replayed.denied {
            self.tally(format!("calls denied by rule {rule}"), *n);
            self.tally(format!("programs with a call denied by rule {rule}"), 1);
        }
        props::round_trips(&p)?;
        for bug in Bug::ALL {
            if let Some(codes) = crate::mutation(&p, bug)? {
                let e = self.mutations.entry(bug).or_default();
                e.0 += 1;
                e.1 += 1;
                let c = self.mutation_codes.entry(bug).or_default();
                let mut codes = codes;
                codes.sort();
                codes.dedup();
                for code in codes {
                    *c.entry(code).or_default() += 1;
                }
            }
        }
        Ok(())
    }

    /// The tallies of one in-process run: tokens minted by a call inside a
    /// `traverse` (or `fan_out`) iteration and spent, effectful functions
    /// applied in a `scope` (generated) and calls made through a function
    /// that a failing scope undid (run).
    fn tally_run(&mut self, p: &props::Prepared, run: &props::Run) {
        let made = |k: &str| p.gen.constructs.get(k).copied().unwrap_or(0) > 0;
        if made("token_minted_in_traverse") {
            self.tally("programs minting tokens inside a traverse (generated)", 1);
        }
        if run.minted_in_iteration > 0 {
            self.tally("programs handed a token inside an iteration (run)", 1);
            self.tally(
                "tokens handed out inside an iteration (run)",
                run.minted_in_iteration,
            );
        }
        if made("token_spent_in_gather") {
            self.tally("programs spending a token inside a gather (generated)", 1);
        }
        if made("scope_through_function") || made("scope_function_argument") {
            self.tally(
                "programs applying an effectful function in a scope (generated)",
                1,
            );
        }
        if made("scope_function_argument") {
            self.tally(
                "programs applying a function parameter in a scope (generated)",
                1,
            );
        }
        if run.calls.iter().any(|c| c.undo && c.applied) {
            self.tally("programs undoing a call made through a function (run)", 1);
        }
    }

    pub fn report(&self, seconds: f64, threads: usize, master: u64) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let n = self.programs.max(1) as f64;
        let pct = |x: u64| 100.0 * x as f64 / n;
        let _ = writeln!(
            s,
            "{} programs ({} failures), master seed {master}, {threads} threads, {seconds:.0} s ({:.2} ms per program and thread)",
            self.programs,
            self.failures.len(),
            1000.0 * seconds * threads as f64 / n
        );
        let _ = writeln!(
            s,
            "{} lines of source ({:.1} per program), {} tool calls, {} linear values handed out, {} log events",
            self.lines,
            self.lines as f64 / n,
            self.calls,
            self.tokens,
            self.events
        );
        let _ = writeln!(s, "\nin-process endings:");
        for (k, v) in &self.endings {
            let _ = writeln!(s, "  {k:<14} {v:>8} ({:.1}%)", pct(*v));
        }
        let _ = writeln!(s, "\ncontrol-plane endings (random profiles):");
        for (k, v) in &self.plane_endings {
            let _ = writeln!(s, "  {k:<14} {v:>8} ({:.1}%)", pct(*v));
        }
        let _ = writeln!(s, "\ntool and approval outcomes (in-process):");
        for (k, v) in &self.outcomes {
            let _ = writeln!(s, "  {k:<18} {v:>9}");
        }
        let _ = writeln!(
            s,
            "\nconstructs ({} kinds): total, programs with it",
            self.constructs.len()
        );
        for (k, (t, p)) in &self.constructs {
            let _ = writeln!(s, "  {k:<26} {t:>9} {p:>8} ({:.1}%)", pct(*p));
        }
        let _ = writeln!(
            s,
            "\nmutations: applied, rejected with the code, codes reported"
        );
        for bug in Bug::ALL {
            let (a, r) = self.mutations.get(&bug).copied().unwrap_or_default();
            let codes = self
                .mutation_codes
                .get(&bug)
                .map(|c| {
                    c.iter()
                        .map(|(k, v)| format!("{k}×{v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:<24} {} {a:>8} {r:>8}  {codes}",
                bug.name(),
                bug.code()
            );
        }
        let _ = writeln!(s, "\ntallies (programs, unless calls or tokens):");
        for (k, v) in &self.tallies {
            let _ = writeln!(s, "  {k:<58} {v:>8}");
        }
        let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
        for f in &self.failures {
            *kinds.entry(failure_kind(f)).or_default() += 1;
        }
        if !kinds.is_empty() {
            let _ = writeln!(s, "\nfailures by kind:");
            for (k, v) in &kinds {
                let _ = writeln!(s, "  {v:>6}  {k}");
            }
        }
        // The smallest failing program of each kind.
        for kind in kinds.keys() {
            let smallest = self
                .failures
                .iter()
                .filter(|f| failure_kind(f) == *kind)
                .min_by_key(|f| f.len());
            if let Some(f) = smallest {
                let _ = writeln!(s, "\nFAILURE:\n{f}");
            }
        }
        s
    }
}

/// A failure's first line with numbers as `#`, effect rows and call paths
/// as `{…}` and `[…]`,
/// to count failures by kind.
fn failure_kind(f: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in f.lines().next().unwrap_or_default().chars() {
        match c {
            '{' | '[' => {
                if depth == 0 {
                    out.push_str(if c == '{' { "{…}" } else { "[…]" });
                }
                depth += 1;
            }
            '}' | ']' => depth -= 1,
            _ if depth > 0 => {}
            c if c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            c => out.push(c),
        }
    }
    out
}
