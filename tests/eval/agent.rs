//! Agent cases (`task`): the `lt agent` loop run by `lt eval` against the
//! fake model server, with recorded replies over the support-desk tools,
//! and with a seeded random model that proposes the right program with a
//! known probability, so that the reported rate and its Wilson interval
//! can be checked against it.

use crate::fixed::{json, lt, path, stderr, suite};
use crate::support::fake_model::FakeModel;
use serde_json::{json, Value as Json};

/// The support-desk program as a model would reply it.
fn support_desk_reply() -> String {
    let program =
        std::fs::read_to_string(crate::fixed::root().join("examples/support_desk/program.lt"))
            .expect("program.lt");
    format!("Here is the program.\n\n```lt\n{program}\n```")
}

fn model_table(model: &FakeModel) -> String {
    format!(
        "[defaults.model]\nprovider = \"openai\"\nmodel = \"fake\"\nbase_url = \"{}\"\nmax_retries = 0\n",
        model.base_url_openai()
    )
}

#[test]
fn recorded_replies_drive_an_agent_case_over_the_real_tools() {
    let model = FakeModel::start(vec![
        json!({"text": support_desk_reply()}),
        json!({"text": "Refunded tx and told ada@example.com."}),
        json!({"text": support_desk_reply()}),
        json!({"text": "Refunded tx and told ada@example.com."}),
    ]);
    let tools_lt = crate::fixed::root().join("examples/serve/tools.lt");
    let dir = suite(
        "agent-recorded",
        &format!(
            "tools = \"{}\"\n{}\n[[case]]\nname = \"refund_agent\"\ntask = \"Refund the last charge of cust_12345 and tell them\"\n[case.agent]\nmax_turns = 2\n[case.expect]\nvalue_matches = \"^refund tx_[0-9]+ processed\"\ncalls = [\"lookup_account\", \"issue_refund\", \"send_reply\"]\nmax_rounds = 2\ncriteria = [\"session.rounds == 2\"]\n",
            tools_lt.display(),
            model_table(&model)
        ),
    );
    let o = lt(&[
        "eval",
        &path(&dir, "suite.toml"),
        "--runs",
        "2",
        "--jobs",
        "1",
        "--json",
    ]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(0), "{j}\n{}", stderr(&o));
    let case = &j["cases"][0];
    assert_eq!(case["passed"], json!(2), "{case}");
    assert_eq!(case["mean_rounds"], json!(2.0), "{case}");
    let rec = &case["records"][1];
    assert_eq!(rec["rounds"], json!(2), "{rec}");
    assert_eq!(
        rec["answer"],
        json!("Refunded tx and told ada@example.com."),
        "{rec}"
    );
    assert_eq!(rec["invariants"], json!([]), "{rec}");
    // Four requests: a program and an answer per run, nothing more.
    assert_eq!(model.requests().len(), 4);
}

const DECLS: &str = "tool lookup_account: String -{Read}-> {id: String, email: String};\n";

const FIXED_TOOLS: &str =
    "[tools.lookup_account]\nfixed = { ok = { id = \"acc_1\", email = \"ada@example.com\" } }\n";

fn fenced(body: &str) -> String {
    format!("```lt\n{DECLS}{body}\n```")
}

/// 200 runs of a model right with probability 0.7: the reported rate is
/// the share of right draws, and its 95% Wilson interval holds 0.7.
#[test]
fn a_random_model_converges_to_its_probability() {
    let model = FakeModel::start_script(json!({"random": {
        "seed": 26,
        "p": 0.7,
        "right": fenced("match exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => \"lookup failed\" }"),
        "wrong": fenced("\"I do not know\""),
        "answer": "Done.",
    }}));
    let dir = suite(
        "agent-random",
        &format!(
            "{}\n[[case]]\nname = \"email\"\ntask = \"Find the email of acc_1\"\ntools = \"decls.lt\"\nexecutors = \"fixed.toml\"\nsetup = \"true\"\n[case.expect]\nvalue = \"ada@example.com\"\ncalls = [\"lookup_account\"]\nmax_rounds = 2\n",
            model_table(&model)
        ),
    );
    std::fs::write(dir.join("decls.lt"), DECLS).expect("decls");
    std::fs::write(dir.join("fixed.toml"), FIXED_TOOLS).expect("tools");
    let o = lt(&[
        "eval",
        &path(&dir, "suite.toml"),
        "--runs",
        "200",
        "--jobs",
        "2",
        "--min-success",
        "0",
        "--json",
    ]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(0), "{j}\n{}", stderr(&o));
    let right = model
        .requests()
        .iter()
        .filter(|r| r["drawn"] == json!("right"))
        .count();
    let drawn = model
        .requests()
        .iter()
        .filter(|r| r.get("drawn").is_some())
        .count();
    assert_eq!(drawn, 200, "one draw per run");
    let case = &j["cases"][0];
    assert_eq!(case["runs"], json!(200));
    assert_eq!(case["passed"], json!(right), "{}", case["outcomes"]);
    let rate = case["rate"].as_f64().expect("rate");
    let (lo, hi) = (
        case["interval"][0].as_f64().expect("lo"),
        case["interval"][1].as_f64().expect("hi"),
    );
    assert!(lo <= 0.7 && 0.7 <= hi, "[{lo}, {hi}] misses 0.7");
    assert!((0.6..=0.8).contains(&rate), "rate {rate}");
    assert!(
        hi - lo < 0.15,
        "interval [{lo}, {hi}] too wide for 200 runs"
    );
    // Exactly two outcomes: the right program's and the wrong one's.
    assert_eq!(case["outcomes"].as_array().map(Vec::len), Some(2));
}

#[test]
fn bad_agent_cases_get_a_location_and_a_hint() {
    let cases = [
        (
            "[[case]]\nname = \"a\"\ntask = \"Find it\"\ntools = \"decls.lt\"\n",
            "suite.toml:7:8",
            "a task needs a model",
        ),
        (
            "[[case]]\nname = \"a\"\ntask = \"Find it\"\nprogram = \"$EX/program.lt\"\n",
            "suite.toml:7:8",
            "has both a program and a task",
        ),
        (
            "[[case]]\nname = \"a\"\ntask = \"Find it\"\n[case.model]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "suite.toml:7:8",
            "a task needs the declarations",
        ),
        (
            "[[case]]\nname = \"a\"\ntask = \"Find it\"\ntools = \"decls.lt\"\n[case.model]\nmodel = \"m\"\napi_key = \"sk-1\"\n",
            "suite.toml:9:1",
            "never written in a suite",
        ),
        (
            "[[case]]\nname = \"a\"\ntask = \"Find it\"\ntools = \"decls.lt\"\n[case.model]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[case.agent]\nsamples = 0\n",
            "suite.toml:7:8",
            "[agent] settings",
        ),
    ];
    for (i, (text, at, says)) in cases.iter().enumerate() {
        let dir = suite(&format!("agent-bad-{i}"), text);
        std::fs::write(dir.join("decls.lt"), DECLS).expect("decls");
        let o = lt(&["eval", &path(&dir, "suite.toml")]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(at), "{text}: wanted {at}: {err}");
        assert!(err.contains(says), "{text}: wanted {says:?}: {err}");
        assert!(err.contains("help:"), "{err}");
    }
}

/// An agent's log holds a session per run, whose call ids start afresh:
/// the invariants are checked run by run, so an allow decision of run 1
/// does not stand for a call of run 2 that lost its own.
#[test]
fn invariants_are_checked_run_by_run_in_an_agent_log() {
    let model = FakeModel::start(vec![
        json!({"text": fenced("match exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => \"lookup failed\" }")}),
        json!({"text": fenced("match exec tool lookup_account \"acc_1\" { Ok(a) => a.id, Err(e) => \"lookup failed\" }")}),
        json!({"text": "Done."}),
    ]);
    let dir = crate::support::TempDir::new("eval-agent", "segments");
    dir.write("decls.lt", DECLS);
    dir.write("fixed.toml", FIXED_TOOLS);
    let url = model.base_url_openai();
    let out = crate::support::lt_in(
        &dir.0,
        &[
            "agent",
            "Find the email and the id of acc_1",
            "--tools",
            "decls.lt",
            "--executors",
            "fixed.toml",
            "--model",
            "m",
            "--base-url",
            &url,
            "--max-retries",
            "0",
            "--log",
            "a.jsonl",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(dir.path("a.jsonl")).expect("log");
    let events = lt::log::read_log(&text).expect("verifies");
    assert!(lt::eval::record::invariants(&text, &events).is_empty());
    let decided: Vec<u64> = events
        .iter()
        .filter(|e| e.body.kind() == "decided")
        .map(|e| e.seq)
        .collect();
    assert_eq!(decided.len(), 2, "one call per run");
    // Drop run 2's decision and rewrite the chain as a forger would.
    let mut mem = lt::log::MemoryLog::new(events[0].session.clone()).expect("memory log");
    for e in events.into_iter().filter(|e| e.seq != decided[1]) {
        mem.append(e.body).expect("append");
    }
    let forged = mem.to_jsonl();
    let events = lt::log::read_log(&forged).expect("the forged log verifies");
    let found = lt::eval::record::invariants(&forged, &events);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("allow before execution:")),
        "{found:?}"
    );
}

/// examples/eval/agents.toml as shipped, its endpoint replaced by the
/// fake model (a random model that only looks the customer up) and its
/// world moved to a folder of its own: every case starts, runs and is
/// judged; only the lookup case can pass.
#[test]
fn the_shipped_agent_suite_runs_against_a_local_model() {
    let root = crate::fixed::root();
    let model = FakeModel::start_script(json!({"random": {
        "seed": 1,
        "p": 1.0,
        "right": format!("```lt\n{}match exec tool lookup_account \"cust_12345\" {{ Ok(a) => a.subscription_tier, Err(e) => \"lookup failed\" }}\n```",
            "tool lookup_account: String -{Read}-> {id: String, subscription_tier: String, email: String, last_charge_cents: Int};\n"),
        "wrong": "",
        "answer": "Their tier is pro.",
    }}));
    let shipped =
        std::fs::read_to_string(root.join("examples/eval/agents.toml")).expect("agents.toml");
    let text = shipped
        .replace("https://api.openai.com/v1", &model.base_url_openai())
        .replace(
            "\"../serve/tools.lt\"",
            &format!("{:?}", root.join("examples/serve/tools.lt")),
        )
        .replace(
            "\"read_only.toml\"",
            &format!("{:?}", root.join("examples/eval/read_only.toml")),
        );
    assert_ne!(text, shipped);
    let dir = suite("agents-example", "");
    std::fs::write(dir.join("suite.toml"), text).expect("suite");
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(1), "{j}\n{}", stderr(&o));
    let names: Vec<&str> = j["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["refund_and_notify", "lookup_only", "read_only_refund"]
    );
    let passed: Vec<&Json> = j["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| &c["passed"])
        .collect();
    assert_eq!(passed, [&json!(0), &json!(1), &json!(1)], "{j}");
    for c in j["cases"].as_array().expect("cases") {
        assert_eq!(c["records"][0]["invariants"], json!([]), "{c}");
        assert_eq!(c["records"][0]["rounds"], json!(2), "{c}");
    }
}

#[test]
fn a_model_server_that_is_down_errors_the_run_rather_than_failing_it() {
    let tools_lt = crate::fixed::root().join("examples/serve/tools.lt");
    // Nothing listens on port 9 (discard) of this machine.
    let dir = suite(
        "agent-down",
        &format!(
            "tools = \"{}\"\n[defaults.model]\nprovider = \"openai\"\nmodel = \"fake\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_retries = 0\n\n[[case]]\nname = \"refund_agent\"\ntask = \"Refund the last charge of cust_12345\"\n[case.expect]\ncalls_contain = [\"issue_refund\"]\n\n[[case]]\nname = \"fixed\"\nprogram = \"$EX/program.lt\"\n",
            tools_lt.display(),
        ),
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--runs", "2", "--json"]);
    let j = json(&o);
    assert_eq!(o.status.code(), Some(3), "{j}\n{}", stderr(&o));
    assert!(stderr(&o).contains("errored: 2 runs"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("gate failed"), "{}", stderr(&o));
    let case = &j["cases"][0];
    assert_eq!(case["errored"], json!(2), "{case}");
    assert_eq!(case["passed"], json!(0), "{case}");
    let rec = &case["records"][0];
    assert!(
        rec["errored"]
            .as_str()
            .is_some_and(|e| e.contains("the model could not be reached")),
        "{rec}"
    );
    assert_eq!(rec["failed"], json!([]), "not judged: {rec}");
    // The suite's rate is over the judged runs only: the fixed case's.
    assert_eq!(j["errored"], json!(2), "{j}");
    assert_eq!(j["passed"], json!(2), "{j}");
    assert_eq!(j["rate"], json!(1.0), "{j}");
}
