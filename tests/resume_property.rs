//! Resume, as a property (quickcheck): for every example program, random
//! tool outcomes, a random profile and a random point where the session is
//! cut (between two events, or in the middle of a line), resuming the cut
//! log reaches the value of the uninterrupted session, runs again no call
//! whose outcome the log holds, leaves a log that verifies, and that log
//! replays to the same value.
//!
//! Tools here are idempotent and answer by call identity (the same call,
//! the same answer), as a tool keyed on `LT_IDEMPOTENCY_KEY` would: that is
//! what makes "the same value" the expected result. (Non-idempotent tools
//! cut short are covered end to end by `tests/resume.rs`.)

use lt::control::profile::Profile;
use lt::control::replay::ReplayHost;
use lt::control::resume::ResumeHost;
use lt::control::{ControlPlane, Venue};
use lt::ir::Ir;
use lt::log::{verify, EventBody, LogWriter, MemoryLog};
use lt::runtime::eval::run;
use lt::runtime::host::{CallRequest, Host, Outcome};
use lt::runtime::limits::Limits;
use quickcheck::{Arbitrary, Gen, QuickCheck};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const SESSION: &str = "00112233445566778899aabbccddeeff";

mod support;

/// A random case: the tools' behaviour (a seed per call identity), the
/// profile's knobs, the program, and where the log is cut.
#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    deny_mask: u16,
    max_calls: Option<u8>,
    dry_run: bool,
    which: usize,
    /// Cut after this many lines (modulo the log's length).
    cut: usize,
    /// Also keep half of the next line (a write cut short).
    torn: bool,
}

impl Arbitrary for Case {
    fn arbitrary(g: &mut Gen) -> Case {
        Case {
            seed: u64::arbitrary(g),
            deny_mask: u16::arbitrary(g) & u16::arbitrary(g) & u16::arbitrary(g),
            max_calls: if bool::arbitrary(g) {
                Some(u8::arbitrary(g) % 6)
            } else {
                None
            },
            dry_run: u8::arbitrary(g) % 5 == 0,
            which: usize::arbitrary(g),
            cut: usize::arbitrary(g),
            torn: bool::arbitrary(g),
        }
    }
}

fn profile_for(case: &Case, ir: &Ir) -> Profile {
    let deny: Vec<String> = ir
        .tools
        .iter()
        .enumerate()
        .filter(|(i, _)| case.deny_mask & (1 << (i % 16)) != 0)
        .map(|(_, t)| format!("{:?}", t.name.to_string()))
        .collect();
    let mut toml = format!(
        "[profile]\nname = \"random\"\ndeny = [{}]\n",
        deny.join(", ")
    );
    if let Some(n) = case.max_calls {
        toml.push_str(&format!("max_calls = {n}\n"));
    }
    toml.push_str(&format!("dry_run = {}\n", case.dry_run));
    Profile::from_toml(&toml, "random")
        .expect("valid")
        .expect("profile")
}

/// Idempotent tools: the answer depends only on the call identity and the
/// seed. Every execution is counted by call identity.
struct Tools<'a> {
    ir: &'a Ir,
    seed: u64,
    runs: BTreeMap<String, usize>,
}

impl Host for Tools<'_> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        let id = request.id.to_string();
        *self.runs.entry(id.clone()).or_insert(0) += 1;
        let sig = self
            .ir
            .tools
            .iter()
            .find(|t| *t.name == *request.tool)
            .expect("declared");
        let pick = id.bytes().fold(self.seed, |h, b| {
            h.wrapping_mul(31).wrapping_add(u64::from(b))
        });
        support::answer(sig, pick)
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

fn ended(value: &Result<Json, String>) -> EventBody {
    EventBody::SessionEnded {
        status: if value.is_ok() { "ok" } else { "error" }.into(),
        value: value.clone().ok(),
        r#type: None,
        error: value
            .clone()
            .err()
            .map(|m| json!({"kind": "run", "message": m})),
        calls: 0,
        steps: 0,
    }
}

fn traits(ir: &Ir) -> (BTreeMap<String, Venue>, BTreeSet<String>) {
    let names: BTreeSet<String> = ir.tools.iter().map(|t| t.name.to_string()).collect();
    let venues = names.iter().map(|n| (n.clone(), Venue::Server)).collect();
    (venues, names)
}

fn temp_log(case: &Case) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "lt-resume-prop-{}-{}-{}.jsonl",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        case.seed % 1000
    ))
}

fn check(ir: &Ir, case: &Case) -> Result<(), String> {
    let profile = profile_for(case, ir);
    let limits = Limits::default();
    let (venues, idempotent) = traits(ir);
    // The uninterrupted session.
    let tools = Tools {
        ir,
        seed: case.seed,
        runs: BTreeMap::new(),
    };
    let log = MemoryLog::new(SESSION).map_err(|e| e.to_string())?;
    let mut plane = ControlPlane::new(tools, profile.clone(), &ir.tools, log, SESSION.into())
        .with_tool_traits(venues.clone(), idempotent.clone());
    plane.record(started(&profile))?;
    let (result, _) = run(ir, &mut plane, &limits);
    let value = result.map(|v| v.to_json()).map_err(|e| e.message);
    let text = plane.into_sink().to_jsonl();
    // Cut it: keep `cut` lines (at least session_started, never
    // session_ended), and maybe half of the next.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let keep = 1 + case.cut % lines.len().max(1);
    let mut prefix: String = lines[..keep.min(lines.len())].concat();
    if case.torn && keep < lines.len() {
        prefix.push_str(&lines[keep][..lines[keep].len() / 2]);
    }
    let path = temp_log(case);
    std::fs::write(&path, &prefix).map_err(|e| e.to_string())?;
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _remove = Remove(path.clone());
    let reopened = match LogWriter::reopen(&path) {
        Ok(r) => r,
        // The cut kept the whole session: nothing to resume.
        Err(lt::log::ReopenError::Ended) => return Ok(()),
        Err(e) => return Err(format!("reopen: {e}")),
    };
    let recorded_outcomes: BTreeSet<String> = reopened
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.body,
                EventBody::Completed { .. } | EventBody::Failed { .. } | EventBody::TimedOut { .. }
            )
        })
        .filter_map(|e| e.body.call_id().map(str::to_string))
        .collect();
    // Resume it.
    let tools = Tools {
        ir,
        seed: case.seed,
        runs: BTreeMap::new(),
    };
    let live = ControlPlane::new(
        tools,
        profile.clone(),
        &ir.tools,
        reopened.writer,
        SESSION.into(),
    )
    .with_tool_traits(venues, idempotent);
    let replay = ReplayHost::new(&reopened.events, profile.clone(), &ir.tools).resuming();
    let marker = EventBody::SessionResumed {
        lt_version: "test".into(),
        registry_hash: lt::log::sha256_hex(b""),
        dropped_bytes: reopened.dropped_bytes,
    };
    let mut host = ResumeHost::new(replay, live, marker);
    let (resumed, _) = run(ir, &mut host, &limits);
    if let Some(d) = host.divergence() {
        return Err(format!("resume diverged: {d}"));
    }
    host.go_live()?;
    let mut plane = host.into_live().ok_or("not live")?;
    let resumed = resumed.map(|v| v.to_json()).map_err(|e| e.message);
    if resumed != value {
        return Err(format!(
            "resumed to {resumed:?}, the whole run gave {value:?}"
        ));
    }
    for (id, n) in &plane.inner().runs {
        if recorded_outcomes.contains(id) {
            return Err(format!("{id} ran again although the log holds its outcome"));
        }
        if *n > 1 {
            return Err(format!("{id} ran {n} times in the resumed run"));
        }
    }
    plane.record(ended(&resumed))?;
    drop(plane);
    // The resumed log verifies and replays to the same value.
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let report = verify(&text);
    if !report.ok || report.incomplete_tail {
        return Err(format!("the resumed log does not verify: {report}"));
    }
    let events = lt::log::read_log(&text).map_err(|e| e.to_string())?;
    let mut replay = ReplayHost::new(&events, profile, &ir.tools);
    let (replayed, _) = run(ir, &mut replay, &limits);
    if let Some(d) = replay.divergence() {
        return Err(format!("replay of the resumed log diverged: {d}"));
    }
    let replayed = replayed.map(|v| v.to_json()).map_err(|e| e.message);
    if replayed != value {
        return Err(format!("replay gave {replayed:?}, the run {value:?}"));
    }
    Ok(())
}

thread_local! {
    static PROGRAMS: Vec<(String, Ir)> = support::example_programs();
}

fn prop(case: Case) -> bool {
    PROGRAMS.with(|programs| {
        let (name, ir) = &programs[case.which % programs.len()];
        match check(ir, &case) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("{name}: {e}\n{case:?}");
                false
            }
        }
    })
}

#[test]
fn a_cut_session_resumes_to_the_value_of_the_whole_run() {
    QuickCheck::new()
        .tests(400)
        .quickcheck(prop as fn(Case) -> bool);
}
