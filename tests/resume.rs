//! `lt resume` end to end, with the real binary and real subprocess tools.
//!
//! * A session killed with SIGKILL while a tool runs leaves a log ending in
//!   that call's `scheduled`: resume gives the program `Err("outcome
//!   unknown …")` for a tool that is not idempotent (it does not run it
//!   again), and runs an idempotent one again with the same idempotency key.
//! * Every prefix of a complete log (cut at each event, and in the middle of
//!   a line) resumes to the same value, and no call the prefix recorded to
//!   its outcome runs again.
//! * The crash test: `examples/batch_refunds` killed at points set by its
//!   progress (each number of log events, each tool start), never by the
//!   clock; after `lt resume` a wrapper's record of every execution shows a
//!   call that is not idempotent ran at most once and an idempotent one
//!   always with the same key, the database shows each refund once, and
//!   every log verifies.
//!
//! The command tools run `tests/session/tool.py`, which appends a line per
//! run to `$LT_RECORD` (its argument and `LT_IDEMPOTENCY_KEY`) before it
//! answers: the record is how a test knows which tools really ran.

use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use support::{lt_in, Out, LT};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tool_script() -> String {
    repo().join("tests/session/tool.py").display().to_string()
}

/// A temp folder for one test, with the tool.py helpers of this file.
struct TempDir(support::TempDir);

impl std::ops::Deref for TempDir {
    type Target = support::TempDir;
    fn deref(&self) -> &support::TempDir {
        &self.0
    }
}

impl TempDir {
    fn new(name: &str) -> TempDir {
        TempDir(support::TempDir::new("resume", name))
    }

    /// The runs of `tool` recorded by tool.py (empty when it never ran).
    fn runs(&self, tool: &str) -> Vec<Json> {
        std::fs::read_to_string(self.path(&format!("{tool}.calls")))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a record of tool.py"))
            .collect()
    }

    /// A command tool table running tool.py: answers `answer`, after
    /// sleeping `sleep` seconds if given; `extra` is appended to the table.
    fn tool(&self, name: &str, answer: &str, sleep: Option<&str>, extra: &str) -> String {
        let mut argv = vec!["python3".to_string(), tool_script(), answer.to_string()];
        argv.extend(sleep.map(str::to_string));
        format!(
            "[tools.{name}]\ncommand = {}\nenv = {{ LT_RECORD = {} }}\ntimeout_ms = 20000\n{extra}\n",
            json!(argv),
            json!(self.path(&format!("{name}.calls")))
        )
    }
}

fn lt(dir: &TempDir, args: &[&str]) -> Out {
    lt_in(&dir.0 .0, args, &[])
}

/// The events of a log file (its complete lines).
fn events(path: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(path).expect("read the log");
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn kinds(path: &str) -> Vec<String> {
    events(path)
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// `lt log verify` passes on `log`.
fn assert_verifies(dir: &TempDir, log: &str) {
    let out = lt(dir, &["log", "verify", log, "--json"]);
    assert_eq!(out.code, 0, "the log does not verify: {out:?}");
}

/// Starts `lt run --log`, waits until `ready` says so (or `deadline`
/// passes), then kills it with SIGKILL.
fn run_and_kill(dir: &Path, args: &[&str], envs: &[(&str, &str)], ready: impl Fn() -> bool) {
    let mut cmd = Command::new(LT);
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("LT_RECORD")
        .env_remove("LT_IDEMPOTENCY_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start lt");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() && Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
}

const ONE_CALL: &str = r#"
tool slow: {n: Int} -{Write}-> {v: Int};
match exec tool slow {n = 1} {
  Ok(r) => "ok",
  Err(e) => e
}
"#;

/// Kills `lt run` while `slow` runs (after its record is written), then
/// resumes; returns the resumed output and the log path.
fn kill_during_slow(dir: &TempDir, idempotent: bool) -> (Out, String) {
    let extra = if idempotent { "idempotent = true" } else { "" };
    let tools = dir.write(
        "tools.toml",
        &dir.tool("slow", r#"{"v": 1}"#, Some("2"), extra),
    );
    let program = dir.write("p.lt", ONE_CALL);
    let log = dir.path("session.jsonl");
    let record = dir.path("slow.calls");
    run_and_kill(
        &dir.0 .0,
        &["run", &program, "--executors", &tools, "--log", &log],
        &[],
        || Path::new(&record).exists(),
    );
    assert_eq!(dir.runs("slow").len(), 1, "the tool started once");
    assert_eq!(kinds(&log).last().map(String::as_str), Some("scheduled"));
    assert_verifies(dir, &log);
    let out = lt(dir, &["resume", &log, "--executors", &tools, "--json"]);
    (out, log)
}

#[test]
fn a_call_cut_short_is_not_run_again_and_its_outcome_is_unknown() {
    let dir = TempDir::new("unknown");
    let (out, log) = kill_during_slow(&dir, false);
    assert_eq!(out.code, 0, "{out:?}");
    let value = out.json()["value"].as_str().unwrap_or_default().to_string();
    assert!(value.starts_with("outcome unknown"), "{value}");
    assert!(value.contains("not declared idempotent"), "{value}");
    // Not run again (give a stray second run time to show up).
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(dir.runs("slow").len(), 1);
    let k = kinds(&log);
    assert_eq!(
        k[k.len() - 4..],
        ["scheduled", "session_resumed", "failed", "session_ended"]
    );
    let failed = &events(&log)[k.len() - 2];
    assert_eq!(failed["failure"], json!("unknown"));
    assert_verifies(&dir, &log);
    let replay = lt(&dir, &["replay", &log, "--json"]);
    assert_eq!(replay.code, 0, "{replay:?}");
    // Resuming a session that ended is refused, and changes nothing.
    let before = std::fs::read(&log).expect("test fixture");
    let again = lt(
        &dir,
        &["resume", &log, "--executors", &dir.path("tools.toml")],
    );
    assert_eq!(again.code, 2, "{again:?}");
    assert!(again.stderr.contains("already ended"), "{again:?}");
    assert_eq!(std::fs::read(&log).expect("test fixture"), before);
}

#[test]
fn an_idempotent_call_lt_stops_during_each_start_is_not_started_a_fourth_time() {
    // A poison call: lt stops every time it runs (a tool that kills the
    // process running it would do the same, on every worker that resumes
    // it). Run again by each resume, until its log holds MAX_STARTS (3)
    // starts; then its outcome is unknown and the session goes on.
    let dir = TempDir::new("restarted");
    let tools = dir.write(
        "tools.toml",
        &dir.tool("slow", r#"{"v": 1}"#, Some("2"), "idempotent = true"),
    );
    let program = dir.write("p.lt", ONE_CALL);
    let log = dir.path("session.jsonl");
    run_and_kill(
        &dir.0 .0,
        &["run", &program, "--executors", &tools, "--log", &log],
        &[],
        || dir.runs("slow").len() == 1,
    );
    for started in 2..=3 {
        run_and_kill(
            &dir.0 .0,
            &["resume", &log, "--executors", &tools],
            &[],
            || dir.runs("slow").len() == started,
        );
    }
    assert_verifies(&dir, &log);
    let out = lt(&dir, &["resume", &log, "--executors", &tools, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let value = out.json()["value"].as_str().unwrap_or_default().to_string();
    assert!(value.starts_with("outcome unknown"), "{value}");
    assert!(value.contains("started 3 times"), "{value}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(dir.runs("slow").len(), 3, "not started a fourth time");
    let k = kinds(&log);
    assert_eq!(
        k[k.len() - 4..],
        ["scheduled", "session_resumed", "failed", "session_ended"]
    );
    assert_verifies(&dir, &log);
}

#[test]
fn an_idempotent_call_cut_short_runs_again_with_the_same_key() {
    let dir = TempDir::new("idempotent");
    let (out, log) = kill_during_slow(&dir, true);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!("ok"));
    let runs = dir.runs("slow");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["key"], runs[1]["key"]);
    assert!(runs[0]["key"].is_string());
    let k = kinds(&log);
    assert_eq!(
        k[k.len() - 5..],
        [
            "scheduled",
            "session_resumed",
            "scheduled",
            "completed",
            "session_ended"
        ]
    );
    assert_verifies(&dir, &log);
    let replay = lt(&dir, &["replay", &log, "--json"]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

const THREE_CALLS: &str = r#"
tool lookup: {id: String} -{Read}-> {tier: String};
tool refund: {id: String, amount: Int} -{Write}-> {tx: String};
tool notify: {to: String} -{Write}-> {sent: Bool};
match exec tool lookup {id = "c1"} {
  Ok(a) =>
    match exec tool refund {id = "c1", amount = 5} {
      Ok(r) =>
        match exec tool notify {to = "c1"} {
          Ok(n) => a.tier ++ " " ++ r.tx,
          Err(e) => "notify failed: " ++ e
        },
      Err(e) => "refund failed: " ++ e
    },
  Err(e) => "lookup failed: " ++ e
}
"#;

#[test]
fn every_prefix_of_a_log_resumes_without_repeating_a_recorded_call() {
    every_prefix(true);
    every_prefix(false);
}

/// Resumes every prefix of a complete three-call log. With idempotent
/// tools every prefix reaches the full run's value; without, a prefix that
/// ends in a call's `scheduled`, or in a torn line (which may have been the
/// next call's `scheduled`), gives the program "outcome unknown" there.
fn every_prefix(idempotent: bool) {
    let dir = TempDir::new("prefixes");
    let extra = if idempotent { "idempotent = true" } else { "" };
    let tools = format!(
        "{}{}{}",
        dir.tool("lookup", r#"{"tier": "gold"}"#, None, extra),
        dir.tool("refund", r#"{"tx": "tx-1"}"#, None, extra),
        dir.tool("notify", r#"{"sent": true}"#, None, extra)
    );
    let tools = dir.write("tools.toml", &tools);
    let program = dir.write("p.lt", THREE_CALLS);
    let full = dir.path("full.jsonl");
    let out = lt(
        &dir,
        &[
            "run",
            &program,
            "--executors",
            &tools,
            "--log",
            &full,
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let value = out.json()["value"].clone();
    assert_eq!(value, json!("gold tx-1"));
    let text = std::fs::read_to_string(&full).expect("test fixture");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // Every cut that leaves session_started and drops session_ended, with
    // and without half of the next line (a write cut short).
    for keep in 1..lines.len() {
        for partial in [false, true] {
            let mut prefix: String = lines[..keep].concat();
            if partial {
                let next = lines[keep];
                prefix.push_str(&next[..next.len() / 2]);
            }
            let log = dir.write("cut.jsonl", &prefix);
            for tool in ["lookup", "refund", "notify"] {
                let _ = std::fs::remove_file(dir.path(&format!("{tool}.calls")));
            }
            let recorded: Vec<Json> = events(&log);
            let out = lt(&dir, &["resume", &log, "--executors", &tools, "--json"]);
            let case =
                format!("keep {keep} lines, partial {partial}, idempotent {idempotent}: {out:?}");
            assert_eq!(out.code, 0, "{case}");
            // Cut inside a call, or with a torn line that may have been the
            // next call's `scheduled`: that call may have started.
            let torn_before_a_call = partial && !lines[keep].contains("\"kind\":\"session_ended\"");
            // A log ending in `proposed` or an allowing `decided` lost the
            // `scheduled` written with them: also a call that may have started.
            let cut_in_call = torn_before_a_call
                || recorded.last().is_some_and(|e| {
                    e["kind"] == "scheduled"
                        || e["kind"] == "proposed"
                        || (e["kind"] == "decided" && e["decision"] == "allow")
                });
            if idempotent || !cut_in_call {
                assert_eq!(out.json()["value"], value, "{case}");
            } else {
                let v = out.json()["value"].as_str().unwrap_or_default().to_string();
                assert!(v.contains("outcome unknown"), "{case}");
            }
            assert_verifies(&dir, &log);
            // A call whose outcome the prefix holds did not run again; a call
            // it scheduled without an outcome ran again only if idempotent.
            for tool in ["lookup", "refund", "notify"] {
                let call_id_of = |e: &Json| e["call_id"].as_str().map(str::to_string);
                let proposed: Vec<String> = recorded
                    .iter()
                    .filter(|e| e["kind"] == "proposed" && e["tool"] == tool)
                    .filter_map(call_id_of)
                    .collect();
                let has = |kind: &str| {
                    recorded.iter().any(|e| {
                        e["kind"] == kind && call_id_of(e).is_some_and(|c| proposed.contains(&c))
                    })
                };
                let runs = dir.runs(tool).len();
                let partial_call = has("proposed") && !has("completed") && !has("scheduled");
                if has("completed") || ((has("scheduled") || partial_call) && !idempotent) {
                    assert_eq!(runs, 0, "{tool} ran again; {case}");
                } else if has("scheduled") {
                    assert_eq!(runs, 1, "{tool} runs again once; {case}");
                }
            }
            let replay = lt(&dir, &["replay", &log, "--json"]);
            assert_eq!(replay.code, 0, "{case}; replay: {replay:?}");
        }
    }
}

#[test]
fn resume_refuses_an_ended_an_empty_or_a_tampered_log() {
    let dir = TempDir::new("refuse");
    let tools = dir.write("tools.toml", &dir.tool("slow", r#"{"v": 1}"#, None, ""));
    let program = dir.write("p.lt", ONE_CALL);
    let log = dir.path("s.jsonl");
    let out = lt(
        &dir,
        &["run", &program, "--executors", &tools, "--log", &log],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let ended = lt(&dir, &["resume", &log, "--executors", &tools]);
    assert_eq!(ended.code, 2, "{ended:?}");
    assert!(ended.stderr.contains("already ended"), "{ended:?}");
    let empty = dir.write("empty.jsonl", "");
    let out = lt(&dir, &["resume", &empty, "--executors", &tools]);
    assert_eq!(out.code, 2, "{out:?}");
    let missing = lt(
        &dir,
        &["resume", &dir.path("nope.jsonl"), "--executors", &tools],
    );
    assert_eq!(missing.code, 2, "{missing:?}");
    // Drop session_ended and edit a recorded value: the chain breaks.
    let text = std::fs::read_to_string(&log).expect("test fixture");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    let edited = lines.join("\n").replace("\"v\":1", "\"v\":2") + "\n";
    let tampered = dir.write("t.jsonl", &edited);
    let out = lt(
        &dir,
        &["resume", &tampered, "--executors", &tools, "--json"],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.contains("line"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&tampered).expect("test fixture"),
        edited,
        "unchanged"
    );
}

/// Reads the example database with Python's sqlite3: the refunds, per
/// request id, and the number of batch_log rows.
fn refunds(db: &str) -> (Vec<String>, usize) {
    let script = "import sqlite3, sys, json\n\
        c = sqlite3.connect(sys.argv[1])\n\
        have = {r[0] for r in c.execute(\"SELECT name FROM sqlite_master WHERE type='table'\")}\n\
        refunds = [r[0] for r in c.execute('SELECT request_id FROM refunds ORDER BY id')] if 'refunds' in have else []\n\
        logs = c.execute('SELECT COUNT(*) FROM batch_log').fetchone()[0] if 'batch_log' in have else 0\n\
        print(json.dumps([refunds, logs]))";
    let out = Command::new("python3")
        .args(["-c", script, db])
        .output()
        .expect("python3");
    assert!(out.status.success(), "{out:?}");
    let v: Json = serde_json::from_slice(&out.stdout).expect("json");
    let ids = v[0]
        .as_array()
        .expect("test fixture")
        .iter()
        .map(|x| x.as_str().expect("test fixture").to_string())
        .collect();
    (ids, v[1].as_u64().expect("test fixture") as usize)
}

/// Records every execution of a tool, then runs it: appends
/// `{"at": "start", "request_id", "key"}` to the file `argv[1]` before
/// running `argv[2:]` with the same input, and `{"at": "end", …}` after it
/// exits.
const RECORD_WRAPPER: &str = r#"import json, os, subprocess, sys
data = sys.stdin.buffer.read()
try:
    request_id = json.loads(data).get("request_id")
except Exception:
    request_id = None
def record(at):
    with open(sys.argv[1], "a") as f:
        f.write(json.dumps({"at": at, "request_id": request_id,
                            "key": os.environ.get("LT_IDEMPOTENCY_KEY")}) + "\n")
record("start")
code = subprocess.run(sys.argv[2:], input=data).returncode
record("end")
sys.exit(code)
"#;

/// The executions a [`RECORD_WRAPPER`] recorded: (`at`, request id, key).
fn executions(record: &str) -> Vec<(String, Option<String>, Option<String>)> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Json = serde_json::from_str(l).expect("a record of the wrapper");
            let text = |k: &str| v[k].as_str().map(str::to_string);
            (text("at").expect("at"), text("request_id"), text("key"))
        })
        .collect()
}

/// Waits (at most 60 s) until no process has had `text` in its command
/// line for 300 ms straight; whether that came. A zombie has no command
/// line, and neither has, for an instant, a process in the middle of
/// `exec` (a child the killed lt forked becoming a tool): one empty scan
/// is not enough, it once let such a tool start after the wait.
fn no_process_mentions(text: &str) -> bool {
    let mentions = || {
        std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
            .any(|c| String::from_utf8_lossy(&c).contains(text))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut quiet_since: Option<Instant> = None;
    while Instant::now() < deadline {
        if mentions() {
            quiet_since = None;
        } else if quiet_since.get_or_insert_with(Instant::now).elapsed()
            >= Duration::from_millis(300)
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// How many executions `record` shows started.
fn started(record: &str) -> usize {
    executions(record).iter().filter(|e| e.0 == "start").count()
}

/// The batch_refunds example killed at points of its run that do not depend
/// on the machine's speed (once its log has each number of events, and once
/// each execution of issue_refund and log_batch has started), then resumed.
/// `idempotent`: issue_refund is idempotent, as in the example's
/// tools.toml; else declared not to be. Both tools run under
/// [`RECORD_WRAPPER`], which counts every execution: the example's
/// issue_refund itself refuses a request already refunded, so the database
/// alone would show no duplicate whatever lt does.
fn crash_batch_refunds(idempotent: bool) {
    let example = repo().join("examples/batch_refunds");
    let dir = TempDir::new(if idempotent { "crash-idem" } else { "crash" });
    let wrapper = dir.write("record.py", RECORD_WRAPPER);
    // The interpreter itself, not a launcher such as a pyenv shim (a bash
    // script, which a kill can leave waiting on a pipe for a long time).
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    let python = String::from_utf8(python.stdout).expect("a path");
    let python = python.trim();
    let text = std::fs::read_to_string(example.join("tools.toml")).expect("test fixture");
    let script = |tool: &str| {
        example
            .join(format!("tools/{tool}.py"))
            .display()
            .to_string()
    };
    let wrapped = |tool: &str, record: &str| {
        json!([python, wrapper, record, python, script(tool)]).to_string()
    };
    let (refund_record, batch_record) = (dir.path("issue_refund.runs"), dir.path("log_batch.runs"));
    let mut tools_text = text
        .replace(
            r#"["python3", "tools/pending_refunds.py"]"#,
            &json!([python, script("pending_refunds")]).to_string(),
        )
        .replace(
            r#"["python3", "tools/issue_refund.py"]"#,
            &wrapped("issue_refund", &refund_record),
        )
        .replace(
            r#"["python3", "tools/log_batch.py"]"#,
            &wrapped("log_batch", &batch_record),
        );
    assert!(!tools_text.contains("\"tools/"), "{tools_text}");
    if !idempotent {
        let before = tools_text.clone();
        tools_text = tools_text.replacen(
            "idempotent = true\n\n[tools.log_batch]",
            "idempotent = false\n\n[tools.log_batch]",
            1,
        );
        assert_ne!(before, tools_text, "issue_refund's idempotent line");
    }
    let tools = dir.write("tools.toml", &tools_text);
    let program = example.join("program.lt").display().to_string();
    let expected = "batch stopped at the first failure: tool issue_refund failed (exit status 1): request req_003: no account with id cust_9999";
    let run_args =
        |log: &str| ["run", &program, "--executors", &tools, "--log", log].map(str::to_string);

    // An uninterrupted run: how many events a whole log has.
    let (whole_log, whole_db) = (dir.path("whole.jsonl"), dir.path("whole.db"));
    let whole = lt_in(
        &dir.0 .0,
        &run_args(&whole_log).each_ref().map(String::as_str),
        &[("LT_EXAMPLE_DB", whole_db.as_str())],
    );
    assert_eq!(
        whole.stdout.trim(),
        json!(expected).to_string(),
        "{whole:?}"
    );
    let whole_events = events(&whole_log).len();
    assert_eq!(started(&refund_record), 3);
    assert_eq!(started(&batch_record), 1);
    std::fs::remove_file(&refund_record).expect("test fixture");
    std::fs::remove_file(&batch_record).expect("test fixture");

    enum Point {
        Events(usize),
        Started(&'static str, usize),
    }
    let mut points: Vec<Point> = (0..whole_events).map(Point::Events).collect();
    points.extend((1..=3).map(|n| Point::Started("issue_refund", n)));
    points.push(Point::Started("log_batch", 1));

    let mut resumed = 0;
    // How many logs ended after each kind of event (what the kills hit).
    let mut cut_after = std::collections::BTreeMap::<String, usize>::new();
    for (i, point) in points.iter().enumerate() {
        let db = dir.path(&format!("db{i}.db"));
        let log = dir.path(&format!("log{i}.jsonl"));
        let refunds_run = dir.path(&format!("issue_refund{i}.runs"));
        let batch_run = dir.path(&format!("log_batch{i}.runs"));
        let envs = [("LT_EXAMPLE_DB", db.as_str())];
        let case = match point {
            Point::Events(n) => format!("killed once the log had {n} events"),
            Point::Started(tool, n) => format!("killed once {tool} had started {n} times"),
        };
        let case = format!("{case} (idempotent {idempotent})");
        run_and_kill(
            &dir.0 .0,
            &run_args(&log).each_ref().map(String::as_str),
            &envs,
            || match point {
                Point::Events(n) => {
                    std::fs::read_to_string(&log).is_ok_and(|t| t.matches('\n').count() >= *n)
                }
                Point::Started("issue_refund", n) => started(&refund_record) >= *n,
                Point::Started(_, n) => started(&batch_record) >= *n,
            },
        );
        // The tools the kill orphaned (and a child lt forked that is not
        // yet a tool) finish: every process of this test mentions its folder.
        assert!(
            no_process_mentions(&format!("{}/", dir.0 .0.display())),
            "{case}: an orphaned tool did not end"
        );
        if !Path::new(&log).exists() || std::fs::metadata(&log).expect("test fixture").len() == 0 {
            let (ids, _) = refunds_or_empty(&db);
            assert!(ids.is_empty(), "{case}: refunds without a log: {ids:?}");
            assert_eq!(started(&refund_record), 0, "{case}: ran without a log");
        } else {
            assert_verifies(&dir, &log);
            let last = kinds(&log).last().cloned().unwrap_or_default();
            *cut_after.entry(last).or_insert(0) += 1;
            let out = lt_in(
                &dir.0 .0,
                &["resume", &log, "--executors", &tools, "--json"],
                &envs,
            );
            let ended_before = out.code == 2 && out.stdout.contains("already ended");
            if !ended_before {
                assert_eq!(out.code, 0, "{case}: {out:?}");
                resumed += 1;
            }
            assert_verifies(&dir, &log);
            check_refunds(&case, idempotent, &db, &refund_record, &batch_record);
            if idempotent && !ended_before {
                // The program ends as an uninterrupted run; log_batch is
                // not idempotent: cut short, its outcome is unknown.
                let value = out.json()["value"].as_str().unwrap_or_default().to_string();
                let logging_unknown = value
                    .starts_with("batch stopped at the first failure (tool issue_refund failed")
                    && value.contains("and logging failed: outcome unknown");
                assert!(value == expected || logging_unknown, "{case}: {value}");
            }
            let replay = lt(&dir, &["replay", &log, "--json"]);
            assert_eq!(replay.code, 0, "{case}: replay {replay:?}");
        }
        // Keep this point's records; the next point starts with none.
        for (from, to) in [(&refund_record, &refunds_run), (&batch_record, &batch_run)] {
            if Path::new(from).exists() {
                std::fs::rename(from, to).expect("test fixture");
            }
        }
    }
    eprintln!(
        "crash test (idempotent {idempotent}): {resumed} resumed; logs cut after {cut_after:?}"
    );
    assert!(
        resumed >= 3,
        "too few kills landed inside the run ({resumed})"
    );
}

/// After a kill and a resume: every execution of issue_refund (the
/// wrapper's record) and every refund row, per request. Each execution
/// carries its call's idempotency key (a kill may cut its input short, so
/// the request id may be missing). Not idempotent: at most one execution per
/// call and per request; idempotent: one key per request (a repeat is the
/// same call again), and exactly req_001 and req_002 refunded, once each.
/// log_batch (never idempotent) runs at most once.
fn check_refunds(case: &str, idempotent: bool, db: &str, refund_record: &str, batch_record: &str) {
    use std::collections::{BTreeMap, BTreeSet};
    let mut keys = BTreeMap::<String, BTreeSet<String>>::new();
    let mut per_request = BTreeMap::<String, usize>::new();
    let mut per_call = BTreeMap::<String, usize>::new();
    for (at, request, key) in executions(refund_record) {
        if at != "start" {
            continue;
        }
        let key = key.unwrap_or_else(|| panic!("{case}: an execution without a key"));
        *per_call.entry(key.clone()).or_insert(0) += 1;
        if let Some(request) = request {
            *per_request.entry(request.clone()).or_insert(0) += 1;
            keys.entry(request).or_default().insert(key);
        }
    }
    for (request, keys) in &keys {
        assert_eq!(keys.len(), 1, "{case}: {request} ran with keys {keys:?}");
    }
    if !idempotent {
        for (what, n) in per_call.iter().chain(&per_request) {
            assert_eq!(*n, 1, "{case}: issue_refund ran {n} times for {what}");
        }
    }
    assert!(
        started(batch_record) <= 1,
        "{case}: log_batch ran {} times",
        started(batch_record)
    );
    let (ids, logs) = refunds(db);
    let mut rows = BTreeMap::<String, usize>::new();
    for id in &ids {
        *rows.entry(id.clone()).or_insert(0) += 1;
    }
    assert!(
        rows.values().all(|n| *n == 1),
        "{case}: a refund twice: {ids:?}"
    );
    assert!(logs <= 1, "{case}: batch_log has {logs} rows");
    let refunded: BTreeSet<&str> = rows.keys().map(String::as_str).collect();
    if idempotent {
        assert_eq!(refunded, BTreeSet::from(["req_001", "req_002"]), "{case}");
    } else {
        assert!(
            refunded.is_subset(&BTreeSet::from(["req_001", "req_002"])),
            "{case}: {ids:?}"
        );
    }
}

/// Like [`refunds`], for a database that may not exist.
fn refunds_or_empty(db: &str) -> (Vec<String>, usize) {
    if Path::new(db).exists() {
        refunds(db)
    } else {
        (Vec::new(), 0)
    }
}

#[test]
fn crash_test_batch_refunds_idempotent_refunds_exactly_once() {
    crash_batch_refunds(true);
}

#[test]
fn crash_test_batch_refunds_not_idempotent_refunds_at_most_once() {
    crash_batch_refunds(false);
}

#[test]
fn a_log_in_use_is_neither_resumed_nor_overwritten() {
    let dir = TempDir::new("locked");
    let tools = dir.write(
        "tools.toml",
        &dir.tool("slow", r#"{"v": 1}"#, Some("2"), ""),
    );
    let program = dir.write("p.lt", ONE_CALL);
    let log = dir.path("session.jsonl");
    let record = dir.path("slow.calls");
    let mut child = Command::new(LT)
        .args(["run", &program, "--executors", &tools, "--log", &log])
        .current_dir(&dir.0 .0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lt");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !Path::new(&record).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = std::fs::read(&log).expect("test fixture");
    let resume = lt(&dir, &["resume", &log, "--executors", &tools]);
    assert_eq!(resume.code, 2, "{resume:?}");
    assert!(resume.stderr.contains("another lt session"), "{resume:?}");
    let run = lt(
        &dir,
        &["run", &program, "--executors", &tools, "--log", &log],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("already holds"), "{run:?}");
    let run = lt(
        &dir,
        &[
            "run",
            &program,
            "--executors",
            &tools,
            "--log",
            &log,
            "--force",
        ],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("another lt session"), "{run:?}");
    assert!(
        std::fs::read(&log)
            .expect("test fixture")
            .starts_with(&before),
        "not truncated"
    );
    assert!(child.wait().expect("test fixture").success());
    assert_eq!(dir.runs("slow").len(), 1, "the tool ran once");
    assert_verifies(&dir, &log);
    assert_eq!(
        kinds(&log).last().map(String::as_str),
        Some("session_ended")
    );
}

/// Starts `lt run --log` in `dir`, waits until `ready`, then sends it
/// `signal` (`INT`, `TERM`); returns its exit code and stderr.
fn run_and_signal(dir: &TempDir, args: &[&str], signal: &str, ready: impl Fn() -> bool) -> Out {
    let child = Command::new(LT)
        .args(args)
        .current_dir(&dir.0 .0)
        .env("NO_COLOR", "1")
        .env_remove("LT_RECORD")
        .env_remove("LT_IDEMPOTENCY_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let out = child.wait_with_output().expect("wait for lt");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The last event of `log`, which must be `session_interrupted`.
fn interruption(log: &str) -> Json {
    let last = events(log).pop().expect("an event");
    assert_eq!(last["kind"], json!("session_interrupted"), "{last}");
    last
}

#[test]
fn an_interrupted_run_records_why_it_ended_and_a_started_call_stays_unknown() {
    let dir = TempDir::new("sigint");
    let tools = dir.write(
        "tools.toml",
        &dir.tool("slow", r#"{"v": 1}"#, Some("5"), ""),
    );
    let program = dir.write("p.lt", ONE_CALL);
    let log = dir.path("session.jsonl");
    let record = dir.path("slow.calls");
    let out = run_and_signal(
        &dir,
        &["run", &program, "--executors", &tools, "--log", &log],
        "INT",
        || Path::new(&record).exists(),
    );
    assert_eq!(out.code, 130, "{out:?}");
    let last = interruption(&log);
    assert_eq!(last["reason"], json!("interrupted by SIGINT"));
    assert_eq!(last["stopped"], json!([{"call_id": "n1", "started": true}]));
    assert_verifies(&dir, &log);
    let show = lt(&dir, &["log", "show", &log]);
    assert!(
        show.stdout
            .contains("session_interrupted: interrupted by SIGINT; stopped n1 (may have acted)"),
        "{show:?}"
    );
    // The tool had started: it may have acted, so it is not run again.
    let out = lt(&dir, &["resume", &log, "--executors", &tools, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let value = out.json()["value"].as_str().unwrap_or_default().to_string();
    assert!(value.starts_with("outcome unknown"), "{value}");
    assert_eq!(dir.runs("slow").len(), 1);
    assert_verifies(&dir, &log);
    let replay = lt(&dir, &["replay", &log, "--json"]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn a_call_interrupted_before_it_reached_its_tool_runs_on_resume() {
    let dir = TempDir::new("sigterm");
    // An MCP server that never answers `initialize`: the call waits for
    // the server and is never sent.
    let hang = dir.write(
        "hang.toml",
        "[tools.slow]\nmcp = { command = [\"sleep\", \"60\"], tool = \"slow\" }\ntimeout_ms = 30000\n",
    );
    let tools = dir.write("tools.toml", &dir.tool("slow", r#"{"v": 1}"#, None, ""));
    let program = dir.write("p.lt", ONE_CALL);
    let log = dir.path("session.jsonl");
    let log_path = log.clone();
    let out = run_and_signal(
        &dir,
        &["run", &program, "--executors", &hang, "--log", &log],
        "TERM",
        || std::fs::read_to_string(&log_path).is_ok_and(|t| t.contains("\"scheduled\"")),
    );
    assert_eq!(out.code, 143, "{out:?}");
    let last = interruption(&log);
    assert_eq!(last["reason"], json!("interrupted by SIGTERM"));
    assert_eq!(
        last["stopped"],
        json!([{"call_id": "n1", "started": false}])
    );
    assert_verifies(&dir, &log);
    // lt stopped it before its tool saw it: it runs now, not idempotent
    // though it is, and not `outcome unknown`.
    let out = lt(&dir, &["resume", &log, "--executors", &tools, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!("ok"));
    assert_eq!(dir.runs("slow").len(), 1);
    let k = kinds(&log);
    assert_eq!(
        k[k.len() - 5..],
        [
            "session_interrupted",
            "session_resumed",
            "scheduled",
            "completed",
            "session_ended"
        ]
    );
    assert_verifies(&dir, &log);
    let replay = lt(&dir, &["replay", &log, "--json"]);
    assert_eq!(replay.code, 0, "{replay:?}");
}
