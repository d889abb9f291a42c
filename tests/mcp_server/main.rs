//! `lt mcp` driven by a real MCP client: the official Python SDK (`mcp`,
//! from the venv of `tests/support/mcp.rs`) runs
//! `tests/fixtures/mcp_server/client.py`, which starts `lt mcp` over stdio,
//! takes the steps of a JSON file (list the tools, call them) and prints
//! every result; the assertions are here.
//!
//! The tools: `fixed` ones, a real subprocess (`journal`, which appends a
//! line to `journal.txt`, so the test sees which calls really ran) and
//! `mcp-server-time` downstream.
//!
//! - `basics`: the listing and description, a run, rejections, the profile, the example.
//! - `approvals`: `approve tool …` asked through the client's elicitation.
//! - `failures`: what a stopped run reports (a limit, a denial, a cancel).
//! - `downstream`: MCP servers downstream (one killed mid-call; `mcp-server-git`).
//! - `http`: the same over streamable HTTP.
//! - `stateless`: the 2026-07-28 revision (no handshake; approvals as MRTR).

#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod basics;
mod downstream;
mod failures;
mod http;
mod stateless;
mod stdio;

use serde_json::{json, Value as Json};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{lt_in, mcp, TempDir, LT};

const TOOLS_LT: &str = r#"// Looks up a customer account by its id.
tool lookup_account: {id: String} -{Read}-> {id: String, email: String, last_charge_cents: Int};
// Refunds an amount (in cents) to an account.
tool issue_refund: {account_id: String, amount: Int} -{Write}-> {tx_id: String};
// Appends a line to the journal; the number of lines after it.
tool journal: {line: String} -{Write}-> {n: Int};
// The current time in an IANA timezone.
tool now: {timezone: String} -{Read}-> {timezone: String, datetime: String, day_of_week: String, is_dst: Bool};
"#;

const JOURNAL_PY: &str = r#"import json, sys
arg = json.load(sys.stdin)
with open("journal.txt", "a") as f:
    f.write(arg["line"] + "\n")
print(json.dumps({"n": len(open("journal.txt").read().splitlines())}))
"#;

/// A folder with tools.lt, tools.toml (`extra` appended) and journal.py.
fn setup(name: &str, extra: &str) -> TempDir {
    let dir = TempDir::new("mcp-server", name);
    dir.write("tools.lt", TOOLS_LT);
    dir.write("journal.py", JOURNAL_PY);
    dir.write(
        "tools.toml",
        &format!(
            r#"
[tools.lookup_account]
fixed = {{ ok = {{ id = "cust_1", email = "a@example.com", last_charge_cents = 4999 }} }}

[tools.issue_refund]
fixed = {{ ok = {{ tx_id = "tx_1" }} }}

[tools.journal]
command = ["python3", "journal.py"]

[tools.now]
mcp = {{ command = [{time:?}], tool = "get_current_time" }}
timeout_ms = 30000
{extra}"#,
            time = mcp::script("mcp-server-time").display().to_string(),
        ),
    );
    dir
}

/// Runs the client with `steps` against `lt mcp ARGS` in `dir`: the
/// results, the first being the initialization's.
fn drive(dir: &TempDir, args: &[&str], steps: Json) -> Vec<Json> {
    let mut client_args = vec!["--".to_string(), LT.to_string(), "mcp".to_string()];
    client_args.extend(args.iter().map(|a| a.to_string()));
    client(dir, &client_args, &[], steps)
}

/// Runs the client with `steps` and `args` after the steps file (`-- LT
/// mcp …` or `--url URL`), with `envs`, in `dir`: the results.
fn client(dir: &TempDir, args: &[String], envs: &[(&str, &str)], steps: Json) -> Vec<Json> {
    client_output(dir, args, envs, steps)["steps"]
        .as_array()
        .expect("steps")
        .clone()
}

/// Runs `lt mcp ARGS` in `dir` with a client that declares elicitation and
/// gives `answer` to every question (`accept`, `no`, `decline`, `cancel`):
/// the results and the questions asked (their params).
fn drive_answering(
    dir: &TempDir,
    args: &[&str],
    answer: &str,
    steps: Json,
) -> (Vec<Json>, Vec<Json>) {
    let mut client_args = vec!["--".to_string(), LT.to_string(), "mcp".to_string()];
    client_args.extend(args.iter().map(|a| a.to_string()));
    let out = client_output(
        dir,
        &client_args,
        &[],
        json!({"elicitation": answer, "steps": steps}),
    );
    let list = |k: &str| out[k].as_array().expect(k).clone();
    (list("steps"), list("elicitations"))
}

/// The client's whole output: `{steps, elicitations}`.
fn client_output(dir: &TempDir, args: &[String], envs: &[(&str, &str)], steps: Json) -> Json {
    dir.write("steps.json", &steps.to_string());
    let client = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_server/client.py");
    let mut child = Command::new(mcp::python())
        .arg(client)
        .arg("steps.json")
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the client");
    let (lines, stderr) = support::read_output(&mut child);
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the client did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr.join().unwrap_or_default();
    let out: Vec<String> = lines.try_iter().collect();
    assert!(
        status.success(),
        "client failed: {status}\n{}\n{stderr}",
        out.join("\n")
    );
    serde_json::from_str(out.last().expect("a line")).expect("JSON")
}

const ARGS: &[&str] = &[
    "--tools",
    "tools.lt",
    "--executors",
    "tools.toml",
    "--log-dir",
    "logs",
];

fn run(program: &str) -> Json {
    json!({"call": "run_program", "arguments": {"program": program}})
}

/// The ```lt blocks of a text.
fn lt_blocks(text: &str) -> Vec<String> {
    text.split("```lt\n")
        .skip(1)
        .map(|b| b.split("\n```").next().unwrap_or("").to_string())
        .collect()
}

/// The events of a run's log (its `log` path is relative to `dir`).
fn log_events(dir: &TempDir, reply: &Json) -> Vec<Json> {
    let path = reply["structuredContent"]["log"]
        .as_str()
        .unwrap_or_else(|| panic!("a log path: {reply}"));
    let text = std::fs::read_to_string(dir.0.join(path)).expect("the log");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect()
}

/// The events of `kind` among `events`.
fn of_kind<'a>(events: &'a [Json], kind: &str) -> Vec<&'a Json> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The (tool, status) pairs of a reply's `tool_calls`.
fn calls_made(reply: &Json) -> Vec<(String, String)> {
    reply["structuredContent"]["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("tool_calls: {reply}"))
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").to_string(),
                c["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}
