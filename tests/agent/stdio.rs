//! `lt agent --provider stdio`: a host in another language answers the
//! loop's model requests as JSON lines (src/agent/stdio.rs), here a Python
//! host (tests/fixtures/agent_stdio/host.py) with canned replies.

use crate::support::{TempDir, LT};
use serde_json::{json, Value as Json};
use std::process::Command;

const DECLS: &str = "// Looks up an account by its id.
tool lookup_account: String -{Read}-> {id: String, email: String};
";

const TOOLS: &str = r#"
[tools.lookup_account]
fixed = { ok = { id = "acc_1", email = "ada@example.com" } }
"#;

fn program(field: &str) -> String {
    format!(
        "```lt\ntool lookup_account: String -{{Read}}-> {{id: String, email: String}};\nmatch exec tool lookup_account \"c1\" {{\n  Ok(a) => a.{field},\n  Err(e) => \"lookup failed\"\n}}\n```"
    )
}

/// Runs the host with `replies` against `lt agent … --provider stdio --json`.
fn host(dir: &TempDir, replies: Json, extra: &[&str]) -> Json {
    let decls = dir.write("decls.lt", DECLS);
    let tools = dir.write("tools.toml", TOOLS);
    let replies = dir.write("replies.json", &replies.to_string());
    let log = dir.path("agent.jsonl");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent_stdio/host.py"
    );
    let mut args = vec![
        script.to_string(),
        replies,
        "--".into(),
        LT.into(),
        "agent".into(),
        "Find the email of account c1".into(),
        "--tools".into(),
        decls,
        "--executors".into(),
        tools,
        "--provider".into(),
        "stdio".into(),
        "--json".into(),
    ];
    if !extra.contains(&"--no-log") {
        args.extend(["--log".to_string(), log]);
    }
    args.extend(
        extra
            .iter()
            .filter(|s| **s != "--no-log")
            .map(|s| s.to_string()),
    );
    let out = Command::new("python3")
        .args(&args)
        .output()
        .expect("run python3");
    assert!(out.status.success(), "host failed: {out:?}");
    serde_json::from_slice(&out.stdout).expect("host output is JSON")
}

#[test]
fn a_host_answers_the_model_requests_and_the_loop_corrects_and_answers() {
    let dir = TempDir::new("agent_stdio", "answers");
    let r = host(
        &dir,
        json!([
            program("mail"),
            program("email"),
            "The email is ada@example.com."
        ]),
        &[],
    );
    assert_eq!(r["code"], 0, "{r}");
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "The email is ada@example.com.");
    assert_eq!(result["value"], "ada@example.com");
    assert_eq!(result["attempts"], json!([2, 1]));
    let requests = r["requests"].as_array().cloned().unwrap_or_default();
    assert_eq!(requests.len(), 3);
    // Every request carries the system prompt (the guide and the tools).
    assert!(requests[0]["system"]
        .as_str()
        .is_some_and(|s| s.contains("tool lookup_account")));
    // The second request feeds back the wrong field.
    let feedback = requests[1]["messages"][2]["content"].as_str().unwrap_or("");
    assert!(feedback.contains("E0202"), "{feedback}");
    assert!(feedback.contains("a.mail"), "{feedback}");
    // The log replays without the host.
    let replay = Command::new(LT)
        .args(["replay", &dir.path("agent.jsonl")])
        .output()
        .expect("run lt replay");
    assert!(replay.status.success(), "{replay:?}");
}

#[test]
fn a_model_error_or_a_malformed_line_from_the_host_ends_the_session_with_exit_3() {
    let dir = TempDir::new("agent_stdio", "error");
    let r = host(&dir, json!([{"error": "quota exhausted"}]), &[]);
    assert_eq!(r["code"], 3, "{r}");
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    assert_eq!(result["status"], "error");
    assert!(
        result["reason"]
            .as_str()
            .is_some_and(|m| m.contains("quota exhausted")),
        "{result}"
    );

    let dir = TempDir::new("agent_stdio", "malformed");
    let r = host(
        &dir,
        json!([{"raw": "{\"type\":\"model_reply\",\"id\":7,\"texts\":[\"x\"]}"}]),
        &[],
    );
    assert_eq!(r["code"], 3, "{r}");
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    assert!(
        result["reason"]
            .as_str()
            .is_some_and(|m| m.contains("not for request 1")),
        "{result}"
    );

    // The host closes stdin: a clear transport error, not a hang.
    let dir = TempDir::new("agent_stdio", "closed");
    let r = host(&dir, json!([]), &[]);
    assert_eq!(r["code"], 3, "{r}");
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    assert!(
        result["reason"]
            .as_str()
            .is_some_and(|m| m.contains("closed stdin")),
        "{result}"
    );
}

/// Without `--log` the events are discarded, but the model is still told
/// what each call did, and trace requirements still count the calls.
#[test]
fn without_a_log_the_model_still_hears_what_each_call_did() {
    let dir = TempDir::new("agent_stdio", "nolog");
    let r = host(
        &dir,
        json!([program("email"), "The email is ada@example.com."]),
        &["--no-log"],
    );
    assert_eq!(r["code"], 0, "{r}");
    let requests = r["requests"].as_array().cloned().unwrap_or_default();
    let ran = requests[1]["messages"][2]["content"].as_str().unwrap_or("");
    assert!(ran.contains("1 tool call"), "{ran}");
    assert!(ran.contains("- lookup_account ok"), "{ran}");
}

/// A `--profile` file with only an `[agent]` table keeps the permissive
/// policy and sets the loop: one attempt, then the session gives up (exit
/// 1), naming the last rejection.
#[test]
fn a_profile_file_with_only_an_agent_table_sets_the_loop() {
    let dir = TempDir::new("agent_stdio", "agent_only");
    let profile = dir.write("agent.toml", "[agent]\nmax_attempts = 1\n");
    let r = host(&dir, json!([program("mail")]), &["--profile", &profile]);
    assert_eq!(r["code"], 1, "{r}");
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    assert_eq!(result["status"], "gave_up");
    let reason = result["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("1 attempt") && reason.contains("E0202 at line 3"),
        "{reason}"
    );
}

/// Under `--rules`, a rule without a `profile` keeps the session's profile
/// (here `--profile`, which denies the tool): the model is told up front
/// that the tool is denied, and a program calling it is rejected (E0702).
#[test]
fn a_rule_without_a_profile_keeps_the_sessions_profile() {
    let dir = TempDir::new("agent_stdio", "rules");
    let profile = dir.write(
        "deny.toml",
        "[profile]\nname = \"no_lookup\"\ndeny = [\"lookup_account\"]\n",
    );
    let rules = dir.write(
        "rules.toml",
        "[[rule]]\nlabel = \"lookup\"\ndescription = \"account questions\"\n",
    );
    let r = host(
        &dir,
        json!([
            "lookup",
            program("email"),
            "```lt\n\"this session cannot look accounts up\"\n```",
            "I cannot look accounts up in this session."
        ]),
        &["--profile", &profile, "--rules", &rules],
    );
    assert_eq!(r["code"], 0, "{}", r["final"]);
    let requests = r["requests"].as_array().cloned().unwrap_or_default();
    assert_eq!(requests.len(), 4, "{}", r["final"]);
    let task = requests[1]["messages"][0]["content"].as_str().unwrap_or("");
    assert!(task.contains("Do not call `lookup_account`"), "{task}");
    let feedback = requests[2]["messages"][2]["content"].as_str().unwrap_or("");
    assert!(feedback.contains("E0702"), "{feedback}");
}

/// The `reason` of the session's `--json` result.
fn reason_of(r: &Json) -> String {
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    result["reason"].as_str().unwrap_or("").to_string()
}

/// Blank lines (only whitespace) before the reply are skipped, not fatal.
#[test]
fn blank_lines_from_the_host_are_skipped() {
    let dir = TempDir::new("agent_stdio", "blank_lines");
    let reply = format!(
        r#"{{"type":"model_reply","id":{{id}},"texts":{}}}"#,
        json!([program("email")])
    );
    let r = host(
        &dir,
        json!([
            {"raw_lines": ["", "   \t", "\r", reply]},
            {"raw_lines": ["", "{\"type\":\"model_reply\",\"id\":{id},\"texts\":[\"The email is ada@example.com.\"]}"]}
        ]),
        &[],
    );
    assert_eq!(r["code"], 0, "{r}");
    let result: Json = serde_json::from_str(r["final"].as_str().unwrap_or("")).expect("final line");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["value"], "ada@example.com");
    assert_eq!(r["requests"].as_array().map(Vec::len), Some(2));
}

/// A line that is not JSON, or not for the request, is quoted in the error:
/// clipped to 200 characters, control characters escaped.
#[test]
fn a_bad_line_from_the_host_is_quoted_clipped_and_escaped() {
    let dir = TempDir::new("agent_stdio", "not_json");
    let line = format!("Traceback: \u{1b}[31mboom\u{7} {}", "x".repeat(400));
    let r = host(&dir, json!([{"raw": line}]), &[]);
    assert_eq!(r["code"], 3, "{r}");
    let reason = reason_of(&r);
    assert!(
        reason.contains(r#"the host's line is not JSON: "Traceback: \u{1b}[31mboom\u{7} xxx"#),
        "{reason}"
    );
    assert!(reason.contains("xxx\"…"), "{reason}");
    assert!(!reason.contains(&"x".repeat(200)), "clipped: {reason}");
    assert!(!reason.contains('\u{1b}'), "escaped: {reason}");

    let dir = TempDir::new("agent_stdio", "other_id");
    let r = host(
        &dir,
        json!([{"raw": "{\"type\":\"model_reply\",\"id\":7,\"texts\":[\"x\"]}"}]),
        &[],
    );
    assert_eq!(r["code"], 3, "{r}");
    let reason = reason_of(&r);
    assert!(
        reason.contains(r#"not for request 1: "{\"type\":\"model_reply\",\"id\":7"#),
        "{reason}"
    );
}

/// A `model_error` says that the host reported it.
#[test]
fn a_model_error_says_the_host_reported_it() {
    let dir = TempDir::new("agent_stdio", "host_reported");
    let r = host(&dir, json!([{"error": "quota exhausted"}]), &[]);
    assert_eq!(r["code"], 3, "{r}");
    let reason = reason_of(&r);
    assert!(
        reason.contains("the host reported: quota exhausted"),
        "{reason}"
    );
    assert!(
        !reason.contains("expected"),
        "not a malformed line: {reason}"
    );
}
