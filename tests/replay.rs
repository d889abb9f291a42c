//! Properties of sessions and replay, over every example program with
//! random tool outcomes and random profiles (quickcheck):
//!
//! * every call that reaches the tools is preceded in the log by an allow
//!   decision and a `scheduled` event for the same call;
//! * every call is decided as the random profile says (allow list, deny
//!   list, effects, session budget, dry run: derived independently from the
//!   profile), and the tools receive exactly the calls it runs;
//! * the log verifies;
//! * replaying the log (no tools) makes the same calls and reaches the
//!   same value.

use lt::control::profile::Profile;
use lt::control::replay::ReplayHost;
use lt::control::ControlPlane;
use lt::ir::{lower::lower, Ir};
use lt::log::{verify, Decision, EventBody, MemoryLog};
use lt::runtime::eval::run;
use lt::runtime::host::{CallRequest, Host, Outcome};
use lt::runtime::limits::Limits;
use quickcheck::{Arbitrary, Gen, QuickCheck};
use serde_json::{json, Value as Json};
use std::collections::{BTreeSet, HashMap};

const SESSION: &str = "00112233445566778899aabbccddeeff";

mod support;

/// The tools' behaviour: for each call, by position, ok (with the empty
/// value of the output type, or a wrong shape) or a failure of some kind.
#[derive(Clone, Debug)]
struct Outcomes(Vec<u8>);

impl Arbitrary for Outcomes {
    fn arbitrary(g: &mut Gen) -> Outcomes {
        Outcomes((0..32).map(|_| u8::arbitrary(g)).collect())
    }
}

/// A random profile over the program's tools.
#[derive(Clone, Debug)]
struct Policy {
    allow_mask: u16,
    use_allow: bool,
    deny_mask: u16,
    effects: Option<Vec<bool>>,
    max_calls: Option<u8>,
    dry_run: bool,
}

impl Arbitrary for Policy {
    fn arbitrary(g: &mut Gen) -> Policy {
        Policy {
            allow_mask: u16::arbitrary(g),
            use_allow: bool::arbitrary(g),
            deny_mask: u16::arbitrary(g) & u16::arbitrary(g),
            effects: if bool::arbitrary(g) {
                Some(vec![
                    bool::arbitrary(g),
                    bool::arbitrary(g),
                    bool::arbitrary(g),
                ])
            } else {
                None
            },
            max_calls: Option::<u8>::arbitrary(g).map(|n| n % 8),
            dry_run: u8::arbitrary(g) % 5 == 0,
        }
    }
}

fn profile_for(p: &Policy, ir: &Ir) -> Profile {
    let names: Vec<String> = ir.tools.iter().map(|t| t.name.to_string()).collect();
    let pick = |mask: u16| -> BTreeSet<String> {
        names
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << (i % 16)) != 0)
            .map(|(_, n)| n.clone())
            .collect()
    };
    let mut toml = String::from("[profile]\nname = \"random\"\n");
    if p.use_allow {
        let allow: Vec<String> = pick(p.allow_mask)
            .into_iter()
            .map(|n| format!("{n:?}"))
            .collect();
        toml.push_str(&format!("allow = [{}]\n", allow.join(", ")));
    }
    let deny: Vec<String> = pick(p.deny_mask)
        .into_iter()
        .map(|n| format!("{n:?}"))
        .collect();
    toml.push_str(&format!("deny = [{}]\n", deny.join(", ")));
    if let Some(e) = &p.effects {
        let labels: Vec<&str> = ["\"Read\"", "\"Write\"", "\"Network\""]
            .into_iter()
            .zip(e)
            .filter(|(_, on)| **on)
            .map(|(l, _)| l)
            .collect();
        toml.push_str(&format!("effects = [{}]\n", labels.join(", ")));
    }
    if let Some(n) = p.max_calls {
        toml.push_str(&format!("max_calls = {n}\n"));
    }
    toml.push_str(&format!("dry_run = {}\n", p.dry_run));
    Profile::from_toml(&toml, "random")
        .expect("valid")
        .expect("profile")
}

/// The tools: answers from `Outcomes`, recording every call it receives.
struct Tools<'a> {
    ir: &'a Ir,
    outcomes: Outcomes,
    received: Vec<(String, String)>,
}

impl Host for Tools<'_> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        let n = self.received.len();
        self.received
            .push((request.id.to_string(), request.tool.to_string()));
        let sig = self
            .ir
            .tools
            .iter()
            .find(|t| *t.name == *request.tool)
            .expect("declared");
        let pick = self.outcomes.0[n % self.outcomes.0.len()];
        support::answer(sig, u64::from(pick))
    }
}

fn started(profile: &Profile) -> EventBody {
    EventBody::SessionStarted {
        lt_version: "test".into(),
        program: String::new(),
        program_hash: lt::log::sha256_hex(b""),
        profile: profile.to_json(),
        registry_hash: lt::log::sha256_hex(b""),
        limits: json!({}),
    }
}

fn check_session(ir: &Ir, outcomes: Outcomes, policy: &Policy) -> Result<(), String> {
    let profile = profile_for(policy, ir);
    let tools = Tools {
        ir,
        outcomes,
        received: Vec::new(),
    };
    let log = MemoryLog::new(SESSION).map_err(|e| e.to_string())?;
    let mut plane = ControlPlane::new(tools, profile.clone(), &ir.tools, log, SESSION.into());
    plane.record(started(&profile))?;
    let limits = Limits::default();
    let (live, _) = run(ir, &mut plane, &limits);
    let received = plane.inner().received.clone();
    let mut log = plane.into_sink();
    let value = live
        .as_ref()
        .map(|v| v.to_json())
        .map_err(|e| e.message.clone());
    log.append(EventBody::SessionEnded {
        status: if value.is_ok() { "ok" } else { "error" }.into(),
        value: value.clone().ok(),
        r#type: None,
        error: None,
        calls: 0,
        steps: 0,
    })
    .map_err(|e| e.to_string())?;
    // The log verifies.
    let report = verify(&log.to_jsonl());
    if !report.ok {
        return Err(format!("log does not verify: {report}"));
    }
    let events = log.events();
    // Every call the tools received was allowed and scheduled first; no
    // denied call reached them.
    let mut allowed: HashMap<String, bool> = HashMap::new();
    let mut scheduled: BTreeSet<String> = BTreeSet::new();
    for e in events {
        match &e.body {
            EventBody::Decided {
                call_id, decision, ..
            } => {
                allowed.insert(call_id.clone(), *decision == Decision::Allow);
            }
            EventBody::Scheduled { call_id, .. } => {
                if allowed.get(call_id) != Some(&true) {
                    return Err(format!("{call_id} scheduled without an allow decision"));
                }
                scheduled.insert(call_id.clone());
            }
            _ => {}
        }
    }
    for (id, tool) in &received {
        if !scheduled.contains(id) {
            return Err(format!("{tool} ({id}) ran without being scheduled"));
        }
    }
    // Each call the program made (its `proposed` event) is decided as the
    // random policy says, derived here from the policy alone; the tools
    // received exactly the calls it runs, in order.
    let expected = expected_runs(ir, policy, events)?;
    if received != expected {
        return Err(format!(
            "the tools received {received:?}; the policy runs {expected:?}"
        ));
    }
    // Replay reproduces the calls and the value.
    // The profile as the log records it (what `lt replay` reads back).
    let recorded = Profile::from_json(&profile.to_json())?;
    if recorded != profile {
        return Err(format!(
            "profile does not survive the log: {profile:?} vs {recorded:?}"
        ));
    }
    let mut replay = ReplayHost::new(events, recorded, &ir.tools);
    let (replayed, _) = run(ir, &mut replay, &limits);
    if let Some(d) = replay.divergence() {
        return Err(d.to_string());
    }
    let replayed = replayed.map(|v| v.to_json()).map_err(|e| e.message.clone());
    if replayed != value {
        return Err(format!("replay gave {replayed:?}, the live run {value:?}"));
    }
    Ok(())
}

/// The rule that decides a call of `tool` under `policy`, given how many
/// calls were allowed before it (the order of `Pipeline::decide`: allow
/// list, deny list, effects, session budget, dry run).
fn expected_rule(ir: &Ir, policy: &Policy, tool: &str, allowed_before: u32) -> &'static str {
    let index = ir
        .tools
        .iter()
        .position(|t| *t.name == *tool)
        .expect("declared");
    let picked = |mask: u16| mask & (1 << (index % 16)) != 0;
    let effects = &ir.tools[index].effects;
    let granted = |label: &str| {
        let Some(on) = &policy.effects else {
            return true;
        };
        ["Read", "Write", "Network"]
            .iter()
            .zip(on)
            .any(|(l, on)| *on && *l == label)
    };
    if policy.use_allow && !picked(policy.allow_mask) {
        "allowlist"
    } else if picked(policy.deny_mask) {
        "denylist"
    } else if !effects.labels().all(granted) {
        "effects"
    } else if policy
        .max_calls
        .is_some_and(|max| allowed_before >= u32::from(max))
    {
        "session_budget"
    } else if policy.dry_run && !effects.is_empty() {
        "dry_run"
    } else {
        "policy"
    }
}

/// Checks every decision of the log against [`expected_rule`]; returns the
/// calls the policy runs (allowed, not dry run), in order.
fn expected_runs(
    ir: &Ir,
    policy: &Policy,
    events: &[lt::log::Event],
) -> Result<Vec<(String, String)>, String> {
    let mut proposed: HashMap<String, String> = HashMap::new();
    let mut decided = 0;
    let mut allowed = 0;
    let mut runs = Vec::new();
    for e in events {
        match &e.body {
            EventBody::Proposed { call_id, tool, .. } => {
                proposed.insert(call_id.clone(), tool.clone());
            }
            EventBody::Decided {
                call_id,
                decision,
                rule,
                ..
            } => {
                decided += 1;
                let tool = proposed
                    .get(call_id)
                    .ok_or_else(|| format!("{call_id} decided, never proposed"))?;
                let want = expected_rule(ir, policy, tool, allowed);
                let allow = matches!(want, "dry_run" | "policy");
                let want_decision = if allow {
                    Decision::Allow
                } else {
                    Decision::Deny
                };
                if rule != want || *decision != want_decision {
                    return Err(format!(
                        "{tool} ({call_id}): decided {decision:?} by {rule}, the policy says {want_decision:?} by {want}"
                    ));
                }
                allowed += u32::from(allow);
                if want == "policy" {
                    runs.push((call_id.clone(), tool.clone()));
                }
            }
            _ => {}
        }
    }
    if decided != proposed.len() {
        return Err(format!(
            "{} calls proposed, {decided} decided",
            proposed.len()
        ));
    }
    Ok(runs)
}

thread_local! {
    static PROGRAMS: Vec<(String, Ir)> = support::example_programs();
}

fn prop(outcomes: Outcomes, policy: Policy, which: usize) -> bool {
    PROGRAMS.with(|programs| {
        let (name, ir) = &programs[which % programs.len()];
        match check_session(ir, outcomes.clone(), &policy) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("{name}: {e}\n{outcomes:?}\n{policy:?}");
                false
            }
        }
    })
}

#[test]
fn sessions_log_every_decision_and_replay_exactly() {
    let n = PROGRAMS.with(Vec::len);
    assert!(n >= 10, "only {n} programs");
    QuickCheck::new()
        .tests(300)
        .quickcheck(prop as fn(Outcomes, Policy, usize) -> bool);
}

#[test]
fn replay_reports_the_first_different_call() {
    let src = |customer: &str| {
        format!(
            "tool lookup: String -{{Read}}-> {{id: String}};\n\
             match exec tool lookup \"{customer}\" {{ Ok(a) => a.id, Err(e) => e }}\n"
        )
    };
    let lowered =
        |s: &str| lower(&lt::types::check_source(s).into_checked().expect("ok")).expect("lowered");
    let ir = lowered(&src("c1"));
    let tools = Tools {
        ir: &ir,
        outcomes: Outcomes(vec![0]),
        received: Vec::new(),
    };
    let log = MemoryLog::new(SESSION).expect("log");
    let mut plane = ControlPlane::new(tools, Profile::default(), &ir.tools, log, SESSION.into());
    plane
        .record(started(&Profile::default()))
        .expect("recorded");
    let _ = run(&ir, &mut plane, &Limits::default());
    let log = plane.into_sink();
    let other = lowered(&src("c2"));
    let mut replay = ReplayHost::new(log.events(), Profile::default(), &other.tools);
    let _ = run(&other, &mut replay, &Limits::default());
    let d = replay.divergence().expect("diverges");
    assert_eq!(d.seq, 1);
    assert_eq!(d.expected, "a call of lookup (n1) with \"c1\"");
    assert_eq!(d.issued, "a call of lookup (n1) with \"c2\"");
}

/// Runs `src` (one tool `t`, answering `answer`) under `limits`, logged.
fn logged(src: &str, answer: Json, limits: &Limits) -> (Ir, MemoryLog, Json) {
    let ir = lower(&lt::types::check_source(src).into_checked().expect("ok")).expect("lowered");
    struct Answer(Json);
    impl Host for Answer {
        fn call(&mut self, _: CallRequest<'_>) -> Outcome {
            Ok(self.0.clone())
        }
    }
    let log = MemoryLog::new(SESSION).expect("log");
    let mut plane = ControlPlane::new(
        Answer(answer),
        Profile::default(),
        &ir.tools,
        log,
        SESSION.into(),
    )
    .with_limits(limits.clone());
    plane
        .record(started(&Profile::default()))
        .expect("recorded");
    let (value, _) = run(&ir, &mut plane, limits);
    let value = value.expect("ran").to_json();
    let log = plane.into_sink();
    (ir, log, value)
}

#[test]
fn the_logged_result_is_what_the_program_received_under_the_list_limit() {
    let src =
        "tool t: Int -{Read}-> List Int;\nmatch exec tool t 1 { Ok(l) => \"ok\", Err(e) => e }\n";
    let limits = Limits {
        max_list_len: 2,
        ..Limits::default()
    };
    let (ir, log, value) = logged(src, json!([1, 2, 3]), &limits);
    let expected = "tool t returned an invalid result: a list of 3 items, more than the limit of 2";
    assert_eq!(value, json!(expected));
    let result = log
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Completed { result, .. } => Some(result.clone()),
            _ => None,
        })
        .expect("completed");
    assert_eq!(result, json!({ "Err": expected }));
    // Replay under the same limits reproduces it.
    let mut replay =
        ReplayHost::new(log.events(), Profile::default(), &ir.tools).with_limits(limits.clone());
    let (again, _) = run(&ir, &mut replay, &limits);
    assert!(replay.divergence().is_none(), "{:?}", replay.divergence());
    assert_eq!(again.expect("ran").to_json(), value);
}

#[test]
fn an_edited_result_is_a_divergence() {
    let src =
        "tool t: Int -{Read}-> {id: Int};\nmatch exec tool t 1 { Ok(r) => r.id, Err(e) => 0 }\n";
    let limits = Limits::default();
    let (ir, log, _) = logged(src, json!({"id": 5}), &limits);
    let mut events = log.into_events();
    for e in &mut events {
        if let EventBody::Completed { result, .. } = &mut e.body {
            *result = json!({"Err": "boom"});
        }
    }
    let mut replay = ReplayHost::new(&events, Profile::default(), &ir.tools);
    let _ = run(&ir, &mut replay, &limits);
    let d = replay.divergence().expect("diverges");
    assert!(!d.log_ended);
    assert_eq!(d.expected, "the result {\"Err\":\"boom\"} for n1");
    assert_eq!(
        d.issued,
        "the result {\"Ok\":{\"id\":5}}, which the recorded output gives"
    );
}

#[test]
fn a_log_cut_short_is_reported_as_ended() {
    let src =
        "tool t: Int -{Read}-> {id: Int};\nmatch exec tool t 1 { Ok(r) => r.id, Err(e) => 0 }\n";
    let (ir, log, _) = logged(src, json!({"id": 5}), &Limits::default());
    // Keep session_started, proposed, decided, scheduled: the outcome is lost.
    let events: Vec<_> = log.events()[..4].to_vec();
    let mut replay = ReplayHost::new(&events, Profile::default(), &ir.tools);
    let _ = run(&ir, &mut replay, &Limits::default());
    let d = replay.divergence().expect("diverges");
    assert!(d.log_ended, "{d}");
}

#[test]
fn a_changed_dry_run_answer_is_a_divergence() {
    let src = "tool refund: {id: String} -{Write}-> {tx: String};\n\
               match exec tool refund {id = \"c1\"} { Ok(r) => r.tx, Err(e) => e }";
    let ir = lower(&lt::types::check_source(src).into_checked().expect("ok")).expect("lowered");
    let profile = |answer: &str| {
        Profile::from_toml(
            &format!("[profile]\ndry_run = true\n[profile.tools.refund]\ndry_run_result = {{ tx = \"{answer}\" }}\n"),
            "p",
        )
        .expect("valid")
        .expect("profile")
    };
    struct Never;
    impl Host for Never {
        fn call(&mut self, _: CallRequest<'_>) -> Outcome {
            panic!("a dry run calls no tool")
        }
    }
    let log = MemoryLog::new(SESSION).expect("log");
    let mut plane = ControlPlane::new(Never, profile("DRY"), &ir.tools, log, SESSION.into());
    plane.record(started(&profile("DRY"))).expect("recorded");
    let (value, _) = run(&ir, &mut plane, &Limits::default());
    assert_eq!(value.expect("ran").to_json(), json!("DRY"));
    let log = plane.into_sink();
    let mut same = ReplayHost::new(log.events(), profile("DRY"), &ir.tools);
    let _ = run(&ir, &mut same, &Limits::default());
    assert!(same.divergence().is_none());
    let mut other = ReplayHost::new(log.events(), profile("OTHER"), &ir.tools);
    let _ = run(&ir, &mut other, &Limits::default());
    let d = other.divergence().expect("a divergence");
    assert!(d.to_string().contains("dry-run answer"), "{d}");
}
