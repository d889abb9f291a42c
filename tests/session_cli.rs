//! Sessions end to end: `lt run --profile/--log` and `lt log show/verify`
//! with the real binary, real subprocess tools and `fixed` tools, in a fresh
//! temporary folder per test.
//!
//! The command tools run `tests/session/tool.py`, which appends one line per
//! call (its argument and `LT_IDEMPOTENCY_KEY`) to the file named by
//! `LT_RECORD`: `<dir>/<tool>.calls`. That file is how a test knows which
//! tools really ran; its absence means the tool never ran.

use lt::log::sha256_hex;
use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LT: &str = env!("CARGO_BIN_EXE_lt");

/// `tests/session/tool.py` as an absolute path.
fn tool_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/session/tool.py")
        .display()
        .to_string()
}

/// A TOML literal string (our paths and JSON texts hold no `'`).
fn lit(s: &str) -> String {
    assert!(!s.contains('\''), "a quote in {s}");
    format!("'{s}'")
}

/// A fresh folder under the system temp dir, removed when dropped.
mod support;

/// A temp folder for one test, with the tool.py helpers of this file.
struct TempDir(support::TempDir);

impl std::ops::Deref for TempDir {
    type Target = support::TempDir;
    fn deref(&self) -> &support::TempDir {
        &self.0
    }
}

impl TempDir {
    fn new(name: &str) -> TempDir {
        TempDir(support::TempDir::new("session-cli", name))
    }

    /// The calls `tool` really made (the records of `tool.py`), in order;
    /// `None` when the tool never ran.
    fn calls(&self, tool: &str) -> Option<Vec<Json>> {
        let text = std::fs::read_to_string(self.path(&format!("{tool}.calls"))).ok()?;
        Some(
            text.lines()
                .map(|l| serde_json::from_str(l).expect("a record of tool.py"))
                .collect(),
        )
    }

    /// The standard `tools.toml` of these tests, then `profile` (TOML text
    /// appended as is, e.g. a `[profile]` table); returns its path.
    ///
    /// - `lookup`, `refund`, `score`: command tools answering
    ///   `{"tier": "gold"}`, `{"tx": "tx-1"}`, `7`;
    /// - `slow`: a command tool that sleeps 10 s (its own timeout: 5 s);
    /// - `notify`: a `fixed` tool answering `{sent = true}`.
    fn tools(&self, profile: &str) -> String {
        let script = tool_script();
        let command = |name: &str, answer: &str, extra: &str| {
            format!(
                "[tools.{name}]\ncommand = [{}, {}, {}{extra}]\nenv = {{ LT_RECORD = {} }}\n",
                lit("python3"),
                lit(&script),
                lit(answer),
                lit(&self.path(&format!("{name}.calls")))
            )
        };
        let text = format!(
            "{}\n{}\n{}\n{}timeout_ms = 5000\n\n[tools.notify]\nfixed = {{ ok = {{ sent = true }} }}\n\n{profile}",
            command("lookup", r#"{"tier": "gold"}"#, ""),
            command("refund", r#"{"tx": "tx-1"}"#, ""),
            command("score", "7", ""),
            command("slow", r#""late""#, ", '10'"),
        );
        self.write("tools.toml", &text)
    }
}

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Out {
    fn json(&self) -> Json {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// The program's value from `--json` output; asserts exit 0.
    fn value(&self) -> Json {
        assert_eq!(self.code, 0, "{self:?}");
        let j = self.json();
        assert_eq!(j["ok"], json!(true), "{self:?}");
        j["value"].clone()
    }
}

/// Runs `lt ARGS` in `dir`.
fn lt(dir: &TempDir, args: &[&str]) -> Out {
    let started = Instant::now();
    let out = Command::new(LT)
        .args(args)
        .current_dir(&dir.0 .0)
        .env("NO_COLOR", "1")
        .env_remove("LT_RECORD")
        .env_remove("LT_IDEMPOTENCY_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("run lt");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// The events of a log file.
fn events(path: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(path).expect("read the log");
    assert!(text.ends_with('\n'), "the log ends in a newline");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn kinds(events: &[Json]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["kind"].as_str().expect("a string"))
        .collect()
}

/// The events of one call.
fn of_call<'a>(events: &'a [Json], call_id: &str) -> Vec<&'a Json> {
    events.iter().filter(|e| e["call_id"] == call_id).collect()
}

/// The call ids of a tool, in the order proposed.
fn call_ids(events: &[Json], tool: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "proposed" && e["tool"] == tool)
        .map(|e| e["call_id"].as_str().expect("a string").to_string())
        .collect()
}

/// `lt log verify` accepts the log: exit 0, `ok: N events` with N its lines.
fn assert_verifies(dir: &TempDir, log: &str) {
    let n = events(log).len();
    let out = lt(dir, &["log", "verify", log]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with(&format!(
            "{log}: ok: {n} events, the hash chain is intact; last hash "
        )),
        "{out:?}"
    );
}

/// The invariants of every session log: one session, `seq` from 0, the
/// chain of `prev`; each call proposed, then decided; a `scheduled` call has
/// an earlier allow decision and no `scheduled` follows a deny; an outcome
/// follows `scheduled` or a dry-run decision; the idempotency key is
/// `<session>:<call_id>`.
fn assert_invariants(events: &[Json]) {
    assert_eq!(events[0]["kind"], "session_started");
    let session = events[0]["session"].as_str().expect("a string");
    assert_eq!(session.len(), 32);
    let mut prev = "0".repeat(64);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], json!(i), "{e}");
        assert_eq!(e["session"], session, "{e}");
        assert_eq!(e["prev"], prev.as_str(), "{e}");
        prev = e["hash"].as_str().expect("a string").to_string();
        let before = &events[..i];
        let earlier = |kind: &str| {
            before
                .iter()
                .filter(|b| b["kind"] == kind && b["call_id"] == e["call_id"])
                .collect::<Vec<_>>()
        };
        match e["kind"].as_str().expect("a string") {
            "proposed" => assert!(earlier("proposed").is_empty(), "call proposed twice: {e}"),
            "decided" => {
                assert_eq!(earlier("proposed").len(), 1, "decided before proposed: {e}");
                assert!(earlier("decided").is_empty(), "decided twice: {e}");
            }
            "scheduled" => {
                let decided = earlier("decided");
                assert_eq!(decided.len(), 1, "scheduled without a decision: {e}");
                assert_eq!(
                    decided[0]["decision"], "allow",
                    "scheduled after a deny: {e}"
                );
                assert_ne!(
                    decided[0]["rule"], "dry_run",
                    "a dry-run call scheduled: {e}"
                );
                assert_eq!(
                    e["idempotency_key"],
                    format!("{session}:{}", e["call_id"].as_str().expect("a string")).as_str()
                );
                assert_eq!(e["venue"], "server");
            }
            "completed" | "failed" | "timed_out" => {
                let decided = earlier("decided");
                assert_eq!(decided.len(), 1, "an outcome without a decision: {e}");
                assert_eq!(
                    decided[0]["decision"], "allow",
                    "an outcome after a deny: {e}"
                );
                let dry = decided[0]["rule"] == "dry_run";
                assert_eq!(earlier("scheduled").len(), usize::from(!dry), "{e}");
            }
            "session_started" => assert_eq!(i, 0),
            "session_ended" => assert_eq!(i, events.len() - 1),
            other => panic!("unknown kind {other}"),
        }
    }
}

/// Every call a command tool really made was scheduled, in order, with the
/// same idempotency key: the records of `tool.py` and the log agree.
fn assert_ran_as_scheduled(dir: &TempDir, events: &[Json], tool: &str) {
    let scheduled: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "scheduled" && e["tool"] == tool)
        .map(|e| e["idempotency_key"].as_str().expect("a string"))
        .collect();
    let ran: Vec<String> = dir
        .calls(tool)
        .unwrap_or_default()
        .iter()
        .map(|r| r["key"].as_str().expect("a key").to_string())
        .collect();
    assert_eq!(
        ran, scheduled,
        "{tool}: the calls that ran are the ones scheduled"
    );
}

/// Looks up `lookup`, refunds two customers (a `traverse`: call ids with
/// iteration indices), then notifies through a `fixed` tool.
const MAIN: &str = r#"tool lookup: String -{Read}-> {tier: String};
tool refund: {id: String, amount: Int} -{Write}-> {tx: String};
tool notify: String -{Network}-> {sent: Bool};

match exec tool lookup "c1" {
  Ok(a) => match traverse (fn id: String => exec tool refund {id = id, amount = 5}) ["c1", "c2"] {
    Ok(txs) => match exec tool notify a.tier {
      Ok(n) => if n.sent then a.tier ++ " sent" else a.tier ++ " unsent",
      Err(e) => "notify: " ++ e
    },
    Err(e) => "refund: " ++ e
  },
  Err(e) => "lookup: " ++ e
}
"#;

/// Runs `MAIN` with `tools.toml` (plus `tools_profile`) and `--log`,
/// `--json`, then `extra` arguments; returns the output and the log path.
fn run_main(dir: &TempDir, tools_profile: &str, extra: &[&str]) -> (Out, String) {
    let prog = dir.write("main.lt", MAIN);
    let tools = dir.tools(tools_profile);
    let log = dir.path("session.jsonl");
    let mut args = vec!["run", &prog, "--executors", &tools, "--log", &log, "--json"];
    args.extend_from_slice(extra);
    (lt(dir, &args), log)
}

// ---------------------------------------------------------------------------
// The log of a session
// ---------------------------------------------------------------------------

#[test]
fn a_logged_session_verifies_and_records_every_call_in_order() {
    let dir = TempDir::new("logged");
    let (out, log) = run_main(&dir, "", &[]);
    assert_eq!(out.value(), json!("gold sent"));
    assert_verifies(&dir, &log);

    let ev = events(&log);
    let mut expected = vec!["session_started"];
    for _ in 0..4 {
        expected.extend(["proposed", "decided", "scheduled", "completed"]);
    }
    expected.push("session_ended");
    assert_eq!(kinds(&ev), expected);
    assert_invariants(&ev);

    // session_started: the program text, hashes, the permissive profile.
    let start = &ev[0];
    assert_eq!(start["program"], MAIN);
    assert_eq!(start["program_hash"], sha256_hex(MAIN.as_bytes()).as_str());
    let tools_bytes = std::fs::read(dir.path("tools.toml")).expect("read tools.toml");
    assert_eq!(start["registry_hash"], sha256_hex(&tools_bytes).as_str());
    assert_eq!(start["lt_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(start["profile"]["name"], "default");
    assert_eq!(start["profile"]["allow"], Json::Null);
    assert_eq!(start["profile"]["dry_run"], false);
    assert_eq!(start["limits"]["max_calls"], 10_000);

    // Per call: proposed → decided allow (policy) → scheduled → completed.
    let tools: Vec<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "proposed")
        .map(|e| e["tool"].as_str().expect("a string"))
        .collect();
    assert_eq!(tools, ["lookup", "refund", "refund", "notify"]);
    let session = start["session"].as_str().expect("a string");
    for (k, chunk) in ev[1..ev.len() - 1].chunks(4).enumerate() {
        let id = chunk[0]["call_id"].as_str().expect("a string");
        for e in chunk {
            assert_eq!(e["call_id"], id, "call {k}");
        }
        assert_eq!(chunk[1]["decision"], "allow");
        assert_eq!(chunk[1]["rule"], "policy");
        assert_eq!(
            chunk[1]["reason"],
            format!("tool {} is allowed by profile default", tools[k]).as_str()
        );
        assert_eq!(chunk[2]["tool"], tools[k]);
        assert_eq!(
            chunk[2]["idempotency_key"],
            format!("{session}:{id}").as_str()
        );
    }
    let refunds = call_ids(&ev, "refund");
    assert_ne!(refunds[0], refunds[1], "each iteration has its own call id");
    assert_eq!(ev[1]["argument"], json!("c1"));
    assert_eq!(ev[4]["output"], json!({"tier": "gold"}));
    assert_eq!(ev[4]["result"], json!({"Ok": {"tier": "gold"}}));
    assert_eq!(ev[5]["argument"], json!({"id": "c1", "amount": 5}));
    assert_eq!(ev[9]["argument"], json!({"id": "c2", "amount": 5}));
    assert_eq!(ev[16]["output"], json!({"sent": true}));

    // session_ended carries the value.
    let end = ev.last().expect("an event");
    assert_eq!(end["status"], "ok");
    assert_eq!(end["value"], json!("gold sent"));
    assert_eq!(end["type"], "String");
    assert_eq!(end["calls"], 4);
    assert!(end.get("error").is_none(), "{end}");

    // The tools that ran got the key the log announced, as LT_IDEMPOTENCY_KEY.
    let refund_calls = dir.calls("refund").expect("refund ran");
    assert_eq!(refund_calls.len(), 2);
    assert_eq!(
        refund_calls[0]["key"],
        format!("{session}:{}", refunds[0]).as_str()
    );
    assert_eq!(
        refund_calls[1]["key"],
        format!("{session}:{}", refunds[1]).as_str()
    );
    let input: Json = serde_json::from_str(refund_calls[1]["input"].as_str().expect("a string"))
        .expect("the input is JSON");
    assert_eq!(input, json!({"id": "c2", "amount": 5}));
    for tool in ["lookup", "refund"] {
        assert_ran_as_scheduled(&dir, &ev, tool);
    }
}

#[test]
fn log_show_prints_the_timeline() {
    let dir = TempDir::new("show");
    let (out, log) = run_main(&dir, "", &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let ev = events(&log);
    let session = ev[0]["session"].as_str().expect("a string");
    let show = lt(&dir, &["log", "show", &log]);
    assert_eq!(show.code, 0, "{show:?}");
    assert_eq!(show.stderr, "");
    let lines: Vec<&str> = show.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "session {session}, lt {}, started {}",
            env!("CARGO_PKG_VERSION"),
            ev[0]["ts"].as_str().expect("a string")
        )
    );
    assert!(lines[1].starts_with("program sha256 "), "{lines:?}");
    assert!(
        lines[1].contains("(14 lines), tools.toml sha256 "),
        "{lines:?}"
    );
    assert_eq!(lines[2], "profile default (no restrictions)");
    assert!(lines[3].starts_with("limits {"), "{lines:?}");
    // One line per event, `#seq time kind …`.
    let timeline = &lines[4..4 + ev.len()];
    for (i, (line, e)) in timeline.iter().zip(&ev).enumerate() {
        let prefix = format!("#{i} ");
        assert!(line.starts_with(&prefix), "{line}");
        assert!(
            line.contains(e["kind"].as_str().expect("a string")),
            "{line} for {e}"
        );
    }
    assert!(timeline[0].ends_with(" session_started"), "{}", timeline[0]);
    let id = ev[1]["call_id"].as_str().expect("a string");
    assert!(timeline[1].ends_with(&format!("proposed {id} lookup \"c1\"")));
    assert!(timeline[2].ends_with(&format!(
        "decided {id} allow (policy: tool lookup is allowed by profile default)"
    )));
    assert!(timeline[3].ends_with(&format!(
        "scheduled {id} lookup on server (key {session}:{id})"
    )));
    assert!(timeline[4].ends_with(&format!("completed {id} → Ok {{\"tier\":\"gold\"}}")));
    assert!(timeline[ev.len() - 1].ends_with(" session_ended ok"));
    assert_eq!(lines.len(), 5 + ev.len(), "{lines:?}");
    assert!(
        lines[lines.len() - 1].starts_with("ended ok: \"gold sent\" : String (4 calls, "),
        "{lines:?}"
    );
}

#[test]
fn a_stopped_run_is_logged_as_ended_with_an_error() {
    let dir = TempDir::new("stopped");
    let (out, log) = run_main(&dir, "", &["--max-calls", "2"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(out.json()["error"]["kind"], "call_limit");
    assert_verifies(&dir, &log);
    let ev = events(&log);
    assert_invariants(&ev);
    let end = ev.last().expect("an event");
    assert_eq!(end["kind"], "session_ended");
    assert_eq!(end["status"], "error");
    assert_eq!(end["error"]["kind"], "call_limit");
    assert!(end.get("value").is_none(), "{end}");
    assert_eq!(dir.calls("refund").map(|c| c.len()), Some(1));
    assert_ran_as_scheduled(&dir, &ev, "refund");
}

// ---------------------------------------------------------------------------
// Denials
// ---------------------------------------------------------------------------

/// Runs `MAIN` under a `[profile]` of tools.toml that denies (some calls
/// of) `refund` by `rule`; checks the message the program got, that no
/// denied call ran, and the log. `ran`: how many refunds ran before.
fn assert_refund_denied(profile: &str, rule: &str, reason: &str, ran: usize) {
    let dir = TempDir::new(rule);
    let (out, log) = run_main(&dir, profile, &[]);
    assert_eq!(
        out.value(),
        json!(format!("refund: denied: {rule}: {reason}")),
        "{out:?}"
    );
    assert_eq!(dir.calls("refund").map(|c| c.len()).unwrap_or(0), ran);
    assert!(dir.calls("lookup").is_some(), "lookup was allowed and ran");
    assert_verifies(&dir, &log);
    let ev = events(&log);
    assert_invariants(&ev);
    assert_ran_as_scheduled(&dir, &ev, "refund");
    let denied = &call_ids(&ev, "refund")[ran];
    let call = of_call(&ev, denied);
    let k: Vec<&str> = call
        .iter()
        .map(|e| e["kind"].as_str().expect("a string"))
        .collect();
    assert_eq!(
        k,
        ["proposed", "decided"],
        "a denied call is never scheduled"
    );
    assert_eq!(call[1]["decision"], "deny");
    assert_eq!(call[1]["rule"], rule);
    assert_eq!(call[1]["reason"], reason);
    // The traverse stopped at the denial; nothing was proposed after it.
    let end = ev.len() - 1;
    assert_eq!(ev[end - 1]["call_id"], denied.as_str());
    assert_eq!(
        ev[end]["value"],
        json!(format!("refund: denied: {rule}: {reason}"))
    );
}

#[test]
fn an_allow_list_denies_the_tools_it_does_not_list() {
    assert_refund_denied(
        "[profile]\nname = \"ops\"\nallow = [\"lookup\", \"notify\"]\n",
        "allowlist",
        "tool refund is not among the tools profile ops allows",
        0,
    );
}

#[test]
fn a_deny_list_denies_its_tools() {
    assert_refund_denied(
        "[profile]\nname = \"ops\"\ndeny = [\"refund\"]\n",
        "denylist",
        "profile ops denies tool refund",
        0,
    );
}

#[test]
fn effects_deny_tools_with_effects_not_granted() {
    assert_refund_denied(
        "[profile]\nname = \"ops\"\neffects = [\"Read\", \"Network\"]\n",
        "effects",
        "tool refund performs {Write}, which profile ops does not grant (it grants {Read, Network})",
        0,
    );
}

#[test]
fn the_session_budget_denies_calls_past_max_calls() {
    assert_refund_denied(
        "[profile]\nname = \"ops\"\nmax_calls = 2\n",
        "session_budget",
        "profile ops allows 2 tool calls per session, all used",
        1,
    );
}

#[test]
fn a_tool_budget_denies_calls_of_that_tool_past_its_max_calls() {
    assert_refund_denied(
        "[profile]\nname = \"ops\"\n\n[profile.tools.refund]\nmax_calls = 1\n",
        "tool_budget",
        "profile ops allows 1 calls of refund per session, all used",
        1,
    );
}

#[test]
fn the_allow_list_is_checked_before_the_deny_list() {
    let dir = TempDir::new("order");
    let (out, log) = run_main(
        &dir,
        "[profile]\nallow = [\"lookup\"]\ndeny = [\"lookup\"]\n",
        &[],
    );
    assert_eq!(
        out.value(),
        json!("lookup: denied: denylist: profile default denies tool lookup")
    );
    assert!(dir.calls("lookup").is_none(), "a denied tool never runs");
    let ev = events(&log);
    assert_invariants(&ev);
    assert_eq!(
        kinds(&ev),
        ["session_started", "proposed", "decided", "session_ended"]
    );
    assert_eq!(ev[2]["rule"], "denylist");
}

#[test]
fn a_profile_file_applies_and_wins_over_the_profile_in_tools_toml() {
    let dir = TempDir::new("sources");
    let prog = dir.write("main.lt", MAIN);
    let tools = dir.tools("[profile]\nname = \"in_tools\"\ndeny = [\"refund\"]\n");
    let strict = dir.write(
        "strict.toml",
        "[profile]\nname = \"cli\"\ndeny = [\"lookup\"]\n",
    );
    let open = dir.write("open.toml", "# a comment\n[profile]\nname = \"open\"\n");

    // tools.toml's [profile] alone.
    let out = lt(&dir, &["run", &prog, "--executors", &tools, "--json"]);
    assert_eq!(
        out.value(),
        json!("refund: denied: denylist: profile in_tools denies tool refund")
    );
    assert!(dir.calls("refund").is_none());
    assert_eq!(dir.calls("lookup").map(|c| c.len()), Some(1));

    // --profile replaces it entirely (it is not merged).
    let log = dir.path("strict.jsonl");
    let out = lt(
        &dir,
        &[
            "run",
            &prog,
            "--executors",
            &tools,
            "--profile",
            &strict,
            "--log",
            &log,
            "--json",
        ],
    );
    assert_eq!(
        out.value(),
        json!("lookup: denied: denylist: profile cli denies tool lookup")
    );
    assert_eq!(
        dir.calls("lookup").map(|c| c.len()),
        Some(1),
        "not run again"
    );
    let ev = events(&log);
    assert_eq!(ev[0]["profile"]["name"], "cli");
    assert_eq!(ev[0]["profile"]["deny"], json!(["lookup"]));

    let log = dir.path("open.jsonl");
    let out = lt(
        &dir,
        &[
            "run",
            &prog,
            "--executors",
            &tools,
            "--profile",
            &open,
            "--log",
            &log,
            "--json",
        ],
    );
    assert_eq!(out.value(), json!("gold sent"));
    assert_eq!(dir.calls("refund").map(|c| c.len()), Some(2));
    let ev = events(&log);
    assert_eq!(ev[0]["profile"]["name"], "open");
    assert_eq!(ev[0]["profile"]["deny"], json!([]));
    assert_invariants(&ev);

    // A profile file for a program without tools.toml.
    let pure = dir.write("pure.lt", "1 + 2\n");
    let out = lt(&dir, &["run", &pure, "--profile", &strict]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "3\n"), "{out:?}");
}

/// A profile's effect rules are decided on the program's declaration of a
/// tool; tools.toml states what the tool really does (`effects = [...]`),
/// and a program that declares less is refused before anything runs.
#[test]
fn a_program_cannot_lift_the_policy_by_declaring_a_tool_pure() {
    let dir = TempDir::new("liar");
    let prog = dir.write(
        "liar.lt",
        "tool refund: {id: String, amount: Int} -> {tx: String};\n\
         match exec tool refund {id = \"c1\", amount = 5} { Ok(r) => r.tx, Err(e) => e }\n",
    );
    let tools = dir.tools("");
    let text = std::fs::read_to_string(&tools).expect("tools.toml");
    let text = text.replacen(
        "[tools.refund]\n",
        "[tools.refund]\neffects = [\"Write\"]\n",
        1,
    );
    let tools = dir.write("tools.toml", &text);
    for profile in [
        "[profile]\neffects = [\"Read\"]\n",
        "[profile]\ndry_run = true\n",
    ] {
        let p = dir.write("p.toml", profile);
        let out = lt(
            &dir,
            &["run", &prog, "--executors", &tools, "--profile", &p],
        );
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr
                .contains("the program declares tool refund with effects {}, but")
                && out.stderr.contains("says it performs Write"),
            "{}",
            out.stderr
        );
        assert!(dir.calls("refund").is_none(), "refund ran: {out:?}");
    }
}

/// Every tool whose declaration understates what tools.toml says it does
/// is reported in one run (one round of fixes), at the first one.
#[test]
fn every_understated_effect_is_reported_at_once() {
    let dir = TempDir::new("liars");
    let prog = dir.write(
        "liars.lt",
        "tool lookup: {id: String} -{Read}-> {tier: String};\n\
         tool refund: {id: String, amount: Int} -> {tx: String};\n\
         tool score: {id: String} -{Read}-> Int;\n\
         let a = match exec tool refund {id = \"c1\", amount = 5} { Ok(r) => r.tx, Err(e) => e } in\n\
         let b = match exec tool lookup {id = \"c1\"} { Ok(r) => r.tier, Err(e) => e } in\n\
         let c = match exec tool score {id = \"c1\"} { Ok(n) => n, Err(e) => 0 } in\n\
         {a = a, b = b, c = c}\n",
    );
    let tools = dir.tools("");
    let text = std::fs::read_to_string(&tools).expect("tools.toml");
    let text = text
        .replacen(
            "[tools.refund]\n",
            "[tools.refund]\neffects = [\"Write\"]\n",
            1,
        )
        .replacen(
            "[tools.lookup]\n",
            "[tools.lookup]\neffects = [\"Read\"]\n",
            1,
        )
        .replacen(
            "[tools.score]\n",
            "[tools.score]\neffects = [\"Read\", \"Network\", \"Write\"]\n",
            1,
        );
    let tools = dir.write("tools.toml", &text);
    let out = lt(&dir, &["run", &prog, "--executors", &tools]);
    assert_eq!(out.code, 2, "{out:?}");
    let expected = format!(
        "liars.lt:2:1: the program declares 2 tools with fewer effects than {tools} says they perform: \
         tool refund (line 2) with effects {{}}, but it performs Write; \
         tool score (line 3) with effects {{Read}}, but it performs Network, Write"
    );
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "declare each tool with its real effects: `tool refund: … -{Write}-> …;`, `tool score: … -{Read, Network, Write}-> …;`"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("tool lookup"), "{}", out.stderr);
    for tool in ["refund", "lookup", "score"] {
        assert!(dir.calls(tool).is_none(), "{tool} ran: {out:?}");
    }
}

/// Runs `lt ARGS` under bash with the largest file it may write capped at
/// `kib` KiB (`ulimit -f`) and SIGXFSZ ignored, so a write past the cap
/// fails with EFBIG.
fn lt_with_file_cap(dir: &TempDir, kib: u32, args: &[&str]) -> Out {
    let started = Instant::now();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\" \"$@\""))
        .arg(LT)
        .args(args)
        .current_dir(&dir.0 .0)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

#[test]
fn when_the_log_cannot_be_written_no_further_call_runs() {
    assert!(
        Command::new("bash").arg("-c").arg("true").status().is_ok(),
        "this test needs bash"
    );
    // The log fills up at a different event each time: whatever the event,
    // the calls that ran are exactly those whose `scheduled` is on record.
    for kib in 2..=5 {
        let dir = TempDir::new(&format!("full-{kib}"));
        let prog = dir.write("main.lt", MAIN);
        let tools = dir.tools("");
        let log = dir.path("capped.jsonl");
        let out = lt_with_file_cap(
            &dir,
            kib,
            &["run", &prog, "--executors", &tools, "--log", &log],
        );
        assert_eq!(out.code, 3, "{kib} KiB: {out:?}");
        assert!(
            out.stderr
                .starts_with("error[run]: the event log could not be written: "),
            "{kib} KiB: {out:?}"
        );
        // The complete lines verify; the cut line is an incomplete tail.
        let text = std::fs::read_to_string(&log).expect("read the log");
        let verify = lt(&dir, &["log", "verify", &log, "--json"]);
        assert_eq!(verify.code, 0, "{kib} KiB: {verify:?}");
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let ev: Vec<Json> = complete
            .lines()
            .map(|l| serde_json::from_str(l).expect("a complete line is JSON"))
            .collect();
        assert_eq!(verify.json()["events"], json!(ev.len()));
        assert!(ev.len() < 18, "{kib} KiB: the log was cut");
        assert_invariants(&ev);
        for tool in ["lookup", "refund"] {
            assert_ran_as_scheduled(&dir, &ev, tool);
        }
    }
}

// ---------------------------------------------------------------------------
// Dry run and per-tool timeouts
// ---------------------------------------------------------------------------

const DRY: &str = r#"tool score: Int -> Int;
tool lookup: String -{Read}-> {tier: String};
tool refund: {id: String, amount: Int} -{Write}-> {tx: String};

match exec tool score 1 {
  Ok(s) => match exec tool lookup "c1" {
    Ok(a) => match exec tool refund {id = "c1", amount = s} {
      Ok(r) => {score = s, tier = a.tier, tx = r.tx},
      Err(e) => {score = s, tier = a.tier, tx = "refund: " ++ e}
    },
    Err(e) => {score = s, tier = "lookup: " ++ e, tx = ""}
  },
  Err(e) => {score = 0, tier = "score: " ++ e, tx = ""}
}
"#;

#[test]
fn a_dry_run_answers_effectful_calls_without_running_them() {
    let dir = TempDir::new("dry");
    let prog = dir.write("dry.lt", DRY);
    let tools = dir.tools(
        "[profile]\nname = \"rehearsal\"\ndry_run = true\n\n\
         [profile.tools.refund]\ndry_run_result = { tx = \"dry-1\" }\n",
    );
    let log = dir.path("dry.jsonl");
    let out = lt(
        &dir,
        &["run", &prog, "--executors", &tools, "--log", &log, "--json"],
    );
    // score is pure and runs; lookup gets the empty value of its output
    // type; refund the configured answer. Neither effectful script ran.
    assert_eq!(out.value(), json!({"score": 7, "tier": "", "tx": "dry-1"}));
    assert_eq!(dir.calls("score").map(|c| c.len()), Some(1));
    assert!(
        dir.calls("lookup").is_none(),
        "a dry run executes no effectful tool"
    );
    assert!(
        dir.calls("refund").is_none(),
        "a dry run executes no effectful tool"
    );

    assert_verifies(&dir, &log);
    let ev = events(&log);
    assert_invariants(&ev);
    assert_eq!(ev[0]["profile"]["dry_run"], true);
    assert_ran_as_scheduled(&dir, &ev, "score");

    let score = of_call(&ev, &call_ids(&ev, "score")[0]);
    assert_eq!(score[1]["rule"], "policy");
    assert_eq!(score.len(), 4, "proposed, decided, scheduled, completed");

    for (tool, effect, output) in [
        ("lookup", "{Read}", json!({"tier": ""})),
        ("refund", "{Write}", json!({"tx": "dry-1"})),
    ] {
        let call = of_call(&ev, &call_ids(&ev, tool)[0]);
        let k: Vec<&str> = call
            .iter()
            .map(|e| e["kind"].as_str().expect("a string"))
            .collect();
        assert_eq!(
            k,
            ["proposed", "decided", "completed"],
            "{tool}: no scheduled"
        );
        assert_eq!(call[1]["decision"], "allow");
        assert_eq!(call[1]["rule"], "dry_run");
        assert_eq!(
            call[1]["reason"],
            format!("dry run: {tool} performs {effect} and is not executed").as_str()
        );
        assert_eq!(call[2]["output"], output);
        assert_eq!(call[2]["result"], json!({ "Ok": output }));
    }
    assert!(!ev
        .iter()
        .any(|e| e["kind"] == "scheduled" && e["tool"] != "score"));
}

#[test]
fn a_profile_timeout_caps_the_executors_timeout() {
    let dir = TempDir::new("timeout");
    let prog = dir.write(
        "slow.lt",
        "tool slow: Unit -{Read}-> String;\nmatch exec tool slow () { Ok(v) => v, Err(e) => e }\n",
    );
    // tools.toml gives `slow` 5000 ms (it sleeps 10 s); the profile 300 ms.
    let tools = dir.tools("[profile]\n[profile.tools.slow]\ntimeout_ms = 300\n");
    let log = dir.path("slow.jsonl");
    let out = lt(
        &dir,
        &["run", &prog, "--executors", &tools, "--log", &log, "--json"],
    );
    assert_eq!(out.value(), json!("tool slow timed out after 300 ms"));
    assert!(
        out.elapsed < Duration::from_secs(4),
        "took {:?}",
        out.elapsed
    );
    // (Whether the script got as far as recording its call within 300 ms
    // depends on the machine's load: not asserted.)
    assert!(dir.calls("slow").map_or(0, |c| c.len()) <= 1);

    assert_verifies(&dir, &log);
    let ev = events(&log);
    assert_invariants(&ev);
    assert_eq!(ev[0]["profile"]["tools"]["slow"]["timeout_ms"], 300);
    assert_eq!(
        kinds(&ev),
        [
            "session_started",
            "proposed",
            "decided",
            "scheduled",
            "timed_out",
            "session_ended"
        ]
    );
    assert_eq!(ev[4]["message"], "tool slow timed out after 300 ms");
    assert_eq!(
        ev[4]["result"],
        json!({"Err": "tool slow timed out after 300 ms"})
    );
}

// ---------------------------------------------------------------------------
// Profile errors: exit 2, a position, nothing runs
// ---------------------------------------------------------------------------

/// Runs `MAIN` with `--log` and the given profile arguments; expects exit 2
/// with `stderr` starting `error: {expected}`, no tool run and no log.
fn assert_profile_error(dir: &TempDir, tools_profile: &str, args: &[&str], expected: &str) {
    let prog = dir.write("main.lt", MAIN);
    let tools = dir.tools(tools_profile);
    let log = dir.path("never.jsonl");
    let mut all = vec!["run", &prog, "--executors", &tools, "--log", &log];
    all.extend_from_slice(args);
    let out = lt(dir, &all);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "", "{out:?}");
    assert!(
        out.stderr.starts_with(&format!("error: {expected}")),
        "expected `error: {expected}…`, got {out:?}"
    );
    assert!(dir.calls("lookup").is_none(), "nothing runs");
    assert!(!Path::new(&log).exists(), "no log is created");
}

#[test]
fn profile_errors_stop_before_anything_runs() {
    let dir = TempDir::new("profile-errors");
    let p = dir.write("p.toml", "[profile]\nname = \"x\"\nbogus = 1\n");
    assert_profile_error(
        &dir,
        "",
        &["--profile", &p],
        &format!("{p}:3:1: unknown field `bogus`, expected one of `name`, `allow`, `deny`, `effects`, `max_calls`, `max_concurrency`, `approvals`, `dry_run`, `tools`"),
    );

    let p = dir.write("p.toml", "[profile]\neffects = [\"Read\", \"write\"]\n");
    assert_profile_error(
        &dir,
        "",
        &["--profile", &p],
        &format!("{p}:2:20: profile: `write` is not an effect label\n  = help: effect labels are capitalised names"),
    );

    let p = dir.write(
        "p.toml",
        "[profile]\n[profile.tools.refund]\ntimeout_ms = 0\n",
    );
    assert_profile_error(
        &dir,
        "",
        &["--profile", &p],
        &format!(
            "{p}:3:14: profile: tool refund: timeout_ms must be a positive number of milliseconds"
        ),
    );

    let p = dir.write("p.toml", "[profile]\neffects = \"Read\"\n");
    assert_profile_error(
        &dir,
        "",
        &["--profile", &p],
        &format!("{p}:2:11: invalid type: string \"Read\", expected a sequence"),
    );

    let missing = dir.path("missing.toml");
    assert_profile_error(
        &dir,
        "",
        &["--profile", &missing],
        &format!("{missing}: cannot read the profile: "),
    );

    let p = dir.write(
        "p.toml",
        "# tools, not a profile\n[tools.x]\nfixed = { ok = 1 }\n",
    );
    assert_profile_error(
        &dir,
        "",
        &["--profile", &p],
        &format!("{p}: no [profile] table in this file\n  = help: a profile file holds a `[profile]` table"),
    );

    // The [profile] of tools.toml: positions in tools.toml.
    let tools = dir.path("tools.toml");
    let line = std::fs::read_to_string(dir.tools(""))
        .expect("read tools.toml")
        .lines()
        .count()
        + 4;
    assert_profile_error(
        &dir,
        "[profile]\n[profile.tools.refund]\nmax_calls = 1\nretries = 2\n",
        &[],
        &format!("{tools}:{line}:1: unknown field `retries`, expected one of `max_calls`, `timeout_ms`, `dry_run_result`"),
    );
}

#[test]
fn profile_errors_in_json() {
    let dir = TempDir::new("profile-json");
    let prog = dir.write("main.lt", MAIN);
    let tools = dir.tools("");
    let p = dir.write(
        "p.toml",
        "[profile]\n\n[profile.tools.slow]\ntimeout_ms = 0\n",
    );
    let out = lt(
        &dir,
        &[
            "run",
            &prog,
            "--executors",
            &tools,
            "--profile",
            &p,
            "--json",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.json(),
        json!({
            "ok": false,
            "stage": "executors",
            "error": {
                "kind": "config",
                "message": "profile: tool slow: timeout_ms must be a positive number of milliseconds",
                "file": p,
                "line": 4,
                "column": 14,
                "help": null,
            }
        })
    );
    assert!(dir.calls("lookup").is_none());
}

// ---------------------------------------------------------------------------
// --log to a place that cannot be written
// ---------------------------------------------------------------------------

#[test]
fn an_unwritable_log_stops_the_run_before_anything_runs() {
    let dir = TempDir::new("unwritable");
    let prog = dir.write("main.lt", MAIN);
    let tools = dir.tools("");
    let folder = dir.path("a-folder");
    std::fs::create_dir(&folder).expect("create a folder");
    for path in [folder.as_str(), "/nonexistent/dir/x.jsonl"] {
        let out = lt(&dir, &["run", &prog, "--executors", &tools, "--log", path]);
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr
                .starts_with(&format!("error: cannot create the event log {path}: ")),
            "{out:?}"
        );
        let out = lt(
            &dir,
            &["run", &prog, "--executors", &tools, "--log", path, "--json"],
        );
        assert_eq!(out.code, 2, "{out:?}");
        let j = out.json();
        assert_eq!(
            (&j["ok"], &j["stage"]),
            (&json!(false), &json!("log")),
            "{j}"
        );
        assert_eq!(j["error"]["kind"], "usage");
    }
    // A log that opens but cannot be written: the first event fails.
    if Path::new("/dev/full").exists() {
        let out = lt(
            &dir,
            &["run", &prog, "--executors", &tools, "--log", "/dev/full"],
        );
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr
                .starts_with("error: the event log could not be written: "),
            "{out:?}"
        );
    }
    assert!(dir.calls("lookup").is_none(), "nothing ran");
}

// ---------------------------------------------------------------------------
// lt log verify on damaged logs
// ---------------------------------------------------------------------------

/// A log of `MAIN` (18 lines), as text.
fn a_log(dir: &TempDir) -> String {
    let (out, log) = run_main(dir, "", &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(log).expect("read the log");
    assert_eq!(text.lines().count(), 18);
    text
}

/// `lt log verify` of `text` (written to `name`) fails at `line` with
/// `kind`, and the message starts with `message`.
fn assert_broken(dir: &TempDir, name: &str, text: &str, line: usize, kind: &str, message: &str) {
    let path = dir.write(name, text);
    let out = lt(dir, &["log", "verify", &path]);
    assert_eq!(out.code, 1, "{name}: {out:?}");
    assert_eq!(out.stdout, "", "{name}");
    assert!(
        out.stderr
            .starts_with(&format!("{path}: line {line}: {message}")),
        "{name}: expected `line {line}: {message}`, got {out:?}"
    );
    let out = lt(dir, &["log", "verify", &path, "--json"]);
    assert_eq!(out.code, 1, "{name}: {out:?}");
    let j = out.json();
    assert_eq!(j["ok"], false, "{name}: {j}");
    assert_eq!(j["events"], json!(line - 1), "{name}: {j}");
    assert_eq!(j["problem"]["line"], json!(line), "{name}: {j}");
    assert_eq!(j["problem"]["kind"], kind, "{name}: {j}");
    assert!(
        j["problem"]["message"]
            .as_str()
            .expect("a message")
            .starts_with(message),
        "{name}: {j}"
    );
}

fn lines_of(text: &str) -> Vec<&str> {
    text.split_terminator('\n').collect()
}

fn join(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn verify_finds_the_line_of_each_kind_of_damage() {
    let dir = TempDir::new("damage");
    let text = a_log(&dir);
    let lines = lines_of(&text);

    // One character changed in the middle (line 6: the argument of a call).
    let mut edited = lines.clone();
    let changed = lines[5].replacen("\"amount\":5", "\"amount\":6", 1);
    assert_ne!(changed, lines[5]);
    edited[5] = &changed;
    assert_broken(
        &dir,
        "edited.jsonl",
        &join(&edited),
        6,
        "hash",
        "hash mismatch: the event was edited after it was written",
    );

    // A line deleted.
    let mut deleted = lines.clone();
    deleted.remove(5);
    assert_broken(
        &dir,
        "deleted.jsonl",
        &join(&deleted),
        6,
        "seq",
        "seq 6, expected 5: an event is missing before this line, or the lines are out of order",
    );

    // Two lines swapped.
    let mut swapped = lines.clone();
    swapped.swap(5, 6);
    assert_broken(
        &dir,
        "swapped.jsonl",
        &join(&swapped),
        6,
        "seq",
        "seq 6, expected 5",
    );

    // A line repeated.
    let mut repeated = lines.clone();
    repeated.insert(6, lines[5]);
    assert_broken(
        &dir,
        "repeated.jsonl",
        &join(&repeated),
        7,
        "seq",
        "seq 5, expected 6: an event is repeated",
    );

    // Re-encoded with the same meaning (a space after a colon).
    let mut spaced = lines.clone();
    let respaced = lines[5].replacen("\"kind\":", "\"kind\": ", 1);
    spaced[5] = &respaced;
    assert_broken(
        &dir,
        "spaced.jsonl",
        &join(&spaced),
        6,
        "not_canonical",
        "not in canonical form from column",
    );

    // A line that is not JSON, and an empty file.
    let mut garbage = lines.clone();
    garbage[2] = "{not json";
    assert_broken(
        &dir,
        "garbage.jsonl",
        &join(&garbage),
        3,
        "not_json",
        "not JSON: ",
    );
    assert_broken(&dir, "empty.jsonl", "", 1, "empty", "the log is empty");
}

#[test]
fn a_log_holding_an_earlier_session_is_not_replaced_without_force() {
    let dir = TempDir::new("no-replace");
    let (out, log) = run_main(&dir, "", &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let first = std::fs::read(&log).expect("the first log");

    // Again into the same file: refused before anything runs, the file kept.
    let (out, _) = run_main(&dir, "", &[]);
    assert_eq!(out.code, 2, "{out:?}");
    let j = out.json();
    assert_eq!(j["stage"], json!("log"), "{j}");
    let message = j["error"]["message"].as_str().expect("a message");
    assert!(
        message.starts_with(&format!("--log {log} already holds")),
        "{j}"
    );
    let help = j["error"]["help"].as_str().expect("a help");
    // That session ended: nothing to resume, only to look at.
    assert!(help.contains(&format!("lt replay {log}")), "{j}");
    assert!(!help.contains("lt resume"), "{j}");
    assert!(help.contains("--force"), "{j}");
    assert_eq!(
        std::fs::read(&log).expect("the log"),
        first,
        "kept as it was"
    );
    assert_eq!(dir.calls("lookup").map(|c| c.len()), Some(1), "nothing ran");

    // In text: the error and its help on stderr.
    let prog = dir.path("main.lt");
    let tools = dir.path("tools.toml");
    let out = lt(&dir, &["run", &prog, "--executors", &tools, "--log", &log]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.starts_with("error: --log "), "{out:?}");
    assert!(out.stderr.contains("help: that session ended"), "{out:?}");

    // --force replaces it with a new session.
    let (out, _) = run_main(&dir, "", &["--force"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_verifies(&dir, &log);
    assert_ne!(std::fs::read(&log).expect("the log"), first);
    // An empty file is no earlier session.
    std::fs::write(&log, "").expect("empty the log");
    let (out, _) = run_main(&dir, "", &[]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn a_last_line_cut_short_is_reported_but_not_a_failure() {
    let dir = TempDir::new("tail");
    let text = a_log(&dir);
    let last_start = text[..text.len() - 1].rfind('\n').expect("two lines") + 1;
    let cut = &text[..last_start + (text.len() - last_start) / 2];
    let path = dir.write("cut.jsonl", cut);

    let out = lt(&dir, &["log", "verify", &path]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with(&format!(
            "{path}: cut short: its last line (line 18) is incomplete, a write interrupted by a crash or a kill; the 17 complete events before it verify, the hash chain is intact; last hash "
        )),
        "{out:?}"
    );
    assert!(
        out.stdout.contains(
            "\nline 18: incomplete (no final newline): a write was cut short; not checked"
        ),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("\nhelp: `lt resume` cuts the incomplete line off"),
        "{out:?}"
    );

    let out = lt(&dir, &["log", "verify", &path, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    let ev = events(&dir.path("session.jsonl"));
    assert_eq!(
        j,
        json!({
            "ok": true,
            "events": 17,
            "problem": null,
            "incomplete_tail": true,
            "session": ev[0]["session"],
            "last_hash": ev[16]["hash"],
        })
    );

    // show: the verified prefix, then the tail on stderr.
    let out = lt(&dir, &["log", "show", &path]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("\n#16 "), "{out:?}");
    assert!(!out.stdout.contains("\n#17 "), "{out:?}");
    assert!(
        out.stdout.trim_end().ends_with(
            "not ended: no session_ended event after 17 events (the session is running, or lt stopped)"
        ),
        "{out:?}"
    );
    assert!(out.stderr.contains("line 18: incomplete"), "{out:?}");
}

#[test]
fn verify_json_of_an_intact_log() {
    let dir = TempDir::new("verify-json");
    let (out, log) = run_main(&dir, "", &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let ev = events(&log);
    let out = lt(&dir, &["log", "verify", "--json", &log]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    assert_eq!(
        out.json(),
        json!({
            "ok": true,
            "events": ev.len(),
            "problem": null,
            "incomplete_tail": false,
            "session": ev[0]["session"],
            "last_hash": ev[ev.len() - 1]["hash"],
        })
    );
}

#[test]
fn show_stops_at_the_first_problem() {
    let dir = TempDir::new("show-broken");
    let text = a_log(&dir);
    let mut lines = lines_of(&text);
    lines.remove(5);
    let path = dir.write("deleted.jsonl", &join(&lines));
    let out = lt(&dir, &["log", "show", &path]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("\n#4 "), "{out:?}");
    assert!(!out.stdout.contains("\n#5 "), "{out:?}");
    assert!(
        out.stderr
            .starts_with(&format!("{path}: line 6: seq 6, expected 5")),
        "{out:?}"
    );
    assert!(
        out.stderr.contains(&format!(
            "help: `lt log verify {path}` checks the whole chain"
        )),
        "{out:?}"
    );
}

#[test]
fn an_unreadable_log_is_exit_2() {
    let dir = TempDir::new("unreadable");
    let missing = dir.path("missing.jsonl");
    let folder = dir.path("folder");
    std::fs::create_dir(&folder).expect("create a folder");
    for path in [&missing, &folder] {
        for args in [
            vec!["log", "verify", path.as_str()],
            vec!["log", "verify", path.as_str(), "--json"],
            vec!["log", "show", path.as_str()],
        ] {
            let out = lt(&dir, &args);
            assert_eq!(out.code, 2, "{args:?}: {out:?}");
            assert_eq!(out.stdout, "", "{args:?}");
            assert!(
                out.stderr
                    .starts_with(&format!("error: cannot read {path}: ")),
                "{args:?}: {out:?}"
            );
        }
    }
}
