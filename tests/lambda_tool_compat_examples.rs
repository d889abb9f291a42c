//! λ-Tool programs keep their meaning in lt: the same type, the same effects,
//! the same verdict, and — run through the real `lt` binary with `fixed`
//! executors (docs/executors.md) — the same tool calls, in the same order,
//! with the same arguments, and the same value.
//!
//! The programs are every flat `examples/*.lt` (λ-Tool programs: the
//! article's, the README's, skill.md's patterns, λ-Tool's own tests), the
//! programs of the article "Fixing Programmatic Tool Calling With Types"
//! verbatim (the support agent, `map` with an effectful callback, the
//! `traverse` example, the linear token, the `account.plan` typo), and the
//! programs of lambda-tool-python's test suite, with the values that suite
//! asserts λ-Tool returns.
//!
//! Every expected value below was worked out by hand from λ-Tool's semantics
//! (call-by-value, `traverse` stops at the first Err, `match` picks the arm,
//! `fold` from the left). The one lt-specific text is the message of a failed
//! call: a `fixed = { error = "…" }` executor makes the Err string
//! `tool NAME failed: …` (the `lambda_tool` protocol, tested in compat.rs,
//! passes the host's message verbatim).
//!
//! Each run is also logged (`--log`): the `proposed` events are the calls the
//! program made, which pins the control flow, not just the final value.

use serde_json::{json, Value};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

mod support;

use support::{lt_in, Out, TempDir};

const LAMBDA_TOOL: &str = env!("CARGO_BIN_EXE_lambda_tool");

// ---------------------------------------------------------------------------
// The article's programs, verbatim. (The `traverse` snippet uses the `charge`
// tool declared by the snippet before it; its declaration is prepended.)

const SEED_SUPPORT_AGENT: &str = r#"tool lookup_account: String -{Read}-> {id: String, subscription_tier: String,
                                       email: String, last_charge_cents: Int};
tool issue_refund: {account_id: String, amount: Int} -{Write}-> {tx_id: String};
tool send_reply: {to: String, body: String} -{Write}-> Unit;

match exec tool lookup_account "cust_12345" {
  Ok(account) =>
    match exec tool issue_refund {account_id = account.id,
                                   amount = account.last_charge_cents} {
      Ok(refund) =>
        match exec tool send_reply {to = account.email,
                                     body = refund.tx_id} {
          Ok(u) => "refund processed and customer notified",
          Err(e) => "refund succeeded but notification failed"
        },
      Err(e) => "refund failed, customer not refunded"
    },
  Err(e) => "account lookup failed"
}
"#;

const SEED_MAP_EFFECT: &str = r#"tool charge: {id: Int, amount: Int} -{Write}-> {tx_id: String};

map (fn o: {id: Int, amount: Int} => exec tool charge o)
    [{id = 1, amount = 100}]
(* Effect violation: allowed {} but got {Write} *)
"#;

const SEED_TRAVERSE: &str = r#"tool charge: {id: Int, amount: Int} -{Write}-> {tx_id: String};

match traverse (fn o: {id: Int, amount: Int} =>
    exec tool charge o
  ) [{id = 1, amount = 100}] {
  Ok(receipts) => "done",
  Err(e) => e
}
"#;

const SEED_LINEAR: &str = r#"fn token: !String => let a = token in let b = token in a
(* Linearity violation for 'token': used 2 times (must be exactly once) *)
"#;

/// The article's "wrong field" bug: the account has `subscription_tier`, not `plan`.
fn seed_wrong_field() -> String {
    let p = SEED_SUPPORT_AGENT.replace("body = refund.tx_id", "body = account.plan");
    assert_ne!(p, SEED_SUPPORT_AGENT);
    p
}

// ---------------------------------------------------------------------------
// Helpers

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `lt check --json` of `program`.
fn check(program: &str) -> Value {
    let dir = TempDir::new("compat-examples", "check");
    dir.write("program.lt", program);
    let out = lt_in(&dir.0, &["check", "--json", "program.lt"], &[]);
    out.json()
}

/// `lambda_tool --json --typecheck` with `program` on stdin (λ-Tool's own CLI form).
fn lambda_tool_typecheck(program: &str) -> Value {
    let mut child = Command::new(LAMBDA_TOOL)
        .args(["--json", "--typecheck"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lambda_tool");
    let mut stdin = child.stdin.take().expect("stdin");
    let text = program.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().expect("wait for lambda_tool");
    let _ = writer.join();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout:?}"))
}

/// The program is accepted with this type and these effects, by `lt check`
/// and by the `lambda_tool` CLI.
fn assert_accepted(name: &str, program: &str, ty: &str, effects: &[&str]) {
    let c = check(program);
    assert_eq!(c["ok"], true, "{name}: {c:#}");
    assert_eq!(c["type"], ty, "{name}: {c:#}");
    assert_eq!(c["effects"], json!(effects), "{name}: {c:#}");
    let l = lambda_tool_typecheck(program);
    assert_eq!(
        l,
        json!({"ok": true, "type": ty, "effects": effects}),
        "{name}: lambda_tool --json --typecheck"
    );
}

/// The program is rejected, with a diagnostic of code `code` whose message
/// is λ-Tool's `message`; `lt run` refuses to start it (exit 1, stage check,
/// no call made).
fn assert_rejected(name: &str, program: &str, code: &str, message: &str) {
    let c = check(program);
    assert_eq!(c["ok"], false, "{name}: {c:#}");
    let diags = c["diagnostics"].as_array().expect("diagnostics");
    assert!(
        diags
            .iter()
            .any(|d| d["code"] == code && d["message"] == message),
        "{name}: no {code} `{message}` in {c:#}"
    );
    let dir = TempDir::new("compat-examples", "rejected");
    dir.write("program.lt", program);
    let out = lt_in(&dir.0, &["run", "--json", "program.lt"], &[]);
    assert_eq!(out.code, 1, "{name}: {out:?}");
    let j = out.json();
    assert_eq!(j["ok"], false, "{name}: {j:#}");
    assert_eq!(j["stage"], "check", "{name}: {j:#}");
}

/// What one `lt run --json` did.
struct Run {
    out: Out,
    json: Value,
    /// `(tool, argument)` of every call, in order, from the log.
    calls: Vec<(String, Value)>,
}

/// Runs `program` with `tools_toml` (none when empty) as its executors.
fn run(program: &str, tools_toml: &str) -> Run {
    let dir = TempDir::new("compat-examples", "run");
    dir.write("program.lt", program);
    let mut args = vec!["run", "--json", "--log", "run.log"];
    if !tools_toml.is_empty() {
        dir.write("tools.toml", tools_toml);
        args.extend(["--executors", "tools.toml"]);
    }
    args.push("program.lt");
    let out = lt_in(&dir.0, &args, &[]);
    let json = out.json();
    let log = std::fs::read_to_string(dir.path("run.log")).unwrap_or_default();
    let calls = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a log line is JSON"))
        .filter(|e| e["kind"] == "proposed")
        .map(|e| {
            (
                e["tool"].as_str().expect("tool").to_string(),
                e["argument"].clone(),
            )
        })
        .collect();
    Run { out, json, calls }
}

/// The run succeeds with `value`, after exactly `calls` (tool, argument).
fn assert_run(
    name: &str,
    program: &str,
    tools_toml: &str,
    (ty, effects): (&str, &[&str]),
    value: Value,
    calls: &[(&str, Value)],
) {
    let r = run(program, tools_toml);
    assert_eq!(r.out.code, 0, "{name}: {:?}", r.out);
    assert_eq!(r.json["ok"], true, "{name}: {:#}", r.json);
    assert_eq!(r.json["value"], value, "{name}: value");
    assert_eq!(r.json["type"], ty, "{name}: type");
    assert_eq!(r.json["effects"], json!(effects), "{name}: effects");
    assert_eq!(r.json["calls"], json!(calls.len()), "{name}: {:#}", r.json);
    let want: Vec<(String, Value)> = calls
        .iter()
        .map(|(t, a)| (t.to_string(), a.clone()))
        .collect();
    assert_eq!(r.calls, want, "{name}: calls");
}

// ---------------------------------------------------------------------------
// Coverage: every flat example is pinned here.

const PINNED_EXAMPLES: [&str; 17] = [
    "batch_processing.lt",
    "conditional_tool_selection.lt",
    "data_filtering.lt",
    "early_termination_fold.lt",
    "early_termination_traverse.lt",
    "incident_rollback.lt",
    "let_arithmetic.lt",
    "linear_token.lt",
    "map_effectful_callback.lt",
    "readme_query.lt",
    "record_literal.lt",
    "refund_flow.lt",
    "rpg_classify.lt",
    "rpg_roll_stats.lt",
    "support_agent.lt",
    "traverse_hosts.lt",
    "traverse_orders.lt",
];

#[test]
fn every_flat_example_is_pinned_here() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/")
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.is_file() && p.extension().is_some_and(|x| x == "lt"))
                .then(|| p.file_name()?.to_str().map(str::to_string))
                .flatten()
        })
        .collect();
    found.sort();
    assert_eq!(
        found, PINNED_EXAMPLES,
        "a flat example was added or removed: pin its type, effects and value in this file"
    );
}

// ---------------------------------------------------------------------------
// The article

const SUPPORT_TOOLS_OK: &str = r#"
[tools.lookup_account]
fixed = { ok = { id = "acct_1", subscription_tier = "pro", email = "ada@example.com", last_charge_cents = 4999 } }
[tools.issue_refund]
fixed = { ok = { tx_id = "tx_42" } }
[tools.send_reply]
fixed = { ok = {} }
"#;

fn support_calls(upto: usize) -> Vec<(&'static str, Value)> {
    let all = vec![
        ("lookup_account", json!("cust_12345")),
        (
            "issue_refund",
            json!({"account_id": "acct_1", "amount": 4999}),
        ),
        (
            "send_reply",
            json!({"to": "ada@example.com", "body": "tx_42"}),
        ),
    ];
    all.into_iter().take(upto).collect()
}

/// The support agent, as the article prints it and as examples/support_agent.lt.
#[test]
fn the_support_agent_means_what_it_means_in_lambda_tool() {
    let file = example("support_agent.lt");
    assert!(
        file.contains(SEED_SUPPORT_AGENT.trim()),
        "examples/support_agent.lt is the article's program"
    );
    let sig = ("String", &["Read", "Write"][..]);
    for (name, program) in [("seed", SEED_SUPPORT_AGENT), ("example", file.as_str())] {
        assert_accepted(name, program, sig.0, sig.1);
        // Everything succeeds: three calls, the refund's tx_id is the body.
        assert_run(
            name,
            program,
            SUPPORT_TOOLS_OK,
            sig,
            json!("refund processed and customer notified"),
            &support_calls(3),
        );
        // The reply fails: the refund stands, the program says so.
        assert_run(
            name,
            program,
            &SUPPORT_TOOLS_OK.replace(
                "fixed = { ok = {} }",
                r#"fixed = { error = "mailbox full" }"#,
            ),
            sig,
            json!("refund succeeded but notification failed"),
            &support_calls(3),
        );
        // The refund fails: no reply is sent.
        assert_run(
            name,
            program,
            &SUPPORT_TOOLS_OK.replace(
                r#"fixed = { ok = { tx_id = "tx_42" } }"#,
                r#"fixed = { error = "timeout" }"#,
            ),
            sig,
            json!("refund failed, customer not refunded"),
            &support_calls(2),
        );
        // The lookup fails: nothing else runs.
        let lookup_fails = format!(
            "[tools.lookup_account]\nfixed = {{ error = \"no such customer\" }}\n{}",
            SUPPORT_TOOLS_OK
                .split_once("[tools.issue_refund]")
                .map(|(_, rest)| format!("[tools.issue_refund]{rest}"))
                .expect("issue_refund table")
        );
        assert_run(
            name,
            program,
            &lookup_fails,
            sig,
            json!("account lookup failed"),
            &support_calls(1),
        );
    }
}

#[test]
fn the_wrong_field_is_lambda_tools_error() {
    assert_rejected(
        "account.plan",
        &seed_wrong_field(),
        "E0202",
        "Field 'plan' not found in record type {id: String, subscription_tier: String, email: String, last_charge_cents: Int}",
    );
}

#[test]
fn map_with_an_effectful_callback_is_an_effect_violation() {
    // The article's snippet (its value would be a List of Results, which lt
    // also reports, as E0602) and examples/map_effectful_callback.lt (the
    // Result handled inside the callback: only the effect is wrong).
    assert_rejected(
        "seed map",
        SEED_MAP_EFFECT,
        "E0401",
        "Effect violation: allowed {} but got {Write}",
    );
    let c = check(&example("map_effectful_callback.lt"));
    let codes: Vec<&Value> = c["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| &d["code"])
        .collect();
    assert_eq!(codes, [&json!("E0401")], "{c:#}");
    assert_rejected(
        "map_effectful_callback.lt",
        &example("map_effectful_callback.lt"),
        "E0401",
        "Effect violation: allowed {} but got {Write}",
    );
    // The same mistake in fold's callback (skill.md's early termination).
    assert_rejected(
        "early_termination_fold.lt",
        &example("early_termination_fold.lt"),
        "E0401",
        "Effect violation: allowed {} but got {Network}",
    );
}

#[test]
fn the_traverse_example_charges_each_order_and_handles_the_err() {
    let sig = ("String", &["Write"][..]);
    assert_accepted("seed traverse", SEED_TRAVERSE, sig.0, sig.1);
    assert_run(
        "seed traverse ok",
        SEED_TRAVERSE,
        "[tools.charge]\nfixed = { ok = { tx_id = \"tx_1\" } }\n",
        sig,
        json!("done"),
        &[("charge", json!({"id": 1, "amount": 100}))],
    );
    assert_run(
        "seed traverse declined",
        SEED_TRAVERSE,
        "[tools.charge]\nfixed = { error = \"card declined\" }\n",
        sig,
        json!("tool charge failed: card declined"),
        &[("charge", json!({"id": 1, "amount": 100}))],
    );
}

#[test]
fn the_linear_token_is_used_twice() {
    for (name, program) in [
        ("seed", SEED_LINEAR.to_string()),
        ("linear_token.lt", example("linear_token.lt")),
    ] {
        assert_rejected(
            name,
            &program,
            "E0501",
            "Linearity violation for 'token': used 2 times (must be exactly once)",
        );
    }
}

// ---------------------------------------------------------------------------
// The other examples

#[test]
fn batch_processing_sums_the_revenue_of_every_region() {
    let p = example("batch_processing.lt");
    let sig = ("Int", &["Read"][..]);
    assert_accepted("batch_processing", &p, sig.0, sig.1);
    let regions = [json!("West"), json!("East"), json!("Central")];
    assert_run(
        "batch_processing ok",
        &p,
        "[tools.query]\nfixed = { sequence = [ { ok = { revenue = 100 } }, { ok = { revenue = 250 } }, { ok = { revenue = 7 } } ] }\n",
        sig,
        json!(357),
        &regions.iter().map(|r| ("query", r.clone())).collect::<Vec<_>>(),
    );
    // The second query fails: traverse stops, Central is never queried.
    assert_run(
        "batch_processing stops",
        &p,
        "[tools.query]\nfixed = { sequence = [ { ok = { revenue = 100 } }, { error = \"db down\" } ] }\n",
        sig,
        json!(0),
        &regions[..2].iter().map(|r| ("query", r.clone())).collect::<Vec<_>>(),
    );
}

#[test]
fn conditional_tool_selection_reads_small_files_in_full() {
    let p = example("conditional_tool_selection.lt");
    let sig = ("String", &["Read"][..]);
    assert_accepted("conditional_tool_selection", &p, sig.0, sig.1);
    let path = json!("/var/log/app.log");
    let tools = |size: i64, info_fails: bool| {
        let info = if info_fails {
            "fixed = { error = \"permission denied\" }".to_string()
        } else {
            format!("fixed = {{ ok = {{ size = {size} }} }}")
        };
        format!(
            "[tools.get_file_info]\n{info}\n\
             [tools.read_full]\nfixed = {{ ok = \"the whole log\" }}\n\
             [tools.read_summary]\nfixed = {{ ok = \"a summary\" }}\n"
        )
    };
    assert_run(
        "small",
        &p,
        &tools(512, false),
        sig,
        json!("the whole log"),
        &[("get_file_info", path.clone()), ("read_full", path.clone())],
    );
    assert_run(
        "large",
        &p,
        &tools(10000, false),
        sig,
        json!("a summary"),
        &[
            ("get_file_info", path.clone()),
            ("read_summary", path.clone()),
        ],
    );
    assert_run(
        "info fails",
        &p,
        &tools(0, true),
        sig,
        json!("could not read /var/log/app.log: tool get_file_info failed: permission denied"),
        &[("get_file_info", path.clone())],
    );
}

#[test]
fn data_filtering_keeps_the_lines_that_are_not_ok() {
    let p = example("data_filtering.lt");
    let sig = ("List String", &["Network"][..]);
    assert_accepted("data_filtering", &p, sig.0, sig.1);
    assert_run(
        "logs",
        &p,
        "[tools.fetch_logs]\nfixed = { ok = [\"ok\", \"ERROR disk full\", \"ok\", \"WARN slow\"] }\n",
        sig,
        json!(["ERROR disk full", "WARN slow"]),
        &[("fetch_logs", json!("srv-42"))],
    );
    assert_run(
        "fetch fails",
        &p,
        "[tools.fetch_logs]\nfixed = { error = \"unreachable\" }\n",
        sig,
        json!([]),
        &[("fetch_logs", json!("srv-42"))],
    );
}

#[test]
fn early_termination_traverse_stops_at_the_first_healthy_endpoint() {
    let p = example("early_termination_traverse.lt");
    let sig = ("String", &["Network"][..]);
    assert_accepted("early_termination_traverse", &p, sig.0, sig.1);
    let eps = [json!("us-east"), json!("eu-west"), json!("apac")];
    let calls = |n: usize| -> Vec<(&str, Value)> {
        eps[..n]
            .iter()
            .map(|e| ("check_health", e.clone()))
            .collect()
    };
    assert_run(
        "second healthy",
        &p,
        "[tools.check_health]\nfixed = { sequence = [ { ok = { status = \"degraded\" } }, { ok = { status = \"healthy\" } } ] }\n",
        sig,
        json!("found healthy endpoint: eu-west"),
        &calls(2),
    );
    assert_run(
        "none healthy",
        &p,
        "[tools.check_health]\nfixed = { ok = { status = \"down\" } }\n",
        sig,
        json!("no healthy endpoint"),
        &calls(3),
    );
    // A failed check is skipped (`Err(e) => Ok(ep)`), not fatal.
    assert_run(
        "checks fail",
        &p,
        "[tools.check_health]\nfixed = { sequence = [ { error = \"timeout\" }, { error = \"timeout\" }, { ok = { status = \"healthy\" } } ] }\n",
        sig,
        json!("found healthy endpoint: apac"),
        &calls(3),
    );
}

#[test]
fn incident_rollback_rolls_back_once_and_announces_or_pages() {
    let p = example("incident_rollback.lt");
    let sig = ("String", &["Read", "Write", "Network"][..]);
    assert_accepted("incident_rollback", &p, sig.0, sig.1);
    let release = |version: &str| {
        format!(
            "[tools.current_release]\nfixed = {{ ok = {{ service = \"checkout-api\", version = \"{version}\", previous = \"2.4.0\" }} }}\n"
        )
    };
    let rest_ok = "[tools.rollback]\nfixed = { ok = { deploy_id = \"d-77\" } }\n\
                   [tools.post_message]\nfixed = { ok = {} }\n\
                   [tools.page_oncall]\nfixed = { ok = { incident = \"INC-9\" } }\n";
    let rollback_arg =
        json!({"service": "checkout-api", "to_version": "2.4.0", "token": "rb-token-7f3a"});
    assert_run(
        "rolled back",
        &p,
        &(release("2.4.1") + rest_ok),
        sig,
        json!("rolled back and announced"),
        &[
            ("current_release", json!("checkout-api")),
            ("rollback", rollback_arg.clone()),
            (
                "post_message",
                json!({"channel": "#incidents", "text": "checkout-api rolled back to 2.4.0 (d-77)"}),
            ),
        ],
    );
    assert_run(
        "rollback fails",
        &p,
        &(release("2.4.1")
            + &rest_ok.replace(
                "fixed = { ok = { deploy_id = \"d-77\" } }",
                "fixed = { error = \"conflict\" }",
            )),
        sig,
        json!("rollback failed; paged on-call (INC-9)"),
        &[
            ("current_release", json!("checkout-api")),
            ("rollback", rollback_arg.clone()),
            (
                "page_oncall",
                json!({"service": "checkout-api", "reason": "rollback failed: tool rollback failed: conflict"}),
            ),
        ],
    );
    assert_run(
        "nothing to do",
        &p,
        &(release("2.4.0") + rest_ok),
        sig,
        json!("nothing to roll back"),
        &[("current_release", json!("checkout-api"))],
    );
}

#[test]
fn let_arithmetic_and_record_literal_are_lambda_tools_test_values() {
    let p = example("let_arithmetic.lt");
    assert_accepted("let_arithmetic", &p, "Int", &[]);
    assert_run("let_arithmetic", &p, "", ("Int", &[]), json!(3), &[]);
    let p = example("record_literal.lt");
    let ty = "{name: String, age: Int}";
    assert_accepted("record_literal", &p, ty, &[]);
    assert_run(
        "record_literal",
        &p,
        "",
        (ty, &[]),
        json!({"name": "Alice", "age": 30}),
        &[],
    );
}

#[test]
fn readme_query_returns_the_names() {
    let p = example("readme_query.lt");
    let sig = ("List String", &["Read"][..]);
    assert_accepted("readme_query", &p, sig.0, sig.1);
    // The README's executor: `lambda arg: {"rows": [{"id": 1, "name": "Alice"}]}`
    // → `["Alice"]`. `send_email` is declared but never called.
    let tools = "[tools.query]\nfixed = { ok = { rows = [ { id = 1, name = \"Alice\" } ] } }\n\
                 [tools.send_email]\nfixed = { ok = { sent = true } }\n";
    assert_run(
        "readme_query",
        &p,
        tools,
        sig,
        json!(["Alice"]),
        &[("query", json!("SELECT * FROM users"))],
    );
    assert_run(
        "readme_query fails",
        &p,
        &tools.replace(
            "fixed = { ok = { rows = [ { id = 1, name = \"Alice\" } ] } }",
            "fixed = { error = \"syntax error\" }",
        ),
        sig,
        json!([]),
        &[("query", json!("SELECT * FROM users"))],
    );
}

#[test]
fn refund_flow_refunds_once_or_escalates() {
    let p = example("refund_flow.lt");
    let sig = ("String", &["Read", "Write"][..]);
    assert_accepted("refund_flow", &p, sig.0, sig.1);
    let tools = |tier: &str, cents: i64| {
        format!(
            "[tools.lookup_account]\nfixed = {{ ok = {{ id = \"acct_1\", subscription_tier = \"{tier}\", email = \"ada@example.com\", last_charge_cents = {cents} }} }}\n\
             [tools.issue_refund]\nfixed = {{ ok = {{ tx_id = \"tx_42\" }} }}\n\
             [tools.send_reply]\nfixed = {{ ok = {{}} }}\n"
        )
    };
    let calls = |cents: i64| {
        vec![
            ("lookup_account", json!("cust_12345")),
            (
                "issue_refund",
                json!({"account_id": "acct_1", "amount": cents, "idempotency_key": "refund-cust_12345-0001"}),
            ),
            (
                "send_reply",
                json!({"to": "ada@example.com", "body": "Your refund was processed. Transaction: tx_42"}),
            ),
        ]
    };
    assert_run(
        "small refund",
        &p,
        &tools("pro", 4999),
        sig,
        json!("refund processed and customer notified"),
        &calls(4999),
    );
    assert_run(
        "large refund, not enterprise",
        &p,
        &tools("pro", 60000),
        sig,
        json!("charge too large for an automatic refund: escalated to a human"),
        &calls(60000)[..1],
    );
    assert_run(
        "large refund, enterprise",
        &p,
        &tools("enterprise", 60000),
        sig,
        json!("refund processed and customer notified"),
        &calls(60000),
    );
}

#[test]
fn rpg_classify_is_average_for_minus_three() {
    let p = example("rpg_classify.lt");
    let sig = (
        "{power_level: String, created_at: String, log_bytes: Int}",
        &["Read", "Write"][..],
    );
    assert_accepted("rpg_classify", &p, sig.0, sig.1);
    let tools =
        "[tools.timestamp]\nfixed = { ok = { unix = 1700000000, human = \"2023-11-14 22:13\" } }\n\
                 [tools.write_log]\nfixed = { ok = { bytes_written = 37 } }\n";
    let calls = [
        ("timestamp", json!({})),
        (
            "write_log",
            json!({"message": "Character created at 2023-11-14 22:13"}),
        ),
    ];
    // total_mod = -3: not > 5, not > 0, > -5: "average".
    assert_run(
        "rpg_classify",
        &p,
        tools,
        sig,
        json!({"power_level": "average", "created_at": "2023-11-14 22:13", "log_bytes": 37}),
        &calls,
    );
    assert_run(
        "rpg_classify, log fails",
        &p,
        &tools.replace(
            "fixed = { ok = { bytes_written = 37 } }",
            "fixed = { error = \"disk full\" }",
        ),
        sig,
        json!({"power_level": "average", "created_at": "2023-11-14 22:13", "log_bytes": 0}),
        &calls,
    );
    assert_run(
        "rpg_classify, no clock",
        &p,
        &tools.replace(
            "fixed = { ok = { unix = 1700000000, human = \"2023-11-14 22:13\" } }",
            "fixed = { error = \"no clock\" }",
        ),
        sig,
        json!({"power_level": "unknown", "created_at": "unknown", "log_bytes": 0}),
        &calls[..1],
    );
}

#[test]
fn rpg_roll_stats_rolls_six_times_then_sums_the_modifiers() {
    let p = example("rpg_roll_stats.lt");
    let sig = (
        "{scores: List Int, modifiers: List Int, total_modifier: Int}",
        &["Read"][..],
    );
    assert_accepted("rpg_roll_stats", &p, sig.0, sig.1);
    let scores = [10, 12, 15, 8, 13, 17];
    let mods = [0, 1, 2, -1, 1, 3];
    let seq = |field: &str, xs: &[i64]| {
        xs.iter()
            .map(|x| format!("{{ ok = {{ {field} = {x} }} }}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let tools = format!(
        "[tools.roll_dice]\nfixed = {{ sequence = [ {} ] }}\n[tools.stat_modifier]\nfixed = {{ sequence = [ {} ] }}\n",
        seq("total", &scores),
        seq("modifier", &mods)
    );
    let mut calls: Vec<(&str, Value)> = (0..6)
        .map(|_| ("roll_dice", json!({"sides": 6, "count": 3})))
        .collect();
    calls.extend(
        scores
            .iter()
            .map(|s| ("stat_modifier", json!({ "score": s }))),
    );
    assert_run(
        "rpg_roll_stats",
        &p,
        &tools,
        sig,
        json!({"scores": scores, "modifiers": mods, "total_modifier": 6}),
        &calls,
    );
    // The third roll fails: no modifier is asked for.
    assert_run(
        "rpg_roll_stats, a roll fails",
        &p,
        "[tools.roll_dice]\nfixed = { sequence = [ { ok = { total = 10 } }, { ok = { total = 12 } }, { error = \"dice lost\" } ] }\n\
         [tools.stat_modifier]\nfixed = { ok = { modifier = 0 } }\n",
        sig,
        json!({"scores": [], "modifiers": [], "total_modifier": 0}),
        &calls[..3],
    );
}

#[test]
fn traverse_hosts_keeps_the_ok_flags_in_order() {
    let p = example("traverse_hosts.lt");
    let sig = ("List Bool", &["Network"][..]);
    assert_accepted("traverse_hosts", &p, sig.0, sig.1);
    let hosts = ["web-1", "web-2", "db-1"];
    let calls: Vec<(&str, Value)> = hosts.iter().map(|h| ("check", json!(h))).collect();
    assert_run(
        "traverse_hosts",
        &p,
        "[tools.check]\nfixed = { sequence = [ { ok = { ok = true } }, { ok = { ok = false } }, { ok = { ok = true } } ] }\n",
        sig,
        json!([true, false, true]),
        &calls,
    );
    assert_run(
        "traverse_hosts, web-2 unreachable",
        &p,
        "[tools.check]\nfixed = { sequence = [ { ok = { ok = true } }, { error = \"unreachable\" } ] }\n",
        sig,
        json!([]),
        &calls[..2],
    );
}

#[test]
fn traverse_orders_charges_in_order_and_stops_at_the_first_decline() {
    let p = example("traverse_orders.lt");
    let sig = ("String", &["Write"][..]);
    assert_accepted("traverse_orders", &p, sig.0, sig.1);
    let orders = [
        json!({"id": 1, "amount": 100}),
        json!({"id": 2, "amount": 2599}),
        json!({"id": 3, "amount": 4999}),
    ];
    let calls: Vec<(&str, Value)> = orders.iter().map(|o| ("charge", o.clone())).collect();
    // fold from "" with `acc ++ " " ++ id`: " tx_1 tx_2 tx_3".
    assert_run(
        "all charged",
        &p,
        "[tools.charge]\nfixed = { sequence = [ { ok = { tx_id = \"tx_1\" } }, { ok = { tx_id = \"tx_2\" } }, { ok = { tx_id = \"tx_3\" } } ] }\n",
        sig,
        json!("charged:  tx_1 tx_2 tx_3"),
        &calls,
    );
    assert_run(
        "second declined",
        &p,
        "[tools.charge]\nfixed = { sequence = [ { ok = { tx_id = \"tx_1\" } }, { error = \"card declined\" } ] }\n",
        sig,
        json!("batch stopped at the first failure: tool charge failed: card declined"),
        &calls[..2],
    );
}

// ---------------------------------------------------------------------------
// lambda-tool-python's test suite (tests/test_lambda_tool.py): the values it
// asserts λ-Tool gives.

#[test]
fn lambda_tool_python_run_tests_give_the_same_values() {
    for (program, ty, value) in [
        ("let x = 1 + 2 in x", "Int", json!(3)),
        (
            r#"{name = "Alice", age = 30}"#,
            "{name: String, age: Int}",
            json!({"name": "Alice", "age": 30}),
        ),
        ("[1, 2, 3]", "List Int", json!([1, 2, 3])),
        (
            "map (fn x: Int => x * 2) [1, 2, 3]",
            "List Int",
            json!([2, 4, 6]),
        ),
    ] {
        assert_accepted(program, program, ty, &[]);
        assert_run(program, program, "", (ty, &[]), value, &[]);
    }
}

#[test]
fn lambda_tool_python_interactive_tests_give_the_same_values() {
    let query = r#"
        tool query: String -{Read}-> {name: String};
        match exec tool query "SELECT name FROM users" {
          Ok(r) => r.name,
          Err(e) => "failed"
        }
        "#;
    assert_accepted("single tool call", query, "String", &["Read"]);
    assert_run(
        "single tool call",
        query,
        "[tools.query]\nfixed = { ok = { name = \"Alice\" } }\n",
        ("String", &["Read"]),
        json!("Alice"),
        &[("query", json!("SELECT name FROM users"))],
    );
    let bad = query
        .replace("SELECT name FROM users", "bad query")
        .replace("\"failed\"", "\"error occurred\"");
    assert_run(
        "tool error handling",
        &bad,
        "[tools.query]\nfixed = { error = \"database offline\" }\n",
        ("String", &["Read"]),
        json!("error occurred"),
        &[("query", json!("bad query"))],
    );

    let hosts = r#"
        tool check: String -{Network}-> {ok: Bool};
        let hosts = ["a", "b", "c"] in
        match traverse (fn h: String => exec tool check h) hosts {
          Ok(results) => map (fn r: {ok: Bool} => r.ok) results,
          Err(e) => []: Bool
        }
        "#;
    assert_accepted("traverse multiple calls", hosts, "List Bool", &["Network"]);
    assert_run(
        "traverse multiple calls",
        hosts,
        "[tools.check]\nfixed = { ok = { ok = true } }\n",
        ("List Bool", &["Network"]),
        json!([true, true, true]),
        &[
            ("check", json!("a")),
            ("check", json!("b")),
            ("check", json!("c")),
        ],
    );

    let conditional = r#"
        tool get_size: String -{Read}-> {size: Int};
        tool read_full: String -{Read}-> {content: String};
        tool read_summary: String -{Read}-> {content: String};

        match exec tool get_size "file.txt" {
          Ok(info) =>
            if info.size < 100
            then match exec tool read_full "file.txt" {
              Ok(r) => r.content, Err(e) => "error"
            }
            else match exec tool read_summary "file.txt" {
              Ok(r) => r.content, Err(e) => "error"
            },
          Err(e) => "error"
        }
        "#;
    assert_accepted("conditional tool calls", conditional, "String", &["Read"]);
    assert_run(
        "conditional tool calls",
        conditional,
        "[tools.get_size]\nfixed = { ok = { size = 50 } }\n\
         [tools.read_full]\nfixed = { ok = { content = \"full content here\" } }\n\
         [tools.read_summary]\nfixed = { ok = { content = \"summary\" } }\n",
        ("String", &["Read"]),
        json!("full content here"),
        &[
            ("get_size", json!("file.txt")),
            ("read_full", json!("file.txt")),
        ],
    );

    // The README's quick start (without the unused `send_email`).
    let readme = r#"
tool query: String -{Read}-> {rows: List {id: Int, name: String}};

let get_name = fn row: {id: Int, name: String} => row.name in
match exec tool query "SELECT * FROM users" {
  Ok(result) => map get_name result.rows,
  Err(e) => []: String
}
"#;
    assert_accepted("readme quick start", readme, "List String", &["Read"]);
    assert_run(
        "readme quick start",
        readme,
        "[tools.query]\nfixed = { ok = { rows = [ { id = 1, name = \"Alice\" } ] } }\n",
        ("List String", &["Read"]),
        json!(["Alice"]),
        &[("query", json!("SELECT * FROM users"))],
    );
}

#[test]
fn lambda_tool_python_rejections_are_rejected() {
    for (program, code) in [
        ("let x = 1 + true in x", "E0201"),
        ("@@invalid@@", "E0001"),
        ("", "E0104"),
    ] {
        let c = check(program);
        assert_eq!(c["ok"], false, "{program:?}: {c:#}");
        let codes: Vec<&str> = c["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        assert!(codes.contains(&code), "{program:?}: {codes:?}");
    }
}

/// `Option`, `Some` and `None` are names in λ-Tool: a program that binds
/// them, or uses them as field labels or a tool name, means what it did.
#[test]
fn option_some_none_stay_names_in_lambda_tool_programs() {
    let program = r#"tool Option: {None: Int} -{Read}-> {Some: String};
let None = 3 in
let r = {Some = None, Option = 2} in
match exec tool Option {None = r.Some + r.Option} {
  Ok(Some) => Some.Some,
  Err(e) => "failed"
}
"#;
    assert_accepted("names", program, "String", &["Read"]);
    assert_run(
        "names",
        program,
        "[tools.Option]\nfixed = { ok = { Some = \"five\" } }\n",
        ("String", &["Read"]),
        json!("five"),
        &[("Option", json!({"None": 5}))],
    );
    // A program that does not bind them gets the extension.
    let ext = "let x: Option Int = Some 3 in\nlet r = {None = 1} in\nmatch x { Some(v) => v + r.None, None => 0 }";
    assert_accepted("extension", ext, "Int", &[]);
}
