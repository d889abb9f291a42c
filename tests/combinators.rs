//! The combinators of issue 7 run by the real `lt` binary against real
//! subprocess tools (Python scripts): `gather` and `fan_out` overlap their
//! calls (bounded by the profile's `max_concurrency`), the log records the
//! outcomes in completion order and replays; `@intent` annotations are
//! logged with the calls made under them; `bounded_loop` stops early or at
//! its bound.
//!
//! Overlap is shown by the tools themselves: each appends its start and end
//! time to a file, and the test reads the intervals (no timing assertion:
//! two calls overlap or they do not).

mod support;

use serde_json::{json, Value as Json};
use support::{lt_in, TempDir};

/// A tool that records `{id, start, end}` (seconds) to `calls.jsonl`, sleeps
/// `sleep_ms` (from its argument), and answers `{id, status}`; an argument
/// with `crash = true` kills itself.
const SLOW_TOOL: &str = r#"
import json, os, signal, sys, time
arg = json.load(sys.stdin)
start = time.time()
if arg.get("crash"):
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(arg.get("sleep_ms", 300) / 1000.0)
end = time.time()
with open("calls.jsonl", "a") as f:
    f.write(json.dumps({"id": arg["id"], "start": start, "end": end}) + "\n")
json.dump({"id": arg["id"], "status": "ok"}, sys.stdout)
"#;

fn setup(name: &str, profile: &str) -> TempDir {
    let dir = TempDir::new("combinators", name);
    dir.write("slow.py", SLOW_TOOL);
    dir.write(
        "tools.toml",
        &format!(
            "[tools.lookup]\ncommand = [\"python3\", \"slow.py\"]\ntimeout_ms = 20000\neffects = [\"Read\"]\n{profile}"
        ),
    );
    dir
}

fn intervals(dir: &TempDir) -> Vec<(i64, f64, f64)> {
    std::fs::read_to_string(dir.path("calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Json = serde_json::from_str(l).expect("a JSON line");
            (
                v["id"].as_i64().expect("id"),
                v["start"].as_f64().expect("start"),
                v["end"].as_f64().expect("end"),
            )
        })
        .collect()
}

/// The most intervals running at one instant.
fn max_overlap(iv: &[(i64, f64, f64)]) -> usize {
    let mut points: Vec<(f64, i32)> = iv
        .iter()
        .flat_map(|&(_, s, e)| [(s, 1), (e, -1)])
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in points {
        now += d;
        most = most.max(now);
    }
    most as usize
}

fn events(dir: &TempDir) -> Vec<Json> {
    std::fs::read_to_string(dir.path("run.log"))
        .expect("run.log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a log line is JSON"))
        .collect()
}

#[test]
fn gather_runs_its_calls_at_once_and_replays() {
    let dir = setup("gather", "");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let r = gather { a = exec tool lookup {id = 1, sleep_ms = 600}, b = exec tool lookup {id = 2, sleep_ms = 100} } in
let a = match r.a { Ok(x) => x.id, Err(e) => 0 } in
let b = match r.b { Ok(x) => x.id, Err(e) => 0 } in
a * 10 + b
"#,
    );
    let out = lt_in(&dir.0, &["run", "--json", "--log", "run.log", "--executors", "tools.toml", "p.lt"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(12));
    let iv = intervals(&dir);
    assert_eq!(iv.len(), 2);
    assert_eq!(max_overlap(&iv), 2, "the two calls did not overlap: {iv:?}");
    // Both scheduled before either completed; the short call completed first.
    let kinds: Vec<String> = events(&dir)
        .iter()
        .map(|e| format!("{} {}", e["kind"].as_str().unwrap_or(""), e["call_id"].as_str().unwrap_or("")))
        .collect();
    let pos = |k: &str| kinds.iter().position(|x| x.starts_with(k)).unwrap_or(usize::MAX);
    let last_scheduled = kinds.iter().rposition(|x| x.starts_with("scheduled")).unwrap_or(0);
    assert!(last_scheduled < pos("completed"), "{kinds:?}");
    let completed: Vec<&String> = kinds.iter().filter(|k| k.starts_with("completed")).collect();
    assert_eq!(completed.len(), 2);
    let b_id = kinds.iter().filter(|k| k.starts_with("proposed")).nth(1).cloned().unwrap_or_default();
    assert!(completed[0].ends_with(b_id.trim_start_matches("proposed ")), "the 100 ms call completes first: {kinds:?}");
    // The log replays, though the calls completed out of order.
    let replay = lt_in(&dir.0, &["replay", "run.log", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn fan_out_is_bounded_by_the_profile_and_keeps_list_order() {
    let dir = setup("fan_out", "[profile]\nmax_concurrency = 2\n");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let rs = fan_out (fn i => exec tool lookup {id = i, sleep_ms = if i == 0 then 700 else 250}) (range 0 5) in
match traverse (fn r => r) rs {
  Ok(xs) => map (fn x => x.id) xs,
  Err(e) => []: Int
}
"#,
    );
    let out = lt_in(&dir.0, &["run", "--json", "--log", "run.log", "--executors", "tools.toml", "p.lt"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!([0, 1, 2, 3, 4]), "results in list order");
    let iv = intervals(&dir);
    assert_eq!(iv.len(), 5);
    assert_eq!(max_overlap(&iv), 2, "max_concurrency = 2: {iv:?}");
    let completed: Vec<String> = events(&dir)
        .iter()
        .filter(|e| e["kind"] == "completed")
        .map(|e| e["call_id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(completed.len(), 5);
    assert!(!completed[0].ends_with(":0]"), "item 0 (700 ms) does not complete first: {completed:?}");
    let replay = lt_in(&dir.0, &["replay", "run.log", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn a_crashing_call_in_a_gather_is_that_fields_err() {
    let dir = setup("crash", "");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, crash: Bool} -{Read}-> {id: Int, status: String};
let r = gather { a = exec tool lookup {id = 1, crash = false}, b = exec tool lookup {id = 2, crash = true} } in
{a = match r.a { Ok(x) => "ok", Err(e) => "err" }, b = match r.b { Ok(x) => "ok", Err(e) => "err" }}
"#,
    );
    let out = lt_in(&dir.0, &["run", "--json", "--log", "run.log", "--executors", "tools.toml", "p.lt"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!({"a": "ok", "b": "err"}));
    let failed: Vec<Json> = events(&dir).into_iter().filter(|e| e["kind"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["failure"], "crashed");
    let replay = lt_in(&dir.0, &["replay", "run.log", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn intent_is_logged_with_its_calls_and_shown_grouped() {
    let dir = setup("intent", "");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let first = match exec tool lookup {id = 1, sleep_ms = 1} { Ok(x) => x.id, Err(e) => 0 } in
@intent("look up the second and third", hypothesis = "both exist")
let r = gather { b = exec tool lookup {id = 2, sleep_ms = 1}, c = exec tool lookup {id = 3, sleep_ms = 1} } in
first + match r.b { Ok(x) => x.id, Err(e) => 0 } + match r.c { Ok(x) => x.id, Err(e) => 0 }
"#,
    );
    let out = lt_in(&dir.0, &["run", "--json", "--log", "run.log", "--executors", "tools.toml", "p.lt"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(6));
    let ev = events(&dir);
    let started: Vec<&Json> = ev.iter().filter(|e| e["kind"] == "annotation_started").collect();
    let ended: Vec<&Json> = ev.iter().filter(|e| e["kind"] == "annotation_ended").collect();
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["intent"], "look up the second and third");
    assert_eq!(started[0]["hypothesis"], "both exist");
    assert_eq!(started[0]["notes"], Json::Null);
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["annotation_id"], started[0]["annotation_id"]);
    assert_eq!(ended[0]["outcome"], "value");
    let proposed: Vec<Json> = ev
        .iter()
        .filter(|e| e["kind"] == "proposed")
        .map(|e| e["call_id"].clone())
        .collect();
    assert_eq!(ended[0]["calls"], json!(proposed[1..]), "the calls under the intent, not the first");
    let show = lt_in(&dir.0, &["log", "show", "run.log"], &[]);
    assert_eq!(show.code, 0, "{show:?}");
    assert!(show.stdout.contains(r#"intent n"#), "{}", show.stdout);
    let indented = show.stdout.lines().filter(|l| l.contains("   proposed")).count();
    assert_eq!(indented, 2, "the two calls under the intent are indented: {}", show.stdout);
    let replay = lt_in(&dir.0, &["replay", "run.log", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

/// A job whose status is `running` until it has been asked `after` times.
const POLL_TOOL: &str = r#"
import json, sys
arg = json.load(sys.stdin)
try:
    n = int(open("polls").read())
except FileNotFoundError:
    n = 0
n += 1
open("polls", "w").write(str(n))
json.dump({"state": "done" if n >= arg["after"] else "running"}, sys.stdout)
"#;

fn poll(after: i64) -> (support::Out, Vec<Json>) {
    let dir = TempDir::new("combinators", &format!("poll{after}"));
    dir.write("poll.py", POLL_TOOL);
    dir.write(
        "tools.toml",
        "[tools.job_status]\ncommand = [\"python3\", \"poll.py\"]\neffects = [\"Read\"]\n",
    );
    dir.write(
        "p.lt",
        &format!(
            r#"tool job_status: {{id: String, after: Int}} -{{Read}}-> {{state: "running" | "done"}};
bounded_loop 4 {{state = "unknown", polls = 0}} (fn s =>
  match exec tool job_status {{id = "j1", after = {after}}} {{
    Ok(r) => {{done = r.state == "done", value = {{state = r.state ++ "", polls = s.polls + 1}}}},
    Err(e) => {{done = false, value = {{state = "error", polls = s.polls + 1}}}}
  }})
"#
        ),
    );
    let out = lt_in(&dir.0, &["run", "--json", "--log", "run.log", "--executors", "tools.toml", "p.lt"], &[]);
    let ev = events(&dir);
    let replay = lt_in(&dir.0, &["replay", "run.log", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
    (out, ev)
}

#[test]
fn bounded_loop_stops_when_the_step_says_done() {
    let (out, ev) = poll(3);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!({"done": true, "value": {"state": "done", "polls": 3}}));
    let ids: Vec<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "proposed")
        .filter_map(|e| e["call_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(ids[2].contains(":2"), "each iteration has its own call identity: {ids:?}");
}

#[test]
fn bounded_loop_ends_at_its_bound() {
    let (out, ev) = poll(100);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!({"done": false, "value": {"state": "running", "polls": 4}}));
    assert_eq!(ev.iter().filter(|e| e["kind"] == "proposed").count(), 4);
}
