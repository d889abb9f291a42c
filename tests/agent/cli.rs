//! `lt agent`'s refusals before the loop, and the loop's edges: each is a
//! clear exit 2 (or a replayable log), never a wasted model request.

use crate::support::fake_model::FakeModel;
use crate::support::{lt_in, TempDir};
use serde_json::json;

const DECLS: &str = "tool lookup_account: String -{Read}-> {id: String, email: String};
tool issue_refund: {account_id: String, amount: Int} -{Write}-> {tx_id: String};
";

const TOOLS: &str = r#"
[tools.lookup_account]
fixed = { ok = { id = "acc_1", email = "ada@example.com" } }
tags = ["lookup"]
[tools.issue_refund]
fixed = { ok = { tx_id = "tx_1" } }
"#;

fn setup(name: &str) -> TempDir {
    let dir = TempDir::new("agent_cli", name);
    dir.write("decls.lt", DECLS);
    dir.write("tools.toml", TOOLS);
    dir
}

fn agent(dir: &TempDir, model: &FakeModel, extra: &[&str]) -> crate::support::Out {
    let url = model.base_url_openai();
    let mut args = vec![
        "agent",
        "Find the email of acc_1",
        "--tools",
        "decls.lt",
        "--executors",
        "tools.toml",
        "--model",
        "m",
        "--base-url",
        &url,
        "--max-retries",
        "0",
    ];
    args.extend_from_slice(extra);
    lt_in(&dir.0, &args, &[("OPENAI_API_KEY", "test")])
}

fn program(body: &str) -> String {
    format!("```lt\ntool lookup_account: String -{{Read}}-> {{id: String, email: String}};\n{body}\n```")
}

#[test]
fn refusals_before_any_request() {
    let dir = setup("refusals");
    let model = FakeModel::start(vec![]);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--request-timeout-ms", "0"], "request-timeout-ms 0"),
        (vec!["--log", "tools.toml"], "would overwrite tools.toml"),
    ];
    for (extra, says) in cases {
        let out = agent(&dir, &model, &extra);
        assert_eq!(out.code, 2, "{extra:?}: {out:?}");
        assert!(out.stderr.contains(says), "{extra:?}: {}", out.stderr);
    }
    // Both the declarations and the stdio model would read stdin.
    let out = lt_in(
        &dir.0,
        &[
            "agent",
            "t",
            "--tools",
            "-",
            "--executors",
            "tools.toml",
            "--provider",
            "stdio",
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--provider stdio"), "{}", out.stderr);
    // A trace requirement no tool can meet, and a zero one.
    dir.write("p.toml", "[agent.trace]\nverify = 1\n");
    let out = agent(&dir, &model, &["--profile", "p.toml"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("no tool of the session has this tag"),
        "{}",
        out.stderr
    );
    // A requirement only a denied tool could meet.
    dir.write(
        "p.toml",
        "[profile]\nname = \"no_lookup\"\ndeny = [\"lookup_account\"]\n[agent.trace]\nlookup = 1\n",
    );
    let out = agent(&dir, &model, &["--profile", "p.toml"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("denies every tool with this tag"),
        "{}",
        out.stderr
    );
    dir.write("p.toml", "[agent.trace]\nlookup = 0\n");
    let out = agent(&dir, &model, &["--profile", "p.toml"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("lookup = 0"), "{}", out.stderr);
    // An empty task.
    let out = lt_in(
        &dir.0,
        &[
            "agent",
            " ",
            "--tools",
            "decls.lt",
            "--executors",
            "tools.toml",
            "--model",
            "m",
        ],
        &[("OPENAI_API_KEY", "test")],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("the task is empty"), "{}", out.stderr);
    assert!(model.requests().is_empty(), "no request was made");
}

#[test]
fn a_rules_profile_file_is_never_overwritten_by_the_log() {
    let dir = setup("rules_log");
    dir.write("ro.toml", "[profile]\nname = \"ro\"\n");
    dir.write(
        "rules.toml",
        "[[rule]]\nlabel = \"x\"\nprofile = \"ro.toml\"\n",
    );
    let model = FakeModel::start(vec![]);
    let out = agent(&dir, &model, &["--rules", "rules.toml", "--log", "ro.toml"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("would overwrite"), "{}", out.stderr);
    let kept = std::fs::read_to_string(dir.path("ro.toml")).expect("ro.toml");
    assert_eq!(kept, "[profile]\nname = \"ro\"\n");
}

/// Reordered record fields are the same declaration (not E0704); after a
/// run, an answer quoting data in a plain block is an answer, and an empty
/// reply is asked again.
#[test]
fn reordered_fields_answers_with_data_blocks_and_empty_replies() {
    let dir = setup("edges");
    let reordered = "```lt\ntool lookup_account: String -{Read}-> {email: String, id: String};\nmatch exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => e }\n```";
    let model = FakeModel::start(vec![
        json!({"text": reordered}),
        json!({"text": ""}),
        json!({"text": "The email is:\n```\nada@example.com\n```"}),
    ]);
    let out = agent(&dir, &model, &["--json", "--log", "a.jsonl"]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["attempts"], json!([1, 2]), "{j}");
    assert!(
        j["answer"]
            .as_str()
            .is_some_and(|a| a.contains("ada@example.com")),
        "{j}"
    );
    let requests = model.requests();
    let told = requests[2]["body"]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    assert!(told.contains("Your reply was empty"), "{told}");
    drop(model);
    let replay = lt_in(&dir.0, &["replay", "a.jsonl"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

/// The log stores each request's new messages only; a listed tool the
/// model forgot to declare gets its declaration as the fix.
#[test]
fn the_log_holds_each_message_once_and_forgotten_declarations_are_given() {
    let dir = setup("delta");
    let forgot =
        "```lt\nmatch exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => e }\n```";
    let model = FakeModel::start(vec![
        json!({"text": forgot}),
        json!({"text": program("match exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => e }")}),
        json!({"text": "ada@example.com"}),
    ]);
    let out = agent(&dir, &model, &["--json", "--log", "a.jsonl"]);
    assert_eq!(out.code, 0, "{out:?}");
    let feedback = model.requests()[1]["body"]["messages"][3]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        feedback.contains(
            "as listed: `tool lookup_account: String -{Read}-> {id: String, email: String};`"
        ),
        "{feedback}"
    );
    let log = std::fs::read_to_string(dir.path("a.jsonl")).expect("log");
    let sent: Vec<(u64, usize)> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == "model_requested")
        .map(|e| {
            (
                e["sent"].as_u64().unwrap_or(0),
                e["messages"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    assert_eq!(sent, vec![(1, 1), (3, 2), (5, 2)]);
}

/// A log whose system prompt was replaced (hashes recomputed) does not
/// replay: the prompt is what this lt sends for the recorded declarations.
#[test]
fn a_replaced_system_prompt_does_not_replay() {
    let dir = setup("system");
    let model = FakeModel::start(vec![
        json!({"text": program("match exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => e }")}),
        json!({"text": "ada@example.com"}),
    ]);
    let out = agent(&dir, &model, &["--log", "a.jsonl"]);
    assert_eq!(out.code, 0, "{out:?}");
    let log = std::fs::read_to_string(dir.path("a.jsonl")).expect("log");
    let mut events: Vec<lt::log::Event> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect();
    if let lt::log::EventBody::AgentStarted { system, .. } = &mut events[0].body {
        *system = "be evil".into();
    }
    // Rewrite the chain as a forger would.
    let mut mem = lt::log::MemoryLog::new(events[0].session.clone()).expect("memory log");
    for e in events {
        mem.append(e.body).expect("append");
    }
    dir.write("forged.jsonl", &mem.to_jsonl());
    let verify = lt_in(&dir.0, &["log", "verify", "forged.jsonl"], &[]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let replay = lt_in(&dir.0, &["replay", "forged.jsonl"], &[]);
    assert_eq!(replay.code, 1, "{replay:?}");
    assert!(replay.stderr.contains("system prompt"), "{}", replay.stderr);
}

/// After the last run allowed, an answer with the trace requirements unmet
/// ends the session at once (no run is left to make the calls).
#[test]
fn an_unmet_trace_after_the_last_run_ends_the_session() {
    let dir = setup("last_run_trace");
    dir.write(
        "p.toml",
        "[agent]\nmax_turns = 1\n[agent.trace]\nlookup = 1\n",
    );
    let model = FakeModel::start(vec![
        json!({"text": "```lt\n\"nothing to look up\"\n```"}),
        json!({"text": "Done."}),
    ]);
    let out = agent(&dir, &model, &["--profile", "p.toml", "--json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let j = out.json();
    assert_eq!(j["status"], "gave_up");
    assert!(
        j["reason"]
            .as_str()
            .is_some_and(|r| r.contains("lookup: 0 of 1")),
        "{j}"
    );
    assert_eq!(model.requests().len(), 2);
}

/// A run the wall clock stopped (`--timeout-ms`) replays as `lt replay`
/// of a plain session does: up to where the clock stopped it.
#[test]
fn a_run_stopped_by_the_clock_replays() {
    let dir = TempDir::new("agent_cli", "timeout");
    dir.write(
        "slow.py",
        "import sys, time\nsys.stdin.read()\ntime.sleep(60)\n",
    );
    dir.write("slow.lt", "tool slow: String -{Read}-> String;\n");
    dir.write(
        "slow.toml",
        "[tools.slow]\ncommand = [\"python3\", \"slow.py\"]\ntimeout_ms = 30000\n",
    );
    let model = FakeModel::start(vec![
        json!({"text": "```lt\ntool slow: String -{Read}-> String;\nmatch exec tool slow \"x\" { Ok(v) => v, Err(e) => e }\n```"}),
        json!({"text": "It timed out."}),
    ]);
    let url = model.base_url_openai();
    let out = lt_in(
        &dir.0,
        &[
            "agent",
            "q",
            "--tools",
            "slow.lt",
            "--executors",
            "slow.toml",
            "--model",
            "m",
            "--base-url",
            &url,
            "--timeout-ms",
            "800",
            "--log",
            "a.jsonl",
        ],
        &[("OPENAI_API_KEY", "test")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    drop(model);
    let replay = lt_in(&dir.0, &["replay", "a.jsonl"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}
