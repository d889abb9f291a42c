//! `checks` in tools.toml: JSON Schema checks of a tool's argument and
//! result at the executor boundary (formats, numeric bounds), with real
//! subprocess tools: a failing argument is an `Err` and the tool never runs;
//! a failing result is an `Err`; both are in the log and replay.

mod support;

use support::{lt_in, TempDir};

/// A tool that records that it ran (a file `ran` beside it) and answers
/// with the `answer` JSON file next to it, or echoes its argument.
const TOOL: &str = r#"
import json, os, sys
arg = json.load(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "ran"), "a").write(json.dumps(arg) + "\n")
answer = os.path.join(here, "answer.json")
if os.path.exists(answer):
    sys.stdout.write(open(answer).read())
else:
    json.dump({"start": arg["start"], "seats": arg["seats"]}, sys.stdout)
"#;

const TOOLS_TOML: &str = r#"
[tools.book]
command = ["python3", "tool.py"]

[tools.book.checks]
input = { properties = { start = { format = "date-time" }, seats = { minimum = 1, maximum = 9 } } }
output = { properties = { contact = { format = "email" } } }
"#;

fn program(start: &str, seats: i64) -> String {
    format!(
        r#"tool book: {{start: String, seats: Int}} -{{Write}}-> {{start: String, contact?: String}};
match exec tool book {{start = "{start}", seats = {seats}}} {{
  Ok(r) => "booked " ++ r.start,
  Err(e) => "error: " ++ e
}}"#
    )
}

fn setup(name: &str) -> TempDir {
    let dir = TempDir::new("checks", name);
    dir.write("tool.py", TOOL);
    dir.write("tools.toml", TOOLS_TOML);
    dir
}

#[test]
fn a_valid_argument_runs_the_tool() {
    let dir = setup("valid");
    dir.write("p.lt", &program("2026-12-02T10:00:00Z", 2));
    let out = lt_in(&dir.0, &["run", "p.lt", "--executors", "tools.toml"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "\"booked 2026-12-02T10:00:00Z\"");
    assert!(dir.0.join("ran").exists());
}

#[test]
fn a_failing_argument_is_an_err_and_the_tool_does_not_run() {
    let dir = setup("bad-input");
    dir.write("p.lt", &program("tomorrow", 0));
    let out = lt_in(
        &dir.0,
        &[
            "run",
            "p.lt",
            "--executors",
            "tools.toml",
            "--log",
            "s.jsonl",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "the program handles the Err: {out:?}");
    let value = out.stdout.trim();
    assert!(
        value.starts_with(
            "\"error: tool book was not run: its argument fails the checks of tools.toml: at /"
        ),
        "{value}"
    );
    assert!(value.contains("date-time"), "{value}");
    assert!(value.contains("minimum"), "{value}");
    assert!(!dir.0.join("ran").exists(), "the tool must not run");
    let log = std::fs::read_to_string(dir.0.join("s.jsonl")).expect("log");
    assert!(log.contains("was not run"), "the failure is in the log");
    let replay = lt_in(&dir.0, &["replay", "s.jsonl"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
}

#[test]
fn a_failing_result_is_an_err() {
    let dir = setup("bad-output");
    dir.write(
        "answer.json",
        r#"{"start": "2026-12-02T10:00:00Z", "contact": "not an email"}"#,
    );
    dir.write("p.lt", &program("2026-12-02T10:00:00Z", 2));
    let out = lt_in(&dir.0, &["run", "p.lt", "--executors", "tools.toml"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let value = out.stdout.trim();
    assert!(
        value.starts_with(
            "\"error: tool book returned a result that fails the checks of tools.toml: at /contact"
        ),
        "{value}"
    );
    assert!(dir.0.join("ran").exists(), "the tool ran");
}

#[test]
fn checks_apply_to_fixed_tools() {
    let dir = TempDir::new("checks", "fixed");
    dir.write(
        "tools.toml",
        r#"
[tools.book]
fixed = { ok = { start = "whenever" } }
checks = { output = { properties = { start = { format = "date-time" } } } }
"#,
    );
    dir.write("p.lt", &program("2026-12-02T10:00:00Z", 2));
    let out = lt_in(&dir.0, &["run", "p.lt", "--executors", "tools.toml"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("fails the checks of tools.toml: at /start"),
        "{out:?}"
    );
}

#[test]
fn checks_may_be_written_as_sub_tables_or_dotted_keys() {
    let forms = [
        "[tools.book]\nfixed = { ok = { start = \"whenever\" } }\n[tools.book.checks.output]\nproperties.start.format = \"date-time\"\n",
        "[tools.book]\nfixed = { ok = { start = \"whenever\" } }\nchecks.output.properties.start.format = \"date-time\"\n",
        "[tools.book]\nfixed = { ok = { start = \"whenever\" } }\n[tools.book.checks]\noutput = { properties = { start = { format = \"date-time\" } } }\n",
    ];
    for (i, toml) in forms.iter().enumerate() {
        let dir = TempDir::new("checks", &format!("forms-{i}"));
        dir.write("tools.toml", toml);
        dir.write("p.lt", &program("2026-12-02T10:00:00Z", 2));
        let out = lt_in(&dir.0, &["run", "p.lt", "--executors", "tools.toml"], &[]);
        assert_eq!(out.code, 0, "{toml}: {out:?}");
        assert!(
            out.stdout
                .contains("fails the checks of tools.toml: at /start"),
            "{toml}: {out:?}"
        );
    }
}

#[test]
fn bad_checks_tables_are_configuration_errors() {
    let cases = [
        (
            "[tools.book]\nfixed = { ok = {} }\nchecks = { input = { minimum = \"one\" } }\n",
            "tools.toml:3:1: tool book: checks.input: not a valid JSON Schema",
        ),
        (
            "[tools.book]\nfixed = { ok = {} }\nchecks = { input = \"date-time\" }\n",
            "tools.toml:3:1: tool book: checks.input must be a JSON Schema written as a TOML table",
        ),
        (
            "[tools.book]\nfixed = { ok = {} }\nchecks = { inputs = {} }\n",
            "tools.toml:3:1: tool book: unknown key `inputs` in `checks`, expected `input` or `output`",
        ),
        (
            "[tools.book]\nvenue = \"client\"\nchecks = { input = {} }\n",
            "tools.toml:3:1: tool book: `checks` applies to tools lt runs",
        ),
    ];
    for (i, (toml, expected)) in cases.iter().enumerate() {
        let dir = TempDir::new("checks", &format!("config-{i}"));
        dir.write("tools.toml", toml);
        dir.write("p.lt", &program("2026-12-02T10:00:00Z", 2));
        let out = lt_in(&dir.0, &["run", "p.lt", "--executors", "tools.toml"], &[]);
        assert_eq!(out.code, 2, "{toml}: {out:?}");
        assert!(out.stderr.contains(expected), "{toml}: {}", out.stderr);
    }
}
