//! The `mcp` executor end to end: real `lt` runs (with `--log`) against real
//! MCP servers over stdio — the fixture `tests/fixtures/mcp/server.py`
//! (written with the `mcp` SDK) and the reference servers `mcp-server-time`
//! and `mcp-server-git` — from the venv of `tests/support/mcp.rs`.
//!
//! Server starts dominate the time (a Python server takes about 2 s of CPU
//! to import its SDK), so each test starts as few as it can; timeouts of
//! the first call of a session leave room for that start.

mod support;

use serde_json::{json, Value as Json};
use std::path::Path;
use std::time::{Duration, Instant};
use support::{lt_in, mcp, TempDir};

/// A tools.toml table `[tools.NAME]` calling `tool` on the fixture server
/// (every table the same server: one process), with `extra` lines.
fn fixture_table(name: &str, tool: &str, extra: &str) -> String {
    format!(
        "[tools.{name}]\nmcp = {{ command = [{:?}, {:?}], tool = {tool:?}, env = {{ LT_FIXTURE_STARTS = \"starts.txt\" }} }}\n{extra}\n",
        mcp::python().display().to_string(),
        mcp::fixture_server().display().to_string(),
    )
}

/// `lt run --json --log s.jsonl --executors tools.toml p.lt` in `dir`.
fn run(dir: &TempDir) -> support::Out {
    lt_in(
        &dir.0,
        &[
            "run",
            "--json",
            "--log",
            "s.jsonl",
            "--executors",
            "tools.toml",
            "p.lt",
        ],
        &[],
    )
}

/// The value of a successful `--json` run.
fn value(out: &support::Out) -> Json {
    assert_eq!(out.code, 0, "{out:?}");
    out.json()["value"].clone()
}

/// The log's events.
fn events(dir: &TempDir) -> Vec<Json> {
    std::fs::read_to_string(dir.path("s.jsonl"))
        .expect("the log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The pids the fixture server wrote on each start.
fn starts(dir: &TempDir) -> Vec<i64> {
    std::fs::read_to_string(dir.path("starts.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect()
}

/// Waits up to 3 s for process `pid` to be gone (reaped).
fn gone(pid: i64) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn text(v: &Json) -> &str {
    v.as_str().unwrap_or_else(|| panic!("a string: {v}"))
}

#[test]
fn every_kind_of_result_over_one_server_process_then_replay_without_it() {
    let dir = TempDir::new("mcp", "results");
    let mut toml = String::new();
    for (name, tool) in [
        ("account", "account"),
        ("greet", "greet"),
        ("fail", "fail"),
        ("protocol_error", "protocol_error"),
        ("pid", "pid"),
        ("pid_again", "pid"),
        ("garbage", "garbage"),
        ("picture", "picture"),
        ("whoami", "whoami"),
        ("not_a_record", "greet"),
    ] {
        toml.push_str(&fixture_table(name, tool, "timeout_ms = 30000"));
    }
    dir.write("tools.toml", &toml);
    dir.write(
        "p.lt",
        r#"
tool account: {id: String, with_nickname: Bool} -{Read}-> {id: String, tier: String, address: {city: String, zip: String}, nickname?: String, balance_cents: Int};
tool greet: {name: String} -{Read}-> String;
tool fail: {reason: String} -{Read}-> String;
tool protocol_error: Unit -{Read}-> String;
tool pid: Unit -{Read}-> {pid: Int};
tool pid_again: Unit -{Read}-> {pid: Int};
tool garbage: Unit -{Read}-> String;
tool picture: Unit -{Read}-> Json;
tool whoami: Unit -{Read}-> {meta: Json};
tool not_a_record: String -{Read}-> String;
let a = exec tool account {id = "a1", with_nickname = false} in
let b = exec tool account {id = "a2", with_nickname = true} in
let g = exec tool greet {name = "lt"} in
let f = exec tool fail {reason = "no stock"} in
let e = exec tool protocol_error () in
let p1 = exec tool pid () in
let x = exec tool garbage () in
let p2 = exec tool pid_again () in
let img = exec tool picture () in
let w = exec tool whoami () in
let n = exec tool not_a_record "lt" in
{ city = match a { Ok(r) => r.address.city, Err(e) => e },
  balance = match a { Ok(r) => r.balance_cents, Err(e) => 0 - 1 },
  nick_a = match a { Ok(r) => (match r.nickname { Some(s) => s, None => "none" }), Err(e) => e },
  nick_b = match b { Ok(r) => (match r.nickname { Some(s) => s, None => "none" }), Err(e) => e },
  greeting = match g { Ok(s) => s, Err(e) => "Err: " ++ e },
  failed = match f { Ok(s) => "Ok: " ++ s, Err(e) => e },
  rpc = match e { Ok(s) => "Ok: " ++ s, Err(e) => e },
  garbage = match x { Ok(s) => s, Err(e) => "Err: " ++ e },
  pids = [match p1 { Ok(r) => r.pid, Err(e) => 0 }, match p2 { Ok(r) => r.pid, Err(e) => 0 }],
  picture = match img { Ok(j) => j, Err(e) => to_json e },
  meta = match w { Ok(r) => r.meta, Err(e) => to_json e },
  not_a_record = match n { Ok(s) => "Ok: " ++ s, Err(e) => e } }
"#,
    );
    let out = run(&dir);
    let v = value(&out);
    // structuredContent, nested and with an optional field (null → None).
    assert_eq!(v["city"], "Lyon");
    assert_eq!(v["balance"], 1250);
    assert_eq!(v["nick_a"], "none");
    assert_eq!(v["nick_b"], "Ace");
    // Text-only content is a String.
    assert_eq!(v["greeting"], "hello, lt");
    // isError and a JSON-RPC error are Errs the program handles.
    assert_eq!(
        v["failed"],
        "tool fail failed: Error executing tool fail: cannot comply: no stock"
    );
    assert_eq!(
        v["rpc"],
        "tool protocol_error failed (MCP error -32602: protocol_error: this tool rejects every request)"
    );
    // The server's log lines on stderr are not in the Err: the log keeps
    // them beside it, as the server's output.
    let fail_id = events(&dir)
        .into_iter()
        .find(|e| e["kind"] == "proposed" && e["tool"] == "fail")
        .expect("fail proposed")["call_id"]
        .clone();
    let failed = events(&dir)
        .into_iter()
        .find(|e| e["kind"] == "failed" && e["call_id"] == fail_id)
        .expect("fail failed");
    assert_eq!(failed["message"], v["failed"], "{failed}");
    let logged = text(&failed["stderr"]);
    assert!(
        logged.contains("INFO fail: checking stock for 'no stock'")
            && logged.contains("WARNING fail: out of stock"),
        "{failed}"
    );
    // A non-JSON line on the protocol stream (and the banner before the
    // handshake) is skipped; the session goes on.
    assert_eq!(v["garbage"], "still fine");
    // Two tool tables, one server: one process for the whole session.
    let pids = v["pids"].as_array().expect("pids");
    assert_eq!(pids[0], pids[1], "{v}");
    let pid = pids[0].as_i64().expect("a pid");
    assert_eq!(starts(&dir), vec![pid]);
    // Content that is neither structured nor text: the content list as sent.
    assert_eq!(v["picture"][0]["type"], "image");
    assert_eq!(v["picture"][0]["mimeType"], "image/png");
    // lt's idempotency key reaches the server in `_meta`.
    let session = events(&dir)[0]["session"]
        .as_str()
        .expect("session")
        .to_string();
    let key = text(&v["meta"]["lt/idempotency_key"]);
    assert!(key.starts_with(&format!("{session}:n")), "{key}");
    // Any argument but a record (or unit) is refused before it is sent.
    assert!(
        text(&v["not_a_record"])
            .contains("an MCP tool takes a record argument (a JSON object), not a string"),
        "{v}"
    );
    // The server is gone once lt has exited.
    assert!(gone(pid), "the MCP server {pid} outlived lt");
    // Replay answers every call from the log: no server starts.
    let replay = lt_in(&dir.0, &["replay", "s.jsonl", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
    assert_eq!(replay.json()["value"], v);
    assert_eq!(starts(&dir), vec![pid], "replay started the server");
}

#[test]
fn a_crash_is_an_err_and_the_next_call_starts_a_fresh_server() {
    let dir = TempDir::new("mcp", "crash");
    let toml = [
        fixture_table("pid", "pid", "timeout_ms = 30000"),
        fixture_table("crash", "crash", "timeout_ms = 30000"),
    ]
    .concat();
    dir.write("tools.toml", &toml);
    dir.write(
        "p.lt",
        r#"
tool pid: Unit -{Read}-> {pid: Int};
tool crash: Unit -{Read}-> String;
let before = exec tool pid () in
let c = exec tool crash () in
let after = exec tool pid () in
{ before = match before { Ok(r) => r.pid, Err(e) => 0 },
  crash = match c { Ok(s) => "Ok: " ++ s, Err(e) => e },
  after = match after { Ok(r) => r.pid, Err(e) => 0 } }
"#,
    );
    let v = value(&run(&dir));
    let message = text(&v["crash"]);
    // The server's stderr is not the call's error: not in the Err…
    assert!(
        message.starts_with("tool crash: the MCP server ")
            && message.contains("exited (exit status 7) during the call")
            && !message.contains("stderr")
            && !message.contains("about to crash"),
        "{message}"
    );
    let (before, after) = (v["before"].as_i64(), v["after"].as_i64());
    assert_ne!(before, after, "{v}");
    assert_eq!(starts(&dir), vec![before.unwrap_or(0), after.unwrap_or(0)]);
    let failed: Vec<Json> = events(&dir)
        .into_iter()
        .filter(|e| e["kind"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["failure"], "crashed");
    assert_eq!(failed[0]["message"], message);
    // … but in the log, beside it.
    assert!(
        text(&failed[0]["stderr"]).contains("server.py: about to crash"),
        "{failed:?}"
    );
    assert!(gone(after.unwrap_or(0)));
}

#[test]
fn a_hung_call_times_out_and_a_wedged_server_is_replaced() {
    let dir = TempDir::new("mcp", "hang");
    let toml = [
        fixture_table("pid", "pid", "timeout_ms = 30000"),
        fixture_table("hang", "hang", "timeout_ms = 800"),
        fixture_table("wedge", "wedge", "timeout_ms = 800"),
    ]
    .concat();
    dir.write("tools.toml", &toml);
    dir.write(
        "p.lt",
        r#"
tool pid: Unit -{Read}-> {pid: Int};
tool hang: Unit -{Read}-> String;
tool wedge: Unit -{Read}-> String;
let before = exec tool pid () in
let h = exec tool hang () in
let between = exec tool pid () in
let w = exec tool wedge () in
let after = exec tool pid () in
{ pids = [match before { Ok(r) => r.pid, Err(e) => 0 },
          match between { Ok(r) => r.pid, Err(e) => 0 },
          match after { Ok(r) => r.pid, Err(e) => 0 }],
  hang = match h { Ok(s) => "Ok: " ++ s, Err(e) => e },
  wedge = match w { Ok(s) => "Ok: " ++ s, Err(e) => e } }
"#,
    );
    let v = value(&run(&dir));
    for tool in ["hang", "wedge"] {
        assert!(
            text(&v[tool]).starts_with(&format!("tool {tool} timed out after 800 ms (MCP server ")),
            "{v}"
        );
    }
    // After `hang` the server still answers a ping: the same process. After
    // `wedge` it does not: it is stopped, and the next call starts another.
    let pids = v["pids"].as_array().expect("pids");
    assert_eq!(pids[0], pids[1], "{v}");
    assert_ne!(pids[1], pids[2], "{v}");
    assert!(pids[2].as_i64() > Some(0), "{v}");
    assert_eq!(starts(&dir).len(), 2);
    let events = events(&dir);
    let timed_out: Vec<&Json> = events.iter().filter(|e| e["kind"] == "timed_out").collect();
    assert_eq!(timed_out.len(), 2, "{timed_out:?}");
    // Within its timeout: each hung call's outcome came less than 2 s after
    // it was scheduled.
    for call in timed_out {
        let at = |kind: &str| {
            let e = events
                .iter()
                .find(|e| e["kind"] == kind && e["call_id"] == call["call_id"])
                .expect("event");
            humantime::parse_rfc3339(text(&e["ts"])).expect("a timestamp")
        };
        let waited = at("timed_out")
            .duration_since(at("scheduled"))
            .expect("ordered");
        assert!(waited < Duration::from_millis(2000), "{waited:?}");
    }
    assert!(gone(pids[0].as_i64().unwrap_or(0)));
}

#[test]
fn a_batch_runs_concurrently_over_one_connection() {
    let dir = TempDir::new("mcp", "batch");
    dir.write(
        "tools.toml",
        &fixture_table("slow", "slow", "timeout_ms = 30000"),
    );
    dir.write(
        "p.lt",
        r#"
tool slow: {ms: Int, label: String} -{Read}-> {label: String, start_ms: Float, end_ms: Float, pid: Int};
let r = gather { a = exec tool slow {ms = 700, label = "a"},
                 b = exec tool slow {ms = 700, label = "b"},
                 c = exec tool slow {ms = 700, label = "c"} } in
let show = fn x: Result<{label: String, start_ms: Float, end_ms: Float, pid: Int}, String> =>
  match x { Ok(s) => to_json s, Err(e) => to_json e } in
[show r.a, show r.b, show r.c]
"#,
    );
    let v = value(&run(&dir));
    let spans = v.as_array().expect("three results");
    let pid = &spans[0]["pid"];
    assert!(spans.iter().all(|s| &s["pid"] == pid), "{v}");
    assert_eq!(starts(&dir).len(), 1);
    // Every pair overlaps: all three were in the server at once.
    let f = |s: &Json, k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k} in {s}"));
    for x in spans {
        for y in spans {
            assert!(
                f(x, "start_ms") < f(y, "end_ms") && f(y, "start_ms") < f(x, "end_ms"),
                "{v}"
            );
        }
    }
}

#[test]
fn a_server_that_never_initializes_or_exits_at_start_is_an_err() {
    let dir = TempDir::new("mcp", "start");
    let server = |flag: &str, name: &str, timeout: u64| {
        format!(
            "[tools.{name}]\nmcp = {{ command = [{:?}, {:?}, {flag:?}], tool = \"pid\" }}\ntimeout_ms = {timeout}\n",
            mcp::python().display().to_string(),
            mcp::fixture_server().display().to_string(),
        )
    };
    dir.write(
        "tools.toml",
        &[
            server("--hang-initialize", "slow_start", 1000),
            server("--exit-at-start", "no_start", 20000),
        ]
        .concat(),
    );
    dir.write(
        "p.lt",
        r#"
tool slow_start: Unit -{Read}-> {pid: Int};
tool no_start: Unit -{Read}-> {pid: Int};
let a = exec tool slow_start () in
let b = exec tool no_start () in
{ a = match a { Ok(r) => "Ok", Err(e) => e }, b = match b { Ok(r) => "Ok", Err(e) => e } }
"#,
    );
    let started = Instant::now();
    let v = value(&run(&dir));
    assert!(started.elapsed() < Duration::from_secs(15));
    let a = text(&v["a"]);
    assert!(
        a.starts_with("tool slow_start timed out after 1000 ms: the MCP server ")
            && a.contains("did not answer `initialize`; stderr: server.py: starting slowly"),
        "{a}"
    );
    let b = text(&v["b"]);
    assert!(
        b.starts_with("tool no_start could not be started: the MCP server ")
            && b.contains("exited (exit status 3) before it answered `initialize`; stderr: server.py: cannot start: the database is locked"),
        "{b}"
    );
    let kinds: Vec<(String, String)> = events(&dir)
        .into_iter()
        .filter(|e| e["kind"] == "failed" || e["kind"] == "timed_out")
        .map(|e| {
            (
                text(&e["kind"]).to_string(),
                e["failure"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("timed_out".to_string(), String::new()),
            ("failed".to_string(), "unavailable".to_string())
        ]
    );
}

#[test]
fn the_reference_time_and_git_servers() {
    let dir = TempDir::new("mcp", "reference");
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    std::fs::write(repo.join("README"), "hello\n").expect("a file");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "README"],
        &[
            "-c",
            "user.name=lt",
            "-c",
            "user.email=lt@example.com",
            "commit",
            "-q",
            "-m",
            "first commit from lt's tests",
        ],
    ] {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }
    let repo = repo.display().to_string();
    dir.write(
        "tools.toml",
        &format!(
            r#"
[tools.now]
mcp = {{ command = [{time:?}], tool = "get_current_time" }}
timeout_ms = 30000

[tools.git_status]
mcp = {{ command = [{git:?}, "--repository", {repo:?}], tool = "git_status" }}
timeout_ms = 30000

[tools.git_log]
mcp = {{ command = [{git:?}, "--repository", {repo:?}], tool = "git_log" }}
timeout_ms = 30000
"#,
            time = mcp::script("mcp-server-time").display().to_string(),
            git = mcp::script("mcp-server-git").display().to_string(),
        ),
    );
    dir.write(
        "p.lt",
        &format!(
            r#"
tool now: {{timezone: String}} -{{Read}}-> {{timezone: String, datetime: String, day_of_week: String, is_dst: Bool}};
tool git_status: {{repo_path: String}} -{{Read}}-> String;
tool git_log: {{repo_path: String, max_count: Int}} -{{Read}}-> String;
let t = exec tool now {{timezone = "Etc/UTC"}} in
let s = exec tool git_status {{repo_path = {repo:?}}} in
let l = exec tool git_log {{repo_path = {repo:?}, max_count = 5}} in
{{ tz = match t {{ Ok(r) => r.timezone, Err(e) => e }},
   dst = match t {{ Ok(r) => r.is_dst, Err(e) => true }},
   when = match t {{ Ok(r) => r.datetime, Err(e) => e }},
   status = match s {{ Ok(x) => x, Err(e) => "Err: " ++ e }},
   log = match l {{ Ok(x) => x, Err(e) => "Err: " ++ e }} }}
"#
        ),
    );
    let v = value(&run(&dir));
    assert_eq!(v["tz"], "Etc/UTC");
    assert_eq!(v["dst"], false);
    assert!(text(&v["when"]).ends_with("+00:00"), "{v}");
    assert!(text(&v["status"]).contains("On branch main"), "{v}");
    assert!(
        text(&v["log"]).contains("first commit from lt's tests"),
        "{v}"
    );
}

#[test]
fn sigterm_to_lt_stops_its_mcp_servers() {
    let dir = TempDir::new("mcp", "signal");
    let toml = [
        fixture_table("pid", "pid", "timeout_ms = 30000"),
        fixture_table("hang", "hang", "timeout_ms = 30000"),
    ]
    .concat();
    dir.write("tools.toml", &toml);
    dir.write(
        "p.lt",
        "tool pid: Unit -{Read}-> {pid: Int};\ntool hang: Unit -{Read}-> String;\nmatch exec tool pid () {\n  Ok(p) => (match exec tool hang () { Ok(s) => s, Err(e) => e }),\n  Err(e) => e\n}\n",
    );
    let mut child = std::process::Command::new(support::LT)
        .args(["run", "--executors", "tools.toml", "p.lt"])
        .current_dir(&dir.0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lt");
    // The server writes its pid when it starts; the hang call follows.
    let until = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        if let Some(&pid) = starts(&dir).first() {
            break pid;
        }
        assert!(Instant::now() < until, "the server did not start");
        if let Ok(Some(status)) = child.try_wait() {
            panic!("lt ended early ({status}): {:?}", child.wait_with_output());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("lt ends");
    assert_eq!(out.status.code(), Some(143), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("interrupted by SIGTERM; stopped 1 running tool(s)"),
        "{stderr}"
    );
    assert!(gone(pid), "the MCP server {pid} outlived lt");
}

#[test]
fn list_tools_returns_every_tool_as_the_server_sent_it() {
    let command = vec![
        mcp::python().display().to_string(),
        mcp::fixture_server().display().to_string(),
    ];
    let listed = lt::exec::list_tools(&command, Duration::from_secs(30)).expect("listed");
    let tools = listed["tools"].as_array().expect("a list");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {listed}"))
    };
    assert_eq!(tools.len(), 14, "{listed}");
    assert_eq!(
        tool("annotated")["annotations"],
        json!({"title": "Annotated lookup", "readOnlyHint": true, "destructiveHint": false,
               "idempotentHint": true, "openWorldHint": false})
    );
    let input = &tool("schedule")["inputSchema"]["properties"];
    assert_eq!(input["at"]["format"], "date-time");
    assert_eq!(input["contact"]["format"], "email");
    assert_eq!(input["seats"]["minimum"], 1);
    assert_eq!(input["seats"]["maximum"], 12);
    assert_eq!(input["discount"]["exclusiveMaximum"], 1);
    assert!(tool("account")["outputSchema"]["$defs"]["Address"].is_object());

    // Failures are one line, with the server's stderr.
    let failing = [command.clone(), vec!["--exit-at-start".to_string()]].concat();
    let err = lt::exec::list_tools(&failing, Duration::from_secs(30)).expect_err("fails");
    assert!(
        err.contains("exited (exit status 3) before it answered initialize; stderr: server.py: cannot start: the database is locked")
            && !err.contains('\n'),
        "{err}"
    );
    let hanging = [command.clone(), vec!["--hang-initialize".to_string()]].concat();
    let err = lt::exec::list_tools(&hanging, Duration::from_millis(800)).expect_err("fails");
    assert!(
        err.contains("timed out: no answer to initialize within 800 ms"),
        "{err}"
    );
    let err = lt::exec::list_tools(&["no-such-mcp-server".to_string()], Duration::from_secs(5))
        .expect_err("fails");
    assert!(
        err.contains("could not be started: no-such-mcp-server: No such file or directory"),
        "{err}"
    );
}

#[test]
fn mcp_tables_are_checked_when_tools_toml_is_loaded() {
    let dir = TempDir::new("mcp", "config");
    dir.write(
        "p.lt",
        "tool t: Unit -{Read}-> String;\nmatch exec tool t () { Ok(s) => s, Err(e) => e }\n",
    );
    let cases = [
        (
            "[tools.t]\nmcp = { command = [\"python3\", \"s.py\"] }\n",
            "tools.toml:2:7: tool t: the mcp table has no `tool`: the name of the tool on the server",
        ),
        (
            "[tools.t]\nmcp = { command = [\"python3\"], tool = \" \" }\n",
            "tools.toml:2:39: tool t: `tool` is empty",
        ),
        (
            "[tools.t]\nmcp = { command = [\"no-such-server\"], tool = \"x\" }\n",
            "tools.toml:2:20: tool t: the program `no-such-server` was not found on PATH",
        ),
        (
            "[tools.t]\nmcp = { command = [\"python3\"], tool = \"x\", cwd = \"nowhere\" }\n",
            "tools.toml:2:50: tool t: working directory",
        ),
        (
            "[tools.t]\nmcp = { command = [\"python3\"], tool = \"x\", env = { \"A=B\" = \"1\" } }\n",
            "tools.toml:2:52: tool t: the environment variable name \"A=B\" contains `=`",
        ),
        (
            "[tools.t]\nmcp = { command = [\"python3\"], tool = \"x\" }\ncwd = \".\"\n",
            "tools.toml:3:7: tool t: `cwd` of an MCP server goes inside the mcp table",
        ),
        (
            "[tools.t]\nmcp = { command = [\"python3\"], tool = \"x\" }\ncommand = [\"python3\"]\n",
            "tools.toml:1:1: tool t: give exactly one of command, http, fixed or mcp (found command and mcp)",
        ),
        (
            "[tools.t]\nmcp = { command = [\"python3\"], tool = \"x\", url = \"y\" }\n",
            "unknown field `url`",
        ),
    ];
    for (toml, expected) in cases {
        dir.write("tools.toml", toml);
        let out = lt_in(&dir.0, &["run", "--executors", "tools.toml", "p.lt"], &[]);
        assert_eq!(out.code, 2, "{toml}: {out:?}");
        assert!(out.stderr.contains(expected), "{toml}: {}", out.stderr);
    }
    // A valid table: --verbose describes it.
    dir.write(
        "tools.toml",
        "[tools.t]\nmcp = { command = [\"python3\", \"s.py\"], tool = \"get_time\" }\ntimeout_ms = 1234\n",
    );
    let registry = lt::exec::Registry::load(&dir.0.join("tools.toml")).expect("loads");
    let described = registry.describe("t").expect("described");
    assert!(
        described.starts_with("mcp tool get_time of `python3 s.py` (in ")
            && described.ends_with(", timeout 1234 ms)"),
        "{described}"
    );
}

/// A tools.toml table `[tools.NAME]` calling `tool` on the raw fixture
/// server `raw.py` (started with `flags`), which appends each message it
/// receives to the file `trace` (one server per distinct `flags` and
/// `trace`), with `extra` lines.
fn raw_table(name: &str, tool: &str, flags: &[&str], trace: &str, extra: &str) -> String {
    let mut command = vec![
        mcp::python().display().to_string(),
        mcp::fixtures().join("raw.py").display().to_string(),
    ];
    command.extend(flags.iter().map(|f| f.to_string()));
    format!(
        "[tools.{name}]\nmcp = {{ command = {command:?}, tool = {tool:?}, env = {{ LT_RAW_TRACE = {trace:?} }} }}\n{extra}\n"
    )
}

/// The messages a raw server traced in `file` (pid, method, id, name,
/// arguments).
fn traced(dir: &TempDir, file: &str) -> Vec<Json> {
    std::fs::read_to_string(dir.path(file))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The `(kind, failure)` of the outcome of each call, by its message's
/// tool, from the log.
fn outcome_kinds(dir: &TempDir) -> std::collections::BTreeMap<String, (String, String)> {
    events(dir)
        .into_iter()
        .filter(|e| e["kind"] == "failed" || e["kind"] == "timed_out")
        .map(|e| {
            let tool = text(&e["message"])
                .strip_prefix("tool ")
                .and_then(|m| m.split([' ', ':']).next())
                .unwrap_or_default()
                .to_string();
            let kind = (
                text(&e["kind"]).to_string(),
                e["failure"].as_str().unwrap_or("").to_string(),
            );
            (tool, kind)
        })
        .collect()
}

#[test]
fn malformed_answers_fail_at_once_and_stray_ones_are_reported() {
    let dir = TempDir::new("mcp", "malformed");
    let mut toml = String::new();
    let at_once = [
        "no_result",
        "both",
        "string_error",
        "is_error_string",
        "jsonrpc_1",
        "long_error",
        "huge_id_first",
        "huge_id_last",
        "echo",
    ];
    for tool in at_once {
        toml.push_str(&raw_table(
            tool,
            tool,
            &[],
            "trace.txt",
            "timeout_ms = 20000",
        ));
    }
    // Run at once (a gather), each waiting out its timeout; long enough for
    // lt to skip the 65 MiB line.
    for tool in ["wrong_id", "huge_id_inside"] {
        toml.push_str(&raw_table(
            tool,
            tool,
            &[],
            "trace.txt",
            "timeout_ms = 2500",
        ));
    }
    toml.push_str("[tools.cat]\nmcp = { command = [\"cat\"], tool = \"x\" }\ntimeout_ms = 20000\n");
    dir.write("tools.toml", &toml);
    let mut program = String::new();
    let tools = [
        "no_result",
        "both",
        "string_error",
        "is_error_string",
        "jsonrpc_1",
        "long_error",
        "huge_id_first",
        "huge_id_last",
        "wrong_id",
        "huge_id_inside",
        "cat",
    ];
    for tool in tools {
        program.push_str(&format!("tool {tool}: Unit -{{Read}}-> Json;\n"));
    }
    program.push_str("tool echo: {n: Int} -{Read}-> {got: {n: Int}};\n");
    program.push_str(
        "let show = fn x: Result<Json, String> => match x { Ok(j) => \"Ok\", Err(e) => e } in\n",
    );
    for tool in tools {
        if tool == "wrong_id" {
            program.push_str("let stray = gather { w = exec tool wrong_id (), h = exec tool huge_id_inside () } in\nlet wrong_id = show stray.w in\nlet huge_id_inside = show stray.h in\n");
        } else if tool != "huge_id_inside" {
            program.push_str(&format!("let {tool} = show (exec tool {tool} ()) in\n"));
        }
    }
    program.push_str(
        "let echo = match exec tool echo {n = 1} { Ok(r) => r.got.n, Err(e) => 0 } in\n{ ",
    );
    for tool in tools {
        program.push_str(&format!("{tool} = {tool}, "));
    }
    program.push_str("echo = echo }\n");
    dir.write("p.lt", &program);
    let started = Instant::now();
    let v = value(&run(&dir));
    // No call waited for its 20 s timeout.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let said = |tool: &str, expected: &str| {
        let message = text(&v[tool]);
        assert!(
            message.starts_with(&format!("tool {tool}")) && message.contains(expected),
            "{tool}: {message}"
        );
    };
    let answered = "the MCP server `";
    said("no_result", answered);
    said(
        "no_result",
        "` answered tools/call with a response with neither `result` nor `error`",
    );
    said(
        "both",
        "answered tools/call with a response with both `result` and `error`",
    );
    assert_eq!(
        v["string_error"],
        "tool string_error failed (MCP error: oops: the tool broke)"
    );
    said(
        "is_error_string",
        "answered tools/call with an `isError` that is a string, not a boolean",
    );
    said(
        "jsonrpc_1",
        "answered tools/call with a response that is not JSON-RPC 2.0 (its `jsonrpc` is \"1.0\")",
    );
    // A long JSON-RPC error message is clipped to 2 KiB.
    let long = text(&v["long_error"]);
    assert!(
        long.starts_with("tool long_error failed (MCP error -32000: long error eee"),
        "{long}"
    );
    assert!(
        long.ends_with("eee…)") && long.len() < 2200,
        "{} bytes: {long}",
        long.len()
    );
    for tool in ["huge_id_first", "huge_id_last"] {
        said(tool, "answered tools/call with a message of 68157");
        said(tool, " bytes, longer than the 64 MiB a message may be");
    }
    // What cannot be tied to the call is told in its timeout's message.
    said("wrong_id", " timed out after 2500 ms (MCP server `");
    said("wrong_id", "; the server also sent 1 response(s) with an id lt never used (the last: {\"jsonrpc\": \"2.0\", \"id\": 999999");
    said("huge_id_inside", " timed out after 2500 ms (MCP server `");
    said("huge_id_inside", "; the server also wrote 1 line(s) on stdout longer than the 64 MiB a message may be, which lt did not read (an answer among them is lost)");
    // A program that echoes its input is not taken for a server that
    // refused `initialize` with lt's own answer.
    assert_eq!(
        v["cat"],
        "tool cat could not be started: the MCP server `cat` sent lt's own `initialize` request back: the program echoes its input; is it an MCP server?"
    );
    // The session went on with the same server.
    assert_eq!(v["echo"], 1);
    let pids: std::collections::BTreeSet<i64> = traced(&dir, "trace.txt")
        .iter()
        .filter_map(|m| m["pid"].as_i64())
        .collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let kinds = outcome_kinds(&dir);
    let kind = |tool: &str| kinds.get(tool).map(|(k, f)| format!("{k} {f}"));
    for tool in [
        "no_result",
        "both",
        "is_error_string",
        "jsonrpc_1",
        "huge_id_first",
        "huge_id_last",
    ] {
        assert_eq!(
            kind(tool).as_deref(),
            Some("failed bad_output"),
            "{tool}: {kinds:?}"
        );
    }
    for tool in ["string_error", "long_error"] {
        assert_eq!(
            kind(tool).as_deref(),
            Some("failed failed"),
            "{tool}: {kinds:?}"
        );
    }
    assert_eq!(kind("cat").as_deref(), Some("failed unavailable"));
    assert_eq!(kind("wrong_id").as_deref(), Some("timed_out "));
}

#[test]
fn a_call_whose_deadline_passes_while_it_waits_is_never_sent() {
    let dir = TempDir::new("mcp", "unsent");
    // A server that answers no ping (wedged once a call hangs), and one that
    // stops reading its stdin. Each is started by a call with room for it
    // (`write_late`, `deaf`): the short timeouts below do not cover a start.
    // `hang` times out at T and the ping's verdict comes at T + 2 s; the
    // three `write`s wait for it until T + 1.5 s; `write_late` gets it.
    let toml = [
        raw_table(
            "hang",
            "hang",
            &["--no-ping"],
            "wedged.txt",
            "timeout_ms = 600",
        ),
        raw_table(
            "write",
            "echo",
            &["--no-ping"],
            "wedged.txt",
            "timeout_ms = 500",
        ),
        raw_table(
            "write_late",
            "echo",
            &["--no-ping"],
            "wedged.txt",
            "timeout_ms = 20000",
        ),
        raw_table("deaf", "deaf", &[], "deaf.txt", "timeout_ms = 20000"),
        raw_table("big", "echo", &[], "deaf.txt", "timeout_ms = 600"),
    ]
    .concat();
    dir.write("tools.toml", &toml);
    let big = "z".repeat(200 * 1024);
    dir.write(
        "p.lt",
        &format!(
            r#"
tool hang: Unit -{{Read}}-> String;
tool write: {{n: Int}} -{{Write}}-> {{got: {{n: Int}}}};
tool write_late: {{n: Int}} -{{Write}}-> {{got: {{n: Int}}}};
tool deaf: Unit -{{Read}}-> String;
tool big: {{s: String}} -{{Read}}-> Json;
let show = fn x: Result<{{got: {{n: Int}}}}, String> => match x {{ Ok(r) => to_json r.got.n, Err(e) => to_json e }} in
let w1 = show (exec tool write_late {{n = 1}}) in
let h = exec tool hang () in
let w2 = show (exec tool write {{n = 2}}) in
let w3 = show (exec tool write {{n = 3}}) in
let w4 = show (exec tool write {{n = 4}}) in
let w5 = show (exec tool write_late {{n = 5}}) in
let d = exec tool deaf () in
let s = "{big}" in
let r = gather {{ a = exec tool big {{s = s}}, b = exec tool big {{s = s}} }} in
let out = fn x: Result<Json, String> => match x {{ Ok(j) => "Ok", Err(e) => e }} in
{{ hang = match h {{ Ok(s) => s, Err(e) => e }}, writes = [w1, w2, w3, w4, w5],
   deaf = match d {{ Ok(s) => s, Err(e) => e }}, big = [out r.a, out r.b] }}
"#
        ),
    );
    let v = value(&run(&dir));
    assert!(
        text(&v["hang"]).starts_with("tool hang timed out after 600 ms (MCP server `"),
        "{v}"
    );
    // The calls made while the server had not answered the ping that
    // followed `hang` (2 s) waited for that verdict, and were not sent.
    let writes = v["writes"].as_array().expect("a list");
    assert_eq!(writes[0], 1, "{v}");
    for w in &writes[1..4] {
        let w = text(w);
        assert!(
            w.starts_with("tool write timed out after 500 ms waiting for the MCP server `")
                && w.contains("` to answer a ping (an earlier call timed out: the server may be wedged; it is stopped if it does not answer within 2000 ms); the call was not sent"),
            "{w}"
        );
    }
    // The next went to a fresh server, once the wedged one was stopped.
    assert_eq!(writes[4], 5, "{v}");
    let wedged = traced(&dir, "wedged.txt");
    let calls: Vec<(i64, Json)> = wedged
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| (m["pid"].as_i64().unwrap_or(0), m["arguments"].clone()))
        .collect();
    assert_eq!(calls.len(), 3, "{wedged:?}");
    assert_eq!(calls[0].1, json!({"n": 1}));
    assert_eq!(calls[1].1, json!({}));
    assert_eq!(calls[2].1, json!({"n": 5}));
    assert_eq!(calls[0].0, calls[1].0);
    assert_ne!(calls[1].0, calls[2].0);
    // Behind a message the server does not read, a call that was never
    // written says so.
    assert_eq!(v["deaf"], "not listening any more");
    let mut big: Vec<&str> = v["big"]
        .as_array()
        .expect("a list")
        .iter()
        .map(text)
        .collect();
    big.sort();
    assert!(
        big[0].starts_with("tool big timed out after 600 ms (MCP server `"),
        "{big:?}"
    );
    assert!(
        big[1].starts_with("tool big timed out after 600 ms waiting to write to the MCP server `")
            && big[1].contains("` (it has not read what lt sent before); the call was not sent"),
        "{big:?}"
    );
}
