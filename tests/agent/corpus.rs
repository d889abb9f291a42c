//! `lt agent` end to end over a corpus of recorded conversations
//! (`tests/fixtures/agent_corpus/*.json`): each case is a task, a tool set,
//! the replies of a scripted model (the fake model server's script) and
//! what must come of them. The real `lt` binary talks to the fake server
//! (OpenAI or Anthropic), runs the accepted programs with the tools'
//! `fixed` executors, and writes its log; then the server is killed and
//! `lt replay` must reproduce the session from the log alone, and
//! `lt log verify` must find the chain intact.
//!
//! A case file:
//!
//! ```json
//! {"about": "…", "task": "…", "decls": "support.lt", "tools": "support.toml",
//!  "provider": "openai" | "anthropic", "server": "down" (optional: nothing listens),
//!  "args": ["--samples", "3", …] (optional, paths relative to the corpus folder),
//!  "replies": [ENTRY, …] (the fake server's script, see its docstring),
//!  "expect": {
//!    "status": "answered" | "gave_up" | "error", "exit": 0 | 1 | 3,
//!    "answer_contains": "…" or null (no answer),
//!    "value": the last run's value as JSON, or null,
//!    "calls": the successful tool calls of the runs, in order (from the log),
//!    "attempts": model requests per turn, as `--json` reports them,
//!    "feedback_codes": codes that must appear in the feedback the model got,
//!    "feedback_contains": texts that must appear there (optional),
//!    "requests": the loop's model requests (optional),
//!    "retries": the error kinds of the log's `model_retried` events (optional),
//!    "stderr_contains": a second run without `--json` must exit the same
//!                       way and say this on stderr (optional)}}
//! ```
//!
//! The feedback the model received is read from the server's requests log:
//! the user messages of the last request after the first (the task), less
//! the run results. Its sizes must be what `--json` reports as
//! `feedback_bytes`. Run with `--nocapture` to see the table of attempts
//! and feedback sizes per case.
//!
//! Also here: a log cut after every line replays as "cut short" (exit 1,
//! no panic); an edited reply breaks the hash chain (exit 1); a reply
//! edited and re-chained replays as a divergence (exit 1).

use crate::support::fake_model::FakeModel;
use crate::support::{lt_in, Out, TempDir};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent_corpus")
}

/// Every case file, sorted by name.
fn cases() -> Vec<(String, Json)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/fixtures/agent_corpus")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&p).expect("read case");
            let json = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()));
            (name, json)
        })
        .collect()
}

/// The model server of one run: the fake one, or a port nothing listens on.
enum Server {
    Fake(FakeModel),
    Down(u16),
}

impl Server {
    fn start(case: &Json) -> Server {
        if case["server"].as_str() == Some("down") {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = listener.local_addr().expect("addr").port();
            drop(listener);
            return Server::Down(port);
        }
        let replies = case["replies"].as_array().cloned().unwrap_or_default();
        Server::Fake(FakeModel::start(replies))
    }

    fn base_url(&self, provider: &str) -> String {
        match (self, provider) {
            (Server::Fake(f), "anthropic") => f.base_url_anthropic(),
            (Server::Fake(f), _) => f.base_url_openai(),
            (Server::Down(p), "anthropic") => format!("http://127.0.0.1:{p}"),
            (Server::Down(p), _) => format!("http://127.0.0.1:{p}/v1"),
        }
    }

    fn requests(&self) -> Vec<Json> {
        match self {
            Server::Fake(f) => f.requests(),
            Server::Down(_) => Vec::new(),
        }
    }
}

const KEYS: [(&str, &str); 2] = [
    ("OPENAI_API_KEY", "sk-dummy"),
    ("ANTHROPIC_API_KEY", "sk-ant-dummy"),
];

/// Runs `lt agent` for `case` against `server`, logging to `log`.
fn run_agent(case: &Json, server: &Server, log: &str, json: bool) -> Out {
    let dir = corpus_dir();
    let file = |key: &str| {
        dir.join(case[key].as_str().unwrap_or_default())
            .display()
            .to_string()
    };
    let provider = case["provider"].as_str().unwrap_or("openai");
    let extra: Vec<String> = strings(&case["args"]);
    let mut args: Vec<String> = vec![
        "agent".into(),
        case["task"].as_str().unwrap_or_default().into(),
        "--tools".into(),
        file("decls"),
        "--executors".into(),
        file("tools"),
        "--provider".into(),
        provider.into(),
        "--model".into(),
        "fake-model".into(),
        "--base-url".into(),
        server.base_url(provider),
        "--log".into(),
        log.into(),
    ];
    // Small defaults: a case that retries says how much.
    for (flag, value) in [("--max-retries", "1"), ("--request-timeout-ms", "10000")] {
        if !extra.iter().any(|a| a == flag) {
            args.extend([flag.to_string(), value.to_string()]);
        }
    }
    if json {
        args.push("--json".into());
    }
    args.extend(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lt_in(&dir, &args, &KEYS)
}

/// What one case measured, for the table.
struct Measured {
    name: String,
    provider: String,
    exit: i32,
    status: String,
    attempts: Vec<u64>,
    turns: u64,
    feedback: Vec<usize>,
    http_requests: usize,
}

/// The log's events, one JSON object per line.
fn events(log: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("read {log}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a log line is JSON"))
        .collect()
}

/// The tools of the successful calls, in log order (`completed` events
/// with an `Ok` result; the tool from the latest `proposed` of the call).
fn successful_calls(events: &[Json]) -> Vec<String> {
    let mut tool_of = std::collections::HashMap::new();
    let mut out = Vec::new();
    for e in events {
        let id = e["call_id"].as_str().unwrap_or_default().to_string();
        match e["kind"].as_str() {
            Some("proposed") => {
                tool_of.insert(id, e["tool"].as_str().unwrap_or_default().to_string());
            }
            Some("completed") if e["result"].get("Ok").is_some() => {
                out.push(
                    tool_of
                        .get(&id)
                        .cloned()
                        .unwrap_or_else(|| format!("?{id}")),
                );
            }
            _ => {}
        }
    }
    out
}

/// Whether a user message is a run's result (not feedback).
fn is_run_result(text: &str) -> bool {
    text.starts_with("The program ran") || text.starts_with("The run stopped")
}

/// The user messages of the last request of the loop (not the
/// classifier's) that the server received, the task first.
fn user_messages(requests: &[Json]) -> Vec<String> {
    let last = requests.iter().rev().find(|r| {
        let body = &r["body"];
        let classifier = body["system"]
            .as_str()
            .is_some_and(|s| s.starts_with("You route tasks"))
            || body["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with("You route tasks"));
        body.is_object() && !classifier
    });
    let Some(last) = last else { return Vec::new() };
    last["body"]["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What one case measured, or why it failed.
type CaseResult = Result<Measured, Vec<String>>;

/// Runs one case and checks everything it expects; the failures, or what
/// it measured.
fn check_case(name: &str, case: &Json) -> CaseResult {
    let mut fails: Vec<String> = Vec::new();
    let mut fail = |m: String| fails.push(m);
    let expect = &case["expect"];
    let dir = TempDir::new("agent-corpus", name);
    let log = dir.path("agent.jsonl");
    let server = Server::start(case);
    let out = run_agent(case, &server, &log, true);
    let requests = server.requests();
    // Killed before the replay: the replay must not need it.
    drop(server);

    if out.stderr.contains("panicked") {
        fail(format!("lt agent panicked: {}", out.stderr));
    }
    let exit = expect["exit"].as_i64().unwrap_or(0) as i32;
    if out.code != exit {
        fail(format!(
            "exit {} (expected {exit}); stderr: {}",
            out.code,
            out.stderr.trim()
        ));
    }
    let j: Json = match serde_json::from_str(out.stdout.trim()) {
        Ok(j) => j,
        Err(e) => {
            fail(format!(
                "--json printed no JSON ({e}): {:?} / {:?}",
                out.stdout, out.stderr
            ));
            return Err(fails);
        }
    };
    if j["status"] != expect["status"] {
        fail(format!(
            "status {} (expected {}); reason: {}",
            j["status"], expect["status"], j["reason"]
        ));
    }
    if j["ok"] != Json::Bool(expect["status"] == "answered") {
        fail(format!("ok is {} for status {}", j["ok"], j["status"]));
    }
    match expect["answer_contains"].as_str() {
        Some(want) => {
            if !j["answer"].as_str().is_some_and(|a| a.contains(want)) {
                fail(format!("answer {} does not contain {want:?}", j["answer"]));
            }
        }
        None => {
            if !j["answer"].is_null() {
                fail(format!("answer {} (expected none)", j["answer"]));
            }
        }
    }
    if j["value"] != expect["value"] {
        fail(format!(
            "value {} (expected {})",
            j["value"], expect["value"]
        ));
    }
    if j["attempts"] != expect["attempts"] {
        fail(format!(
            "attempts {} (expected {})",
            j["attempts"], expect["attempts"]
        ));
    }
    if !expect["requests"].is_null() && j["requests"] != expect["requests"] {
        fail(format!(
            "requests {} (expected {})",
            j["requests"], expect["requests"]
        ));
    }
    let attempts: Vec<u64> = j["attempts"]
        .as_array()
        .map(|a| a.iter().filter_map(Json::as_u64).collect())
        .unwrap_or_default();
    let samples_flag = case["args"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "--samples"));
    if !samples_flag && attempts.iter().sum::<u64>() != j["requests"].as_u64().unwrap_or(0) {
        fail(format!(
            "attempts {:?} do not add up to requests {}",
            attempts, j["requests"]
        ));
    }

    // The log: calls, retries, and the number of HTTP requests.
    let evs = events(&log);
    let calls = successful_calls(&evs);
    let want_calls: Vec<String> = strings(&expect["calls"]);
    if calls != want_calls {
        fail(format!(
            "successful calls {calls:?} (expected {want_calls:?})"
        ));
    }
    let retries: Vec<Json> = evs
        .iter()
        .filter(|e| e["kind"] == "model_retried")
        .map(|e| e["error"].clone())
        .collect();
    if !expect["retries"].is_null() && Json::Array(retries.clone()) != expect["retries"] {
        fail(format!(
            "model_retried errors {retries:?} (expected {})",
            expect["retries"]
        ));
    }
    // A `Retry-After: N` in the script is honoured: a retry waits N s.
    for reply in case["replies"].as_array().into_iter().flatten() {
        let after = reply["headers"]["Retry-After"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(secs) = after {
            if !evs
                .iter()
                .any(|e| e["kind"] == "model_retried" && e["delay_ms"] == secs * 1000)
            {
                fail(format!(
                    "no model_retried event waits the {secs} s of Retry-After"
                ));
            }
        }
    }
    let classified = evs.iter().any(|e| e["kind"] == "task_classified");
    if !matches!(case["server"].as_str(), Some("down")) {
        let expected_http =
            j["requests"].as_u64().unwrap_or(0) as usize + usize::from(classified) + retries.len();
        if !samples_flag && requests.len() != expected_http {
            fail(format!(
                "the server got {} requests; expected {expected_http} (loop requests + classifier + retries)",
                requests.len()
            ));
        }
    }

    // The feedback the model got.
    let users = user_messages(&requests);
    let feedback: Vec<&String> = users.iter().skip(1).filter(|m| !is_run_result(m)).collect();
    let sizes: Vec<usize> = feedback.iter().map(|m| m.len()).collect();
    let reported: Vec<usize> = j["feedback_bytes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64().map(|n| n as usize))
                .collect()
        })
        .unwrap_or_default();
    if sizes != reported {
        fail(format!(
            "feedback sizes sent {sizes:?}, but --json reports feedback_bytes {reported:?}"
        ));
    }
    let all_feedback = feedback
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for code in expect["feedback_codes"].as_array().into_iter().flatten() {
        let code = code.as_str().unwrap_or_default();
        // Checker codes come with a position; the reply's own problems
        // (`cut_off`, `no_program`) start a line without one.
        if !all_feedback.contains(&format!("{code} at line"))
            && !all_feedback.contains(&format!("\n{code}: "))
        {
            fail(format!("feedback has no {code}:\n{all_feedback}"));
        }
    }
    for text in expect["feedback_contains"].as_array().into_iter().flatten() {
        let text = text.as_str().unwrap_or_default();
        if !all_feedback.contains(text) {
            fail(format!("feedback does not say {text:?}:\n{all_feedback}"));
        }
    }

    // The replay, without the model (the server is gone), and the chain.
    let replay = lt_in(&dir.0, &["replay", &log], &[]);
    if replay.code != 0 || !replay.stdout.contains("replay matches the log") {
        fail(format!(
            "lt replay exit {}: {} {}",
            replay.code, replay.stdout, replay.stderr
        ));
    }
    let verify = lt_in(&dir.0, &["log", "verify", &log], &[]);
    if verify.code != 0 {
        fail(format!(
            "lt log verify exit {}: {} {}",
            verify.code, verify.stdout, verify.stderr
        ));
    }

    // What a person sees without --json.
    if let Some(want) = expect["stderr_contains"].as_str() {
        let log2 = dir.path("agent2.jsonl");
        let server = Server::start(case);
        let human = run_agent(case, &server, &log2, false);
        drop(server);
        if human.code != exit {
            fail(format!(
                "without --json: exit {} (expected {exit})",
                human.code
            ));
        }
        if !human.stderr.contains(want) || human.stderr.contains("panicked") {
            fail(format!(
                "without --json, stderr does not say {want:?}: {}",
                human.stderr
            ));
        }
        if !human.stdout.trim().is_empty() {
            fail(format!(
                "without --json, stdout is not empty: {}",
                human.stdout
            ));
        }
    }

    if !fails.is_empty() {
        return Err(fails);
    }
    Ok(Measured {
        name: name.to_string(),
        provider: case["provider"].as_str().unwrap_or("openai").to_string(),
        exit: out.code,
        status: j["status"].as_str().unwrap_or_default().to_string(),
        attempts,
        turns: j["turns"].as_u64().unwrap_or(0),
        feedback: sizes,
        http_requests: requests.len(),
    })
}

fn print_table(rows: &[Measured]) {
    eprintln!();
    eprintln!(
        "{:<28} {:<9} {:>4} {:<9} {:>5} {:<10} feedback bytes",
        "case", "api", "exit", "status", "http", "attempts"
    );
    for r in rows {
        eprintln!(
            "{:<28} {:<9} {:>4} {:<9} {:>5} {:<10} {}",
            r.name,
            r.provider,
            r.exit,
            r.status,
            r.http_requests,
            format!("{:?}", r.attempts),
            if r.feedback.is_empty() {
                "-".to_string()
            } else {
                r.feedback
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
    }
    // Attempts of the turns that ended with an accepted program.
    let accepted: Vec<u64> = rows
        .iter()
        .flat_map(|r| r.attempts.iter().take(r.turns as usize).copied())
        .collect();
    let feedback: Vec<usize> = rows
        .iter()
        .flat_map(|r| r.feedback.iter().copied())
        .collect();
    let mean = |xs: &[f64]| {
        if xs.is_empty() {
            0.0
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };
    eprintln!(
        "totals: {} cases; mean attempts to acceptance {:.2} over {} accepted programs; feedback messages {}, mean {:.0} bytes, max {} bytes",
        rows.len(),
        mean(&accepted.iter().map(|&a| a as f64).collect::<Vec<_>>()),
        accepted.len(),
        feedback.len(),
        mean(&feedback.iter().map(|&b| b as f64).collect::<Vec<_>>()),
        feedback.iter().max().copied().unwrap_or(0)
    );
}

#[test]
fn every_recorded_conversation_ends_as_expected_and_replays() {
    let cases = cases();
    assert!(cases.len() >= 15, "the corpus has {} cases", cases.len());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, CaseResult)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((name, case)) = cases.get(i) else {
                    break;
                };
                let r = check_case(name, case);
                results.lock().expect("no worker panicked").push((i, r));
            });
        }
    });
    let mut results = results.into_inner().expect("no worker panicked");
    results.sort_by_key(|(i, _)| *i);
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (i, r) in results {
        match r {
            Ok(m) => rows.push(m),
            Err(f) => failures.push(format!("{}:\n  {}", cases[i].0, f.join("\n  "))),
        }
    }
    print_table(&rows);
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_covers_both_apis_and_every_outcome() {
    let cases = cases();
    let count = |f: &dyn Fn(&Json) -> bool| cases.iter().filter(|(_, c)| f(c)).count();
    assert!(count(&|c| c["provider"] == "anthropic") >= 3);
    for status in ["answered", "gave_up", "error"] {
        assert!(
            count(&|c| c["expect"]["status"] == status) >= 1,
            "no case ends {status}"
        );
    }
    for (name, c) in &cases {
        for key in ["decls", "tools"] {
            let f = corpus_dir().join(c[key].as_str().unwrap_or_default());
            assert!(f.is_file(), "{name}: {key} {} does not exist", f.display());
        }
        for key in [
            "status",
            "exit",
            "attempts",
            "calls",
            "feedback_codes",
            "value",
        ] {
            assert!(
                c["expect"].get(key).is_some(),
                "{name}: expect.{key} is missing"
            );
        }
    }
}

/// Records `case` (by name) and returns the temp dir and the log's path.
fn record(name: &str) -> (TempDir, String) {
    let case = cases()
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("case")
        .1;
    let dir = TempDir::new("agent-corpus-log", name);
    let log = dir.path("agent.jsonl");
    let server = Server::start(&case);
    let out = run_agent(&case, &server, &log, true);
    drop(server);
    assert_eq!(out.code, 0, "{out:?}");
    (dir, log)
}

#[test]
fn a_log_cut_after_any_line_replays_as_cut_short() {
    // Two runs, a refused answer and a rejected-free path: many event kinds.
    let (dir, log) = record("trace_requires_verify");
    let text = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 20, "{} lines", lines.len());
    let cut = dir.path("cut.jsonl");
    for n in 1..lines.len() {
        std::fs::write(&cut, lines[..n].join("\n") + "\n").expect("write");
        let out = lt_in(&dir.0, &["replay", &cut], &[]);
        assert_eq!(out.code, 1, "cut after line {n}: {out:?}");
        assert!(
            out.stderr.contains("cut short") || out.stderr.contains("incomplete"),
            "cut after line {n}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("panicked"),
            "cut after line {n}: {}",
            out.stderr
        );
    }
    // The whole log replays.
    let out = lt_in(&dir.0, &["replay", &log], &[]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn an_edited_reply_breaks_the_chain() {
    let (dir, log) = record("wrong_field");
    let text = std::fs::read_to_string(&log).expect("log");
    let edited: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains("\"kind\":\"model_replied\"") {
                l.replace("last_payment_cents", "last_charge_cents")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert_ne!(edited.join("\n") + "\n", text, "the edit changed nothing");
    let bad = dir.write("edited.jsonl", &(edited.join("\n") + "\n"));
    let out = lt_in(&dir.0, &["replay", &bad], &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("does not verify"), "{}", out.stderr);
    let out = lt_in(&dir.0, &["log", "verify", &bad], &[]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn an_edited_and_rechained_reply_is_a_divergence() {
    // A forged log, its hashes recomputed: the chain verifies, but the
    // replay checks the corrected program and no longer rejects it.
    let (dir, log) = record("wrong_field");
    let text = std::fs::read_to_string(&log).expect("log");
    let mut events = lt::log::read_log(&text).expect("a valid log");
    let mut edited = false;
    for e in &mut events {
        if let lt::log::EventBody::ModelReplied { texts, .. } = &mut e.body {
            if let Some(t) = texts[0]
                .as_str()
                .filter(|t| t.contains("last_payment_cents"))
            {
                texts[0] = Json::String(t.replace("last_payment_cents", "last_charge_cents"));
                edited = true;
            }
        }
    }
    assert!(edited);
    let mut prev = "0".repeat(64);
    let mut forged = String::new();
    for e in &mut events {
        e.prev = prev.clone();
        e.hash = e.compute_hash();
        prev = e.hash.clone();
        forged.push_str(&e.to_line());
        forged.push('\n');
    }
    let path = dir.write("forged.jsonl", &forged);
    let out = lt_in(&dir.0, &["log", "verify", &path], &[]);
    assert_eq!(out.code, 0, "the re-chained log verifies: {out:?}");
    let out = lt_in(&dir.0, &["replay", &path], &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("non-determinism"), "{}", out.stderr);
    assert!(out.stderr.contains("program_checked"), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

/// The strings of a JSON array (none when it is not one).
fn strings(v: &Json) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
