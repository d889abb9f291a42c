//! The client venue end to end: the real `lt run` binary with tools marked
//! `venue = "client"`, driven by this test as a client would: it reads the
//! `tool_call` lines `lt` writes on stdout and writes `tool_result` lines
//! (or garbage, or nothing) to its stdin. Every session is logged
//! (`--log`), read back with the log reader, verified with `lt log
//! verify`, and, where it ended, replayed with `lt replay` (no client).

use lt::log::{read_log, Event, EventBody};
use serde_json::{json, Value as Json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const LT: &str = env!("CARGO_BIN_EXE_lt");

/// How long a test waits for one line of `lt` before it fails.
const PATIENCE: Duration = Duration::from_secs(30);

mod support;

use support::TempDir;

/// The tools of these tests: `edit` and `ask` run in the client (`ask`
/// waits at most 300 ms for its report), `notify` is a server tool.
const TOOLS: &str = r#"
[tools.edit]
venue = "client"
effects = ["Write"]

[tools.ask]
venue = "client"
timeout_ms = 300

[tools.notify]
fixed = { ok = { sent = true } }
"#;

const DECLS: &str = "tool edit: {path: String, text: String} -{Write}-> {bytes: Int};\n\
                     tool ask: String -> String;\n\
                     tool notify: String -{Network}-> {sent: Bool};\n";

/// A running `lt run … --json` whose stdin and stdout are this test's.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    started: Instant,
}

/// The end of a run: exit code, the final `--json` object, stderr.
#[derive(Debug)]
struct Finished {
    code: i32,
    output: Json,
    stderr: String,
    /// Lines on stdout after the last one read as a call, final one included.
    rest: Vec<String>,
    elapsed: Duration,
}

impl Client {
    /// Starts `lt run` on `DECLS` + `body` with `TOOLS`, `--log` and
    /// `--json`, then `extra` arguments.
    fn start(dir: &TempDir, body: &str, extra: &[&str]) -> Client {
        let prog = dir.write("main.lt", &format!("{DECLS}{body}"));
        let tools = dir.write("tools.toml", TOOLS);
        let log = dir.path("session.jsonl");
        let mut child = Command::new(LT)
            .args(["run", &prog, "--executors", &tools, "--log", &log, "--json"])
            .args(extra)
            .current_dir(&dir.0)
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start lt");
        let (lines, stderr) = support::read_output(&mut child);
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
            started: Instant::now(),
        }
    }

    /// The next line on lt's stdout.
    fn line(&self) -> String {
        self.lines
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|e| panic!("no line from lt within {PATIENCE:?}: {e}"))
    }

    /// The next line, which must be a tool_call of `tool`.
    fn call(&self, tool: &str) -> Json {
        let line = self.line();
        let call: Json = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a tool_call line is not JSON ({e}): {line}"));
        assert_eq!(call["type"], "tool_call", "{line}");
        assert_eq!(call["tool"], tool, "{line}");
        // One line of compact JSON, `type` first.
        assert!(
            line.starts_with(r#"{"type":"tool_call","call_id":""#),
            "{line}"
        );
        call
    }

    /// Writes `line` and `\n` to lt's stdin.
    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .expect("write to lt");
    }

    /// Reports `ok` for the call `call`.
    fn ok(&mut self, call: &Json, ok: Json) {
        let line = json!({"type": "tool_result", "call_id": call["call_id"], "ok": ok});
        self.send(&line.to_string());
    }

    /// Closes lt's stdin.
    fn close(&mut self) {
        self.stdin = None;
    }

    /// Waits for lt to end; its last stdout line is the `--json` result.
    fn finish(mut self) -> Finished {
        let mut rest = Vec::new();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => rest.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!("lt did not end within {PATIENCE:?}; stdout so far: {rest:?}");
                }
            }
        }
        let status = self.child.wait().expect("wait for lt");
        let elapsed = self.started.elapsed();
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let output = rest
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no final JSON on stdout: {rest:?}; stderr: {stderr}"));
        Finished {
            code: status.code().unwrap_or(-1),
            output,
            stderr,
            rest,
            elapsed,
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A failed assertion must not leave lt running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Finished {
    /// The program's value; asserts that the run succeeded.
    fn value(&self) -> &Json {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.output["ok"], true, "{self:?}");
        &self.output["value"]
    }
}

/// The log's events, read (and verified) by the log reader.
fn events(log: &str) -> Vec<Event> {
    let text = std::fs::read_to_string(log).expect("read the log");
    read_log(&text).unwrap_or_else(|e| panic!("the log does not read back: {e:?}"))
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(Event::kind).collect()
}

/// The events about call `id`.
fn of_call<'a>(events: &'a [Event], id: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.body.call_id() == Some(id))
        .collect()
}

/// The `(report, reason)` of every `client_rejected` event.
fn rejections(events: &[Event]) -> Vec<(Json, String)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ClientRejected { report, reason } => Some((report.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

/// Runs `lt ARGS` to the end, with stdin closed.
fn lt(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(LT)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run lt");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `lt log verify` accepts the log.
fn assert_verifies(log: &str) {
    let (code, stdout, stderr) = lt(&["log", "verify", log]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("ok:") && stdout.contains("the hash chain is intact"),
        "{stdout}"
    );
}

/// `lt replay` of the log, without any client, reaches `value`.
fn assert_replays(log: &str, value: &Json) {
    let (code, stdout, stderr) = lt(&["replay", log, "--json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let out: Json = serde_json::from_str(stdout.trim()).expect("replay --json");
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(&out["value"], value, "{out}");
}

/// The session id of a log.
fn session(events: &[Event]) -> &str {
    &events[0].session
}

// ---------------------------------------------------------------------------

#[test]
fn an_ok_report_reaches_the_program_and_is_logged() {
    let dir = TempDir::new("client-venue", "ok");
    let mut client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a.txt", text = "hi"} { Ok(r) => r.bytes, Err(e) => 0 - 1 }"#,
        &[],
    );
    let call = client.call("edit");
    assert_eq!(call["argument"], json!({"path": "a.txt", "text": "hi"}));
    // Extra fields in the value are dropped by the output type, as for any tool.
    client.ok(&call, json!({"bytes": 2, "mtime": 17}));
    let done = client.finish();
    assert_eq!(done.value(), &json!(2));
    assert_eq!(
        done.rest.len(),
        1,
        "only the result after the call: {done:?}"
    );

    let ev = events(&done_log(&dir));
    assert_eq!(
        kinds(&ev),
        [
            "session_started",
            "proposed",
            "decided",
            "scheduled",
            "client_dispatched",
            "client_reported",
            "completed",
            "session_ended"
        ]
    );
    let id = call["call_id"].as_str().expect("call_id");
    assert_eq!(
        call["idempotency_key"],
        format!("{}:{id}", session(&ev)).as_str()
    );
    match &ev[3].body {
        EventBody::Scheduled {
            venue,
            idempotency_key,
            ..
        } => {
            assert_eq!(venue, "client");
            assert_eq!(call["idempotency_key"], idempotency_key.as_str());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ev[5].body,
        EventBody::ClientReported {
            call_id: id.to_string(),
            report: json!({"type": "tool_result", "call_id": id, "ok": {"bytes": 2, "mtime": 17}}),
        }
    );
    assert_eq!(
        ev[6].body,
        EventBody::Completed {
            call_id: id.to_string(),
            output: json!({"bytes": 2, "mtime": 17}),
            result: json!({"Ok": {"bytes": 2}}),
        }
    );
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), &json!(2));
}

/// The log of the session in `dir`.
fn done_log(dir: &TempDir) -> String {
    dir.path("session.jsonl")
}

#[test]
fn a_reported_error_reaches_the_program_as_err() {
    let dir = TempDir::new("client-venue", "error");
    let mut client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a.txt", text = "hi"} { Ok(r) => "wrote", Err(e) => e }"#,
        &[],
    );
    let call = client.call("edit");
    client.send(&format!(
        r#"{{"type":"tool_result","call_id":{},"error":"disk full"}}"#,
        call["call_id"]
    ));
    let done = client.finish();
    let message = "tool edit failed in the client: disk full";
    assert_eq!(done.value(), &json!(message));
    let ev = events(&done_log(&dir));
    let id = call["call_id"].as_str().expect("id");
    assert_eq!(
        kinds(&of_call(&ev, id).into_iter().cloned().collect::<Vec<_>>()),
        [
            "proposed",
            "decided",
            "scheduled",
            "client_dispatched",
            "client_reported",
            "failed"
        ]
    );
    assert!(ev.iter().any(|e| e.body
        == EventBody::Failed {
            call_id: id.to_string(),
            failure: "failed".into(),
            message: message.into(),
            result: json!({"Err": message}),
            stderr: None,
        }));
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), &json!(message));
}

#[test]
fn a_wrongly_shaped_value_is_an_err_and_completed_with_err() {
    let dir = TempDir::new("client-venue", "shape");
    let mut client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a.txt", text = "hi"} { Ok(r) => "wrote", Err(e) => e }"#,
        &[],
    );
    let call = client.call("edit");
    client.ok(&call, json!({"bytes": "two"}));
    let done = client.finish();
    let value = done.value().as_str().expect("a string").to_string();
    assert!(
        value.starts_with("tool edit returned") && value.contains("bytes"),
        "{value}"
    );
    let ev = events(&done_log(&dir));
    let completed = ev
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Completed { output, result, .. } => Some((output, result)),
            _ => None,
        })
        .expect("a completed event");
    assert_eq!(completed.0, &json!({"bytes": "two"}));
    assert_eq!(completed.1, &json!({ "Err": value }));
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), &json!(value));
}

/// Two client calls in a row, then a server tool.
const TWO_EDITS: &str = r#"match exec tool edit {path = "a", text = "1"} {
  Ok(a) => match exec tool edit {path = "b", text = "2"} {
    Ok(b) => match exec tool notify "done" { Ok(n) => a.bytes + b.bytes, Err(e) => 0 - 3 },
    Err(e) => 0 - 2
  },
  Err(e) => 0 - 1
}"#;

#[test]
fn unknown_and_repeated_reports_are_rejected_and_never_applied_twice() {
    let dir = TempDir::new("client-venue", "duplicate");
    let mut client = Client::start(&dir, TWO_EDITS, &["--verbose"]);
    let first = client.call("edit");
    let id1 = first["call_id"].as_str().expect("id").to_string();
    // A report for a call never sent, then the real one, then it again.
    client.send(r#"{"type":"tool_result","call_id":"n999","ok":{"bytes":50}}"#);
    client.ok(&first, json!({"bytes": 1}));
    client.ok(&first, json!({"bytes": 100}));
    let second = client.call("edit");
    let id2 = second["call_id"].as_str().expect("id").to_string();
    assert_ne!(id1, id2);
    client.ok(&second, json!({"bytes": 2}));
    let done = client.finish();
    assert_eq!(done.value(), &json!(3));
    // --verbose goes to stderr; stdout holds the two calls and the result.
    assert_eq!(done.rest.len(), 1, "{done:?}");
    assert!(done.stderr.contains("edit"), "{}", done.stderr);
    assert!(done.stderr.contains("→ ok"), "{}", done.stderr);

    let ev = events(&done_log(&dir));
    let rejected = rejections(&ev);
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(
        rejected[0].0,
        json!({"type": "tool_result", "call_id": "n999", "ok": {"bytes": 50}})
    );
    assert!(
        rejected[0]
            .1
            .contains("call_id \"n999\" is not a call sent to the client"),
        "{}",
        rejected[0].1
    );
    assert_eq!(rejected[1].0["ok"], json!({"bytes": 100}));
    assert!(
        rejected[1]
            .1
            .contains(&format!("call {id1} was already reported")),
        "{}",
        rejected[1].1
    );
    // Each call: exactly one report and one outcome, the first report's.
    for (id, bytes) in [(&id1, 1), (&id2, 2)] {
        let reported: Vec<_> = of_call(&ev, id)
            .into_iter()
            .filter(|e| e.kind() == "client_reported")
            .collect();
        assert_eq!(reported.len(), 1);
        let outcomes: Vec<_> = of_call(&ev, id)
            .into_iter()
            .filter_map(|e| match &e.body {
                EventBody::Completed { output, .. } => Some(output.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(outcomes, [json!({ "bytes": bytes })]);
    }
    // The server tool ran as usual.
    assert!(ev.iter().any(|e| matches!(&e.body,
        EventBody::Scheduled { tool, venue, .. } if tool == "notify" && venue == "server")));
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), &json!(3));
}

#[test]
fn malformed_lines_are_rejected_with_their_reason_and_the_wait_goes_on() {
    let dir = TempDir::new("client-venue", "garbage");
    let mut client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a.txt", text = "hi"} { Ok(r) => r.bytes, Err(e) => 0 }"#,
        &[],
    );
    let call = client.call("edit");
    let id = call["call_id"].as_str().expect("id").to_string();
    client.send("this is not json");
    client.send("[1, 2]");
    client.send(&format!(
        r#"{{"type":"tool_result","call_id":"{id}","ok":{{"bytes":1}},"error":"x"}}"#
    ));
    client.send(&format!(
        r#"{{"type":"tool_call","call_id":"{id}","ok":{{"bytes":1}}}}"#
    ));
    client.send(&format!(
        r#"{{"type":"tool_result","call_id":"{id}","ok":{{"bytes":1}},"note":"hi"}}"#
    ));
    client.send(&format!(r#"{{"type":"tool_result","call_id":"{id}"}}"#));
    // Deeper than any tool result may be (a million levels): not parsed.
    client.send(&format!(
        r#"{{"type":"tool_result","call_id":"{id}","ok":{}{}}}"#,
        "[".repeat(1_000_000),
        "]".repeat(1_000_000)
    ));
    client.ok(&call, json!({"bytes": 5}));
    let done = client.finish();
    assert_eq!(done.value(), &json!(5));

    let ev = events(&done_log(&dir));
    let rejected = rejections(&ev);
    let expected = [
        (json!("this is not json"), "the line is not JSON"),
        (json!([1, 2]), "the line is an array, not an object"),
        (Json::Null, "both `ok` and `error` are given"),
        (
            Json::Null,
            "`type` is \"tool_call\", expected \"tool_result\"",
        ),
        (Json::Null, "unknown field `note`"),
        (Json::Null, "neither `ok` nor `error` is given"),
        (
            Json::Null,
            "the line was not parsed: it is nested more than 10000 levels deep",
        ),
    ];
    let n = expected.len();
    assert_eq!(rejected.len(), n, "{rejected:?}");
    for ((report, reason), (want, why)) in rejected.iter().zip(expected) {
        if !want.is_null() {
            assert_eq!(report, &want);
        }
        assert!(reason.contains(why), "{reason} (expected: {why})");
    }
    // The rejections sit between the dispatch and the report of the call.
    let k = kinds(&ev);
    let dispatched = k.iter().position(|k| *k == "client_dispatched");
    let reported = k.iter().position(|k| *k == "client_reported");
    assert!(dispatched < reported, "{k:?}");
    assert_eq!(k.iter().filter(|k| **k == "client_rejected").count(), n);
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), &json!(5));
}

#[test]
fn a_line_longer_than_the_cap_is_rejected_without_being_kept() {
    let dir = TempDir::new("client-venue", "long");
    let mut client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a.txt", text = "hi"} { Ok(r) => r.bytes, Err(e) => 0 }"#,
        &[],
    );
    let call = client.call("edit");
    let long = "x".repeat(16 * 1024 * 1024 + 10);
    client.send(&long);
    client.ok(&call, json!({"bytes": 9}));
    let done = client.finish();
    assert_eq!(done.value(), &json!(9));
    let ev = events(&done_log(&dir));
    let rejected = rejections(&ev);
    assert_eq!(rejected.len(), 1);
    let shown = rejected[0].0.as_str().expect("a string");
    assert_eq!(shown, format!("{}…", "x".repeat(1024)));
    assert!(
        rejected[0]
            .1
            .contains(&format!("{} bytes long", long.len())),
        "{}",
        rejected[0].1
    );
    assert_verifies(&done_log(&dir));
}

#[test]
fn a_client_that_closes_its_input_fails_this_call_and_every_later_one() {
    let dir = TempDir::new("client-venue", "eof");
    let mut client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a", text = "1"} {
  Ok(a) => "first ok",
  Err(e) => match exec tool ask "again?" { Ok(b) => "second ok", Err(f) => e ++ " | " ++ f }
}"#,
        &[],
    );
    let call = client.call("edit");
    let id = call["call_id"].as_str().expect("id").to_string();
    client.close();
    let done = client.finish();
    let value = done.value().as_str().expect("a string").to_string();
    let (first, second) = value.split_once(" | ").expect("two messages");
    assert_eq!(
        first,
        format!("tool edit: the client closed its input before reporting call {id}")
    );
    assert!(
        second.starts_with("tool ask: the client closed its input")
            && second.contains("was not sent"),
        "{second}"
    );
    // The second call was not written: only the result followed the first.
    assert_eq!(done.rest.len(), 1, "{done:?}");

    let ev = events(&done_log(&dir));
    let failures: Vec<_> = ev
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Failed {
                call_id, failure, ..
            } => Some((call_id.clone(), failure.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 2);
    assert!(failures.iter().all(|(_, f)| f == "unavailable"));
    assert_eq!(
        ev.iter()
            .filter(|e| e.kind() == "client_dispatched")
            .count(),
        1
    );
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), &json!(value));
}

#[test]
fn a_call_times_out_at_its_timeout_ms_and_a_late_report_is_rejected() {
    let dir = TempDir::new("client-venue", "timeout");
    let mut client = Client::start(
        &dir,
        r#"match exec tool ask "first?" {
  Ok(a) => a,
  Err(e) => match exec tool ask "second?" { Ok(b) => e ++ " | " ++ b, Err(f) => e ++ " | " ++ f }
}"#,
        &[],
    );
    let first = client.call("ask");
    let id1 = first["call_id"].as_str().expect("id").to_string();
    // No answer: `ask` waits 300 ms. The next call shows it gave up.
    let second = client.call("ask");
    assert_eq!(second["argument"], "second?");
    client.ok(&first, json!("too late"));
    client.ok(&second, json!("yes"));
    let done = client.finish();
    assert_eq!(
        done.value(),
        &json!(format!(
            "tool ask timed out after 300 ms waiting for the client's report of call {id1} | yes"
        ))
    );
    assert!(done.elapsed < Duration::from_secs(20), "{done:?}");

    let ev = events(&done_log(&dir));
    assert!(ev.iter().any(|e| matches!(&e.body,
        EventBody::TimedOut { call_id, .. } if *call_id == id1)));
    let rejected = rejections(&ev);
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].0["ok"], "too late");
    assert!(
        rejected[0]
            .1
            .contains(&format!("call {id1} already ended: it timed out")),
        "{}",
        rejected[0].1
    );
    assert_verifies(&done_log(&dir));
    assert_replays(&done_log(&dir), done.value());
}

#[test]
fn the_run_deadline_bounds_a_client_call_without_timeout_ms() {
    let dir = TempDir::new("client-venue", "deadline");
    let client = Client::start(
        &dir,
        r#"match exec tool edit {path = "a", text = "1"} { Ok(r) => "ok", Err(e) => e }"#,
        &["--timeout-ms", "400"],
    );
    let _call = client.call("edit");
    let done = client.finish();
    // The run's clock stops the run; the call did not wait past it.
    assert!(done.elapsed < Duration::from_secs(20), "{done:?}");
    let ev = events(&done_log(&dir));
    assert!(
        ev.iter().any(|e| e.kind() == "timed_out"),
        "{:?}",
        kinds(&ev)
    );
    assert_verifies(&done_log(&dir));
}

#[test]
fn without_a_log_the_client_venue_works_the_same() {
    let dir = TempDir::new("client-venue", "nolog");
    let prog = dir.write(
        "main.lt",
        &format!("{DECLS}match exec tool ask \"name?\" {{ Ok(a) => a, Err(e) => e }}"),
    );
    let tools = dir.write("tools.toml", TOOLS);
    let mut child = Command::new(LT)
        .args(["run", &prog, "--executors", &tools, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lt");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("read a call");
    let call: Json = serde_json::from_str(&line).expect("json");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "not json").expect("write");
    writeln!(
        stdin,
        "{}",
        json!({"type": "tool_result", "call_id": call["call_id"], "ok": "Ada"})
    )
    .expect("write");
    line.clear();
    out.read_line(&mut line).expect("read the result");
    let result: Json = serde_json::from_str(&line).expect("json");
    assert_eq!(result["value"], json!("Ada"));
    assert!(child.wait().expect("wait").success());
}

#[test]
fn a_program_read_from_stdin_cannot_call_a_client_tool() {
    let dir = TempDir::new("client-venue", "stdin");
    let tools = dir.write("tools.toml", TOOLS);
    let mut child = Command::new(LT)
        .args(["run", "-", "--executors", &tools, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            format!("{DECLS}match exec tool ask \"name?\" {{ Ok(a) => a, Err(e) => e }}")
                .as_bytes(),
        )
        .expect("write the program");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(2));
    let result: Json = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["stage"], "input");
    assert!(
        result["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("client-venue tool")),
        "{result}"
    );
}

/// A client call, then another after the first failed.
const CALL_TWICE: &str = r#"match exec tool edit {path = "a", text = "1"} {
  Ok(a) => "first ok",
  Err(e) => match exec tool ask "again?" { Ok(b) => "second ok", Err(f) => e ++ " | " ++ f }
}"#;

/// Checks a run whose client wrote nothing: stdout is at most tool_call
/// lines then the result, last; each tool_call line written is narrated
/// (`client_dispatched`) before its call's outcome, and a call not written
/// has no `client_*` event. Returns how many tool_call lines were written.
fn check_order_and_narration(stdout: &str, log: &str) -> usize {
    let lines: Vec<&str> = stdout.lines().collect();
    let (last, calls) = lines.split_last().expect("a result line");
    let result: Json = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result["ok"], true, "the result comes last: {stdout}");
    let ev = events(log);
    let mut written = Vec::new();
    for line in calls {
        let call: Json = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_eq!(call["type"], "tool_call", "{stdout}");
        let id = call["call_id"].as_str().expect("id").to_string();
        let k: Vec<&str> = of_call(&ev, &id).into_iter().map(Event::kind).collect();
        let dispatched = k.iter().position(|k| *k == "client_dispatched");
        let outcome = k
            .iter()
            .position(|k| matches!(*k, "completed" | "failed" | "timed_out"));
        assert!(
            dispatched.is_some() && dispatched < outcome,
            "{id} was written: {k:?}"
        );
        written.push(id);
    }
    for e in &ev {
        if let EventBody::ClientDispatched { call_id } = &e.body {
            assert!(
                written.contains(call_id),
                "{call_id} is narrated but was not written: {stdout}"
            );
        }
    }
    calls.len()
}

#[test]
fn with_stdin_closed_from_the_start_the_result_is_last_and_every_line_written_is_logged() {
    let dir = TempDir::new("client-venue", "devnull");
    let prog = dir.write("main.lt", &format!("{DECLS}{CALL_TWICE}"));
    let tools = dir.write("tools.toml", TOOLS);
    let log = dir.path("session.jsonl");
    for _ in 0..20 {
        let out = Command::new(LT)
            // The same log each round, replaced: --force.
            .args([
                "run",
                &prog,
                "--executors",
                &tools,
                "--log",
                &log,
                "--force",
                "--json",
            ])
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run lt");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        let written = check_order_and_narration(&stdout, &log);
        // Once the end of stdin is known no line goes out: the second call
        // never is, the first only if it was handed over before.
        assert!(written <= 1, "{stdout}");
        assert!(!stdout.contains("\"tool\":\"ask\""), "{stdout}");
    }
    assert_verifies(&log);
}

#[test]
fn after_a_client_reports_and_closes_its_input_the_next_call_is_not_written_or_is_logged() {
    for round in 0..8 {
        let dir = TempDir::new("client-venue", &format!("report-close-{round}"));
        let mut client = Client::start(
            &dir,
            r#"match exec tool edit {path = "a", text = "1"} {
  Ok(a) => match exec tool ask "again?" { Ok(b) => b, Err(f) => f },
  Err(e) => e
}"#,
            &[],
        );
        let first = client.call("edit");
        client.ok(&first, json!({"bytes": 1}));
        client.close();
        let done = client.finish();
        let value = done.value().as_str().expect("a string").to_string();
        assert!(
            value.starts_with("tool ask: the client closed its input"),
            "{value}"
        );
        let stdout = format!("{first}\n{}", done.rest.join("\n"));
        check_order_and_narration(&stdout, &done_log(&dir));
        // Written or not, the second call's message says which.
        let second_written = done.rest.len() == 2;
        assert_eq!(
            value.contains("was not sent to the client"),
            !second_written,
            "{value}: {stdout}"
        );
        assert_verifies(&done_log(&dir));
    }
}

#[test]
fn a_client_that_never_reads_stdout_does_not_keep_lt_running() {
    let dir = TempDir::new("client-venue", "noread");
    // An argument far larger than a pipe's buffer: its line cannot be written.
    let big = "x".repeat(2 * 1024 * 1024);
    let prog = dir.write(
        "main.lt",
        &format!("{DECLS}match exec tool ask \"{big}\" {{ Ok(a) => a, Err(e) => e }}"),
    );
    let tools = dir.write("tools.toml", TOOLS);
    let log = dir.path("session.jsonl");
    let started = Instant::now();
    let mut child = Command::new(LT)
        .args(["run", &prog, "--executors", &tools, "--log", &log, "--json"])
        .args(["--timeout-ms", "3000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt");
    // stdin stays open and stdout is not read until lt has ended.
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if started.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("lt still runs {:?} after it started", started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let mut stdout = Vec::new();
    let mut stderr = String::new();
    std::io::Read::read_to_end(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("read stdout");
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    // The run's output was not written: exit 2, as when stdout fails.
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: the run's output was not written"),
        "{stderr}"
    );
    // What the pipe held is the start of the line, not a whole call: the
    // call that timed out is not delivered.
    assert!(
        stdout.starts_with(br#"{"type":"tool_call""#) && !stdout.contains(&b'\n'),
        "{} bytes",
        stdout.len()
    );
    let ev = events(&log);
    assert!(ev.iter().any(|e| matches!(&e.body,
        EventBody::TimedOut { message, .. } if message.contains("writing call"))));
    assert_eq!(ev.last().map(Event::kind), Some("session_ended"));
    assert!(!ev.iter().any(|e| e.kind() == "client_dispatched"));
    assert_verifies(&log);
}

/// Two `edit` calls, each saying whether it was answered.
const EDIT_TWICE: &str = r#"let a = match exec tool edit {path = "a", text = "1"} { Ok(r) => "ok", Err(e) => e } in
let b = match exec tool edit {path = "b", text = "2"} { Ok(r) => "ok", Err(e) => e } in
a ++ " | " ++ b"#;

#[test]
fn reports_written_in_advance_give_the_same_value_every_run() {
    let dir = TempDir::new("client-venue", "in-advance");
    // The ids of the two calls, from a client that answers as they come.
    let mut client = Client::start(&dir, EDIT_TWICE, &[]);
    let first = client.call("edit");
    client.ok(&first, json!({"bytes": 1}));
    let second = client.call("edit");
    client.ok(&second, json!({"bytes": 2}));
    assert_eq!(client.finish().value(), &json!("ok | ok"));
    let pre: String = [(&first, 1), (&second, 2)]
        .iter()
        .map(|(call, bytes)| {
            format!(
                "{}\n",
                json!({"type": "tool_result", "call_id": call["call_id"], "ok": {"bytes": bytes}})
            )
        })
        .collect();
    let pre = dir.write("pre.txt", &pre);
    let prog = dir.path("main.lt");
    let tools = dir.path("tools.toml");
    for round in 0..20 {
        let out = Command::new(LT)
            .args(["run", &prog, "--executors", &tools, "--json"])
            .env("NO_COLOR", "1")
            .stdin(std::fs::File::open(&pre).expect("open pre.txt"))
            .output()
            .expect("run lt");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(0), "round {round}: {stdout}");
        let last: Json =
            serde_json::from_str(stdout.lines().last().expect("a line")).expect("the final JSON");
        assert_eq!(last["value"], json!("ok | ok"), "round {round}: {stdout}");
    }
}

/// `lt run` on a program with a client tool (whose call is never made)
/// and a string of `n` bytes as its value, `--json`, stdin `/dev/null`.
fn big_value_run(dir: &TempDir, n: usize) -> std::process::Child {
    let prog = dir.write(
        "main.lt",
        &format!(
            "{DECLS}let unused = fn q: String => exec tool ask q in \"{}\"",
            "x".repeat(n)
        ),
    );
    let tools = dir.write("tools.toml", TOOLS);
    Command::new(LT)
        .args(["run", &prog, "--executors", &tools, "--json"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt")
}

#[test]
fn a_slow_reader_of_stdout_receives_the_whole_output() {
    let dir = TempDir::new("client-venue", "slow-reader");
    let mut child = big_value_run(&dir, 200 * 1024);
    std::thread::sleep(Duration::from_secs(3));
    let mut stdout = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("read stdout");
    let status = child.wait().expect("wait for lt");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.ends_with(b"\n"), "{} bytes; {stderr}", stdout.len());
    let out: Json = serde_json::from_slice(&stdout).expect("one JSON line");
    assert_eq!(out["value"].as_str().map(str::len), Some(200 * 1024));
}

#[test]
fn a_reader_that_closes_stdout_early_makes_lt_exit_2() {
    let dir = TempDir::new("client-venue", "early-close");
    let mut child = big_value_run(&dir, 200 * 1024);
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut stdout, &mut first).expect("the output begins");
    drop(stdout);
    let status = child.wait().expect("wait for lt");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: the run's output was not written"),
        "{stderr}"
    );
}
