//! The console's page of a task session (`POST /v1/sessions {"task"}`):
//! the task instead of a program, and the model's rounds in the timeline
//! (each request, the programs it proposed with their diagnostics), then
//! the accepted program's calls. The tenant's model is the fake model
//! server of the agent tests.

#[path = "support/console.rs"]
mod console_support;
#[path = "support/serve.rs"]
mod serve_support;
#[path = "support/mod.rs"]
mod support;

use console_support::*;
use serde_json::json;
use serve_support::Server;
use std::time::Duration;
use support::fake_model::FakeModel;

const ANSWER: &str = "I refunded the last charge of cust_12345 <b>and told them</b>.";

fn program_reply() -> String {
    let decls = std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("tools.lt");
    let program = support_program();
    let body = &program[program.find("match exec").expect("the expression")..];
    format!("Here is the program:\n```lt\n{decls}\n{body}```")
}

#[test]
fn a_task_sessions_page_shows_the_models_rounds_and_the_run() {
    let wrong = "```lt\ntool lookup_account: String -{Read}-> {id: String, subscription_tier: String, email: String, last_charge_cents: Int};\nmatch exec tool lookup_account \"cust_12345\" { Ok(a) => a.plan, Err(e) => e }\n```";
    let model = FakeModel::start(vec![
        json!({"text": wrong}),
        json!({"text": program_reply()}),
        json!({"text": ANSWER}),
    ]);
    let url = model.base_url_openai();
    let (_s, config, store) = setup_with_model("console-task", Some(&url));
    let server = Server::start(&config, &store);
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&json!({"task": "cust_12345 was charged twice: refund the last charge.", "profile": "support"})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let v = server.wait_final(ACME, &id, Duration::from_secs(60));
    assert_eq!(v["value"], json!(ANSWER), "{v}");
    let c = login(&server, ACME);
    let page = c.get(&server, &format!("/sessions/{id}"));
    assert_eq!(page.status, 200);
    let b = &page.body;
    assert!(
        b.contains("<h2>Task</h2>") && b.contains("cust_12345 was charged twice"),
        "{b}"
    );
    assert_eq!(
        b.matches("data-kind=\"Model\" data-outcome=\"answered\"")
            .count(),
        3,
        "{b}"
    );
    assert!(
        b.contains("(rejected)") && b.contains("E0202"),
        "the rejected program and its diagnostic: {b}"
    );
    assert!(b.contains("(ok)"), "{b}");
    assert_eq!(
        b.matches("data-kind=\"Call\" data-outcome=\"ok\"").count(),
        3,
        "{b}"
    );
    assert!(b.contains("id=\"verified\" data-ok=\"true\""), "{b}");
    assert!(
        b.contains("&lt;b&gt;and told them&lt;/b&gt;") && !b.contains("<b>and told"),
        "{b}"
    );
    let replayed = c.post(
        &server,
        &format!("/sessions/{id}/replay"),
        &[("csrf", &c.csrf)],
    );
    assert!(
        replayed
            .body
            .contains("id=\"replay-result\" data-ok=\"true\""),
        "{}",
        replayed.body
    );
}
