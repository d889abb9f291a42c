//! The failure report: when a run stops (a limit, a denial it does not
//! handle, a cancel), the result lists the calls that already ran and
//! their outcomes, so the model never guesses which effects happened.

use super::*;

#[test]
fn a_stopped_run_lists_the_calls_that_already_ran() {
    let dir = setup("stopped", "");
    let program = r#"
match exec tool journal {line = "one"} {
  Ok(a) => match exec tool lookup_account {id = "cust_1"} {
    Ok(b) => match exec tool journal {line = "two"} { Ok(c) => c.n, Err(e) => 0 },
    Err(e) => 0
  },
  Err(e) => 0
}"#;
    let mut args = ARGS.to_vec();
    args.extend(["--max-calls", "2"]);
    let steps = drive(&dir, &args, json!([run(program)]));
    let r = &steps[1];
    assert_eq!(r["isError"], true, "{r}");
    let s = &r["structuredContent"];
    assert_eq!(s["error"]["kind"], "call_limit", "{r}");
    let calls: Vec<(String, String)> = s["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").into(),
                c["status"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("journal".to_string(), "ok".to_string()),
            ("lookup_account".into(), "ok".into())
        ],
        "{r}"
    );
    let text = r["text"].as_str().unwrap_or("");
    assert!(
        text.starts_with("The run stopped (call_limit) after 2 tool calls: "),
        "{text}"
    );
    assert!(
        text.ends_with(
            "These calls already ran (their effects happened):\n- journal ok\n- lookup_account ok"
        ),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path("journal.txt")).expect("journal"),
        "one\n"
    );
}

#[test]
fn a_call_whose_output_does_not_fit_its_type_is_not_listed_as_ok() {
    let dir = setup(
        "wrong-shape",
        "\n[tools.shape]\nfixed = { ok = { m = 1 } }\n",
    );
    dir.write(
        "tools.lt",
        &format!("{TOOLS_LT}// Answers {{m: 1}}, not its declared type.\ntool shape: {{x: Int}} -{{Read}}-> {{n: Int}};\n"),
    );
    let program = "match exec tool shape {x = 1} { Ok(r) => r.n, Err(e) => 0 }";
    let steps = drive(&dir, ARGS, json!([run(program)]));
    let r = &steps[1];
    assert_eq!(r["structuredContent"]["value"], 0, "{r}");
    assert_eq!(
        calls_made(r),
        [("shape".to_string(), "bad_output".to_string())],
        "{r}"
    );
    let message = r["structuredContent"]["tool_calls"][0]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        message.contains("tool shape returned an invalid result"),
        "{r}"
    );
}

/// setup's folder plus `nap`, a command tool that sleeps 30 s.
fn nap_setup(name: &str) -> TempDir {
    let dir = setup(
        name,
        "\n[tools.nap]\ncommand = [\"python3\", \"-c\", \"import json, sys, time; json.load(sys.stdin); time.sleep(30); print(json.dumps({'n': 1}))\"]\ntimeout_ms = 60000\n",
    );
    dir.write(
        "tools.lt",
        &format!("{TOOLS_LT}// Sleeps.\ntool nap: {{seconds: Int}} -{{Read}}-> {{n: Int}};\n"),
    );
    dir
}

const NAP: &str = r#"
match exec tool journal {line = "one"} {
  Ok(a) => match exec tool nap {seconds = 30} { Ok(n) => n.n, Err(e) => 0 },
  Err(e) => 0
}"#;

#[test]
fn a_run_past_its_deadline_lists_the_calls_that_already_ran() {
    let dir = nap_setup("deadline");
    let mut args = ARGS.to_vec();
    args.extend(["--timeout-ms", "3000"]);
    let started = Instant::now();
    let steps = drive(&dir, &args, json!([run(NAP)]));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the nap was not stopped"
    );
    let r = &steps[1];
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["error"]["kind"], "timeout", "{r}");
    let calls = calls_made(r);
    assert_eq!(
        calls,
        [
            ("journal".to_string(), "ok".to_string()),
            ("nap".into(), "timed_out".into())
        ],
        "{r}"
    );
    let text = r["text"].as_str().unwrap_or("");
    assert!(
        text.starts_with("The run stopped (timeout) after 2 tool calls: "),
        "{text}"
    );
    assert!(
        text.contains(
            "These calls already ran (their effects happened):\n- journal ok\n- nap timed_out: "
        ),
        "{text}"
    );
}

#[test]
fn a_cancelled_run_stops_its_tools_and_its_log_lists_the_calls() {
    let dir = nap_setup("cancel");
    let mut cancelled = run(NAP);
    cancelled["cancel_after_s"] = json!(3);
    let started = Instant::now();
    let steps = drive(
        &dir,
        ARGS,
        json!([
            cancelled,
            run("match exec tool journal {line = \"two\"} { Ok(j) => j.n, Err(e) => 0 }")
        ]),
    );
    // MCP gives a cancelled request no result: the session's log is its report.
    assert_eq!(steps[1], json!({"cancelled": true}));
    assert_eq!(steps[2]["structuredContent"]["value"], 2, "{}", steps[2]);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the nap was not stopped"
    );
    let mut logs: Vec<Vec<Json>> = std::fs::read_dir(dir.path("logs"))
        .expect("logs")
        .map(|e| {
            std::fs::read_to_string(e.expect("entry").path())
                .expect("log")
                .lines()
                .map(|l| serde_json::from_str(l).expect("event"))
                .collect()
        })
        .collect();
    assert_eq!(logs.len(), 2);
    logs.retain(|events| events.iter().any(|e| e["tool"] == "nap"));
    let events = &logs[0];
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"completed"),
        "the journal's call: {kinds:?}"
    );
    let ended = events.last().expect("an event");
    assert_eq!(ended["kind"], "session_ended", "{kinds:?}");
    assert_eq!(ended["error"]["kind"], "cancelled", "{ended}");
    assert_eq!(
        std::fs::read_to_string(dir.path("journal.txt")).expect("journal"),
        "one\ntwo\n"
    );
}

#[test]
fn sigterm_stops_lt_mcp_over_http_with_a_run_in_flight() {
    let dir = nap_setup("http-sigterm");
    let (mut server, url) = super::http::http_server(&dir, ARGS, &[]);
    std::thread::scope(|scope| {
        // A client whose run of the 30 s nap is in flight when the signal
        // comes (its own result does not matter here).
        let target = ["--url".to_string(), url];
        let dir = &dir;
        scope.spawn(move || client_output(dir, &target, &[], json!([run(NAP)])));
        std::thread::sleep(Duration::from_secs(3));
        let killed = Command::new("kill")
            .args(["-TERM", &server.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let signalled = Instant::now();
        while server.try_wait().expect("wait").is_none() {
            assert!(
                signalled.elapsed() < Duration::from_secs(15),
                "lt mcp --http still runs 15 s after SIGTERM with a run in flight"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    // The run was cancelled and its log ended before lt mcp exited.
    let logs: Vec<String> = std::fs::read_dir(dir.path("logs"))
        .expect("logs")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let last: Json = serde_json::from_str(logs[0].lines().last().expect("an event")).expect("JSON");
    assert_eq!(last["kind"], "session_ended", "{last}");
    assert_eq!(last["error"]["kind"], "cancelled", "{last}");
}
