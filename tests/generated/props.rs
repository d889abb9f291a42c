//! The properties of one generated program, each a function returning
//! `Err(what went wrong)`; the report names the program (its seed and
//! text) so that a failure can be reproduced.

use crate::gen::{generate, Generated, Rng};
use crate::host::{conforms, Call, Scripted};
use lt::control::profile::Profile;
use lt::control::replay::ReplayHost;
use lt::control::ControlPlane;
use lt::ir::{lower::lower, Ir};
use lt::log::{verify, Decision, EventBody, MemoryLog};
use lt::runtime::eval::run;
use lt::runtime::limits::{Limits, RunError, RunErrorKind};
use lt::runtime::value::Value;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

const SESSION: &str = "00112233445566778899aabbccddeeff";

/// One random case: the program (seed and size) and the tools' behaviour.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub seed: u64,
    pub size: u32,
    pub outcomes: u64,
}

/// A generated program that passed the checker, lowered.
pub struct Prepared {
    pub case: Case,
    pub gen: Generated,
    pub ir: Ir,
}

impl Prepared {
    /// `seed=…, size=…` and the program text, for failure reports.
    pub fn describe(&self) -> String {
        format!(
            "case {:?} (target type {:?})\n--- program ---\n{}---",
            self.case, self.gen.target, self.gen.source
        )
    }
}

/// The limits of a case's runs: usually large enough that a generated
/// program does not reach them; in one case in ten a small call budget, in
/// one in twenty a small step budget, so that runs also stop at a limit.
/// No clock limit: a run's ending must not depend on the machine.
pub fn limits(case: &Case) -> Limits {
    let mut rng = Rng::new(case.outcomes.rotate_left(29));
    let roll = rng.below(100);
    Limits {
        max_calls: if roll < 10 { rng.below(6) as u64 } else { 400 },
        max_steps: if (10..15).contains(&roll) {
            50 + rng.below(1000) as u64
        } else {
            2_000_000
        },
        timeout: None,
        max_list_len: 10_000,
        ..Limits::default()
    }
}

/// Generates and checks the program of `case`. An ill-typed program is a
/// generator bug: the error holds the program and the diagnostics.
pub fn prepare(case: Case) -> Result<Prepared, String> {
    let gen = generate(case.seed, case.size);
    let analysis = lt::types::check_source(&gen.source);
    let checked = match analysis.into_checked() {
        Ok(c) => c,
        Err(diags) => {
            let shown: Vec<String> = diags
                .iter()
                .map(|d| {
                    let line = gen.source[..(d.span.start as usize).min(gen.source.len())]
                        .matches('\n')
                        .count()
                        + 1;
                    format!("{} line {line}: {}", d.code.as_str(), d.message)
                })
                .collect();
            return Err(format!(
                "the generated program does not check (a generator bug)\ncase {case:?}\n--- program ---\n{}--- diagnostics ---\n{}",
                gen.source,
                shown.join("\n")
            ));
        }
    };
    let ir = lower(&checked)
        .map_err(|e| format!("lowering failed: {e:?}\ncase {case:?}\n{}", gen.source))?;
    Ok(Prepared { case, gen, ir })
}

/// What one in-process run did.
pub struct Run {
    pub result: Result<Value, RunError>,
    pub calls: Vec<Call>,
    pub minted: Vec<String>,
    /// Tokens handed out by calls inside an iteration (`traverse`, `fan_out`).
    pub minted_in_iteration: u64,
    pub outcomes: BTreeMap<&'static str, u64>,
}

impl Run {
    /// The value as JSON, or the error's kind and message.
    pub fn ending(&self) -> Result<Json, String> {
        match &self.result {
            Ok(v) => Ok(v.to_json()),
            Err(e) => Err(format!("{}: {}", e.kind.as_str(), e.message)),
        }
    }
}

/// Runs the program in-process against the scripted tools.
pub fn run_scripted(p: &Prepared) -> Run {
    let mut host = Scripted::new(&p.ir.tools, p.case.outcomes);
    let (result, _) = run(&p.ir, &mut host, &limits(&p.case));
    Run {
        result,
        calls: host.calls,
        minted: host.minted,
        minted_in_iteration: host.minted_in_iteration,
        outcomes: host.outcomes,
    }
}

/// How a run ended, for the statistics.
pub fn ending_kind(run: &Run) -> &'static str {
    match &run.result {
        Ok(_) => "value",
        Err(e) => e.kind.as_str(),
    }
}

/// (a) The run ends with a value of the program's type, or stops at the
/// limit the case made small ([`limits`]: the call limit only under a
/// small call budget, the step limit only under a small step budget), or
/// at an Int outside 64 bits (the language's rule). Never with an internal
/// error, nor with any other kind of stop.
pub fn value_of_its_type(p: &Prepared, run: &Run) -> Result<(), String> {
    let l = limits(&p.case);
    match &run.result {
        Ok(v) => conforms(v, &p.ir.ty).map_err(|e| {
            format!(
                "the value does not have the program's type {}: {e}\n{}",
                p.ir.ty,
                p.describe()
            )
        }),
        Err(e) if e.kind == RunErrorKind::CallLimit && l.max_calls < 400 => Ok(()),
        Err(e) if e.kind == RunErrorKind::StepLimit && l.max_steps < 2_000_000 => Ok(()),
        // An Int outside 64 bits stops a run by the language's rule.
        Err(e) if e.kind == RunErrorKind::Arithmetic => Ok(()),
        Err(e) => Err(format!(
            "the run stopped ({}: {}) after {} calls, under limits of {} calls and {} steps, where a value was due\n{}",
            e.kind.as_str(),
            e.message,
            run.calls.len(),
            l.max_calls,
            l.max_steps,
            p.describe()
        )),
    }
}

/// (b) Every call made (undos included) performs effects within the
/// program's static effects.
pub fn effects_within(p: &Prepared, run: &Run) -> Result<(), String> {
    for c in &run.calls {
        let Some(sig) = p.ir.tools.iter().find(|t| *t.name == *c.tool) else {
            return Err(format!(
                "call of an undeclared tool {}\n{}",
                c.tool,
                p.describe()
            ));
        };
        if !sig.effects.is_subset(&p.ir.effects) {
            return Err(format!(
                "call {} of {} performs {}, outside the program's effects {}\n{}",
                c.id,
                c.tool,
                sig.effects,
                p.ir.effects,
                p.describe()
            ));
        }
    }
    Ok(())
}

/// Every string in `j`, for counting tokens.
fn strings<'j>(j: &'j Json, out: &mut Vec<&'j str>) {
    match j {
        Json::String(s) => out.push(s),
        Json::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Json::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// (c) Every linear value handed out (a token in a tool's result, an
/// approval) is consumed exactly once: it appears in exactly one call's
/// argument (undos, which are given a call's input or output again, aside)
/// or in the final value. On every ending: a run that ends with a value
/// consumed each exactly once; a run stopped early (a limit) at most once.
pub fn linear_once(p: &Prepared, run: &Run) -> Result<(), String> {
    let value = run.result.as_ref().ok().map(|v| v.to_json());
    let mut seen: Vec<&str> = Vec::new();
    for c in run.calls.iter().filter(|c| !c.undo) {
        strings(&c.arg, &mut seen);
    }
    if let Some(value) = &value {
        strings(value, &mut seen);
    }
    for token in &run.minted {
        let n = seen.iter().filter(|s| **s == token).count();
        let right = if value.is_some() { n == 1 } else { n <= 1 };
        if !right {
            return Err(format!(
                "linear value {token:?} was consumed {n} times\ncalls: {:#?}\n{}",
                run.calls,
                p.describe()
            ));
        }
    }
    Ok(())
}

/// (d) Two runs with the same outcomes end the same way and make the same
/// calls.
pub fn deterministic(p: &Prepared, first: &Run) -> Result<(), String> {
    let second = run_scripted(p);
    if first.ending() != second.ending() {
        return Err(format!(
            "two runs ended differently: {:?} then {:?}\n{}",
            first.ending(),
            second.ending(),
            p.describe()
        ));
    }
    if first.calls != second.calls {
        return Err(format!(
            "two runs made different calls:\n{:#?}\nthen\n{:#?}\n{}",
            first.calls,
            second.calls,
            p.describe()
        ));
    }
    Ok(())
}

/// A random profile for the control-plane run, so that calls are denied
/// by every rule a program can meet: an allow list leaving out a tool
/// (`allowlist`), a deny list (`denylist`), a grant of some effects
/// (`effects`), a session budget (`session_budget`) and per-tool budgets
/// (`tool_budget`); approvals allowed or refused, dry runs.
fn profile(p: &Prepared) -> Profile {
    let mut rng = Rng::new(p.case.outcomes.rotate_left(17));
    let mut toml = String::from("[profile]\nname = \"generated\"\n");
    let names: Vec<String> =
        p.ir.tools
            .iter()
            .map(|t| format!("{:?}", t.name.to_string()))
            .collect();
    if rng.chance(10) {
        let allow: Vec<&String> = names.iter().filter(|_| rng.chance(80)).collect();
        toml.push_str(&format!(
            "allow = [{}]\n",
            allow
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let deny: Vec<&String> = names.iter().filter(|_| rng.chance(10)).collect();
    toml.push_str(&format!(
        "deny = [{}]\n",
        deny.iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if rng.chance(10) {
        // Some of the program's effects (a tool performing another is denied).
        let granted: Vec<String> =
            p.ir.effects
                .labels()
                .filter(|_| rng.chance(60))
                .map(|l| format!("{l:?}"))
                .collect();
        toml.push_str(&format!("effects = [{}]\n", granted.join(", ")));
    }
    if rng.chance(20) {
        toml.push_str(&format!("max_calls = {}\n", rng.below(6)));
    }
    let approvals = if rng.chance(75) { "allow" } else { "deny" };
    toml.push_str(&format!("approvals = \"{approvals}\"\n"));
    toml.push_str(&format!("dry_run = {}\n", rng.chance(10)));
    for n in &names {
        if rng.chance(8) {
            toml.push_str(&format!(
                "[profile.tools.{n}]\nmax_calls = {}\n",
                rng.below(3)
            ));
        }
    }
    Profile::from_toml(&toml, "generated")
        .expect("a valid profile")
        .expect("a profile")
}

/// What a control-plane run ended with, how its replay went, and which
/// calls its profile denied.
pub struct Replayed {
    pub live: Result<Json, String>,
    pub events: usize,
    /// The calls denied, by the rule that denied them.
    pub denied: BTreeMap<String, u64>,
}

/// (e) A run through the control plane, logged, then replayed from its log
/// (no tool called): the log verifies, the replay makes exactly the
/// recorded calls and reaches the same value.
pub fn replay_reproduces(p: &Prepared) -> Result<Replayed, String> {
    let profile = profile(p);
    let tools = Scripted::new(&p.ir.tools, p.case.outcomes);
    let log = MemoryLog::new(SESSION).map_err(|e| e.to_string())?;
    let mut plane = ControlPlane::new(tools, profile.clone(), &p.ir.tools, log, SESSION.into())
        .with_limits(limits(&p.case));
    plane.record(EventBody::SessionStarted {
        lt_version: "test".into(),
        program: p.gen.source.clone(),
        program_hash: lt::log::sha256_hex(p.gen.source.as_bytes()),
        profile: profile.to_json(),
        registry_hash: lt::log::sha256_hex(b""),
        limits: json!({}),
    })?;
    let (live, _) = run(&p.ir, &mut plane, &limits(&p.case));
    if let Err(e) = &live {
        if e.kind == RunErrorKind::Internal {
            return Err(format!(
                "internal error under the control plane: {}\n{}",
                e.message,
                p.describe()
            ));
        }
    }
    let mut log = plane.into_sink();
    let live = live
        .as_ref()
        .map(Value::to_json)
        .map_err(|e| format!("{}: {}", e.kind.as_str(), e.message));
    log.append(EventBody::SessionEnded {
        status: if live.is_ok() { "ok" } else { "error" }.into(),
        value: live.clone().ok(),
        r#type: None,
        error: None,
        calls: 0,
        steps: 0,
    })
    .map_err(|e| e.to_string())?;
    let report = verify(&log.to_jsonl());
    if !report.ok {
        return Err(format!(
            "the log does not verify: {report}\n{}",
            p.describe()
        ));
    }
    let events = log.events();
    let recorded = Profile::from_json(&profile.to_json())?;
    let mut replay = ReplayHost::new(events, recorded, &p.ir.tools).with_limits(limits(&p.case));
    let (replayed, _) = run(&p.ir, &mut replay, &limits(&p.case));
    if let Some(d) = replay.divergence() {
        return Err(format!(
            "the replay diverges at event {}: expected {}, the program issued {}\n{}",
            d.seq,
            d.expected,
            d.issued,
            p.describe()
        ));
    }
    let replayed = replayed
        .as_ref()
        .map(Value::to_json)
        .map_err(|e| format!("{}: {}", e.kind.as_str(), e.message));
    if replayed != live {
        return Err(format!(
            "the replay ended with {replayed:?}, the live run with {live:?}\n{}",
            p.describe()
        ));
    }
    let mut denied: BTreeMap<String, u64> = BTreeMap::new();
    for e in events {
        if let EventBody::Decided {
            decision: Decision::Deny,
            rule,
            ..
        } = &e.body
        {
            *denied.entry(rule.clone()).or_default() += 1;
        }
    }
    Ok(Replayed {
        live,
        events: events.len(),
        denied,
    })
}

/// (f) Printing the parsed program gives its text back (so parsing the
/// printed tree gives the same tree, the printer being faithful), and the
/// reparsed tree checks to the same type and effects.
pub fn round_trips(p: &Prepared) -> Result<(), String> {
    let (parsed, diags) = lt::syntax::parse(&p.gen.source);
    if !diags.is_empty() {
        return Err(format!(
            "the printed program does not parse: {diags:?}\n{}",
            p.describe()
        ));
    }
    let again = lt::syntax::print::print_program(&parsed);
    if again != p.gen.source {
        return Err(format!(
            "printing the reparsed program differs:\n{again}\n{}",
            p.describe()
        ));
    }
    let analysis = lt::types::check_program(parsed, Vec::new());
    if !analysis.is_ok()
        || analysis.ty.to_string() != p.ir.ty.to_string()
        || analysis.effects != p.ir.effects
    {
        return Err(format!(
            "the reparsed program checks differently: {} {} vs {} {}\n{}",
            analysis.ty,
            analysis.effects,
            p.ir.ty,
            p.ir.effects,
            p.describe()
        ));
    }
    Ok(())
}
