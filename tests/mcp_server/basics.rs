//! The tools of `lt mcp` through a real client: the listing and the
//! generated description, a good run, a rejected program, the profile,
//! the example's catalog, a bad catalog.

use super::*;

#[test]
fn a_client_lists_the_tools_and_runs_a_program() {
    let dir = setup("good", "");
    let good = r#"
match exec tool lookup_account {id = "cust_1"} {
  Ok(a) =>
    let r = exec tool issue_refund {account_id = a.id, amount = a.last_charge_cents} in
    let j = exec tool journal {line = "refunded " ++ a.id} in
    let t = exec tool now {timezone = "Etc/UTC"} in
    { tx = match r { Ok(x) => x.tx_id, Err(e) => e },
      lines = match j { Ok(x) => x.n, Err(e) => 0 },
      tz = match t { Ok(x) => x.timezone, Err(e) => e } },
  Err(e) => {tx = e, lines = 0, tz = ""}
}"#;
    let steps = drive(
        &dir,
        ARGS,
        json!([
            {"list": true},
            run(good),
            {"call": "check_program", "arguments": {"program": good}},
            {"call": "search_tools", "arguments": {"query": "refund a charge"}},
            {"call": "describe_tools", "arguments": {"names": ["now"]}},
        ]),
    );
    // The tools, and run_program's description: lt that checks.
    let tools = steps[1]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "run_program",
            "check_program",
            "search_tools",
            "describe_tools"
        ]
    );
    let description = tools[0]["description"].as_str().expect("description");
    assert!(tools[0]["outputSchema"].is_object(), "{}", tools[0]);
    let blocks = lt_blocks(description);
    assert_eq!(
        blocks.len(),
        2,
        "an example and the declarations: {description}"
    );
    assert_eq!(blocks[1].trim(), TOOLS_LT.trim());
    dir.write("example.lt", &blocks[0]);
    let out = lt_in(&dir.0, &["check", "example.lt", "--tools", "tools.lt"], &[]);
    assert_eq!(
        out.code, 0,
        "the example does not check: {out:?}\n{}",
        blocks[0]
    );
    dir.write("whole.lt", &format!("{}\n{}", blocks[1], blocks[0]));
    let out = lt_in(&dir.0, &["check", "whole.lt"], &[]);
    assert_eq!(out.code, 0, "declarations + example do not check: {out:?}");

    // The run: the value, the calls, a log lt replay accepts.
    let r = &steps[2];
    assert_eq!(r["isError"], false, "{r}");
    let s = &r["structuredContent"];
    assert_eq!(
        s["value"],
        json!({"tx": "tx_1", "lines": 1, "tz": "Etc/UTC"}),
        "{r}"
    );
    let calls: Vec<&str> = s["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["tool"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(calls, ["lookup_account", "issue_refund", "journal", "now"]);
    assert!(
        r["text"]
            .as_str()
            .unwrap_or("")
            .starts_with("Value ({tx: String, lines: Int, tz: String}): "),
        "{r}"
    );
    let log = s["log"].as_str().expect("a log path");
    assert!(log.starts_with("logs/") || log.contains("/logs/"), "{log}");
    let out = lt_in(&dir.0, &["replay", log], &[]);
    assert_eq!(out.code, 0, "lt replay: {out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path("journal.txt")).expect("journal"),
        "refunded cust_1\n"
    );

    // The check alone runs nothing.
    assert_eq!(steps[3]["isError"], false);
    assert_eq!(
        steps[3]["structuredContent"]["effects"],
        json!(["Read", "Write"])
    );
    // Search and describe give declarations.
    let found = steps[4]["structuredContent"]["tools"]
        .as_array()
        .expect("found");
    assert_eq!(found[0], "issue_refund", "{}", steps[4]);
    assert!(
        steps[5]["text"]
            .as_str()
            .unwrap_or("")
            .contains("// The current time in an IANA timezone.\ntool now: {timezone: String}"),
        "{}",
        steps[5]
    );
}

#[test]
fn three_errors_come_back_in_one_result_and_bad_input_is_refused() {
    let dir = setup("errors", "");
    let three = r#"match exec tool lookup_acount {id = "x"} {
  Ok(a) => match exec tool issue_refund {account_id = 1, amount = 2} {
    Ok(r) => r.tx,
    Err(e) => e
  },
  Err(e) => e
}"#;
    let steps = drive(
        &dir,
        ARGS,
        json!([
            run(three),
            {"call": "check_program", "arguments": {"program": three}},
            {"call": "run_program", "arguments": {}},
            {"call": "run_program", "arguments": {"program": 42}},
            {"call": "describe_tools", "arguments": {"names": ["lookup_acount"]}},
            {"call": "no_such_tool", "arguments": {}},
            run("1 + 1"),
        ]),
    );
    for r in &steps[1..3] {
        assert_eq!(r["isError"], true, "{r}");
        let codes: Vec<&str> = r["structuredContent"]["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .map(|d| d["code"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(codes, ["E0204", "E0201", "E0202"], "{r}");
        let text = r["text"].as_str().unwrap_or("");
        assert!(
            text.starts_with("The program was rejected before anything ran (3 errors)."),
            "{text}"
        );
        assert!(text.contains("E0204 at line 1, col 17"), "{text}");
        // Each rejection says to call again the tool that was called.
        let again = if r == &steps[2] {
            "call check_program again"
        } else {
            "call run_program again"
        };
        assert!(text.contains(again), "{text}");
        assert!(
            text.contains("fix: did you mean `lookup_account`?"),
            "{text}"
        );
    }
    assert!(
        !std::path::Path::new(&dir.path("journal.txt")).exists(),
        "nothing runs"
    );
    let text = |i: usize| steps[i]["text"].as_str().unwrap_or("").to_string();
    assert_eq!(steps[3]["isError"], true);
    assert_eq!(
        text(3),
        "run_program takes {\"program\": string}; `program` is missing"
    );
    assert_eq!(
        text(4),
        "run_program: `program` must be a string, not a number"
    );
    assert_eq!(text(5), "no tool named `lookup_acount` (did you mean `lookup_account`?); search_tools finds tools by what they do");
    assert!(
        steps[6]["error"]
            .as_str()
            .unwrap_or("")
            .contains("unknown tool `no_such_tool`"),
        "{}",
        steps[6]
    );
    // The server is still there after all of that.
    assert_eq!(steps[7]["structuredContent"]["value"], 2, "{}", steps[7]);
}

#[test]
fn lt_mcp_refuses_to_start_on_a_bad_catalog() {
    let dir = setup("bad", "");
    dir.write("other.toml", "[tools.lookup_account]\nfixed = { ok = 1 }\n");
    let out = lt_in(
        &dir.0,
        &["mcp", "--tools", "tools.lt", "--executors", "other.toml"],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "other.toml has no executor for issue_refund, journal, now, which tools.lt declares"
        ),
        "{out:?}"
    );
    dir.write("broken.lt", "tool t: Strin -{Read}-> String;\n");
    let out = lt_in(
        &dir.0,
        &["mcp", "--tools", "broken.lt", "--executors", "tools.toml"],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("broken.lt has errors:\n  E0205 at line 1, col 9"),
        "{out:?}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}

#[test]
fn the_profile_applies_before_and_during_a_run() {
    let dir = setup("profile", "");
    dir.write(
        "support.toml",
        "[profile]\nname = \"support\"\ndeny = [\"journal\"]\n\n[profile.tools.issue_refund]\nmax_calls = 1\n",
    );
    let twice = r#"
let refund = fn n: Int => match exec tool issue_refund {account_id = "cust_1", amount = n} {
  Ok(r) => r.tx_id,
  Err(e) => e
} in
{first = refund 1, second = refund 2}"#;
    let mut args = ARGS.to_vec();
    args.extend(["--profile", "support.toml"]);
    let steps = drive(
        &dir,
        &args,
        json!([
            run(twice),
            run("match exec tool journal {line = \"x\"} { Ok(j) => j.n, Err(e) => 0 }")
        ]),
    );
    // The second refund is denied by the budget: an Err the program handles.
    let r = &steps[1];
    assert_eq!(r["isError"], false, "{r}");
    let s = &r["structuredContent"];
    assert_eq!(s["value"]["first"], "tx_1", "{r}");
    let second = s["value"]["second"].as_str().unwrap_or("");
    assert!(second.starts_with("denied: "), "{r}");
    let statuses: Vec<&str> = s["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(statuses, ["ok", "denied"], "{r}");
    assert!(
        r["text"]
            .as_str()
            .unwrap_or("")
            .contains("\n- issue_refund denied: "),
        "{r}"
    );
    // The log records the denial.
    let log = std::fs::read_to_string(dir.0.join(s["log"].as_str().expect("log"))).expect("log");
    assert!(log.contains("\"decision\":\"deny\""), "{log}");
    // A call the profile denies outright is refused before anything runs.
    let r = &steps[2];
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["structuredContent"]["diagnostics"][0]["code"], "E0702",
        "{r}"
    );
}

#[test]
fn the_example_serves_its_catalog_and_its_readme_program_checks() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp_code_mode");
    let readme = std::fs::read_to_string(example.join("README.md")).expect("README");
    let program = lt_blocks(&readme)
        .into_iter()
        .next()
        .expect("a program in the README");
    let dir = TempDir::new("mcp-server", "example");
    // The example's own files; its tools.toml names the venv under the
    // repository's target/, here the one the tests built (CARGO_TARGET_DIR
    // may put it elsewhere). Nothing downstream starts before a call.
    let tools = example.join("tools.lt");
    let executors = std::fs::read_to_string(example.join("tools.toml")).expect("tools.toml");
    assert!(
        executors.contains("\"../../target/mcp-venv/bin/"),
        "{executors}"
    );
    let venv_bin = mcp::script("").display().to_string();
    dir.write(
        "tools.toml",
        &executors.replace("../../target/mcp-venv/bin/", &venv_bin),
    );
    let steps = drive(
        &dir,
        &[
            "--tools",
            tools.to_str().expect("path"),
            "--executors",
            "tools.toml",
        ],
        json!([{"list": true}, {"call": "check_program", "arguments": {"program": program}}]),
    );
    let description = steps[1]["tools"][0]["description"]
        .as_str()
        .expect("description");
    assert!(description.contains("tool git_log: {"), "{description}");
    assert_eq!(steps[2]["isError"], false, "{}", steps[2]);
    assert_eq!(
        steps[2]["structuredContent"]["type"],
        "{when: String, commits: String}"
    );
    for f in ["claude_desktop_config.json", "cursor_mcp.json"] {
        let v: Json = serde_json::from_str(&std::fs::read_to_string(example.join(f)).expect(f))
            .expect("JSON");
        assert_eq!(v["mcpServers"]["lt"]["args"][0], "mcp", "{f}");
    }
}
