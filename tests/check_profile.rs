//! `lt check FILE --profile PROFILE_TOML`, run as a real process on real
//! files: the calls the profile would deny are diagnostics (E0701 allow
//! list, E0702 deny list, E0703 effects), one per call site, in the human
//! and the `--json` form; an unreadable or invalid profile is exit 2 with
//! its file, line and column; `lt run` is unchanged (a denied call is an
//! `Err` the program handles).
//!
//! The human and JSON outputs are insta snapshots in `tests/snapshots/`
//! (`cargo insta review` after an intended change).

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `lt` binary built by Cargo for these tests.
const LT: &str = env!("CARGO_BIN_EXE_lt");

/// Calls `lookup_account` once (line 5) and `issue_refund` twice (lines 7
/// and 9); declares `delete_account` and never calls it. Well-typed, effects
/// `{Read, Write}`.
const REFUND: &str = r#"tool lookup_account: String -{Read}-> {id: String, balance: Int};
tool issue_refund: {account_id: String, amount: Int} -{Write}-> {tx_id: String};
tool delete_account: String -{Write}-> Unit;

match exec tool lookup_account "cust_1" {
  Ok(acct) =>
    match exec tool issue_refund {account_id = acct.id, amount = 15} {
      Ok(r) => "refunded " ++ r.tx_id,
      Err(e) => match exec tool issue_refund {account_id = acct.id, amount = 5} {
        Ok(r) => "partial " ++ r.tx_id,
        Err(e2) => "refund failed: " ++ e2
      }
    },
  Err(e) => "lookup failed: " ++ e
}
"#;

// ------------------------------------------------------------------ harness

/// A fresh folder under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "lt-check-profile-{}-{n}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// Writes `file` in the folder.
    fn write(&self, file: &str, text: &str) -> &TempDir {
        std::fs::write(self.0.join(file), text).expect("write temp file");
        self
    }

    /// Runs `lt ARGS` in the folder (so file names in the output are
    /// relative and the snapshots stable), without colours.
    fn lt(&self, args: &[&str]) -> Out {
        let out = Command::new(LT)
            .args(args)
            .current_dir(&self.0)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run lt");
        let out = Out {
            what: format!("lt {}", args.join(" ")),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(!out.stderr.contains("panicked"), "{}", out.describe());
        out
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Out {
    what: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    fn describe(&self) -> String {
        format!(
            "{}: exit code {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.what, self.code, self.stdout, self.stderr
        )
    }

    fn expect_code(&self, code: i32) -> &Out {
        assert_eq!(self.code, Some(code), "{}", self.describe());
        self
    }

    fn json(&self) -> Value {
        let line = self.stdout.trim();
        assert_eq!(
            line.lines().count(),
            1,
            "--json prints one line\n{}",
            self.describe()
        );
        serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", self.describe()))
    }

    /// `(code, line, column)` of every diagnostic in `--json` output.
    fn sites(&self) -> Vec<(String, u64, u64)> {
        let v = self.json();
        v["diagnostics"]
            .as_array()
            .unwrap_or_else(|| panic!("no diagnostics array\n{}", self.describe()))
            .iter()
            .map(|d| {
                (
                    d["code"].as_str().unwrap_or_default().to_string(),
                    d["line"].as_u64().unwrap_or_default(),
                    d["column"].as_u64().unwrap_or_default(),
                )
            })
            .collect()
    }
}

/// A folder with `refund.lt` ([`REFUND`]) and `profile.toml` (`profile`).
fn setup(name: &str, profile: &str) -> TempDir {
    let dir = TempDir::new(name);
    dir.write("refund.lt", REFUND)
        .write("profile.toml", profile);
    dir
}

fn check(dir: &TempDir, extra: &[&str]) -> Out {
    let mut args = vec![
        "check",
        "refund.lt",
        "--profile",
        "profile.toml",
        "--color",
        "never",
    ];
    args.extend_from_slice(extra);
    dir.lt(&args)
}

fn sites(list: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    list.iter()
        .map(|(c, l, col)| (c.to_string(), *l, *col))
        .collect()
}

// ------------------------------------------------------------------ accepted

#[test]
fn a_program_within_the_profile_passes() {
    let dir = setup(
        "allowed",
        "[profile]\nname = \"support\"\nallow = [\"lookup_account\", \"issue_refund\"]\ndeny = [\"delete_account\"]\neffects = [\"Read\", \"Write\"]\nmax_calls = 1\n",
    );
    let out = check(&dir, &[]);
    out.expect_code(0);
    assert_eq!(
        out.stdout,
        "type: String\neffects: {Read, Write}\nprofile: support allows every call site (budgets and argument checks apply when it runs)\n",
        "{}",
        out.describe()
    );
    assert_eq!(out.stderr, "");
    let v = check(&dir, &["--json"]).expect_code(0).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["profile"], "support");
    assert_eq!(v["diagnostics"], serde_json::json!([]));
}

/// `delete_account` is declared, denied and never called: not an error.
/// Budgets are left to the run (`max_calls = 1` above, three calls here).
#[test]
fn a_denied_tool_that_is_never_called_is_not_an_error() {
    let dir = setup(
        "uncalled",
        "[profile]\nname = \"ops\"\ndeny = [\"delete_account\"]\n\n[profile.tools.issue_refund]\nmax_calls = 1\n",
    );
    check(&dir, &[]).expect_code(0);
}

/// A budget of zero lets no call pass: rejected like a denial (E0702).
#[test]
fn a_zero_budget_is_rejected_at_each_call_site() {
    let dir = setup(
        "zero-budget",
        "[profile]\nname = \"ops\"\n\n[profile.tools.issue_refund]\nmax_calls = 0\n",
    );
    let out = check(&dir, &[]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("[E0702]")
            && out
                .stderr
                .contains("tool_budget: profile ops allows 0 calls of issue_refund"),
        "{}",
        out.describe()
    );
    let dir = setup("zero-session", "[profile]\nmax_calls = 0\n");
    let out = check(&dir, &[]);
    out.expect_code(1);
    assert!(out.stderr.contains("session_budget"), "{}", out.describe());
}

/// The permissive profile (a `[profile]` table with no rule) allows all.
#[test]
fn an_empty_profile_allows_every_call() {
    let dir = setup("empty", "[profile]\n");
    let out = check(&dir, &[]);
    out.expect_code(0);
    assert!(
        out.stdout.ends_with("profile: default allows every call site (budgets and argument checks apply when it runs)\n"),
        "{}",
        out.describe()
    );
}

// ------------------------------------------------------------------ rejected

#[test]
fn a_tool_missing_from_allow_is_rejected_at_each_call_site() {
    let dir = setup(
        "allowlist",
        "[profile]\nname = \"lookup-only\"\nallow = [\"lookup_account\"]\n",
    );
    let out = check(&dir, &[]);
    out.expect_code(1);
    assert_eq!(out.stdout, "");
    for site in ["refund.lt:7:11", "refund.lt:9:23"] {
        assert!(out.stderr.contains(site), "{site}\n{}", out.describe());
    }
    assert_eq!(
        out.stderr.matches("[E0701]").count(),
        2,
        "{}",
        out.describe()
    );
    assert!(out.stderr.contains(
        "allowlist: tool issue_refund is not among the tools profile lookup-only allows"
    ));
    assert!(
        out.stderr.ends_with("error: 2 errors found in refund.lt\n"),
        "{}",
        out.describe()
    );
    insta::assert_snapshot!("allowlist_human", out.stderr);
    assert_eq!(
        check(&dir, &["--json"]).expect_code(1).sites(),
        sites(&[("E0701", 7, 11), ("E0701", 9, 23)])
    );
}

#[test]
fn allow_empty_rejects_every_call() {
    let dir = setup("allow-empty", "[profile]\nname = \"nothing\"\nallow = []\n");
    let out = check(&dir, &["--json"]);
    out.expect_code(1);
    assert_eq!(
        out.sites(),
        sites(&[("E0701", 5, 7), ("E0701", 7, 11), ("E0701", 9, 23)])
    );
    let v = out.json();
    assert_eq!(
        v["diagnostics"][0]["notes"][0],
        "profile nothing allows no tool (`allow = []`)"
    );
    // A program that calls no tool passes under it.
    dir.write("pure.lt", "tool t: Int -{Write}-> Unit;\n1 + 2\n");
    dir.lt(&["check", "pure.lt", "--profile", "profile.toml"])
        .expect_code(0);
}

#[test]
fn a_denied_tool_is_rejected() {
    let dir = setup(
        "denylist",
        "[profile]\nname = \"ops\"\ndeny = [\"issue_refund\"]\n",
    );
    let out = check(&dir, &[]);
    out.expect_code(1);
    assert_eq!(
        out.stderr.matches("[E0702]").count(),
        2,
        "{}",
        out.describe()
    );
    assert!(out
        .stderr
        .contains("denylist: profile ops denies tool issue_refund"));
    insta::assert_snapshot!("denylist_human", out.stderr);
    assert_eq!(
        check(&dir, &["--json"]).expect_code(1).sites(),
        sites(&[("E0702", 7, 11), ("E0702", 9, 23)])
    );
}

#[test]
fn an_effect_the_profile_does_not_grant_is_rejected() {
    let dir = setup(
        "effects",
        "[profile]\nname = \"read-only\"\neffects = [\"Read\"]\n",
    );
    let out = check(&dir, &[]);
    out.expect_code(1);
    assert!(out.stderr.contains(
        "effects: tool issue_refund performs {Write}, which profile read-only does not grant (it grants {Read})"
    ), "{}", out.describe());
    insta::assert_snapshot!("effects_human", out.stderr);
    assert_eq!(
        check(&dir, &["--json"]).expect_code(1).sites(),
        sites(&[("E0703", 7, 11), ("E0703", 9, 23)])
    );
    // `Pure` grants nothing: even the lookup is denied.
    dir.write(
        "profile.toml",
        "[profile]\nname = \"pure\"\neffects = [\"Pure\"]\n",
    );
    let out = check(&dir, &["--json"]);
    assert_eq!(
        out.expect_code(1).sites(),
        sites(&[("E0703", 5, 7), ("E0703", 7, 11), ("E0703", 9, 23)])
    );
    assert_eq!(
        out.json()["diagnostics"][0]["message"],
        "effects: tool lookup_account performs {Read}, which profile pure does not grant (it grants {})"
    );
}

/// The first objecting rule (pipeline order) gives the code; the others are notes.
#[test]
fn several_rules_give_one_diagnostic_per_call_site() {
    let dir = setup(
        "several",
        "[profile]\nname = \"strict\"\nallow = [\"lookup_account\"]\ndeny = [\"issue_refund\"]\neffects = [\"Read\"]\n",
    );
    let v = check(&dir, &["--json"]).expect_code(1).json();
    let diags = v["diagnostics"].as_array().expect("diagnostics");
    assert_eq!(diags.len(), 2);
    assert_eq!(diags[0]["code"], "E0701");
    let notes: Vec<&str> = diags[0]["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.contains(&"also denied by denylist: profile strict denies tool issue_refund"),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("also denied by effects: tool issue_refund performs {Write}")),
        "{notes:?}"
    );
}

/// Type errors and denied calls are reported in the same round.
#[test]
fn policy_and_type_errors_are_reported_together() {
    let dir = setup(
        "together",
        "[profile]\nname = \"ops\"\ndeny = [\"issue_refund\"]\n",
    );
    dir.write(
        "refund.lt",
        &REFUND.replace("r.tx_id,\n      Err(e) =>", "r.tx,\n      Err(e) =>"),
    );
    let codes: Vec<String> = check(&dir, &["--json"])
        .expect_code(1)
        .sites()
        .into_iter()
        .map(|(c, _, _)| c)
        .collect();
    assert_eq!(codes, ["E0702", "E0202", "E0702"]);
}

#[test]
fn json_diagnostics_have_the_usual_shape() {
    let dir = setup(
        "json",
        "[profile]\nname = \"read-only\"\neffects = [\"Read\"]\n",
    );
    let out = check(&dir, &["--json"]);
    out.expect_code(1);
    assert_eq!(out.stderr, "", "--json prints nothing else");
    let v = out.json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["type"], Value::Null);
    assert_eq!(v["profile"], "read-only");
    assert_eq!(v["truncated"], 0);
    let d = &v["diagnostics"][0];
    for key in [
        "code",
        "severity",
        "message",
        "label",
        "file",
        "line",
        "column",
        "end_line",
        "end_column",
        "labels",
        "notes",
        "help",
        "expected",
        "found",
    ] {
        assert!(d.get(key).is_some(), "missing {key}: {d}");
    }
    // The call site is `exec tool issue_refund`; the label points at the
    // declared effects.
    assert_eq!(
        (d["line"].as_u64(), d["end_column"].as_u64()),
        (Some(7), Some(33))
    );
    assert_eq!(d["labels"][0]["line"], 2);
    assert_eq!(
        d["labels"][0]["message"],
        "issue_refund is declared with effects {Write}"
    );
    insta::assert_snapshot!(
        "effects_json",
        serde_json::to_string_pretty(&v).expect("prints")
    );
}

// ------------------------------------------------------------------ profile files

#[test]
fn an_invalid_profile_is_exit_2_with_its_position() {
    let dir = setup("invalid", "[profile]\nname = \"x\"\nbogus = 1\n");
    let out = check(&dir, &[]);
    out.expect_code(2);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .starts_with("error: profile.toml:3:1: unknown field `bogus`"),
        "{}",
        out.describe()
    );
    let v = check(&dir, &["--json"]).expect_code(2).json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["diagnostics"], serde_json::json!([]));
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("profile.toml:3:1: unknown field")),
        "{v}"
    );
    assert_eq!(v["config"]["file"], "profile.toml");
    assert_eq!(
        (v["config"]["line"].as_u64(), v["config"]["column"].as_u64()),
        (Some(3), Some(1))
    );

    dir.write("profile.toml", "[profile]\neffects = [\"write\"]\n");
    let out = check(&dir, &[]);
    out.expect_code(2);
    assert!(out.stderr.starts_with("error: profile.toml:2:12: profile: `write` is not an effect label\n  = help: effect labels are capitalised"), "{}", out.describe());

    dir.write("profile.toml", "[profile\n");
    check(&dir, &[]).expect_code(2);
}

#[test]
fn a_missing_or_tableless_profile_is_exit_2() {
    let dir = setup("missing", "[tools.lookup_account]\nfixed = { ok = 1 }\n");
    let out = dir.lt(&["check", "refund.lt", "--profile", "nope.toml"]);
    out.expect_code(2);
    assert!(
        out.stderr
            .starts_with("error: nope.toml: cannot read the profile:"),
        "{}",
        out.describe()
    );
    let out = check(&dir, &[]);
    out.expect_code(2);
    assert_eq!(
        out.stderr.lines().next(),
        Some("error: profile.toml: no [profile] table in this file"),
        "{}",
        out.describe()
    );
    assert!(out
        .stderr
        .contains("= help: a profile file holds a `[profile]` table"));
    let v = check(&dir, &["--json"]).expect_code(2).json();
    assert_eq!(v["config"]["line"], Value::Null);
    assert!(v["config"]["help"].is_string());
}

/// A bad profile is reported even when the program has errors (exit 2,
/// not 1): the command could not do what was asked.
#[test]
fn the_profile_is_read_before_the_program_is_checked() {
    let dir = setup("order", "[profile]\nbogus = 1\n");
    dir.write("refund.lt", "1 +");
    check(&dir, &[]).expect_code(2);
}

/// A tools.toml may be passed as the profile file: its `[profile]` table is
/// used and its `[tools.*]` tables are ignored.
#[test]
fn the_profile_table_of_a_tools_toml_is_a_profile() {
    let dir = setup("tools-toml", "");
    dir.write(
        "tools.toml",
        "[tools.lookup_account]\nfixed = { ok = { id = \"a1\", balance = 3 } }\n\n[tools.issue_refund]\nfixed = { ok = { tx_id = \"t1\" } }\n\n[profile]\nname = \"from-tools\"\ndeny = [\"issue_refund\"]\n",
    );
    let out = dir.lt(&["check", "refund.lt", "--profile", "tools.toml", "--json"]);
    assert_eq!(
        out.expect_code(1).sites(),
        sites(&[("E0702", 7, 11), ("E0702", 9, 23)])
    );
    assert_eq!(out.json()["profile"], "from-tools");
}

/// `lt check` without `--profile` is unchanged, and `lt run --profile`
/// still runs the program: the denied calls are `Err`s it handles.
#[test]
fn run_is_unchanged() {
    let dir = setup(
        "run",
        "[profile]\nname = \"ops\"\ndeny = [\"issue_refund\"]\n",
    );
    dir.write(
        "tools.toml",
        "[tools.lookup_account]\nfixed = { ok = { id = \"a1\", balance = 3 } }\n\n[tools.issue_refund]\nfixed = { ok = { tx_id = \"t1\" } }\n",
    );
    dir.lt(&["check", "refund.lt"]).expect_code(0);
    let out = dir.lt(&[
        "run",
        "refund.lt",
        "--executors",
        "tools.toml",
        "--profile",
        "profile.toml",
    ]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.trim(),
        "\"refund failed: denied: denylist: profile ops denies tool issue_refund\""
    );
}
