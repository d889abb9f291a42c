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

/// `lt run --json --log LOG --executors tools.toml p.lt` in `dir`.
fn run_logged(dir: &TempDir, log: &str) -> support::Out {
    lt_in(
        &dir.0,
        &[
            "run",
            "--json",
            "--log",
            log,
            "--executors",
            "tools.toml",
            "p.lt",
        ],
        &[],
    )
}

/// `lt replay LOG` in `dir` matches the log.
fn assert_replays(dir: &TempDir, log: &str) {
    let replay = lt_in(&dir.0, &["replay", log, "--json"], &[]);
    assert_eq!(replay.code, 0, "{log}: {replay:?}");
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
    let mut points: Vec<(f64, i32)> = iv.iter().flat_map(|&(_, s, e)| [(s, 1), (e, -1)]).collect();
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
let r = gather { a = exec tool lookup {id = 1, sleep_ms = 2500}, b = exec tool lookup {id = 2, sleep_ms = 800} } in
let a = match r.a { Ok(x) => x.id, Err(e) => 0 } in
let b = match r.b { Ok(x) => x.id, Err(e) => 0 } in
a * 10 + b
"#,
    );
    let out = run_logged(&dir, "run.log");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(12));
    let iv = intervals(&dir);
    assert_eq!(iv.len(), 2);
    assert_eq!(max_overlap(&iv), 2, "the two calls did not overlap: {iv:?}");
    // Both scheduled before either completed; the short call completed first.
    let kinds: Vec<String> = events(&dir)
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["kind"].as_str().unwrap_or(""),
                e["call_id"].as_str().unwrap_or("")
            )
        })
        .collect();
    let pos = |k: &str| {
        kinds
            .iter()
            .position(|x| x.starts_with(k))
            .unwrap_or(usize::MAX)
    };
    let last_scheduled = kinds
        .iter()
        .rposition(|x| x.starts_with("scheduled"))
        .unwrap_or(0);
    assert!(last_scheduled < pos("completed"), "{kinds:?}");
    let completed: Vec<&String> = kinds
        .iter()
        .filter(|k| k.starts_with("completed"))
        .collect();
    assert_eq!(completed.len(), 2);
    let b_id = kinds
        .iter()
        .filter(|k| k.starts_with("proposed"))
        .nth(1)
        .cloned()
        .unwrap_or_default();
    assert!(
        completed[0].ends_with(b_id.trim_start_matches("proposed ")),
        "the 800 ms call completes first: {kinds:?}"
    );
    // The log replays, though the calls completed out of order.
    assert_replays(&dir, "run.log");
}

#[test]
fn fan_out_is_bounded_by_the_profile_and_keeps_list_order() {
    let dir = setup("fan_out", "[profile]\nmax_concurrency = 2\n");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let rs = fan_out (fn i => exec tool lookup {id = i, sleep_ms = if i == 0 then 2000 else 250}) (range 0 5) in
match traverse (fn r => r) rs {
  Ok(xs) => map (fn x => x.id) xs,
  Err(e) => []: Int
}
"#,
    );
    let out = run_logged(&dir, "run.log");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["value"],
        json!([0, 1, 2, 3, 4]),
        "results in list order"
    );
    let iv = intervals(&dir);
    assert_eq!(iv.len(), 5);
    assert_eq!(max_overlap(&iv), 2, "max_concurrency = 2: {iv:?}");
    let completed: Vec<String> = events(&dir)
        .iter()
        .filter(|e| e["kind"] == "completed")
        .map(|e| e["call_id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(completed.len(), 5);
    assert!(
        !completed[0].ends_with(":0]"),
        "item 0 (2000 ms) does not complete first: {completed:?}"
    );
    assert_replays(&dir, "run.log");
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
    let out = run_logged(&dir, "run.log");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!({"a": "ok", "b": "err"}));
    let failed: Vec<Json> = events(&dir)
        .into_iter()
        .filter(|e| e["kind"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["failure"], "crashed");
    assert_replays(&dir, "run.log");
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
    let out = run_logged(&dir, "run.log");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(6));
    let ev = events(&dir);
    let started: Vec<&Json> = ev
        .iter()
        .filter(|e| e["kind"] == "annotation_started")
        .collect();
    let ended: Vec<&Json> = ev
        .iter()
        .filter(|e| e["kind"] == "annotation_ended")
        .collect();
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
    assert_eq!(
        ended[0]["calls"],
        json!(proposed[1..]),
        "the calls under the intent, not the first"
    );
    let show = lt_in(&dir.0, &["log", "show", "run.log"], &[]);
    assert_eq!(show.code, 0, "{show:?}");
    assert!(show.stdout.contains(r#"intent n"#), "{}", show.stdout);
    let indented = show
        .stdout
        .lines()
        .filter(|l| l.contains("   proposed"))
        .count();
    assert_eq!(
        indented, 2,
        "the two calls under the intent are indented: {}",
        show.stdout
    );
    assert_replays(&dir, "run.log");
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
    let out = run_logged(&dir, "run.log");
    let ev = events(&dir);
    assert_replays(&dir, "run.log");
    (out, ev)
}

#[test]
fn bounded_loop_stops_when_the_step_says_done() {
    let (out, ev) = poll(3);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["value"],
        json!({"done": true, "value": {"state": "done", "polls": 3}})
    );
    let ids: Vec<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "proposed")
        .filter_map(|e| e["call_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(
        ids[2].contains(":2"),
        "each iteration has its own call identity: {ids:?}"
    );
}

#[test]
fn bounded_loop_ends_at_its_bound() {
    let (out, ev) = poll(100);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["value"],
        json!({"done": false, "value": {"state": "running", "polls": 4}})
    );
    assert_eq!(ev.iter().filter(|e| e["kind"] == "proposed").count(), 4);
}

/// Booking tools that keep their bookings in `bookings.json` (in the test's
/// folder): `book` adds `{id, what}` (and fails for `what = "full"`),
/// `cancel` removes the booking `id` (and fails for an unknown one).
const BOOKING_TOOL: &str = r#"
import json, sys
tool = sys.argv[1]
arg = json.load(sys.stdin)
try:
    books = json.load(open("bookings.json"))
except FileNotFoundError:
    books = []
if tool == "book":
    if arg["what"] == "full":
        sys.stderr.write("no room\n"); sys.exit(1)
    if arg["what"] == "ghost":
        out = {"id": "ghost-0"}  # never stored: cancelling it fails
    else:
        bid = "%s-%d" % (arg["what"], len(books) + 1)
        books.append({"id": bid, "what": arg["what"]})
        out = {"id": bid}
else:
    if not any(b["id"] == arg["id"] for b in books):
        sys.stderr.write("no booking %s\n" % arg["id"]); sys.exit(1)
    books = [b for b in books if b["id"] != arg["id"]]
    out = {"cancelled": True}
json.dump(books, open("bookings.json", "w"))
json.dump(out, sys.stdout)
"#;

const BOOKING_DECLS: &str = "tool book: {what: String} -{Write}-> {id: String} undo cancel(output);\ntool cancel: {id: String} -{Write}-> {cancelled: Bool};\n";

fn booking(name: &str, body: &str) -> (support::Out, Vec<Json>, Json, TempDir) {
    let dir = TempDir::new("combinators", name);
    dir.write("book.py", BOOKING_TOOL);
    dir.write(
        "tools.toml",
        "[tools.book]\ncommand = [\"python3\", \"book.py\", \"book\"]\neffects = [\"Write\"]\n[tools.cancel]\ncommand = [\"python3\", \"book.py\", \"cancel\"]\neffects = [\"Write\"]\n",
    );
    dir.write("p.lt", &format!("{BOOKING_DECLS}{body}"));
    let out = run_logged(&dir, "run.log");
    let ev = events(&dir);
    let books: Json = std::fs::read_to_string(dir.path("bookings.json"))
        .map(|t| serde_json::from_str(&t).expect("bookings.json"))
        .unwrap_or(json!([]));
    (out, ev, books, dir)
}

fn calls(ev: &[Json]) -> Vec<String> {
    ev.iter()
        .filter(|e| e["kind"] == "proposed")
        .map(|e| {
            format!(
                "{} {}",
                e["tool"].as_str().unwrap_or(""),
                e["call_id"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn a_scope_that_ends_in_err_undoes_its_completed_calls_newest_first() {
    let (out, ev, books, dir) = booking(
        "scope_err",
        r#"let r = scope {
  match exec tool book {what = "flight"} {
    Ok(f) => match exec tool book {what = "car"} {
      Ok(c) => match exec tool book {what = "full"} { Ok(h) => Ok(h.id), Err(e) => Err(e) },
      Err(e) => Err(e)
    },
    Err(e) => Err(e)
  }
} in
match r { Ok(x) => x, Err(e) => "rolled back" }
"#,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], "rolled back");
    assert_eq!(books, json!([]), "nothing is left booked");
    let c = calls(&ev);
    assert_eq!(c.len(), 5, "{c:?}");
    assert!(
        c[3].starts_with("cancel ") && c[3].contains("undo@"),
        "the car is cancelled first: {c:?}"
    );
    assert!(
        c[4].starts_with("cancel ") && c[4].contains("undo@"),
        "{c:?}"
    );
    let cancelled: Vec<&Json> = ev
        .iter()
        .filter(|e| e["kind"] == "proposed" && e["tool"] == "cancel")
        .map(|e| &e["argument"])
        .collect();
    assert_eq!(
        cancelled,
        [&json!({"id": "car-2"}), &json!({"id": "flight-1"})]
    );
    assert_replays(&dir, "run.log");
}

#[test]
fn a_scope_that_ends_in_ok_undoes_nothing() {
    let (out, ev, books, _dir) = booking(
        "scope_ok",
        r#"match scope { exec tool book {what = "flight"} } { Ok(f) => f.id, Err(e) => e }"#,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], "flight-1");
    assert_eq!(books, json!([{"id": "flight-1", "what": "flight"}]));
    assert_eq!(calls(&ev).len(), 1);
}

#[test]
fn an_inner_scope_that_succeeded_is_undone_when_the_outer_one_fails() {
    let (out, _ev, books, _dir) = booking(
        "scope_nested",
        r#"let r = scope {
  match scope { exec tool book {what = "flight"} } {
    Ok(f) => match exec tool book {what = "full"} { Ok(h) => Ok(h.id), Err(e) => Err(e) },
    Err(e) => Err(e)
  }
} in
match r { Ok(x) => x, Err(e) => "rolled back" }
"#,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], "rolled back");
    assert_eq!(
        books,
        json!([]),
        "the inner scope's flight is cancelled by the outer scope"
    );
}

#[test]
fn a_failing_undo_is_logged_and_the_scope_stays_err() {
    let (out, ev, books, dir) = booking(
        "undo_fails",
        r#"let r = scope {
  match exec tool book {what = "flight"} {
    Ok(f) => match exec tool book {what = "ghost"} {
      Ok(g) => match exec tool book {what = "full"} { Ok(h) => Ok(h.id), Err(e) => Err(e) },
      Err(e) => Err(e)
    },
    Err(e) => Err(e)
  }
} in
match r { Ok(x) => x, Err(e) => "err: " ++ e }
"#,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json()["value"].as_str().unwrap_or("").to_string();
    assert!(
        v.starts_with("err: ") && v.contains("no room"),
        "the scope's own Err: {v}"
    );
    assert_eq!(books, json!([]), "the other undo still ran");
    let failed: Vec<&Json> = ev.iter().filter(|e| e["kind"] == "failed").collect();
    assert_eq!(
        failed.len(),
        2,
        "the hotel and the ghost's undo: {failed:?}"
    );
    assert!(
        failed[1]["call_id"]
            .as_str()
            .unwrap_or("")
            .contains("undo@"),
        "{failed:?}"
    );
    assert_replays(&dir, "run.log");
}

#[test]
fn the_trip_booking_example_cancels_the_flight() {
    let dir = TempDir::new("combinators", "trip");
    let root = env!("CARGO_MANIFEST_DIR");
    let out = lt_in(
        std::path::Path::new(root),
        &[
            "run",
            "--json",
            "--log",
            &dir.path("trip.log"),
            "--executors",
            "examples/trip_booking/tools.toml",
            "examples/trip_booking/program.lt",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["value"],
        "not booked (hotel: tool book_hotel failed (exit status 1): Harbor Inn has no room for 3 nights); nothing is left booked"
    );
    let log = std::fs::read_to_string(dir.path("trip.log")).expect("log");
    let tools: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Json>(l).expect("JSON"))
        .filter(|e| e["kind"] == "proposed")
        .map(|e| {
            format!(
                "{} {}",
                e["tool"].as_str().unwrap_or(""),
                e["call_id"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            "book_flight n4",
            "book_hotel n9",
            "cancel_flight n4[undo@n2]"
        ]
    );
}

#[test]
fn the_job_polling_example_polls_three_times() {
    let dir = TempDir::new("combinators", "jobs");
    let root = env!("CARGO_MANIFEST_DIR");
    let out = lt_in(
        std::path::Path::new(root),
        &[
            "run",
            "--json",
            "--log",
            &dir.path("jobs.log"),
            "--executors",
            "examples/job_polling/tools.toml",
            "examples/job_polling/program.lt",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], "export-42 done after 3 polls (100%)");
    assert_eq!(out.json()["calls"], 3);
}

/// A delete tool that records the paths it deleted in `deleted.txt` (and
/// the approval it was given).
const DELETE_TOOL: &str = r#"
import json, sys
arg = json.load(sys.stdin)
with open("deleted.txt", "a") as f:
    f.write("%s %s\n" % (arg["path"], arg.get("approval", "-")))
json.dump({"deleted": arg["path"]}, sys.stdout)
"#;

fn approvals(name: &str, profile: &str, body: &str) -> (support::Out, Vec<Json>, String, TempDir) {
    let dir = TempDir::new("combinators", name);
    dir.write("del.py", DELETE_TOOL);
    dir.write(
        "tools.toml",
        &format!("[tools.delete_file]\ncommand = [\"python3\", \"del.py\"]\neffects = [\"Delete\"]\n[tools.wipe]\ncommand = [\"python3\", \"del.py\"]\neffects = [\"Delete\"]\n{profile}"),
    );
    dir.write(
        "p.lt",
        &format!("effect Delete;\ntool delete_file: {{path: String, approval: !Approval}} -{{Delete}}-> {{deleted: String}};\ntool wipe: {{path: String}} -{{Delete}}-> {{deleted: String}};\n{body}"),
    );
    let out = run_logged(&dir, "run.log");
    let ev = events(&dir);
    let deleted = std::fs::read_to_string(dir.path("deleted.txt")).unwrap_or_default();
    (out, ev, deleted, dir)
}

const DELETE_EACH: &str = r#"match traverse (fn p: String =>
  match approve tool delete_file {path = p} {
    Ok(a) => match exec tool delete_file {path = p, approval = a} { Ok(d) => Ok(d.deleted), Err(e) => Ok("failed " ++ p ++ ": " ++ e) },
    Err(why) => Ok("refused " ++ p)
  }) ["a", "b"] {
  Ok(rs) => rs,
  Err(e) => [e]
}
"#;

#[test]
fn each_call_gets_its_own_approval_and_the_log_replays() {
    let (out, ev, deleted, dir) = approvals(
        "approve_allow",
        "[profile]\napprovals = \"allow\"\n[profile.tools.delete_file]\nrequire_approval = true\n",
        DELETE_EACH,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(["a", "b"]));
    let tokens: Vec<&str> = deleted
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(tokens.len(), 2);
    assert!(
        tokens.iter().all(|t| t.starts_with("apv-")) && tokens[0] != tokens[1],
        "{deleted}"
    );
    let decided: Vec<&Json> = ev
        .iter()
        .filter(|e| e["kind"] == "approval_decided")
        .collect();
    assert_eq!(decided.len(), 2);
    assert_eq!(decided[0]["decision"], "allow");
    assert_eq!(decided[0]["token"], tokens[0]);
    assert_replays(&dir, "run.log");
}

#[test]
fn a_refused_approval_is_an_err_and_nothing_is_deleted() {
    let (out, ev, deleted, _dir) = approvals("approve_deny", "", DELETE_EACH);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(["refused a", "refused b"]));
    assert!(deleted.is_empty(), "{deleted}");
    assert_eq!(
        ev.iter()
            .filter(|e| e["kind"] == "approval_decided" && e["decision"] == "deny")
            .count(),
        2
    );
    assert_eq!(ev.iter().filter(|e| e["kind"] == "proposed").count(), 0);
}

#[test]
fn an_approval_for_one_argument_does_not_approve_another() {
    let (out, ev, deleted, _dir) = approvals(
        "approve_mismatch",
        "[profile]\napprovals = \"allow\"\n",
        r#"match approve tool delete_file {path = "a"} {
  Ok(tok) => match exec tool delete_file {path = "b", approval = tok} { Ok(d) => d.deleted, Err(e) => e },
  Err(why) => why
}
"#,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json()["value"].as_str().unwrap_or("").to_string();
    assert!(
        v.starts_with("denied: approval:") && v.contains(r#"{"path":"a"}"#),
        "{v}"
    );
    assert!(deleted.is_empty());
    let decided: Vec<&Json> = ev.iter().filter(|e| e["kind"] == "decided").collect();
    assert_eq!(decided[0]["rule"], "approval");
}

#[test]
fn a_tool_the_profile_guards_cannot_be_called_without_an_approval_field() {
    let (out, _ev, deleted, _dir) = approvals(
        "approve_required",
        "[profile]\napprovals = \"allow\"\n[profile.tools.wipe]\nrequire_approval = true\n",
        r#"match exec tool wipe {path = "a"} { Ok(d) => d.deleted, Err(e) => e }"#,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json()["value"].as_str().unwrap_or("").to_string();
    assert!(
        v.starts_with("denied: approval:") && v.contains("requires an approval"),
        "{v}"
    );
    assert!(deleted.is_empty());
}

#[test]
fn the_bulk_delete_example_deletes_each_file_with_its_own_approval() {
    let dir = TempDir::new("combinators", "bulk");
    let root = env!("CARGO_MANIFEST_DIR");
    let out = lt_in(
        std::path::Path::new(root),
        &[
            "run",
            "--json",
            "--log",
            &dir.path("bulk.log"),
            "--executors",
            "examples/bulk_delete/tools.toml",
            "examples/bulk_delete/program.lt",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["value"],
        json!({"deleted": ["tmp/a.log", "tmp/b.log", "tmp/c.log"], "refused": []})
    );
    let replay = lt_in(
        std::path::Path::new(root),
        &["replay", &dir.path("bulk.log"), "--json"],
        &[],
    );
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn a_gather_log_cut_anywhere_resumes_and_then_replays() {
    for idempotent in [false, true] {
        let dir = setup(&format!("resume_cut_{idempotent}"), "");
        if idempotent {
            let toml = std::fs::read_to_string(dir.path("tools.toml")).expect("toml");
            dir.write(
                "tools.toml",
                &toml.replace(
                    "effects = [\"Read\"]",
                    "effects = [\"Read\"]\nidempotent = true",
                ),
            );
        }
        dir.write(
            "p.lt",
            r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let r = gather { a = exec tool lookup {id = 1, sleep_ms = 50}, b = exec tool lookup {id = 2, sleep_ms = 10}, c = exec tool lookup {id = 3, sleep_ms = 30} } in
let n = match r.a { Ok(x) => x.id, Err(e) => 0 } + match r.b { Ok(x) => x.id, Err(e) => 0 } + match r.c { Ok(x) => x.id, Err(e) => 0 } in
match exec tool lookup {id = n, sleep_ms = 1} { Ok(x) => x.id, Err(e) => -1 }
"#,
        );
        let out = lt_in(
            &dir.0,
            &[
                "run",
                "--json",
                "--log",
                "full.log",
                "--executors",
                "tools.toml",
                "p.lt",
            ],
            &[],
        );
        assert_eq!(out.code, 0, "{out:?}");
        let full = std::fs::read_to_string(dir.path("full.log")).expect("log");
        let lines: Vec<&str> = full.lines().collect();
        for k in 1..lines.len() - 1 {
            dir.write("cut.log", &(lines[..k].join("\n") + "\n"));
            let resumed = lt_in(
                &dir.0,
                &["resume", "cut.log", "--json", "--executors", "tools.toml"],
                &[],
            );
            assert_eq!(
                resumed.code, 0,
                "idempotent {idempotent}, cut {k}: {resumed:?}"
            );
            let replay = lt_in(&dir.0, &["replay", "cut.log", "--json"], &[]);
            assert_eq!(
                replay.code, 0,
                "idempotent {idempotent}, cut after {k} lines: {replay:?}"
            );
        }
    }
}

#[test]
fn an_approval_log_cut_anywhere_resumes_and_then_replays() {
    let (out, _ev, _deleted, dir) = approvals(
        "approve_cut",
        "[profile]\napprovals = \"allow\"\n[profile.tools.delete_file]\nrequire_approval = true\n",
        DELETE_EACH,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let full = std::fs::read_to_string(dir.path("run.log")).expect("log");
    let lines: Vec<&str> = full.lines().collect();
    for k in 1..lines.len() - 1 {
        dir.write("cut.log", &(lines[..k].join("\n") + "\n"));
        let resumed = lt_in(
            &dir.0,
            &["resume", "cut.log", "--json", "--executors", "tools.toml"],
            &[],
        );
        assert_eq!(resumed.code, 0, "cut {k}: {resumed:?}");
        let log = std::fs::read_to_string(dir.path("cut.log")).expect("log");
        let requested = log
            .lines()
            .filter(|l| l.contains("\"approval_requested\""))
            .count();
        assert_eq!(requested, 2, "each request recorded once (cut {k})");
        let replay = lt_in(&dir.0, &["replay", "cut.log", "--json"], &[]);
        assert_eq!(replay.code, 0, "cut after {k} lines: {replay:?}");
    }
}

#[test]
fn check_with_a_profile_sees_a_required_approval_the_tool_cannot_carry() {
    let dir = TempDir::new("combinators", "check_profile_approval");
    dir.write(
        "p.toml",
        "[profile]\nname = \"guarded\"\n[profile.tools.wipe]\nrequire_approval = true\n",
    );
    dir.write(
        "p.lt",
        "tool wipe: {path: String} -{Write}-> Unit;\nmatch exec tool wipe {path = \"a\"} { Ok(u) => 1, Err(e) => 0 }\n",
    );
    let out = lt_in(&dir.0, &["check", "--profile", "p.toml", "p.lt"], &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        text.contains("E0702") && text.contains("requires an approval"),
        "{text}"
    );
}

#[test]
fn a_batch_call_still_waiting_for_a_slot_did_not_start_and_resume_runs_it() {
    let dir = setup("queued", "[profile]\nmax_concurrency = 1\n");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let rs = fan_out (fn i => exec tool lookup {id = i, sleep_ms = 1}) [1, 2, 3] in
map (fn r => match r { Ok(x) => "ok", Err(e) => "unknown" }) rs
"#,
    );
    let out = lt_in(
        &dir.0,
        &[
            "run",
            "--json",
            "--log",
            "full.log",
            "--executors",
            "tools.toml",
            "p.lt",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let full = std::fs::read_to_string(dir.path("full.log")).expect("log");
    let lines: Vec<&str> = full.lines().collect();
    // Every call is proposed and decided first; each is scheduled when it
    // takes the one slot, just before it starts.
    let first_scheduled = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"scheduled\""))
        .expect("scheduled");
    assert_eq!(
        lines[..first_scheduled]
            .iter()
            .filter(|l| l.contains("\"kind\":\"decided\""))
            .count(),
        3
    );
    dir.write("cut.log", &(lines[..=first_scheduled].join("\n") + "\n"));
    let resumed = lt_in(
        &dir.0,
        &["resume", "cut.log", "--json", "--executors", "tools.toml"],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(
        resumed.json()["value"],
        json!(["unknown", "ok", "ok"]),
        "only the started call is unknown"
    );
    let replay = lt_in(&dir.0, &["replay", "cut.log", "--json"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

/// `--verbose` wraps the host to print a line per call: a batch still runs
/// concurrently under it (a line per call as it finishes), and approvals and
/// `@intent` events still reach the control plane.
#[test]
fn verbose_keeps_batches_concurrent_and_approvals_and_intents_working() {
    let dir = setup("verbose", "");
    dir.write(
        "p.lt",
        r#"tool lookup: {id: Int, sleep_ms: Int} -{Read}-> {id: Int, status: String};
let r = @intent("look up both") gather { a = exec tool lookup {id = 1, sleep_ms = 2500}, b = exec tool lookup {id = 2, sleep_ms = 800} } in
let a = match r.a { Ok(x) => x.id, Err(e) => 0 } in
let b = match r.b { Ok(x) => x.id, Err(e) => 0 } in
a * 10 + b
"#,
    );
    let out = lt_in(
        &dir.0,
        &[
            "run",
            "--json",
            "--verbose",
            "--log",
            "run.log",
            "--executors",
            "tools.toml",
            "p.lt",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(12));
    assert_eq!(max_overlap(&intervals(&dir)), 2, "{:?}", intervals(&dir));
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("[lt] call "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].contains("lookup {\"id\":2") && lines[1].contains("lookup {\"id\":1"),
        "a line per call as it finishes: {lines:?}"
    );
    let ev = events(&dir);
    assert!(
        ev.iter().any(|e| e["kind"] == "annotation_started"),
        "the intent is logged under --verbose"
    );

    let (_, _, _, dir) = approvals(
        "verbose_approve",
        "[profile]\napprovals = \"allow\"\n",
        DELETE_EACH,
    );
    let out = lt_in(
        &dir.0,
        &["run", "--json", "-v", "--executors", "tools.toml", "p.lt"],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(["a", "b"]), "{out:?}");
}
