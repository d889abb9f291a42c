//! Fixed-program cases: real suites against the support-desk example's
//! real tools (Python over SQLite), run through the binary. Each temporary
//! suite gets its own folder, tools.toml and database, so the tests run in
//! parallel. The helpers here serve the other parts too.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn lt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("lt runs")
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn json(o: &Output) -> Json {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// A temporary suite folder, removed with everything in it when dropped
/// (at the end of the test that made it, passed or failed), so that the
/// tests leave nothing in the temporary directory.
pub(crate) struct TempSuite(PathBuf);

impl std::ops::Deref for TempSuite {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempSuite {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A folder with a tools.toml for the support-desk tools (database
/// `world.db` in the folder) and `suite.toml` holding `cases` after a
/// `[defaults]` table that resets the world before each run.
pub(crate) fn suite(name: &str, cases: &str) -> TempSuite {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lt-eval-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tools = root().join("examples/support_desk/tools");
    let mut toml = String::new();
    for t in ["lookup_account", "issue_refund", "send_reply"] {
        toml.push_str(&format!(
            "[tools.{t}]\ncommand = [\"python3\", \"{}\"]\nenv = {{ LT_EXAMPLE_DB = \"world.db\" }}\ntimeout_ms = 10000\n\n",
            tools.join(format!("{t}.py")).display()
        ));
    }
    std::fs::write(dir.join("tools.toml"), toml).expect("tools.toml");
    let programs = root().join("examples/support_desk");
    let text = format!(
        "[defaults]\nexecutors = \"tools.toml\"\nsetup = \"rm -f world.db\"\n\n{}",
        cases.replace("$EX", &programs.display().to_string())
    );
    std::fs::write(dir.join("suite.toml"), text).expect("suite.toml");
    TempSuite(dir)
}

pub(crate) fn path(dir: &Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

#[test]
fn the_shipped_suite_passes_every_run() {
    let o = lt(&["eval", "examples/eval/suite.toml", "--runs", "2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["ok"], true);
    assert_eq!(j["runs"], 6);
    assert_eq!(j["passed"], 6);
    let refund = &j["cases"][0];
    assert_eq!(refund["name"], "refund_and_notify");
    assert_eq!(refund["mean_calls"], 3.0);
    assert_eq!(refund["mean_reward"], 1.0);
    // Every run starts from the seed: the same transaction id each time.
    assert_eq!(refund["outcomes"].as_array().map(Vec::len), Some(1));
    let outcome = refund["outcomes"][0]["outcome"].as_str().unwrap_or("");
    assert!(
        outcome.contains("tx_000001") && outcome.contains("send_reply"),
        "{outcome}"
    );
    let denied = &j["cases"][2]["records"][0];
    assert_eq!(denied["denials"][0]["name"], "issue_refund");
    assert_eq!(denied["invariants"], serde_json::json!([]));
}

#[test]
fn setup_isolates_runs_and_a_failed_criterion_fails_the_gate() {
    // Without a setup the second run sees the first one's refund.
    let dir = suite(
        "nosetup",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\nsetup = \"true\"\n[case.expect]\nvalue_matches = \"^refund tx_\"\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--runs", "2", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["passed"], 1);
    assert_eq!(j["cases"][0]["rate"], 0.5);
    // Runs share the world one at a time; whichever came second failed.
    let records = j["cases"][0]["records"].as_array().expect("records");
    let failed: Vec<String> = records.iter().map(|r| r["failed"].to_string()).collect();
    assert_eq!(
        failed
            .iter()
            .filter(|f| f.contains("already been refunded"))
            .count(),
        1,
        "{failed:?}"
    );
    assert!(
        stderr(&o).contains(": refund: success rate 50.0% is below 100.0%"),
        "{}",
        stderr(&o)
    );
    // The same runs pass a gate of 0.5 and fail one of 0.6.
    let _ = std::fs::remove_file(dir.join("world.db"));
    let ok = lt(&[
        "eval",
        &path(&dir, "suite.toml"),
        "--runs",
        "2",
        "--min-success",
        "0.5",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let _ = std::fs::remove_file(dir.join("world.db"));
    let no = lt(&[
        "eval",
        &path(&dir, "suite.toml"),
        "--runs",
        "2",
        "--min-success",
        "0.6",
    ]);
    assert_eq!(no.status.code(), Some(1), "{}", stderr(&no));
}

#[test]
fn each_ready_made_criterion_reports_what_failed() {
    let dir = suite(
        "criteria",
        r#"[[case]]
name = "wrong"
program = "$EX/program.lt"
[case.expect]
value = "something else"
calls = ["lookup_account"]
calls_subsequence = ["send_reply", "issue_refund"]
calls_contain = ["delete_everything"]
max_calls_of = { send_reply = 0 }
calls_of = { issue_refund = 2 }
criteria = ["length session.calls == 1"]
"#,
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    let failed: Vec<String> = j["cases"][0]["records"][0]["failed"]
        .as_array()
        .expect("failed")
        .iter()
        .map(|f| f.as_str().unwrap_or("").to_string())
        .collect();
    for prefix in [
        "value:",
        "calls:",
        "calls_subsequence:",
        "calls_contain:",
        "max_calls_of:",
        "calls_of:",
        "criteria[0]:",
    ] {
        assert!(
            failed.iter().any(|f| f.starts_with(prefix)),
            "{prefix} missing from {failed:?}"
        );
    }
    assert_eq!(failed.len(), 7, "{failed:?}");
}

#[test]
fn a_criterion_that_does_not_type_check_fails_before_any_run() {
    let dir = suite(
        "badcriterion",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\nsetup = \"touch ran\"\n[case.expect]\ncriteria = [\"session.calls.tool == 1\"]\nreward = \"length session.calls\"\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("criteria[0] does not type-check; no run was started"),
        "{err}"
    );
    assert!(err.contains("reward"), "{err}");
    assert!(err.contains("[E0"), "{err}");
    let j = json(&o);
    assert_eq!(j["stage"], "check");
    assert_eq!(j["rejected"].as_array().map(Vec::len), Some(2));
    assert!(!dir.join("ran").exists(), "a run was started");
}

#[test]
fn a_criterion_error_points_into_the_suite_file() {
    // Lines 1-4 are the [defaults] table `suite` writes.
    let dir = suite(
        "criterionspan",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\n[case.expect]\ncriteria = [\"session.ok\", \"\"\"\nsession.ok &&\n  session.okk\"\"\"]\n[[case]]\nname = \"types\"\nprogram = \"$EX/program.lt\"\n[case.expect]\ncriteria = [  \"length session.calls\"]\nreward = \"1\"\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    // The unknown field `okk`: line 11 of the file, column 11; line 2 of
    // the expression, column 11.
    assert!(err.contains("suite.toml:11:11"), "{err}");
    assert!(err.contains("line 2, column 11 of the expression"), "{err}");
    assert!(err.contains("session.okk"), "{err}");
    assert!(!err.contains("eval_session"), "the wrapper leaks: {err}");
    assert!(
        err.contains(
            "suite.toml:16:16: case \"types\", criteria[0]: a criterion must be Bool, found Int"
        ),
        "{err}"
    );
    assert!(
        err.contains("suite.toml:17:11: case \"types\", reward: a reward must be Float, found Int"),
        "{err}"
    );
    assert!(err.contains("help: a reward is a Float"), "{err}");
    let j = json(&o);
    let first = &j["rejected"][0]["diagnostics"][0];
    assert_eq!(first["line"], 11, "{first}");
    assert_eq!(first["column"], 11, "{first}");
}

#[test]
fn bad_suites_get_a_location_and_a_hint() {
    let dir = suite(
        "unknownkey",
        "[[case]]\nname = \"x\"\nprogram = \"$EX/program.lt\"\n[case.expect]\nvalue_is = 1\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml")]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("suite.toml:9:1"), "{err}");
    assert!(err.contains("value_is") && err.contains("help:"), "{err}");
    let dir = suite("missing", "[[case]]\nname = \"x\"\nprogram = \"nope.lt\"\n");
    let o = lt(&["eval", &path(&dir, "suite.toml")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("nope.lt does not exist"),
        "{}",
        stderr(&o)
    );
    let o = lt(&["eval", "no/such/suite.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read the suite"));
}

#[test]
fn junit_output_is_well_formed() {
    let dir = suite(
        "junit",
        "[[case]]\nname = \"ok <&>\"\nprogram = \"$EX/program.lt\"\n\n[[case]]\nname = \"fails\"\nprogram = \"$EX/program_no_charge.lt\"\n[case.expect]\nvalue = \"x \\\"quoted\\\" <b>\"\n",
    );
    let junit = path(&dir, "junit.xml");
    let o = lt(&[
        "eval",
        &path(&dir, "suite.toml"),
        "--runs",
        "2",
        "--junit",
        &junit,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    assert_balanced(&xml);
    assert!(xml.contains("<testsuites name=\"lt eval\" tests=\"4\" failures=\"2\" errors=\"0\">"));
    assert_eq!(xml.matches("<testcase ").count(), 4);
    assert_eq!(xml.matches("<failure ").count(), 2);
    assert!(xml.contains("name=\"ok &lt;&amp;&gt;\""));
}

/// Every tag closes in order, attributes are quoted, text has no raw `<`
/// or `&` outside entities.
fn assert_balanced(xml: &str) {
    let body = xml.split_once("?>").map_or(xml, |(_, b)| b);
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(['<', '&']) {
        let after = &rest[i..];
        if after.starts_with('&') {
            let end = after.find(';').expect("entity ends");
            let ent = &after[1..end];
            assert!(
                ["amp", "lt", "gt", "quot", "apos"].contains(&ent) || ent.starts_with('#'),
                "bad entity {ent}"
            );
            rest = &after[end + 1..];
            continue;
        }
        let end = after.find('>').expect("tag ends");
        let tag = &after[1..end];
        assert!(!tag.contains('<'), "raw < in {tag}");
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unquoted attribute in {tag}"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().expect("tag name");
            stack.push(name.to_string());
        }
        rest = &after[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
}

#[test]
fn a_baseline_with_a_higher_rate_is_a_regression() {
    let dir = suite(
        "baseline",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\n",
    );
    let base = path(&dir, "base.json");
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::write(&base, &o.stdout).expect("baseline");
    let same = lt(&["eval", &path(&dir, "suite.toml"), "--baseline", &base]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    // A later version where the refund fails: the rate falls from 100% to 0%.
    std::fs::write(
        dir.join("suite.toml"),
        format!(
            "[defaults]\nexecutors = \"tools.toml\"\nsetup = \"rm -f world.db\"\n[[case]]\nname = \"refund\"\nprogram = \"{}\"\n[case.expect]\nvalue_matches = \"^refund tx_\"\n",
            root().join("examples/support_desk/program_no_charge.lt").display()
        ),
    )
    .expect("suite");
    let worse = lt(&[
        "eval",
        &path(&dir, "suite.toml"),
        "--baseline",
        &base,
        "--min-success",
        "0",
    ]);
    assert_eq!(worse.status.code(), Some(1), "{}", stderr(&worse));
    assert!(
        stderr(&worse).contains("regression: refund: success rate fell from 100.0% to 0.0%"),
        "{}",
        stderr(&worse)
    );
}

#[test]
fn a_baseline_of_another_suite_is_refused() {
    let dir = suite(
        "otherbaseline",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\n",
    );
    let base = path(&dir, "base.json");
    std::fs::write(
        &base,
        r#"{"cases": [{"name": "something_else", "rate": 1.0}]}"#,
    )
    .expect("baseline");
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--baseline", &base]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds none of this suite's cases (it holds: something_else)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_edited_log_violates_the_invariants() {
    let dir = suite(
        "invariants",
        "[[case]]\nname = \"x\"\nprogram = \"$EX/program.lt\"\n",
    );
    let log = path(&dir, "run.jsonl");
    let o = lt(&[
        "run",
        &root()
            .join("examples/support_desk/program.lt")
            .display()
            .to_string(),
        "--executors",
        &path(&dir, "tools.toml"),
        "--log",
        &log,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&log).expect("log");
    let events = lt::log::read_log(&text).expect("verifies");
    assert!(lt::eval::record::invariants(&text, &events).is_empty());
    // Drop the first `decided` event: the chain breaks, and the call was
    // scheduled without an allow decision.
    let kept: Vec<_> = events
        .iter()
        .filter(|e| !(e.body.kind() == "decided" && e.seq == 2))
        .cloned()
        .collect();
    assert_eq!(kept.len(), events.len() - 1);
    let edited: String = text
        .lines()
        .filter(|l| !(l.contains("\"kind\":\"decided\"") && l.contains("\"seq\":2,")))
        .map(|l| format!("{l}\n"))
        .collect();
    let found = lt::eval::record::invariants(&edited, &kept);
    assert!(
        found.iter().any(|f| f.starts_with("log verifies:")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("allow before execution:")),
        "{found:?}"
    );
    // A profile that does not allow a tool that ran.
    let mut narrowed = events.clone();
    if let lt::log::EventBody::SessionStarted { profile, .. } = &mut narrowed[0].body {
        profile["allow"] = serde_json::json!(["lookup_account"]);
    }
    let found = lt::eval::record::invariants(&text, &narrowed);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("tools within the profile: issue_refund ran")),
        "{found:?}"
    );
}

#[test]
fn wilson_interval_matches_known_values() {
    let (lo, hi) = lt::eval::wilson(3, 3);
    assert!((lo - 0.4385).abs() < 1e-3 && hi == 1.0, "{lo} {hi}");
    let (lo, hi) = lt::eval::wilson(8, 10);
    assert!(
        (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
        "{lo} {hi}"
    );
    assert_eq!(lt::eval::wilson(0, 0), (0.0, 1.0));
}

#[test]
fn compare_reports_the_difference_per_case_and_overall() {
    let a = suite(
        "compare_a",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\n[case.expect]\nvalue_matches = \"^refund tx_\"\n\n[[case]]\nname = \"denied\"\nprogram = \"$EX/program.lt\"\n[case.expect]\nno_denials = true\n",
    );
    // B: the same cases under a read-only profile: both lose every run.
    let b = suite(
        "compare_b",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\nprofile = \"ro.toml\"\n[case.expect]\nvalue_matches = \"^refund tx_\"\n\n[[case]]\nname = \"denied\"\nprogram = \"$EX/program.lt\"\nprofile = \"ro.toml\"\n[case.expect]\nno_denials = true\n",
    );
    std::fs::write(
        b.join("ro.toml"),
        "[profile]\nname = \"ro\"\neffects = [\"Read\"]\n",
    )
    .expect("profile");
    let o = lt(&[
        "eval",
        &path(&a, "suite.toml"),
        "--compare",
        &path(&b, "suite.toml"),
        "--runs",
        "2",
        "--json",
        "--min-success",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let d = &j["difference"];
    assert_eq!(d["cases"][0]["name"], "refund");
    assert_eq!(d["cases"][0]["a"], 1.0);
    assert_eq!(d["cases"][0]["b"], 0.0);
    assert_eq!(d["cases"][0]["delta"], -1.0);
    assert_eq!(d["overall"]["delta"], -1.0);
    let failed = j["compare"]["cases"][1]["records"][0]["failed"].to_string();
    assert!(failed.contains("no_denials: 1 calls denied"), "{failed}");
}

#[test]
fn a_failing_setup_fails_the_run_and_nothing_runs_on_a_dirty_world() {
    let dir = suite(
        "badsetup",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\nsetup = \"echo no database >&2; exit 3\"\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    let rec = &j["cases"][0]["records"][0];
    assert!(
        rec["failed"][0].as_str().is_some_and(|f| f
            .starts_with("setup `echo no database >&2; exit 3` failed")
            && f.contains("no database")),
        "{rec}"
    );
    assert_eq!(rec["calls"], serde_json::json!([]));
    assert!(!dir.join("world.db").exists(), "the program ran");
}

#[test]
fn a_setup_that_hangs_is_killed_at_the_case_timeout_and_fails_the_run() {
    // `sleep` in the background keeps the group alive past `sh`.
    let dir = suite(
        "hangsetup",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\ntimeout_ms = 500\nsetup = \"sleep 120 & sleep 120\"\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    let rec = &j["cases"][0]["records"][0];
    assert!(
        rec["failed"][0]
            .as_str()
            .is_some_and(|f| f.contains("did not finish within the case's timeout_ms (500 ms)")),
        "{rec}"
    );
    assert_eq!(rec["calls"], serde_json::json!([]));
    assert!(!dir.join("world.db").exists(), "the program ran");
}

#[test]
fn a_setup_failing_silently_says_so() {
    let dir = suite(
        "silentsetup",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\nsetup = \"exit 3\"\n",
    );
    let o = lt(&["eval", &path(&dir, "suite.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    let failed = j["cases"][0]["records"][0]["failed"][0].to_string();
    assert!(failed.contains("wrote nothing on stderr"), "{failed}");
}

#[test]
fn a_tool_without_an_executor_fails_the_suite_before_any_run() {
    let dir = suite(
        "noexec",
        "[[case]]\nname = \"refund\"\nprogram = \"$EX/program.lt\"\nexecutors = \"lookup_only.toml\"\nsetup = \"touch ran\"\n",
    );
    let tools = root().join("examples/support_desk/tools/lookup_account.py");
    std::fs::write(
        dir.join("lookup_only.toml"),
        format!(
            "[tools.lookup_account]\ncommand = [\"python3\", \"{}\"]\n",
            tools.display()
        ),
    )
    .expect("write");
    let o = lt(&["eval", &path(&dir, "suite.toml")]);
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("no executor for issue_refund, send_reply")
            && err.contains("help: add a [tools.issue_refund] table"),
        "{err}"
    );
    assert!(!dir.join("ran").exists(), "a run started");
}

#[test]
fn long_outcomes_that_differ_late_stay_distinct_in_the_table() {
    use lt::eval::{CaseSummary, RunRecord, SuiteSummary};
    let long =
        "the tool answered an error after a very long preamble that repeats itself, ".repeat(3);
    let rec = |run: usize, tail: &str| RunRecord {
        run,
        value: serde_json::json!({"kind": "error", "message": format!("{long}{tail}")}),
        failed: vec!["ok: failed".into()],
        ..RunRecord::default()
    };
    let case = CaseSummary::new(
        "c",
        vec![
            rec(1, "disk full"),
            rec(2, "permission denied"),
            rec(3, "disk full"),
        ],
    );
    // Grouped by the full text: two outcomes.
    assert_eq!(case.outcomes.len(), 2, "{:?}", case.outcomes);
    let table = SuiteSummary::new("s", vec![case], 1.0).table();
    let lines: Vec<&str> = table.lines().filter(|l| l.contains(" × ")).collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert_ne!(
        lines[0].split(" × ").nth(1),
        lines[1].split(" × ").nth(1),
        "two outcomes read alike:\n{table}"
    );
    assert!(
        table.contains("disk full") && table.contains("permission denied"),
        "{table}"
    );
}

#[test]
fn a_test_suite_folder_is_removed_when_the_test_ends() {
    let dir = suite(
        "cleanup",
        "[[case]]\nname = \"x\"\nprogram = \"$EX/program.lt\"\n",
    );
    let kept = dir.to_path_buf();
    assert!(kept.join("suite.toml").is_file());
    drop(dir);
    assert!(!kept.exists(), "{} is left behind", kept.display());
}
