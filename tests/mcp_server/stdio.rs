//! `lt mcp` over stdio spoken to by hand, line by line (no SDK, no venv):
//! what the SDK never sends. A line that is not JSON (or not UTF-8) gets JSON-RPC's
//! `-32700` Parse error (id null) and the session goes on; a client that
//! closes stdin mid-run (or a SIGTERM) has the run cancelled at once.

use super::support::{TempDir, LT};
use serde_json::{json, Value as Json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const DECLS: &str =
    "tool ping: {n: Int} -{Read}-> {n: Int};\ntool nap: {n: Int} -{Read}-> {n: Int};\n";

/// `lt mcp` over stdio in a folder with `ping` (fixed) and `nap` (a
/// process that sleeps 30 s): the child, its stdin, and its stdout's lines.
fn start(name: &str) -> (TempDir, Child, ChildStdin, Receiver<String>) {
    let dir = TempDir::new("mcp-stdio", name);
    dir.write("tools.lt", DECLS);
    dir.write(
        "tools.toml",
        "[tools.ping]\nfixed = { ok = { n = 1 } }\n\n[tools.nap]\ncommand = [\"python3\", \"-c\", \"import time; time.sleep(30); print('{\\\"n\\\": 1}')\"]\ntimeout_ms = 60000\n",
    );
    let mut child = Command::new(LT)
        .args([
            "mcp",
            "--tools",
            "tools.lt",
            "--executors",
            "tools.toml",
            "--log-dir",
            "logs",
        ])
        .current_dir(&dir.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lt mcp");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (dir, child, stdin, rx)
}

fn send(stdin: &mut ChildStdin, line: &str) {
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| stdin.flush())
        .expect("write to lt mcp");
}

fn reply(rx: &Receiver<String>) -> Json {
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a reply within 10 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

fn initialize(stdin: &mut ChildStdin, rx: &Receiver<String>) {
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
    );
    assert_eq!(reply(rx)["id"], 1);
    send(
        stdin,
        r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
    );
}

/// The next reply, checked to be JSON-RPC's `-32700` Parse error (id null).
fn parse_error(rx: &Receiver<String>) -> Json {
    let r = reply(rx);
    assert_eq!(r["jsonrpc"], "2.0", "{r}");
    assert_eq!(r["id"], Json::Null, "{r}");
    assert_eq!(r["error"]["code"], -32700, "{r}");
    r
}

/// The session goes on: `tools/list` is answered; then stdin is closed.
fn still_answers(mut child: Child, mut stdin: ChildStdin, rx: &Receiver<String>) {
    send(
        &mut stdin,
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#,
    );
    let r = reply(rx);
    assert_eq!(r["id"], 2, "{r}");
    assert!(r["result"]["tools"].is_array(), "{r}");
    drop(stdin);
    let _ = child.wait();
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_and_the_session_goes_on() {
    let (_dir, child, mut stdin, rx) = start("parse");
    send(&mut stdin, "{this is not json");
    let r = parse_error(&rx);
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Parse error")),
        "{r}"
    );
    initialize(&mut stdin, &rx);
    still_answers(child, stdin, &rx);
}

#[test]
fn a_line_that_is_not_utf8_gets_a_parse_error_and_the_session_goes_on() {
    let (_dir, child, mut stdin, rx) = start("utf8");
    initialize(&mut stdin, &rx);
    stdin
        .write_all(b"\xff\xfe\x80 bad utf8\n")
        .and_then(|()| stdin.flush())
        .expect("write to lt mcp");
    let r = parse_error(&rx);
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not UTF-8")),
        "{r}"
    );
    still_answers(child, stdin, &rx);
}

#[test]
fn closing_stdin_mid_run_cancels_the_run_at_once() {
    stopped_mid_run("closed", Duration::from_millis(1500), |_, stdin| {
        drop(stdin)
    });
}

#[test]
fn sigterm_mid_run_cancels_the_run_and_ends_its_log() {
    // Within 3 s: the run is cancelled at once, then the runtime's shutdown
    // gives the blocked read of stdin (still open) its 2 s before exiting.
    stopped_mid_run("sigterm", Duration::from_secs(3), |child, stdin| {
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        // The client still holds stdin open: the signal alone stops it.
        std::mem::forget(stdin);
    });
}

/// Starts a run of `nap` (30 s), lets the tool start, then `stop`s lt mcp
/// (close its stdin, or signal it): it exits within `bound`, and the run's
/// log ends `session_ended` cancelled.
fn stopped_mid_run(name: &str, bound: Duration, stop: impl FnOnce(&mut Child, ChildStdin)) {
    let (dir, mut child, mut stdin, rx) = start(name);
    initialize(&mut stdin, &rx);
    let program = "match exec tool nap {n = 1} { Ok(r) => r.n, Err(e) => 0 }";
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "run_program", "arguments": {"program": program}}})
        .to_string(),
    );
    // Let the tool start, then stop lt mcp.
    std::thread::sleep(Duration::from_millis(1500));
    stop(&mut child, stdin);
    let closed = Instant::now();
    let until = closed + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        assert!(
            Instant::now() < until,
            "lt mcp still runs 20 s after it was stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = closed.elapsed();
    assert!(took < bound, "lt mcp exited {took:?} after it was stopped");
    // The run's log ends cancelled, written before lt mcp exited.
    let logs: Vec<_> = std::fs::read_dir(dir.path("logs"))
        .expect("logs")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("log"))
        .collect();
    assert_eq!(logs.len(), 1);
    let last: Json = serde_json::from_str(logs[0].lines().last().expect("an event")).expect("JSON");
    assert_eq!(last["kind"], "session_ended", "{last}");
    assert_eq!(last["error"]["kind"], "cancelled", "{last}");
    assert!(
        last["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stdin ended")),
        "{last}"
    );
}
