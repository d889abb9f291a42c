//! The session engine through the library API alone (`lt::control::session`):
//! an in-memory store, a fixed approver, a session cancelled from another
//! thread, an abandoned session resumed, and 50 sessions at once on one
//! tokio runtime. Tools are real subprocesses (`sh`) where a call must take
//! time or be counted.

use lt::control::approver::FixedApprover;
use lt::control::profile::Profile;
use lt::control::report::{RunOutput, StartErrorKind};
use lt::control::session::replay::{replay, Recorded, Verdict};
use lt::control::session::{
    check_and_lower, recorded_limits, spawn, Executors, LogTarget, ProfileSource, Session,
};
use lt::log::{EventBody, EventStore, MemoryStore};
use lt::runtime::cancel::Cancel;
use lt::runtime::limits::{Limits, RunErrorKind};
use lt::source::SourceFile;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fresh folder under the target directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("session_api_{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Writes `text` as `tools.toml` in `dir` and returns its path.
fn tools_toml(dir: &Path, text: &str) -> String {
    let path = dir.join("tools.toml");
    std::fs::write(&path, text).expect("write tools.toml");
    path.to_string_lossy().into_owned()
}

/// A session of `file` with the executors and profile of `tools`, logged
/// to `store`.
fn logged<'a>(file: &'a SourceFile, tools: String, store: &'a MemoryStore) -> Session<'a> {
    Session::new(file)
        .executors(Executors::File(tools))
        .profile(ProfileSource::FromExecutors)
        .log(LogTarget::Store(store))
}

fn kinds(store: &MemoryStore, session: &str) -> Vec<&'static str> {
    store.events(session).iter().map(|e| e.kind()).collect()
}

const LOOKUP: &str = r#"
tool lookup: {id: Int} -{Read}-> {name: String};
match exec tool lookup {id = 7} {
  Ok(r) => r.name,
  Err(e) => "failed: " ++ e
}
"#;

#[test]
fn a_session_in_a_memory_store_records_verifies_and_replays() {
    let dir = scratch("memory");
    let tools = tools_toml(
        &dir,
        "[tools.lookup]\nfixed = { ok = { name = \"Ada\" } }\neffects = [\"Read\"]\n",
    );
    let file = SourceFile::new("lookup.lt", LOOKUP);
    let ir = check_and_lower(&file).ok().expect("checks");
    let store = MemoryStore::new();
    let report = logged(&file, tools, &store).run(&ir).expect("starts");
    assert_eq!(
        report
            .result
            .as_ref()
            .map(|v| v.to_string())
            .ok()
            .as_deref(),
        Some("\"Ada\"")
    );
    assert_eq!(report.stats.calls, 1);
    assert_eq!(store.sessions(), vec![report.id.clone()]);
    assert_eq!(
        kinds(&store, &report.id),
        [
            "session_started",
            "proposed",
            "decided",
            "scheduled",
            "completed",
            "session_ended"
        ]
    );
    // The output is lt run --json's.
    let out = report.output(&file, &ir).to_json_string();
    assert_eq!(
        out,
        r#"{"calls":1,"effects":["Read"],"ok":true,"steps":OK_STEPS,"type":"String","value":"Ada"}"#
            .replace("OK_STEPS", &report.stats.steps.to_string())
    );
    // Read back through the store: it verifies, and replays to the same value.
    let loaded = store.load(&report.id).expect("load");
    assert!(loaded.report.ok, "{}", loaded.report);
    let recorded = Recorded::from_events(&loaded.events).expect("session_started");
    let profile = Profile::from_json(&recorded.profile).expect("profile");
    let limits = recorded_limits(&recorded.limits).expect("limits");
    match replay(&loaded.events, &ir, profile, limits) {
        Verdict::Matches { calls, shown, .. } => {
            assert_eq!(calls, 1);
            assert_eq!(shown, "\"Ada\"");
        }
        other => panic!("replay: {other:?}"),
    }
    // A finished session cannot be reopened.
    assert!(store.reopen(&report.id).is_err());
}

const APPROVE: &str = r#"
effect Delete;
tool delete_file: {path: String, approval: !Approval} -{Delete}-> {deleted: String};
match approve tool delete_file {path = "a.txt"} {
  Ok(a) => match exec tool delete_file {path = "a.txt", approval = a} {
    Ok(d) => "deleted " ++ d.deleted,
    Err(e) => "failed: " ++ e
  },
  Err(why) => "refused: " ++ why
}
"#;

fn approval_run(granted: bool) -> (String, Vec<(String, String)>) {
    let dir = scratch(if granted { "approve_yes" } else { "approve_no" });
    let tools = tools_toml(
        &dir,
        "[tools.delete_file]\nfixed = { ok = { deleted = \"a.txt\" } }\neffects = [\"Delete\"]\n\n\
         [profile]\nname = \"ask\"\napprovals = \"prompt\"\n\n[profile.tools.delete_file]\nrequire_approval = true\n",
    );
    let file = SourceFile::new("approve.lt", APPROVE);
    let ir = check_and_lower(&file).ok().expect("checks");
    let store = MemoryStore::new();
    let report = logged(&file, tools, &store)
        .approver(Box::new(FixedApprover::new(
            granted,
            "test",
            "decided by the test",
        )))
        .run(&ir)
        .expect("starts");
    let value = report.result.map(|v| v.to_string()).expect("a value");
    let decided = store
        .events(&report.id)
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::ApprovalDecided { by, reason, .. } => Some((by, reason)),
            _ => None,
        })
        .collect();
    (value, decided)
}

#[test]
fn a_fixed_approver_answers_prompted_approvals() {
    let (value, decided) = approval_run(true);
    assert_eq!(value, "\"deleted a.txt\"");
    assert_eq!(
        decided,
        [("test".to_string(), "decided by the test".to_string())]
    );
    let (value, decided) = approval_run(false);
    assert!(
        value.starts_with("\"refused: approval for delete_file refused: decided by the test"),
        "{value}"
    );
    assert_eq!(decided.len(), 1);
}

const SLOW: &str = r#"
tool slow: {n: Int} -{Read}-> {n: Int};
match exec tool slow {n = 1} {
  Ok(r) => r.n,
  Err(e) => 0 - 1
}
"#;

/// A command tool that records its pid in `dir/pids` and sleeps 30 s.
fn slow_tool(dir: &Path) -> String {
    let pids = dir.join("pids");
    tools_toml(
        dir,
        &format!(
            "[tools.slow]\ncommand = [\"sh\", \"-c\", \"echo $$ >> {}; sleep 30; echo '{{\\\"n\\\": 2}}'\"]\neffects = [\"Read\"]\n",
            pids.display()
        ),
    )
}

fn wait_for_pid(dir: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join("pids")) {
            if let Some(pid) = text.lines().next().and_then(|l| l.trim().parse().ok()) {
                return pid;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the tool never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to 5 s for `pid` to be gone (SIGKILL is delivered
/// asynchronously); whether it still lives.
fn still_alive(pid: i32) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > Duration::from_secs(5) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn alive(pid: i32) -> bool {
    // A zombie counts as gone: its group was killed.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

type SlowResult = (String, Result<String, RunErrorKind>, Duration, bool);

/// Runs [`SLOW`] with `tools` on a session thread, logging to `store`,
/// stopped by `cancel`: its id, value or error kind, run time, and
/// whether it was abandoned.
fn spawn_slow(
    tools: String,
    store: MemoryStore,
    cancel: Cancel,
) -> std::thread::JoinHandle<SlowResult> {
    spawn("slow-session", move || {
        let file = SourceFile::new("slow.lt", SLOW);
        let ir = check_and_lower(&file).ok().expect("checks");
        let report = Session::new(&file)
            .executors(Executors::File(tools))
            .log(LogTarget::Store(&store))
            .cancel(cancel)
            .run(&ir)
            .expect("starts");
        let result = report.result.map(|v| v.to_string()).map_err(|e| e.kind);
        (report.id, result, report.elapsed, report.abandoned)
    })
    .expect("thread")
}

#[test]
fn a_session_cancelled_from_another_thread_stops_its_tool_and_records_why() {
    let dir = scratch("cancel");
    let tools = slow_tool(&dir);
    let cancel = Cancel::new();
    let store = MemoryStore::new();
    let session = spawn_slow(tools, store.clone(), cancel.clone());
    let pid = wait_for_pid(&dir);
    assert!(alive(pid));
    let began = Instant::now();
    let stopped = cancel.cancel("the test cancelled it");
    let (id, result, elapsed, abandoned) = session.join().expect("joins");
    assert!(!abandoned);
    assert_eq!(
        stopped,
        1,
        "one running tool: {result:?} {:?}",
        store
            .events(&id)
            .iter()
            .map(|e| e.to_line())
            .collect::<Vec<_>>()
    );
    assert_eq!(result, Err(RunErrorKind::Cancelled));
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "took {:?}",
        began.elapsed()
    );
    assert!(elapsed < Duration::from_secs(10));
    assert!(!still_alive(pid), "the tool was not killed");
    let events = store.events(&id);
    match &events.last().expect("events").body {
        EventBody::SessionEnded { status, error, .. } => {
            assert_eq!(status, "error");
            assert_eq!(
                error
                    .as_ref()
                    .and_then(|e| e.get("kind"))
                    .and_then(|k| k.as_str()),
                Some("cancelled")
            );
        }
        other => panic!("last event: {other:?}"),
    }
    // Replay has no cancel: it matches up to where the run was stopped.
    let file = SourceFile::new("slow.lt", SLOW);
    let ir = check_and_lower(&file).ok().expect("checks");
    let recorded = Recorded::from_events(&events).expect("recorded");
    let verdict = replay(
        &events,
        &ir,
        recorded.profile().expect("profile"),
        recorded.limits().expect("limits"),
    );
    assert!(
        matches!(
            verdict,
            Verdict::MatchesUntilStopped {
                calls: 1,
                cancelled: true
            }
        ),
        "{verdict:?}"
    );
}

#[test]
fn pure_work_stops_when_cancelled() {
    // 10^10 additions over lists of 10^5: minutes of work, little memory.
    let text = "let xs = range 0 100000 in \
                fold (fn a: Int => fn x: Int => fold (fn b: Int => fn y: Int => b + y) a xs) 0 xs";
    let cancel = Cancel::new();
    let c = cancel.clone();
    let session = spawn("pure", move || {
        let file = SourceFile::new("sum.lt", text);
        let ir = check_and_lower(&file).ok().expect("checks");
        let limits = Limits {
            max_steps: u64::MAX / 2,
            timeout: None,
            ..Limits::default()
        };
        let report = Session::new(&file)
            .limits(limits)
            .cancel(c)
            .run(&ir)
            .expect("starts");
        report.result.map(|v| v.to_string()).map_err(|e| e.kind)
    })
    .expect("thread");
    std::thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    cancel.cancel("enough");
    assert_eq!(session.join().expect("joins"), Err(RunErrorKind::Cancelled));
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "took {:?}",
        began.elapsed()
    );
}

#[test]
fn an_abandoned_session_records_nothing_more_and_resumes() {
    let dir = scratch("abandon");
    let tools = slow_tool(&dir);
    let cancel = Cancel::new();
    let store = MemoryStore::new();
    let session = spawn_slow(tools.clone(), store.clone(), cancel.clone());
    let pid = wait_for_pid(&dir);
    cancel.abandon("shutting down");
    let (id, result, _, abandoned) = session.join().expect("joins");
    assert_eq!(result, Err(RunErrorKind::Cancelled));
    assert!(abandoned);
    assert!(!still_alive(pid));
    // The log ends at `scheduled`, as a killed process leaves it.
    assert_eq!(
        kinds(&store, &id),
        ["session_started", "proposed", "decided", "scheduled"]
    );
    // Resumed: the call's outcome is unknown (not idempotent): not re-run.
    let reopened = store.reopen(&id).expect("reopens");
    let file = SourceFile::new("slow.lt", SLOW);
    let ir = check_and_lower(&file).ok().expect("checks");
    let report = Session::new(&file)
        .executors(Executors::File(tools))
        .profile(ProfileSource::Given(Profile {
            name: "default".into(),
            ..Profile::default()
        }))
        .resume(&ir, reopened)
        .expect("resumes");
    assert_eq!(
        report.result.map(|v| v.to_string()).ok().as_deref(),
        Some("-1")
    );
    assert_eq!(report.replayed, 0);
    let k = kinds(&store, &id);
    assert_eq!(k.first(), Some(&"session_started"));
    assert!(k.contains(&"session_resumed"), "{k:?}");
    assert_eq!(k.last(), Some(&"session_ended"));
    assert!(store.load(&id).expect("loads").report.ok);
    // One process ever ran: the abandoned one.
    let ran = std::fs::read_to_string(dir.join("pids")).unwrap_or_default();
    assert_eq!(ran.lines().count(), 1, "{ran}");
}

#[test]
fn fifty_sessions_at_once_on_one_runtime() {
    let dir = scratch("fifty");
    let calls = dir.join("calls");
    // Echoes its argument back, and records each call.
    let tools = tools_toml(
        &dir,
        &format!(
            "[tools.echo]\ncommand = [\"sh\", \"-c\", \"tee -a {}; echo\"]\neffects = [\"Read\"]\n",
            calls.display()
        ),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let store = MemoryStore::new();
    let sessions: Vec<_> = (0..50)
        .map(|i| {
            let (handle, store, tools) = (runtime.handle().clone(), store.clone(), tools.clone());
            spawn(&format!("session-{i}"), move || {
                let text = format!(
                    "tool echo: {{n: Int}} -{{Read}}-> {{n: Int}};\n\
                     match exec tool echo {{n = {i}}} {{ Ok(r) => r.n * 2, Err(e) => 0 - 1 }}"
                );
                let file = SourceFile::new(format!("s{i}.lt"), text);
                let ir = check_and_lower(&file).ok().expect("checks");
                let report = Session::new(&file)
                    .executors(Executors::File(tools))
                    .log(LogTarget::Store(&store))
                    .runtime(handle)
                    .run(&ir)
                    .expect("starts");
                (
                    report.id.clone(),
                    report.output(&file, &ir).to_json_string(),
                )
            })
            .expect("thread")
        })
        .collect();
    let mut ids = Vec::new();
    for (i, s) in sessions.into_iter().enumerate() {
        let (id, out) = s.join().expect("joins");
        assert!(
            out.contains(&format!("\"value\":{}", i * 2)),
            "session {i}: {out}"
        );
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50);
    assert_eq!(store.sessions().len(), 50);
    for id in &ids {
        let loaded = store.load(id).expect("loads");
        assert!(loaded.report.ok, "{id}: {}", loaded.report);
        assert_eq!(loaded.events.len(), 6, "{id}");
    }
    let ran = std::fs::read_to_string(&calls).expect("calls");
    assert_eq!(ran.lines().count(), 50, "{ran}");
}

#[test]
fn a_session_that_cannot_start_says_why_in_a_typed_failure() {
    let file = SourceFile::new("lookup.lt", LOOKUP);
    let ir = check_and_lower(&file).ok().expect("checks");
    let failure = match Session::new(&file).run(&ir) {
        Err(f) => f,
        Ok(_) => panic!("ran without executors"),
    };
    assert_eq!(failure.kind, StartErrorKind::MissingExecutor);
    assert_eq!(failure.line, Some(3));
    match failure.output() {
        RunOutput::Refused(r) => assert!(!r.ok),
        other => panic!("{other:?}"),
    }
    assert!(
        failure.to_string().contains("no executors were given"),
        "{failure}"
    );
}

#[test]
fn a_current_thread_runtime_is_refused_for_tools_instead_of_hanging() {
    let dir = scratch("current_thread");
    let tools = slow_tool(&dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let file = SourceFile::new("slow.lt", SLOW);
    let ir = check_and_lower(&file).ok().expect("checks");
    let failure = match Session::new(&file)
        .executors(Executors::File(tools))
        .runtime(runtime.handle().clone())
        .run(&ir)
    {
        Err(f) => f,
        Ok(_) => panic!("ran on a current-thread runtime"),
    };
    assert!(failure.message.contains("current-thread"), "{failure}");
    assert!(!dir.join("pids").exists(), "a tool ran");
}

#[test]
fn a_memory_store_keeps_one_writer_per_session() {
    use lt::log::{EventSink, StoreError};
    let store = MemoryStore::new();
    let id = "0123456789abcdef0123456789abcdef";
    let body = || EventBody::SessionResumed {
        lt_version: "test".into(),
        registry_hash: String::new(),
        dropped_bytes: 0,
    };
    let file = SourceFile::new("one.lt", "1");
    let opening =
        lt::control::session::started(&file, &Profile::default(), b"", &Limits::default());
    let mut first = store.create(id).expect("creates");
    assert!(matches!(store.create(id), Err(StoreError::Conflict(_))));
    first.append(opening).expect("appends");
    // Still being written: it cannot be reopened.
    assert!(matches!(store.reopen(id), Err(StoreError::Conflict(_))));
    drop(first);
    let mut again = store.reopen(id).expect("reopens").sink;
    assert!(matches!(store.reopen(id), Err(StoreError::Conflict(_))));
    again.append(body()).expect("the writer appends");
    drop(again);
    let loaded = store.load(id).expect("loads");
    assert!(loaded.report.ok, "{}", loaded.report);
    assert_eq!(loaded.events.len(), 2);
}

#[test]
fn a_resume_keeps_the_log_id_and_a_cancelled_resume_is_no_divergence() {
    let dir = scratch("resume_cancel");
    let tools = slow_tool(&dir);
    let cancel = Cancel::new();
    let store = MemoryStore::new();
    let session = spawn_slow(tools.clone(), store.clone(), cancel.clone());
    wait_for_pid(&dir);
    cancel.abandon("shutting down");
    let (id, _, _, _) = session.join().expect("joins");
    let file = SourceFile::new("slow.lt", SLOW);
    let ir = check_and_lower(&file).ok().expect("checks");
    let recorded = Recorded::from_events(&store.events(&id)).expect("recorded");
    let profile = recorded.profile().expect("profile");
    // Another id would re-run calls under new idempotency keys: refused.
    let reopened = store.reopen(&id).expect("reopens");
    let refused = Session::new(&file)
        .executors(Executors::File(tools.clone()))
        .profile(ProfileSource::Given(profile.clone()))
        .id("ffffffffffffffffffffffffffffffff".into())
        .resume(&ir, reopened);
    assert!(refused.is_err());
    // A token already cancelled: the session ends `cancelled`, no divergence.
    let stopped = Cancel::new();
    stopped.cancel("stopped before it began");
    let reopened = store.reopen(&id).expect("reopens again");
    let report = Session::new(&file)
        .executors(Executors::File(tools))
        .profile(ProfileSource::Given(profile))
        .cancel(stopped)
        .resume(&ir, reopened)
        .expect("resumes");
    assert_eq!(report.divergence, None);
    assert_eq!(
        report.result.map_err(|e| e.kind).err(),
        Some(RunErrorKind::Cancelled)
    );
    let k = kinds(&store, &id);
    assert_eq!(k.last(), Some(&"session_ended"), "{k:?}");
    assert!(store.load(&id).expect("loads").report.ok);
}

#[test]
fn a_session_run_from_async_code_ends_without_a_panic() {
    let dir = scratch("in_async");
    let tools = tools_toml(
        &dir,
        "[tools.lookup]\ncommand = [\"sh\", \"-c\", \"echo '{\\\"name\\\": \\\"Ada\\\"}'\"]\neffects = [\"Read\"]\n",
    );
    let outer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let value = outer.block_on(async move {
        let file = SourceFile::new("lookup.lt", LOOKUP);
        let ir = check_and_lower(&file).ok().expect("checks");
        let report = Session::new(&file)
            .executors(Executors::File(tools))
            .run(&ir)
            .expect("starts");
        report.result.map(|v| v.to_string()).ok()
    });
    assert_eq!(value.as_deref(), Some("\"Ada\""));
}

/// A sink that keeps the events' kinds and what it was told of the tools.
struct Told {
    kinds: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
    idempotent: std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>,
}

impl lt::log::EventSink for Told {
    fn append(&mut self, body: EventBody) -> std::io::Result<()> {
        self.kinds.lock().expect("kinds").push(body.kind());
        Ok(())
    }

    fn idempotent_tools(&mut self, tools: &std::collections::BTreeSet<String>) {
        self.idempotent
            .lock()
            .expect("told")
            .push(tools.iter().cloned().collect());
    }
}

#[test]
fn the_sink_is_told_the_tools_declared_idempotent_before_the_first_call() {
    // A store whose commits are grouped buffers those tools' `scheduled`
    // (log/write_ahead.rs): the session's sink must learn them, through
    // every layer the session puts around it.
    let dir = scratch("idempotent_told");
    let tools = tools_toml(
        &dir,
        "[tools.lookup]\nfixed = { ok = { name = \"ada\" } }\nidempotent = true\n\n\
         [tools.other]\nfixed = { ok = { name = \"x\" } }\n",
    );
    let file = SourceFile::new("idem.lt", LOOKUP);
    let ir = check_and_lower(&file).ok().expect("checks");
    let kinds = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let idempotent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Told {
        kinds: std::sync::Arc::clone(&kinds),
        idempotent: std::sync::Arc::clone(&idempotent),
    };
    let report = Session::new(&file)
        .executors(Executors::File(tools))
        .profile(ProfileSource::FromExecutors)
        .log(LogTarget::Sink(Box::new(sink)))
        .run(&ir)
        .expect("starts");
    let out = report.output(&file, &ir).to_json_string();
    assert!(out.contains(r#""value":"ada""#), "{out}");
    assert_eq!(
        *idempotent.lock().expect("told"),
        vec![vec!["lookup".to_string()]]
    );
    assert!(kinds.lock().expect("kinds").contains(&"scheduled"));
}
