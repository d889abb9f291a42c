//! The control plane: profiles, the constraint pipeline, and the events a
//! session records (through the library, with a scripted inner host).

use lt::control::pipeline::Pipeline;
use lt::control::profile::Profile;
use lt::control::ControlPlane;
use lt::ir::lower::lower;
use lt::log::{EventBody, MemoryLog};
use lt::runtime::eval::run;
use lt::runtime::host::{Answer, CallRequest, Host, Outcome, ValueCall};
use lt::runtime::limits::Limits;
use lt::runtime::value::Value;
use lt::runtime::wire::Wire;
use serde_json::{json, Value as Json};
use std::rc::Rc;

/// Answers every call with `answer`, recording the tools it was asked to run.
struct Tools {
    answer: Json,
    ran: Vec<String>,
    keys: Vec<Option<String>>,
    /// Says its tools see no idempotency key.
    keyless: bool,
}

impl Host for Tools {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.ran.push(request.tool.to_string());
        self.keys.push(request.idempotency_key.map(str::to_string));
        Ok(self.answer.clone())
    }

    fn uses_idempotency_keys(&self) -> bool {
        !self.keyless
    }
}

const SESSION: &str = "0123456789abcdef0123456789abcdef";

const PROGRAM: &str = r#"
tool lookup: String -{Read}-> {id: String, cents: Int};
tool refund: {id: String, cents: Int} -{Write}-> {tx: String};
match exec tool lookup "c1" {
  Ok(a) => match exec tool refund {id = a.id, cents = a.cents} {
    Ok(r) => "refunded " ++ r.tx,
    Err(e) => e
  },
  Err(e) => e
}
"#;

fn profile(toml: &str) -> Profile {
    Profile::from_toml(toml, "profile.toml")
        .expect("valid profile")
        .expect("a [profile] table")
}

/// PROGRAM, checked.
fn checked() -> lt::types::CheckedProgram {
    lt::types::check_source(PROGRAM)
        .into_checked()
        .expect("checked")
}

/// Tools answering `answer` to every call, with keys.
fn answering(answer: Json) -> Tools {
    Tools {
        answer,
        ran: Vec::new(),
        keys: Vec::new(),
        keyless: false,
    }
}

/// Runs PROGRAM under `profile`; the value, the tools that really ran, and the events.
fn session(profile: Profile, answer: Json) -> (Value, Vec<String>, Vec<EventBody>) {
    let ir = lower(&checked()).expect("lowered");
    let tools = answering(answer);
    let mut plane = ControlPlane::new(
        tools,
        profile,
        &ir.tools,
        MemoryLog::new(SESSION).expect("memory log"),
        SESSION.into(),
    );
    let (result, _) = run(&ir, &mut plane, &Limits::default());
    let value = result.expect("the run finishes");
    assert!(plane.log_error().is_none());
    let inner_ran = plane.inner().ran.clone();
    let events = plane
        .into_sink()
        .events()
        .iter()
        .map(|e| e.body.clone())
        .collect();
    (value, inner_ran, events)
}

fn kinds(events: &[EventBody]) -> Vec<&'static str> {
    events.iter().map(EventBody::kind).collect()
}

fn s(v: &str) -> Value {
    Value::Str(Rc::from(v))
}

#[test]
fn an_allowed_session_records_proposal_decision_schedule_and_outcome() {
    let (value, ran, events) = session(
        Profile::default(),
        json!({"id": "c1", "cents": 5, "tx": "t9"}),
    );
    assert_eq!(value, s("refunded t9"));
    assert_eq!(ran, ["lookup", "refund"]);
    assert_eq!(
        kinds(&events),
        [
            "proposed",
            "decided",
            "scheduled",
            "completed",
            "proposed",
            "decided",
            "scheduled",
            "completed"
        ]
    );
    match &events[1] {
        EventBody::Decided { decision, rule, .. } => {
            assert_eq!(*decision, lt::log::Decision::Allow);
            assert_eq!(rule, "policy");
        }
        other => panic!("{other:?}"),
    }
    match &events[3] {
        EventBody::Completed { output, result, .. } => {
            // The raw output keeps the extra field; the result is what the program saw.
            assert_eq!(output, &json!({"id": "c1", "cents": 5, "tx": "t9"}));
            assert_eq!(result, &json!({"Ok": {"id": "c1", "cents": 5}}));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_denied_tool_never_runs_and_the_program_handles_the_denial() {
    let p = profile("[profile]\nname = \"readonly\"\nallow = [\"lookup\"]\n");
    let (value, ran, events) = session(p, json!({"id": "c1", "cents": 5, "tx": "t9"}));
    assert_eq!(ran, ["lookup"]);
    assert_eq!(
        value,
        s("denied: allowlist: tool refund is not among the tools profile readonly allows")
    );
    assert_eq!(
        kinds(&events),
        [
            "proposed",
            "decided",
            "scheduled",
            "completed",
            "proposed",
            "decided"
        ]
    );
}

#[test]
fn each_rule_of_the_pipeline() {
    let checked = checked();
    let (lookup, refund) = (&checked.tools[0], &checked.tools[1]);
    let arg = json!({"id": "c1", "cents": 5});
    let decide = |toml: &str, tool, arg: &Json| Pipeline::new(profile(toml)).decide(tool, arg);
    let d = decide("[profile]\ndeny = [\"refund\"]\n", refund, &arg);
    assert_eq!((d.allow, d.rule), (false, "denylist"));
    let d = decide("[profile]\neffects = [\"Read\"]\n", refund, &arg);
    assert_eq!((d.allow, d.rule), (false, "effects"));
    assert_eq!(
        d.reason,
        "tool refund performs {Write}, which profile default does not grant (it grants {Read})"
    );
    let d = decide("[profile]\neffects = [\"Read\"]\n", lookup, &json!("c1"));
    assert_eq!((d.allow, d.rule), (true, "policy"));
    let d = decide("[profile]\n", refund, &json!({"id": 5}));
    assert_eq!((d.allow, d.rule), (false, "arguments"));
    // Budgets count allowed calls only.
    let mut p = Pipeline::new(profile(
        "[profile]\nmax_calls = 2\n[profile.tools.refund]\nmax_calls = 1\n",
    ));
    assert!(p.decide(refund, &arg).allow);
    let d = p.decide(refund, &arg);
    assert_eq!((d.allow, d.rule), (false, "tool_budget"));
    assert!(p.decide(lookup, &json!("c1")).allow);
    let d = p.decide(lookup, &json!("c1"));
    assert_eq!((d.allow, d.rule), (false, "session_budget"));
}

#[test]
fn a_dry_run_logs_effectful_calls_without_running_them() {
    let p = profile(
        "[profile]\ndry_run = true\n[profile.tools.refund]\ndry_run_result = { tx = \"dry\" }\n",
    );
    let (value, ran, events) = session(p, json!({"id": "c1", "cents": 5, "tx": "t9"}));
    // `lookup` and `refund` both have effects: neither runs.
    assert!(ran.is_empty(), "{ran:?}");
    assert_eq!(value, s("refunded dry"));
    assert_eq!(
        kinds(&events),
        [
            "proposed",
            "decided",
            "completed",
            "proposed",
            "decided",
            "completed"
        ]
    );
    match &events[1] {
        EventBody::Decided { rule, .. } => assert_eq!(rule, "dry_run"),
        other => panic!("{other:?}"),
    }
    match &events[2] {
        // No configured answer for lookup: the empty value of its output type.
        EventBody::Completed { output, .. } => assert_eq!(output, &json!({"id": "", "cents": 0})),
        other => panic!("{other:?}"),
    }
}

#[test]
fn calls_carry_an_idempotency_key_of_session_and_call_identity() {
    let ir = lower(&checked()).expect("lowered");
    // The keys each tool call of one run of PROGRAM in `session` carries.
    let keys_in = |session: &str| {
        let tools = Tools {
            answer: json!({"id": "c1", "cents": 5, "tx": "t9"}),
            ran: Vec::new(),
            keys: Vec::new(),
            keyless: false,
        };
        let mut plane = ControlPlane::new(
            tools,
            Profile::default(),
            &ir.tools,
            MemoryLog::new(session).expect("memory log"),
            session.into(),
        );
        let _ = run(&ir, &mut plane, &Limits::default());
        plane.inner().keys.clone()
    };
    let keys = keys_in(SESSION);
    assert_eq!(keys.len(), 2);
    assert!(
        keys.iter().all(|k| k
            .as_deref()
            .is_some_and(|k| k.starts_with(&format!("{SESSION}:n")))),
        "{keys:?}"
    );
    assert_ne!(keys[0], keys[1]);
    // A re-run of the same calls in the same session (what a resume does)
    // carries the same keys; another session, other keys.
    assert_eq!(keys_in(SESSION), keys, "a re-run got other keys");
    let other = "fedcba9876543210fedcba9876543210";
    let other_keys = keys_in(other);
    assert_eq!(other_keys.len(), 2);
    for (mine, theirs) in keys.iter().zip(&other_keys) {
        assert_ne!(mine, theirs);
    }
}

/// A host whose tools see no key gets none when there is no log, and the
/// log of a session that keeps one is the same whether its host reads keys
/// or not; a host that reads keys gets them with or without a log.
#[test]
fn keys_are_built_for_a_host_without_them_only_when_logged() {
    let ir = lower(&checked()).expect("lowered");
    let tools = |keyless| Tools {
        answer: json!({"id": "c1", "cents": 5, "tx": "t9"}),
        ran: Vec::new(),
        keys: Vec::new(),
        keyless,
    };
    let unlogged = |keyless| {
        let mut plane = ControlPlane::new(
            tools(keyless),
            Profile::default(),
            &ir.tools,
            lt::log::Discard,
            SESSION.into(),
        );
        let (result, _) = run(&ir, &mut plane, &Limits::default());
        assert_eq!(result.expect("runs"), Value::Str(Rc::from("refunded t9")));
        plane.inner().keys.clone()
    };
    let logged = |keyless| {
        let mut plane = ControlPlane::new(
            tools(keyless),
            Profile::default(),
            &ir.tools,
            MemoryLog::new(SESSION).expect("memory log"),
            SESSION.into(),
        );
        let _ = run(&ir, &mut plane, &Limits::default());
        let events: Vec<EventBody> = plane
            .into_sink()
            .events()
            .iter()
            .map(|e| e.body.clone())
            .collect();
        events
    };
    assert_eq!(unlogged(true), vec![None, None]);
    let keyed = unlogged(false);
    assert!(
        keyed
            .iter()
            .all(|k| k.as_deref().is_some_and(|k| k.starts_with(SESSION))),
        "{keyed:?}"
    );
    let events = logged(true);
    assert_eq!(events, logged(false));
    let scheduled: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::Scheduled {
                idempotency_key, ..
            } => Some(Some(idempotency_key.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        scheduled, keyed,
        "the log's keys are those a keyed host sees"
    );
}

#[test]
fn profile_errors_have_positions() {
    let e = Profile::from_toml("[profile]\nalow = [\"x\"]\n", "p.toml").expect_err("unknown key");
    assert_eq!((e.line, e.column), (Some(2), Some(1)));
    assert!(e.message.contains("unknown field `alow`"), "{}", e.message);
    let e =
        Profile::from_toml("[profile]\neffects = [\"write\"]\n", "p.toml").expect_err("bad label");
    assert_eq!(e.line, Some(2));
    assert!(
        e.message.contains("`write` is not an effect label"),
        "{}",
        e.message
    );
    let e = Profile::from_toml("[profile.tools.t]\ntimeout_ms = 0\n", "p.toml").expect_err("zero");
    assert_eq!(e.line, Some(2), "{e}");
    assert!(
        Profile::from_toml("[tools.t]\nfixed = { ok = 1 }\n", "tools.toml")
            .expect("ok")
            .is_none()
    );
}

/// A sink that keeps what it was told of the idempotent tools.
#[derive(Default)]
struct ToldTools(Vec<Vec<String>>);

impl lt::log::EventSink for ToldTools {
    fn append(&mut self, _: EventBody) -> std::io::Result<()> {
        Ok(())
    }

    fn idempotent_tools(&mut self, tools: &std::collections::BTreeSet<String>) {
        self.0.push(tools.iter().cloned().collect());
    }
}

#[test]
fn a_resumed_session_tells_its_sink_of_no_idempotent_tool() {
    // Resumed, every call's `scheduled` commits before the call starts, so
    // that the log counts each start (MAX_STARTS): a buffered one, lost
    // with the process, would let a call that kills it run on every resume.
    let ir = lower(&checked()).expect("lowered");
    // What the sink of a session with `lookup` declared idempotent is told.
    let told = |resumed: bool| {
        let plane = ControlPlane::new(
            answering(json!({})),
            profile("[profile]\n"),
            &ir.tools,
            ToldTools::default(),
            SESSION.into(),
        )
        .with_tool_traits(Default::default(), ["lookup".to_string()].into());
        let plane = if resumed { plane.resumed() } else { plane };
        plane.into_sink().0
    };
    assert_eq!(told(false), vec![vec!["lookup".to_string()]]);
    assert_eq!(told(true).last(), Some(&Vec::<String>::new()));
}

/// Answers like `Tools`, and takes a call's argument as a value when
/// `wire` (answering on the wire, as the Python package's host does),
/// recording by which door each call came and its time limit.
struct Doors {
    tools: Tools,
    wire: bool,
    doors: Vec<(&'static str, Json, Option<std::time::Duration>)>,
}

impl Host for Doors {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.doors
            .push(("json", request.arg.clone(), request.time_left));
        self.tools.call(request)
    }

    fn uses_idempotency_keys(&self) -> bool {
        self.tools.uses_idempotency_keys()
    }

    fn call_value(&mut self, request: ValueCall<'_>) -> Option<Answer> {
        if !self.wire {
            return None;
        }
        self.doors
            .push(("value", request.arg.to_json(), request.time_left));
        self.tools.ran.push(request.tool.to_string());
        self.tools.keys.push(None);
        Some(Answer::Wire(Ok(Wire::from_json(&self.tools.answer))))
    }
}

/// What a `Doors` host saw in one session.
struct Seen {
    ran: Vec<String>,
    keys: Vec<Option<String>>,
    doors: Vec<(&'static str, Json, Option<std::time::Duration>)>,
}

#[test]
fn a_session_without_a_log_takes_the_value_door_and_ends_as_a_logged_one_does() {
    let ir = lower(&checked()).expect("lowered");
    let profiles = [
        "[profile]\n",
        "[profile]\neffects = [\"Read\"]\n",
        "[profile]\nallow = [\"refund\"]\n",
        "[profile]\nmax_calls = 1\n",
        "[profile]\n[profile.tools.refund]\nmax_calls = 0\n",
        "[profile]\n[profile.tools.lookup]\ntimeout_ms = 2500\n",
        "[profile]\ndry_run = true\n[profile.tools.refund]\ndry_run_result = { tx = \"dry\" }\n",
    ];
    let answers = [
        json!({"id": "c1", "cents": 5, "tx": "t9"}),
        // Not the declared output: the same refusal either way.
        json!({"id": "c1", "cents": "5", "tx": 9}),
    ];
    for toml in profiles {
        for answer in &answers {
            for (wire, keyless) in [(true, true), (false, true), (true, false)] {
                let through = |logged: bool| {
                    let host = Doors {
                        tools: Tools {
                            answer: answer.clone(),
                            ran: Vec::new(),
                            keys: Vec::new(),
                            keyless,
                        },
                        wire,
                        doors: Vec::new(),
                    };
                    let limits = Limits::default();
                    let seen = |h: &Doors| Seen {
                        ran: h.tools.ran.clone(),
                        keys: h.tools.keys.clone(),
                        doors: h.doors.clone(),
                    };
                    if logged {
                        let log = MemoryLog::new(SESSION).expect("memory log");
                        let mut plane =
                            ControlPlane::new(host, profile(toml), &ir.tools, log, SESSION.into());
                        let (result, _) = run(&ir, &mut plane, &limits);
                        (result.expect("runs"), seen(plane.inner()))
                    } else {
                        let sink = lt::log::Discard;
                        let mut plane =
                            ControlPlane::new(host, profile(toml), &ir.tools, sink, SESSION.into());
                        let (result, _) = run(&ir, &mut plane, &limits);
                        (result.expect("runs"), seen(plane.inner()))
                    }
                };
                let (v1, h1) = through(false);
                let (v2, h2) = through(true);
                let case = format!("{toml} {answer} wire={wire} keyless={keyless}");
                assert_eq!(v1, v2, "{case}");
                assert_eq!(h1.ran, h2.ran, "{case}");
                // The same arguments, and time limits within a second of each other.
                let limited = |h: &Seen| -> Vec<(Json, Option<u64>)> {
                    h.doors
                        .iter()
                        .map(|(_, a, t)| (a.clone(), t.map(|t| t.as_secs())))
                        .collect()
                };
                assert_eq!(limited(&h1), limited(&h2), "{case}");
                // A logged session always takes the JSON door; one without a
                // log takes the value door to a host that takes values and
                // reads no keys.
                assert!(h2.doors.iter().all(|d| d.0 == "json"), "{case}");
                let door = if wire && keyless { "value" } else { "json" };
                assert!(
                    h1.doors.iter().all(|d| d.0 == door),
                    "{case}: {:?}",
                    h1.doors
                );
                if keyless {
                    assert!(h1.keys.iter().all(Option::is_none), "{case}");
                } else {
                    assert_eq!(h1.keys, h2.keys, "{case}");
                }
            }
        }
    }
}
