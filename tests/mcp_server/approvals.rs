//! `approve tool …` under a profile with `approvals = "prompt"`: asked of
//! the person at the client through MCP elicitation (form mode) when the
//! client declared the capability, refused otherwise. The client's
//! `elicitation_callback` answers; the assertions read the reply, the
//! questions asked, the log's approval events and the journal (the tool's
//! real calls).

use super::*;

/// A folder whose catalog adds `signed_journal` (the journal, behind an
/// approval) and whose profile leaves approvals to a person.
pub(super) fn approvals_setup(name: &str) -> TempDir {
    let dir = setup(
        name,
        "\n[tools.signed_journal]\ncommand = [\"python3\", \"journal.py\"]\n",
    );
    dir.write(
        "tools.lt",
        &format!(
            "{TOOLS_LT}// Appends a line to the journal, once a person approved it.\ntool signed_journal: {{line: String, approval: !Approval}} -{{Write}}-> {{n: Int}};\n"
        ),
    );
    dir.write(
        "desk.toml",
        "[profile]\nname = \"desk\"\napprovals = \"prompt\"\n",
    );
    dir
}

pub(super) const SIGNED: &str = r#"
match approve tool signed_journal {line = "approved"} {
  Ok(a) => match exec tool signed_journal {line = "approved", approval = a} {
    Ok(j) => {n = j.n, why = ""},
    Err(e) => {n = 0, why = e}
  },
  Err(why) => {n = 0, why = why}
}"#;

pub(super) fn args() -> Vec<&'static str> {
    let mut args = ARGS.to_vec();
    args.extend(["--profile", "desk.toml"]);
    args
}

/// The (decision, by) of the log's one `approval_decided`, after its one
/// `approval_requested` for signed_journal's argument.
pub(super) fn decided(dir: &TempDir, reply: &Json) -> (String, String, String) {
    let events = log_events(dir, reply);
    let requested = of_kind(&events, "approval_requested");
    assert_eq!(requested.len(), 1, "{events:?}");
    assert_eq!(requested[0]["tool"], "signed_journal");
    assert_eq!(requested[0]["argument"], json!({"line": "approved"}));
    let decided = of_kind(&events, "approval_decided");
    assert_eq!(decided.len(), 1, "{events:?}");
    let s = |k: &str| decided[0][k].as_str().unwrap_or("").to_string();
    (s("decision"), s("by"), s("reason"))
}

#[test]
fn an_approval_accepted_through_elicitation_lets_the_call_run() {
    let dir = approvals_setup("elicit-accept");
    let (steps, asked) = drive_answering(&dir, &args(), "accept", json!([run(SIGNED)]));
    let r = &steps[1];
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structuredContent"]["value"],
        json!({"n": 1, "why": ""}),
        "{r}"
    );
    // One question, naming the tool and the argument, with a yes/no form.
    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    assert_eq!(q["mode"], "form", "{q}");
    assert_eq!(
        q["message"],
        "An lt program asks to call the tool `signed_journal` with {\"line\":\"approved\"}. Approve this call?"
    );
    assert_eq!(
        q["requestedSchema"]["properties"]["approve"]["type"], "boolean",
        "{q}"
    );
    assert_eq!(q["requestedSchema"]["required"], json!(["approve"]), "{q}");
    // The log: granted by elicitation; the tool really ran, once.
    let (decision, by, _) = decided(&dir, r);
    assert_eq!((decision.as_str(), by.as_str()), ("allow", "elicitation"));
    assert_eq!(calls_made(r), [("signed_journal".into(), "ok".into())]);
    assert_eq!(
        std::fs::read_to_string(dir.path("journal.txt")).expect("journal"),
        "approved\n"
    );
}

#[test]
fn an_approval_declined_or_cancelled_is_an_err_and_nothing_runs() {
    for (answer, reason) in [
        ("decline", "declined by the person at the MCP client"),
        ("cancel", "cancelled by the person at the MCP client"),
        ("no", "the person at the MCP client answered no"),
    ] {
        let dir = approvals_setup(&format!("elicit-{answer}"));
        let (steps, asked) = drive_answering(&dir, &args(), answer, json!([run(SIGNED)]));
        let r = &steps[1];
        // The refusal is an Err the program handled: a value, not isError.
        assert_eq!(r["isError"], false, "{answer}: {r}");
        assert_eq!(
            r["structuredContent"]["value"]["why"],
            format!("approval for signed_journal refused: {reason}"),
            "{answer}: {r}"
        );
        assert_eq!(asked.len(), 1, "{answer}: {asked:?}");
        let (decision, by, logged) = decided(&dir, r);
        assert_eq!(
            (decision.as_str(), by.as_str(), logged.as_str()),
            ("deny", "elicitation", reason)
        );
        assert_eq!(calls_made(r), [], "{answer}: {r}");
        assert!(
            !std::path::Path::new(&dir.path("journal.txt")).exists(),
            "{answer}: the tool ran"
        );
    }
}

#[test]
fn without_the_capability_the_profile_answers_and_nobody_is_asked() {
    let dir = approvals_setup("elicit-none");
    // A client without an elicitation callback declares no capability.
    let steps = drive(&dir, &args(), json!([run(SIGNED)]));
    let r = &steps[1];
    assert_eq!(r["isError"], false, "{r}");
    let why = r["structuredContent"]["value"]["why"]
        .as_str()
        .unwrap_or("");
    assert_eq!(
        why,
        "approval for signed_journal refused: the MCP client did not declare the elicitation capability, so there is no person to ask",
        "{r}"
    );
    let (decision, by, _) = decided(&dir, r);
    assert_eq!((decision.as_str(), by.as_str()), ("deny", "mcp"));
    assert!(!std::path::Path::new(&dir.path("journal.txt")).exists());
    // A profile that answers by itself is not asked about, capability or not.
    dir.write(
        "desk.toml",
        "[profile]\nname = \"desk\"\napprovals = \"allow\"\n",
    );
    let (steps, asked) = drive_answering(&dir, &args(), "decline", json!([run(SIGNED)]));
    assert_eq!(
        steps[1]["structuredContent"]["value"]["n"], 1,
        "{}",
        steps[1]
    );
    assert_eq!(asked, Vec::<Json>::new());
}

#[test]
fn an_unanswered_question_ends_at_the_deadline_or_the_cancel() {
    // No answer before the run's deadline: refused, and the run goes on.
    let dir = approvals_setup("elicit-wait");
    let mut with_deadline = args();
    with_deadline.extend(["--timeout-ms", "3000"]);
    let started = Instant::now();
    let (steps, asked) = drive_answering(&dir, &with_deadline, "wait", json!([run(SIGNED)]));
    assert!(started.elapsed() < Duration::from_secs(30), "it waited on");
    assert_eq!(asked.len(), 1, "{asked:?}");
    let r = &steps[1];
    let (decision, by, reason) = decided(&dir, r);
    assert_eq!(
        (decision.as_str(), by.as_str(), reason.as_str()),
        (
            "deny",
            "elicitation",
            "no answer from the MCP client before the run's deadline"
        ),
        "{r}"
    );
    assert_eq!(calls_made(r), [], "{r}");
    // A client that cancels the run while the question is open: the run
    // stops, nothing ran, and the next program is served.
    let dir = approvals_setup("elicit-wait-cancel");
    let mut cancelled = run(SIGNED);
    cancelled["cancel_after_s"] = json!(2);
    let (steps, _) = drive_answering(&dir, &args(), "wait", json!([cancelled, run("1 + 1")]));
    assert_eq!(steps[1], json!({"cancelled": true}));
    assert_eq!(steps[2]["structuredContent"]["value"], 2, "{}", steps[2]);
    let logs: Vec<String> = std::fs::read_dir(dir.path("logs"))
        .expect("logs")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("log"))
        .filter(|text| text.contains("approval_requested"))
        .collect();
    assert_eq!(logs.len(), 1);
    assert!(
        logs[0].contains("\"reason\":\"the run was cancelled while waiting for the approval\""),
        "{}",
        logs[0]
    );
    assert!(!std::path::Path::new(&dir.path("journal.txt")).exists());
}

#[test]
fn without_a_deadline_an_unanswered_question_is_refused_at_the_approval_bound() {
    // `--timeout-ms 0`: no run deadline; the question still ends.
    let dir = approvals_setup("elicit-no-deadline");
    let mut no_deadline = args();
    no_deadline.extend(["--timeout-ms", "0", "--approval-timeout-ms", "2000"]);
    let started = Instant::now();
    let (steps, asked) = drive_answering(&dir, &no_deadline, "wait", json!([run(SIGNED)]));
    assert!(started.elapsed() < Duration::from_secs(30), "it waited on");
    assert_eq!(asked.len(), 1, "{asked:?}");
    let r = &steps[1];
    let (decision, by, reason) = decided(&dir, r);
    assert_eq!(
        (decision.as_str(), by.as_str(), reason.as_str()),
        (
            "deny",
            "elicitation",
            "no answer from the MCP client within 2000 ms (--approval-timeout-ms): refused"
        ),
        "{r}"
    );
    assert_eq!(calls_made(r), [], "{r}");
    assert!(!std::path::Path::new(&dir.path("journal.txt")).exists());
}

#[test]
fn a_profile_with_api_approvals_is_refused_at_start_with_what_to_write() {
    // `approvals = "api"` is `lt serve`'s: nobody could answer under `lt mcp`.
    let dir = approvals_setup("api");
    dir.write(
        "desk.toml",
        "[profile]\nname = \"desk\"\napprovals = \"api\"\n",
    );
    let mut argv = vec!["mcp"];
    argv.extend(args());
    let out = lt_in(&dir.0, &argv, &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("the profile `desk` has approvals = \"api\""),
        "{out:?}"
    );
    assert!(out.stderr.contains("approvals = \"prompt\""), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
}
