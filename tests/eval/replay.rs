//! `lt eval --replay DIR`: a folder of recorded session logs replayed with
//! the current lt; a log whose recorded program now makes another call (its
//! hash chain rewritten, so it still verifies) is reported with `lt
//! replay`'s non-determinism error, and the command exits 1.

use crate::fixed::{json, lt, stderr};
use crate::support::TempDir;

const PROGRAM: &str = "tool lookup_account: String -{Read}-> {id: String, email: String};
match exec tool lookup_account \"acc_1\" { Ok(a) => a.email, Err(e) => \"lookup failed\" }
";

const TOOLS: &str =
    "[tools.lookup_account]\nfixed = { ok = { id = \"acc_1\", email = \"ada@example.com\" } }\n";

/// Records one session into `logs/good.jsonl`; returns the folder.
fn recorded(name: &str) -> TempDir {
    let dir = TempDir::new("eval-replay", name);
    dir.write("program.lt", PROGRAM);
    dir.write("tools.toml", TOOLS);
    std::fs::create_dir_all(dir.0.join("logs")).expect("logs");
    let o = lt(&[
        "run",
        &dir.path("program.lt"),
        "--executors",
        &dir.path("tools.toml"),
        "--log",
        &dir.path("logs/good.jsonl"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    dir
}

/// `good.jsonl` with its recorded program asking for another account,
/// the chain rewritten as a forger would (so only replay can tell).
fn diverging(dir: &TempDir) {
    let text = std::fs::read_to_string(dir.path("logs/good.jsonl")).expect("log");
    let mut events: Vec<lt::log::Event> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect();
    if let lt::log::EventBody::SessionStarted { program, .. } = &mut events[0].body {
        *program = program.replace("\"acc_1\"", "\"acc_2\"");
    }
    let mut mem = lt::log::MemoryLog::new(events[0].session.clone()).expect("memory log");
    for e in events {
        mem.append(e.body).expect("append");
    }
    dir.write("logs/tampered.jsonl", &mem.to_jsonl());
}

#[test]
fn a_folder_with_a_diverging_log_fails_and_names_it() {
    let dir = recorded("mixed");
    let logs = dir.path("logs");
    // Only the good log: exit 0.
    let o = lt(&["eval", "--replay", &logs]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 log replayed, 0 diverge"));
    diverging(&dir);
    let verify = lt(&["log", "verify", &dir.path("logs/tampered.jsonl")]);
    assert_eq!(verify.status.code(), Some(0), "the forged log verifies");
    let o = lt(&["eval", "--replay", &logs]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("ok        ") && out.contains("good.jsonl"),
        "{out}"
    );
    assert!(
        out.contains("DIVERGES  ") && out.contains("tampered.jsonl: non-determinism"),
        "{out}"
    );
    assert!(stderr(&o).contains("gate failed:"), "{}", stderr(&o));
    let o = lt(&["eval", "--replay", &logs, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["ok"], serde_json::json!(false));
    assert_eq!(j["diverged"], serde_json::json!(1));
    let bad = &j["results"][1];
    assert!(
        bad["log"]
            .as_str()
            .is_some_and(|l| l.ends_with("tampered.jsonl")),
        "{j}"
    );
    assert_eq!(bad["kind"], serde_json::json!("non_determinism"), "{j}");
    assert_eq!(j["results"][0]["ok"], serde_json::json!(true), "{j}");
}

#[test]
fn replay_usage_errors_are_clear() {
    let dir = TempDir::new("eval-replay", "empty");
    let o = lt(&["eval", "--replay", &dir.path(".")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("holds no *.jsonl") && stderr(&o).contains("help:"));
    let o = lt(&["eval", "--replay", "no/such/dir"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot read the folder"),
        "{}",
        stderr(&o)
    );
    let o = lt(&["eval", "examples/eval/suite.toml", "--replay", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not both"), "{}", stderr(&o));
    let o = lt(&["eval"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no suite given"), "{}", stderr(&o));
}
