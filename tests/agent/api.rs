//! The agent loop as a library (`docs/agent.md`, "The Rust API"): a host
//! plugs its own model client in by implementing `Proposer`, and runs the
//! loop with `run_agent` and a `LiveRunner` over a tools.toml. Here the
//! "model" is canned replies (a wrong program, its correction, an answer)
//! and the tools are `fixed` executors, so the test needs no network and no
//! process; the log it writes verifies and replays.
//!
//! `docs/agent.md` quotes this file's lines between `// doc:start` and
//! `// doc:end`; `the_guide_quotes_this_file` keeps the two in step.

use lt::agent::feedback::RunEnd;
use lt::agent::model::Role;
use lt::agent::replay::replay_agent;
use lt::agent::session::Status;
use lt::log::new_session_id;

// doc:start
use lt::agent::config::AgentSettings;
use lt::agent::model::{ModelReply, ModelRequest, ProposeError, Proposer, RetryNotice};
use lt::agent::prompt::system_prompt;
use lt::agent::runner::LiveRunner;
use lt::agent::session::{run_agent, AgentSpec, Outcome};
use lt::control::profile::Profile;
use lt::exec::{ExecutorHost, Registry};
use lt::log::{sha256_hex, EventBody, MemoryLog};
use lt::runtime::limits::Limits;
use lt::types::check_declarations;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

/// The host's model client: here, canned replies in order.
struct MyModel {
    replies: Vec<&'static str>,
    requests: Vec<ModelRequest>,
}

impl Proposer for MyModel {
    fn describe(&self) -> Json {
        json!({"provider": "my-host", "model": "canned"})
    }

    fn complete(
        &mut self,
        request: &ModelRequest,
        _retried: &mut dyn FnMut(RetryNotice),
    ) -> Result<ModelReply, ProposeError> {
        // A real client sends `request.system` and `request.messages`, asks
        // for `request.samples` replies of at most `request.max_tokens`, and
        // reports each retry through `_retried`.
        self.requests.push(request.clone());
        let text = self.replies.remove(0).to_string();
        Ok(ModelReply {
            texts: vec![text; request.samples as usize],
            usage: Json::Null,
        })
    }
}

const DECLS: &str = "\
// Looks an account up by its id.
tool lookup_account: String -{Read}-> {id: String, email: String};
";

const TOOLS_TOML: &str = r#"
[tools.lookup_account]
fixed = { ok = { id = "cust_12345", email = "ada@example.com" } }
"#;

fn run_with_my_model(model: &mut MyModel, log: &mut MemoryLog) -> Outcome {
    // The session's tool list, and the executors.
    let decls = check_declarations(DECLS);
    assert!(decls.is_ok());
    let registry =
        Registry::from_str(TOOLS_TOML, Path::new("."), "tools.toml").expect("tools.toml");
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let host = ExecutorHost::new(registry, runtime.handle().clone());
    let limits = Limits::default();
    let mut runner = LiveRunner::new(
        host,
        TOOLS_TOML.as_bytes().to_vec(),
        limits.clone(),
        log.session().to_string(),
    );

    let spec = AgentSpec {
        task: "What is the email of cust_12345?".into(),
        declarations: DECLS.into(),
        system: system_prompt(DECLS),
        settings: AgentSettings::default(),
        profile: Profile {
            name: "default".into(),
            ..Profile::default()
        },
        tags: BTreeMap::new(),
    };
    // The first event is the caller's: what `lt replay` needs to replay.
    log.append(EventBody::AgentStarted {
        lt_version: env!("CARGO_PKG_VERSION").into(),
        task: spec.task.clone(),
        declarations: spec.declarations.clone(),
        system: spec.system.clone(),
        model: model.describe(),
        settings: spec.settings.to_json(),
        profile: spec.profile.to_json(),
        registry_hash: sha256_hex(TOOLS_TOML.as_bytes()),
        limits: lt::control::session::limits_json(&limits),
        tags: json!({}),
    })
    .expect("in memory");

    let outcome = run_agent(&spec, &decls, model, &mut runner, log, &mut |line| {
        eprintln!("[lt] {line}")
    });
    runner.shutdown();
    outcome
}
// doc:end

#[test]
fn host_model_client() {
    let mut model = MyModel {
        replies: vec![
            // Reads a field the tool does not return: rejected (E0202), fed back.
            "```lt\ntool lookup_account: String -{Read}-> {id: String, email: String};\nmatch exec tool lookup_account \"cust_12345\" { Ok(a) => a.mail, Err(e) => e }\n```",
            // The correction: accepted, run.
            "```lt\ntool lookup_account: String -{Read}-> {id: String, email: String};\nmatch exec tool lookup_account \"cust_12345\" { Ok(a) => a.email, Err(e) => e }\n```",
            // Plain text after a run: the final answer.
            "The email of cust_12345 is ada@example.com.",
        ],
        requests: Vec::new(),
    };
    let mut log = MemoryLog::new(new_session_id()).expect("log");
    let outcome = run_with_my_model(&mut model, &mut log);

    assert_eq!(outcome.status, Status::Answered, "{}", outcome.reason);
    assert_eq!(
        outcome.answer.as_deref(),
        Some("The email of cust_12345 is ada@example.com.")
    );
    assert_eq!((outcome.turns, outcome.requests), (1, 3));
    assert_eq!(outcome.attempts, vec![2, 1]);
    let run = outcome.last_run.as_ref().expect("a run");
    assert_eq!(run.end, RunEnd::Value("\"ada@example.com\"".into()));
    assert_eq!(run.value, Some(json!("ada@example.com")));

    // What the model was told: the diagnostics of its first program, then
    // the run's result.
    let last_user = |r: &ModelRequest| {
        let m = r.messages.last().expect("a message");
        assert_eq!(m.role, Role::User);
        m.content.clone()
    };
    let fed_back = last_user(&model.requests[1]);
    assert!(
        fed_back.starts_with("Your program was rejected before anything ran (1 error).")
            && fed_back.contains("E0202 at line 2, col 58: Field 'mail' not found"),
        "{fed_back}"
    );
    let ran = last_user(&model.requests[2]);
    assert!(
        ran.starts_with(
            "The program ran: 1 tool call. Value: \"ada@example.com\"\n- lookup_account ok\n"
        ),
        "{ran}"
    );

    // The log verifies and replays without the model or the tools.
    let report = lt::log::verify(&log.to_jsonl());
    assert!(report.ok, "{report}");
    let kinds: Vec<&str> = log.events().iter().map(|e| e.kind()).collect();
    assert_eq!(kinds.first(), Some(&"agent_started"));
    assert_eq!(kinds.last(), Some(&"agent_ended"));
    let replayed = replay_agent(log.into_events()).expect("an agent log");
    assert_eq!(replayed.divergence, None);
    assert_eq!(replayed.outcome.status, Status::Answered);
}

#[test]
fn the_guide_quotes_this_file() {
    let this = include_str!("api.rs");
    let start = this.find("// doc:start\n").expect("start marker") + "// doc:start\n".len();
    let end = this.find("// doc:end\n").expect("end marker");
    let quoted = &this[start..end];
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/agent.md"))
        .expect("docs/agent.md");
    assert!(
        guide.contains(quoted.trim_end()),
        "docs/agent.md must quote tests/agent/api.rs between `// doc:start` and `// doc:end` verbatim"
    );
}
