//! `lt check --tools DECLS.lt` and `lt run --tools DECLS.lt`: a program
//! uses the declarations file `lt tools import` writes without copying it;
//! a tool declared in both must agree; positions are shown in the file they
//! are in; an unknown tool's help names the declarations file that has it.

mod support;

use support::{lt_in, TempDir};

const TOOLS: &str = "\
// Looks an account up.
tool lookup_account: String -{Read}-> {id: String, subscription_tier: String,
                                       email: String, last_charge_cents: Int};
type Refund = {account_id: String, amount: Int};
tool issue_refund: Refund -{Write}-> {tx_id: String};
";

const PROGRAM: &str = "\
// Refunds the last charge.

match exec tool lookup_account \"cust_12345\" {
  Ok(account) =>
    match exec tool issue_refund {account_id = account.id, amount = account.last_charge_cents} {
      Ok(refund) => refund.tx_id,
      Err(e) => \"refund failed\"
    },
  Err(e) => \"account lookup failed\"
}
";

const EXECUTORS: &str = "\
[tools.lookup_account]
fixed = { ok = { id = \"a1\", subscription_tier = \"pro\", email = \"a@b.c\", last_charge_cents = 500 } }
[tools.issue_refund]
fixed = { ok = { tx_id = \"tx9\" } }
";

fn folder(name: &str) -> TempDir {
    let dir = TempDir::new("tools-file", name);
    dir.write("tools.lt", TOOLS);
    dir.write("prog.lt", PROGRAM);
    dir
}

#[test]
fn check_with_tools_accepts_a_program_that_declares_nothing() {
    let dir = folder("ok");
    let out = lt_in(&dir.0, &["check", "prog.lt", "--tools", "tools.lt"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "type: String\neffects: {Read, Write}\n");
}

#[test]
fn without_tools_the_unknown_tool_names_the_declarations_file() {
    let dir = folder("unknown");
    let out = lt_in(&dir.0, &["check", "prog.lt", "--json"], &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let v = out.json();
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "E0204");
    assert_eq!(
        d["help"],
        "`lookup_account` is declared in tools.lt: check the program with it, `--tools tools.lt`"
    );
    // Without any tools.lt around: how to get one, not a declaration to write.
    std::fs::remove_file(dir.path("tools.lt")).expect("the declarations file exists");
    let out = lt_in(&dir.0, &["check", "prog.lt", "--json"], &[]);
    let help = out.json()["diagnostics"][0]["help"]
        .as_str()
        .expect("help is a string")
        .to_string();
    assert!(help.contains("lt tools import"), "{help}");
    assert!(!help.contains("tool lookup_account:"), "{help}");
}

#[test]
fn with_tools_an_undeclared_tool_says_what_the_file_declares() {
    let dir = folder("missing");
    dir.write(
        "p2.lt",
        "match exec tool send_mail \"x\" { Ok(r) => 1, Err(e) => 0 }\n",
    );
    let out = lt_in(
        &dir.0,
        &["check", "p2.lt", "--tools", "tools.lt", "--json"],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let help = out.json()["diagnostics"][0]["help"]
        .as_str()
        .expect("help is a string")
        .to_string();
    assert!(
        help.contains("neither the program nor tools.lt declares `send_mail`"),
        "{help}"
    );
    assert!(help.contains("lookup_account, issue_refund"), "{help}");
}

#[test]
fn a_tool_declared_in_both_must_agree() {
    let dir = folder("agree");
    // The same declaration, written again: accepted.
    dir.write(
        "same.lt",
        &format!("tool issue_refund: {{amount: Int, account_id: String}} -{{Write}}-> {{tx_id: String}};\n{PROGRAM}"),
    );
    let out = lt_in(&dir.0, &["check", "same.lt", "--tools", "tools.lt"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    // Another input type: E0704 at the program's declaration, naming tools.lt's.
    dir.write(
        "other.lt",
        &format!("tool issue_refund: {{account_id: String, amount: Float}} -{{Write}}-> {{tx_id: String}};\n{PROGRAM}"),
    );
    let out = lt_in(
        &dir.0,
        &["check", "other.lt", "--tools", "tools.lt", "--json"],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let v = out.json();
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "E0704", "{v}");
    assert_eq!(d["file"], "other.lt");
    assert_eq!(d["line"], 1);
    assert!(
        d["message"]
            .as_str()
            .expect("message is a string")
            .contains("tools.lt:5"),
        "{d}"
    );
    assert_eq!(
        d["notes"][0],
        "tools.lt:5:1: `issue_refund` as tools.lt declares it"
    );
    assert_eq!(
        v["diagnostics"]
            .as_array()
            .expect("diagnostics is a list")
            .len(),
        1,
        "{v}"
    );
    // A type alias declared differently: E0213.
    dir.write(
        "alias.lt",
        &format!("type Refund = {{account_id: String}};\n{PROGRAM}"),
    );
    let out = lt_in(
        &dir.0,
        &["check", "alias.lt", "--tools", "tools.lt", "--json"],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let codes: Vec<String> = out.json()["diagnostics"]
        .as_array()
        .expect("diagnostics is a list")
        .iter()
        .map(|d| d["code"].as_str().expect("code is a string").to_string())
        .collect();
    assert!(codes.contains(&"E0213".to_string()), "{codes:?}");
}

#[test]
fn positions_are_in_the_file_they_are_in() {
    let dir = folder("positions");
    // A field misspelt on the program's line 6.
    dir.write("typo.lt", &PROGRAM.replace("refund.tx_id", "refund.tx"));
    let out = lt_in(
        &dir.0,
        &["check", "typo.lt", "--tools", "tools.lt", "--json"],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let d = &out.json()["diagnostics"][0];
    assert_eq!(
        (d["file"].as_str(), d["line"].as_u64()),
        (Some("typo.lt"), Some(6)),
        "{d}"
    );
    let human = lt_in(&dir.0, &["check", "typo.lt", "--tools", "tools.lt"], &[]);
    assert!(human.stderr.contains("typo.lt:6:"), "{}", human.stderr);
    // An error in the declarations file is shown there.
    dir.write("broken.lt", "tool t: String -{Raed}-> Int;\n");
    let out = lt_in(
        &dir.0,
        &["check", "prog.lt", "--tools", "broken.lt", "--json"],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let d = &out.json()["diagnostics"][0];
    assert_eq!(
        (d["file"].as_str(), d["line"].as_u64()),
        (Some("broken.lt"), Some(1)),
        "{d}"
    );
}

#[test]
fn an_unreadable_declarations_file_exits_2() {
    let dir = folder("unreadable");
    let out = lt_in(&dir.0, &["check", "prog.lt", "--tools", "nope.lt"], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("nope.lt"), "{}", out.stderr);
    let out = lt_in(&dir.0, &["run", "prog.lt", "--tools", "nope.lt"], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    // Both from standard input: one stream cannot be both files.
    for cmd in ["check", "run"] {
        let out = lt_in(&dir.0, &[cmd, "-", "--tools", "-"], &[]);
        assert_eq!(out.code, 2, "{cmd}: {out:?}");
        assert!(out.stderr.contains("standard input"), "{}", out.stderr);
    }
}

#[test]
fn run_with_tools_runs_logs_a_whole_program_and_replays_without_tools() {
    let dir = folder("run");
    dir.write("tools.toml", EXECUTORS);
    let out = lt_in(
        &dir.0,
        &[
            "run",
            "prog.lt",
            "--tools",
            "tools.lt",
            "--executors",
            "tools.toml",
            "--log",
            "s.jsonl",
        ],
        &[],
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, "\"tx9\"\n"), "{out:?}");
    let replay = lt_in(&dir.0, &["replay", "s.jsonl"], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
    // Rejected by the checker: exit 1, nothing runs.
    dir.write(
        "other.lt",
        &format!("tool issue_refund: String -{{Write}}-> {{tx_id: String}};\n{PROGRAM}"),
    );
    let out = lt_in(
        &dir.0,
        &[
            "run",
            "other.lt",
            "--tools",
            "tools.lt",
            "--executors",
            "tools.toml",
        ],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("E0704"), "{}", out.stderr);
    // A start failure points at the program's own line (3), not the joined text's.
    let out = lt_in(&dir.0, &["run", "prog.lt", "--tools", "tools.lt"], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("prog.lt:3:7"), "{}", out.stderr);
}
