//! The stateless 2026-07-28 revision, driven by the Python SDK's `Client`
//! pinned to it (no initialize handshake): tools listed and run, and an
//! `approve tool …` answered through the MRTR input-required round trip
//! (the client's elicitation callback answers; the SDK retries the call
//! with the answer and the request state), over stdio and HTTP.

use super::approvals::{approvals_setup, args, decided, SIGNED};
use super::*;

const MODERN: &str = "2026-07-28";

/// Runs `steps` with a client pinned to 2026-07-28 that answers every
/// question with `answer`, against `lt mcp ARGS` (stdio) or `--url URL`
/// (`target`): the results and the questions asked.
fn drive_modern(
    dir: &TempDir,
    target: &[String],
    answer: &str,
    steps: Json,
) -> (Vec<Json>, Vec<Json>) {
    let out = client_output(
        dir,
        target,
        &[],
        json!({"mode": MODERN, "elicitation": answer, "steps": steps}),
    );
    let list = |k: &str| out[k].as_array().expect(k).clone();
    let steps = list("steps");
    assert_eq!(steps[0], json!({"protocol": MODERN}), "{steps:?}");
    (steps, list("elicitations"))
}

fn stdio(args: &[&str]) -> Vec<String> {
    let mut all = vec!["--".to_string(), LT.to_string(), "mcp".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

/// The text of every log in `dir/logs` that asked an approval.
fn approval_logs(dir: &TempDir) -> Vec<String> {
    std::fs::read_dir(dir.path("logs"))
        .expect("logs")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("log"))
        .filter(|text| text.contains("approval_requested"))
        .collect()
}

/// Asserts the one question asked was signed_journal's, with its tool,
/// argument and reason in `_meta`.
fn asked_signed_journal(asked: &[Json]) {
    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    assert_eq!(
        q["message"],
        "An lt program asks to call the tool `signed_journal` with {\"line\":\"approved\"}. Approve this call?",
        "{q}"
    );
    assert_eq!(q["requestedSchema"]["required"], json!(["approve"]), "{q}");
    let meta = &q["_meta"]["lt/approval"];
    assert_eq!(meta["tool"], "signed_journal", "{q}");
    assert_eq!(meta["argument"], json!({"line": "approved"}), "{q}");
    assert!(
        meta["reason"].as_str().unwrap_or("").contains("prompt"),
        "{q}"
    );
}

#[test]
fn a_2026_client_lists_and_runs_without_an_initialize_handshake() {
    let dir = setup("modern-run", "");
    let (steps, asked) = drive_modern(
        &dir,
        &stdio(ARGS),
        "accept",
        json!([{"list": true}, run("match exec tool journal {line = \"modern\"} { Ok(j) => j.n, Err(e) => 0 }")]),
    );
    let names: Vec<&str> = steps[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "run_program",
            "check_program",
            "search_tools",
            "describe_tools"
        ]
    );
    assert_eq!(steps[2]["structuredContent"]["value"], 1, "{}", steps[2]);
    assert_eq!(asked, Vec::<Json>::new());
}

#[test]
fn an_approval_is_an_input_required_round_trip_and_the_same_session_goes_on() {
    let dir = approvals_setup("modern-accept");
    let (steps, asked) = drive_modern(&dir, &stdio(&args()), "accept", json!([run(SIGNED)]));
    let r = &steps[1];
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structuredContent"]["value"],
        json!({"n": 1, "why": ""}),
        "{r}"
    );
    asked_signed_journal(&asked);
    // One session, one log: asked, granted by elicitation, the call made.
    let (decision, by, _) = decided(&dir, r);
    assert_eq!((decision.as_str(), by.as_str()), ("allow", "elicitation"));
    assert_eq!(
        std::fs::read_dir(dir.path("logs")).expect("logs").count(),
        1
    );
    assert_eq!(calls_made(r), [("signed_journal".into(), "ok".into())]);
    assert_eq!(
        std::fs::read_to_string(dir.path("journal.txt")).expect("journal"),
        "approved\n"
    );
}

#[test]
fn an_approval_declined_on_2026_is_an_err_and_nothing_runs() {
    let dir = approvals_setup("modern-decline");
    let (steps, asked) = drive_modern(&dir, &stdio(&args()), "decline", json!([run(SIGNED)]));
    let r = &steps[1];
    assert_eq!(
        r["structuredContent"]["value"]["why"],
        "approval for signed_journal refused: declined by the person at the MCP client",
        "{r}"
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    let (decision, by, _) = decided(&dir, r);
    assert_eq!((decision.as_str(), by.as_str()), ("deny", "elicitation"));
    assert!(!std::path::Path::new(&dir.path("journal.txt")).exists());
}

#[test]
fn a_retry_that_never_comes_ends_the_session_at_the_approval_bound() {
    let dir = approvals_setup("modern-wait");
    let mut bounded = args();
    bounded.extend(["--timeout-ms", "0", "--approval-timeout-ms", "1000"]);
    // The client's callback never answers, so it never retries; it gives up
    // after 4 s, then sends a forged state and a good program.
    let mut waited = run(SIGNED);
    waited["cancel_after_s"] = json!(4);
    let mut forged = run(SIGNED);
    forged["request_state"] = json!("0123456789abcdef");
    let (steps, asked) = drive_modern(
        &dir,
        &stdio(&bounded),
        "wait",
        json!([waited, forged, run("1 + 1")]),
    );
    assert_eq!(steps[1], json!({"cancelled": true}));
    assert_eq!(asked.len(), 1, "{asked:?}");
    // The paused session was refused and cancelled: its log says so.
    let logs = approval_logs(&dir);
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(
        logs[0].contains(
            "\"reason\":\"no answer from the MCP client within 1000 ms (--approval-timeout-ms): refused\""
        ),
        "{}",
        logs[0]
    );
    let last: Json = serde_json::from_str(logs[0].lines().last().expect("an event")).expect("JSON");
    assert_eq!(last["kind"], "session_ended", "{last}");
    assert_eq!(last["error"]["kind"], "cancelled", "{last}");
    assert!(!std::path::Path::new(&dir.path("journal.txt")).exists());
    // A state the server never gave is a tool error, and nothing runs.
    assert_eq!(steps[2]["isError"], true, "{}", steps[2]);
    assert!(
        steps[2]["text"]
            .as_str()
            .unwrap_or("")
            .contains("requestState is unknown"),
        "{}",
        steps[2]
    );
    assert_eq!(steps[3]["structuredContent"]["value"], 2, "{}", steps[3]);
}

#[test]
fn a_retry_with_other_arguments_is_refused_and_nothing_runs() {
    let dir = approvals_setup("modern-other-args");
    let mut bounded = args();
    bounded.extend(["--approval-timeout-ms", "2000"]);
    let mut step = run(SIGNED);
    step["retry_with"] = json!({"program": "1 + 1"});
    let (steps, _) = drive_modern(&dir, &stdio(&bounded), "accept", json!([step]));
    let r = &steps[1];
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["text"]
            .as_str()
            .unwrap_or("")
            .contains("must repeat the call's arguments"),
        "{r}"
    );
    // The question still belonged to the first call; unanswered, it was
    // refused at its bound, so the approved tool never ran.
    assert!(!std::path::Path::new(&dir.path("journal.txt")).exists());
}

#[test]
fn over_http_an_approval_is_the_same_round_trip() {
    let dir = approvals_setup("modern-http");
    let (mut server, url) = super::http::http_server(&dir, &args(), &[]);
    let (steps, asked) = drive_modern(
        &dir,
        &["--url".to_string(), url],
        "accept",
        json!([run(SIGNED)]),
    );
    let _ = server.kill();
    let _ = server.wait();
    let r = &steps[1];
    assert_eq!(
        r["structuredContent"]["value"],
        json!({"n": 1, "why": ""}),
        "{r}"
    );
    asked_signed_journal(&asked);
    let (decision, by, _) = decided(&dir, r);
    assert_eq!((decision.as_str(), by.as_str()), ("allow", "elicitation"));
}

#[test]
fn the_sdks_default_client_probes_server_discover_and_gets_2026() {
    // `mode = "auto"` (the SDK's default) asks `server/discover` first and
    // falls back to the handshake only for a legacy server.
    let dir = setup("modern-auto", "");
    let out = client_output(
        &dir,
        &stdio(ARGS),
        &[],
        json!({"mode": "auto", "steps": [run("1 + 1")]}),
    );
    assert_eq!(out["steps"][0], json!({"protocol": MODERN}), "{out}");
    assert_eq!(out["steps"][1]["structuredContent"]["value"], 2, "{out}");
}
