//! End-to-end runs of the examples that need the language extensions
//! (`examples/paginated_listing`, `optional_fields`, `enum_status`,
//! `message_body`, `float_report`): the real `lt` binary checks each
//! `program.lt` (type and effects must be what its `// expect-type:` and
//! `// expect-effects:` header says) and runs it with the example's
//! `tools.toml` (Python tools), and the test asserts the exact value printed.
//!
//! Every test also checks that it left the example folder as it found it.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::SystemTime;

mod common;
use common::parse_expect;

const EXAMPLES: [&str; 5] = [
    "paginated_listing",
    "optional_fields",
    "enum_status",
    "message_body",
    "float_report",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A file path in the temp directory, unique to this process and test,
/// removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!(
            "lt-extension-examples-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }

    fn with_text(name: &str, contents: &str) -> TempFile {
        let f = TempFile::new(name);
        std::fs::write(&f.0, contents).expect("write a temp file");
        f
    }

    fn read(&self) -> String {
        std::fs::read_to_string(&self.0).unwrap_or_default()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What an example folder holds: every path under it, with size and mtime.
type Listing = BTreeMap<PathBuf, (u64, Option<SystemTime>)>;

fn listing(dir: &Path) -> Listing {
    let mut out = Listing::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let meta = e.metadata().ok();
            let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
            if is_dir {
                stack.push(p.clone());
            }
            let size = if is_dir {
                0
            } else {
                meta.as_ref().map_or(0, |m| m.len())
            };
            let mtime = if is_dir {
                None
            } else {
                meta.and_then(|m| m.modified().ok())
            };
            out.insert(p, (size, mtime));
        }
    }
    out
}

/// Watches one example folder for the length of a test.
struct CleanFolder {
    dir: PathBuf,
    before: Listing,
}

impl CleanFolder {
    fn watch(example: &str) -> CleanFolder {
        let dir = repo().join("examples").join(example);
        assert!(dir.is_dir(), "{} is not a directory", dir.display());
        CleanFolder {
            before: listing(&dir),
            dir,
        }
    }

    fn assert_clean(&self) {
        let after = listing(&self.dir);
        assert_eq!(
            after,
            self.before,
            "the example folder {} is not as the test found it",
            self.dir.display()
        );
    }
}

/// `lt ARGS` from the repository root, with `env` added, `stdin` as input.
fn lt_with(args: &[&str], env: &[(&str, &Path)], stdin: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lt"));
    cmd.current_dir(repo())
        .args(args)
        .env_remove("LT_TICKETS_FILE")
        .env_remove("LT_OUTBOX")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run the lt binary");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write lt's stdin");
    child.wait_with_output().expect("wait for lt")
}

/// `lt run examples/<name>/program.lt --executors examples/<name>/tools.toml EXTRA…`.
fn run_example(name: &str, extra: &[&str], env: &[(&str, &Path)]) -> Output {
    let program = format!("examples/{name}/program.lt");
    let executors = format!("examples/{name}/tools.toml");
    let mut args = vec!["run", program.as_str(), "--executors", executors.as_str()];
    args.extend_from_slice(extra);
    lt_with(&args, env, "")
}

/// Asserts exit status 0, nothing on stderr, and exactly `value` (and a
/// newline) on stdout.
fn assert_prints(out: &Output, value: &str) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "lt run failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stdout, format!("{value}\n"), "stderr:\n{stderr}");
    assert_eq!(stderr, "", "unexpected output on stderr");
}

/// The JSON object a `--json` run (or check) printed, after exit status 0.
fn json_output(out: &Output) -> Value {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("--json printed no JSON object ({e}):\n{stdout}"))
}

/// `lt check --json` of a program text given on stdin.
fn check_text(src: &str) -> Value {
    let out = lt_with(&["check", "--json", "-"], &[], src);
    serde_json::from_str(&text(&out.stdout)).unwrap_or_else(|e| {
        panic!(
            "lt check --json printed no JSON ({e}):\n{}",
            text(&out.stdout)
        )
    })
}

fn program_text(name: &str) -> String {
    std::fs::read_to_string(repo().join("examples").join(name).join("program.lt"))
        .expect("read program.lt")
}

/// `program_text(name)` with `from` replaced (exactly once) by `to`.
fn edited(name: &str, from: &str, to: &str) -> String {
    let src = program_text(name);
    assert_eq!(
        src.matches(from).count(),
        1,
        "`{from}` in {name}/program.lt"
    );
    src.replacen(from, to, 1)
}

fn codes(check: &Value) -> Vec<String> {
    check["diagnostics"]
        .as_array()
        .map(|ds| {
            ds.iter()
                .map(|d| d["code"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `lt check --json examples/<name>/program.lt` accepts the program with
/// the type and effects of its `expect-type` / `expect-effects` header.
fn assert_matches_header(name: &str) {
    let exp = parse_expect(&program_text(name));
    let want_ty = exp
        .ty
        .unwrap_or_else(|| panic!("{name}/program.lt has no `// expect-type:` line"));
    let want_eff = exp
        .effects
        .unwrap_or_else(|| panic!("{name}/program.lt has no `// expect-effects:` line"));
    assert!(exp.errors.is_none(), "{name}: an example must be accepted");
    let path = format!("examples/{name}/program.lt");
    let out = lt_with(&["check", "--json", path.as_str()], &[], "");
    let v = json_output(&out);
    assert_eq!(v["ok"], json!(true), "{name}: {v}");
    assert_eq!(v["type"], json!(want_ty), "{name}: {v}");
    assert_eq!(v["effects"], json!(want_eff), "{name}: {v}");
    assert_eq!(v["diagnostics"], json!([]), "{name}: {v}");
}

#[test]
fn every_example_matches_its_header() {
    for name in EXAMPLES {
        let folder = repo().join("examples").join(name);
        for file in ["program.lt", "tools.toml", "README.md"] {
            assert!(
                folder.join(file).is_file(),
                "missing examples/{name}/{file}"
            );
        }
        assert_matches_header(name);
    }
}

// ---------------------------------------------------------------- paginated_listing

const PAGINATED: &str = "{pages = 3, truncated = false, open = 11, urgent = [\
\"TCK-1001 Cannot log in after password reset\", \
\"TCK-1005 Checkout returns HTTP 500 for EU cards\", \
\"TCK-1010 Duplicate charges after a retry\"]}";

#[test]
fn paginated_listing_stops_at_the_last_page() {
    let folder = CleanFolder::watch("paginated_listing");
    assert_prints(&run_example("paginated_listing", &[], &[]), PAGINATED);

    // Three calls, not max_pages = 5: the third page has no next_cursor. The
    // first call leaves the None cursor out; the others pass the cursor on.
    let out = run_example("paginated_listing", &["--verbose"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(text(&out.stdout), format!("{PAGINATED}\n"), "{stderr}");
    let calls: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[lt] call "))
        .collect();
    assert_eq!(calls.len(), 3, "{stderr}");
    assert!(
        calls[0].contains(" list_page {\"limit\":4} → ok"),
        "{}",
        calls[0]
    );
    assert!(
        calls[1].contains("{\"cursor\":\"eyJvZmZzZXQiOjR9\",\"limit\":4}"),
        "{}",
        calls[1]
    );
    assert!(
        calls[2].contains("{\"cursor\":\"eyJvZmZzZXQiOjh9\",\"limit\":4}"),
        "{}",
        calls[2]
    );
    folder.assert_clean();
}

#[test]
fn paginated_listing_is_bounded_by_max_pages() {
    let folder = CleanFolder::watch("paginated_listing");
    // 30 tickets, 4 a page: the bound (5 pages) is reached with a cursor left.
    let tickets: Vec<Value> = (0..30)
        .map(|i| {
            json!({"id": format!("TCK-{}", 2000 + i), "subject": format!("ticket {i}"),
                   "priority": if i % 10 == 0 { 1 } else { 3 }})
        })
        .collect();
    let file = TempFile::with_text("tickets30.json", &Value::Array(tickets).to_string());
    let out = run_example(
        "paginated_listing",
        &["--json"],
        &[("LT_TICKETS_FILE", &file.0)],
    );
    let v = json_output(&out);
    assert_eq!(v["calls"], json!(5), "{v}");
    assert_eq!(
        v["value"],
        json!({"pages": 5, "truncated": true, "open": 20,
               "urgent": ["TCK-2000 ticket 0", "TCK-2010 ticket 10"]}),
        "{v}"
    );

    // An empty queue: one call, one empty page.
    let empty = TempFile::with_text("tickets0.json", "[]");
    let out = run_example("paginated_listing", &[], &[("LT_TICKETS_FILE", &empty.0)]);
    assert_prints(
        &out,
        "{pages = 1, truncated = false, open = 0, urgent = []}",
    );
    folder.assert_clean();
}

// ---------------------------------------------------------------- optional_fields

const OPTIONAL_FIELDS: &str = "{notify = [\
{account = \"acct_101\", greet = \"Ada\", language = \"en\", channel = \"email\", address = \"ada@example.com\"}, \
{account = \"acct_102\", greet = \"Bruno Rossi\", language = \"it\", channel = \"sms\", address = \"+39 02 555 0142\"}, \
{account = \"acct_103\", greet = \"Chen Wei\", language = \"en\", channel = \"email\", address = \"chen.wei@example.com\"}, \
{account = \"acct_105\", greet = \"Emil Vogel\", language = \"de\", channel = \"sms\", address = \"+49 30 555 0199\"}], \
unreachable = [\"acct_104\"]}";

/// What `tools/contacts.py get_contact` prints for an account, as JSON.
fn raw_contact(account: &str) -> Value {
    let dir = repo().join("examples/optional_fields");
    let mut child = Command::new("python3")
        .current_dir(&dir)
        .args(["tools/contacts.py", "get_contact"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(json!(account).to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("the tool prints JSON")
}

#[test]
fn optional_fields_absent_and_null_are_none() {
    let folder = CleanFolder::watch("optional_fields");
    // The tool really leaves fields out, and really sends null.
    let dana = raw_contact("acct_104");
    assert!(dana.get("email").is_none(), "{dana}");
    assert_eq!(dana["phone"], Value::Null, "{dana}");
    let chen = raw_contact("acct_103");
    assert!(chen.get("preferred_name").is_none(), "{chen}");
    assert_eq!(chen["phone"], Value::Null, "{chen}");

    assert_prints(&run_example("optional_fields", &[], &[]), OPTIONAL_FIELDS);
    let v = json_output(&run_example("optional_fields", &["--json"], &[]));
    assert_eq!(v["calls"], json!(6), "{v}");
    folder.assert_clean();
}

// ---------------------------------------------------------------- enum_status

const ENUM_STATUS: &str = "{open = 3, pending = 3, closed = 2, escalate = [\"T-304\", \"T-308\"], \
reminded = [\"T-302 msg-0ae67727d6\", \"T-306 msg-d32ef51641\"]}";

#[test]
fn enum_status_reminds_the_stale_pending_tickets() {
    let folder = CleanFolder::watch("enum_status");
    assert_prints(&run_example("enum_status", &[], &[]), ENUM_STATUS);

    let outbox = TempFile::new("enum_status_outbox.jsonl");
    let out = run_example("enum_status", &[], &[("LT_OUTBOX", &outbox.0)]);
    assert_prints(&out, ENUM_STATUS);
    let sent: Vec<Value> = outbox
        .read()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an outbox line is JSON"))
        .collect();
    assert_eq!(
        sent,
        [
            json!({"message_id": "msg-0ae67727d6", "to": "it@globex.test",
                   "subject": "Re: Need logs for the failed sync [T-302]",
                   "body": "Hello,\n\nwe are still waiting for your reply on ticket T-302 (pending for 4 days).\n"}),
            json!({"message_id": "msg-d32ef51641", "to": "dev@stark.test",
                   "subject": "Re: Which SDK version do you use? [T-306]",
                   "body": "Hello,\n\nwe are still waiting for your reply on ticket T-306 (pending for 6 days).\n"}),
        ]
    );
    folder.assert_clean();
}

#[test]
fn enum_status_email_is_an_effect_a_profile_grants() {
    let folder = CleanFolder::watch("enum_status");
    let profile = TempFile::with_text(
        "enum_status_read_only.toml",
        "[profile]\nname = \"read-only\"\neffects = [\"Read\"]\n",
    );
    let outbox = TempFile::new("enum_status_denied_outbox.jsonl");
    let profile_path = profile.0.to_string_lossy().into_owned();
    let out = run_example(
        "enum_status",
        &["--profile", profile_path.as_str()],
        &[("LT_OUTBOX", &outbox.0)],
    );
    assert_prints(
        &out,
        "{open = 3, pending = 3, closed = 2, escalate = [\"T-304\", \"T-308\"], \
         reminded = [\"reminders stopped: T-302: denied: effects: tool send_email performs {Email}, \
         which profile read-only does not grant (it grants {Read})\"]}",
    );
    assert_eq!(outbox.read(), "", "a denied email was sent");
    folder.assert_clean();
}

#[test]
fn enum_status_rejects_what_the_enum_excludes() {
    let folder = CleanFolder::watch("enum_status");
    // A status outside the enum is an Err at the tool boundary.
    let tickets = std::fs::read_to_string(repo().join("examples/enum_status/data/tickets.json"))
        .expect("tickets.json");
    let from = "\"T-305\", \"status\": \"pending\"";
    assert_eq!(tickets.matches(from).count(), 1);
    let bad = TempFile::with_text(
        "enum_status_on_hold.json",
        &tickets.replace(from, "\"T-305\", \"status\": \"on_hold\""),
    );
    let out = run_example("enum_status", &[], &[("LT_TICKETS_FILE", &bad.0)]);
    assert_prints(
        &out,
        "{open = 0, pending = 0, closed = 0, escalate = [], reminded = [\"could not list the tickets: \
         tool list_tickets returned an invalid result: element [4].status: expected one of \
         \\\"closed\\\", \\\"open\\\", \\\"pending\\\", found \\\"on_hold\\\"\"]}",
    );

    // The match on the status must name every status…
    let v = check_text(&edited(
        "enum_status",
        "    \"closed\" => \"nothing\"\n",
        "",
    ));
    assert_eq!(v["ok"], json!(false), "{v}");
    assert_eq!(codes(&v), ["E0607"], "{v}");
    assert!(
        v["diagnostics"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"closed\"")),
        "{v}"
    );
    // …and a misspelt status or action is not a member of its enum.
    let v = check_text(&edited("enum_status", "\"pending\" =>", "\"pendng\" =>"));
    assert!(codes(&v).contains(&"E0216".to_string()), "{v}");
    let v = check_text(&edited("enum_status", "then \"remind\"", "then \"remnd\""));
    assert_eq!(codes(&v), ["E0216"], "{v}");
    // Using the Email effect without declaring it.
    let v = check_text(&edited("enum_status", "effect Email;\n", ""));
    assert!(codes(&v).contains(&"E0212".to_string()), "{v}");
    folder.assert_clean();
}

// ---------------------------------------------------------------- message_body

const MESSAGE_TEXT: &str = "[SEV2] INC-4821: Elevated checkout errors (INVESTIGATING)\n\
Opened: 2024-06-03 09:12 UTC\n\
\n\
Affected services (3 of 5):\n  \
\u{2022} checkout-api: 4.27% errors, p95 1840 ms\n  \
\u{2022} fraud-check: 2.50% errors, p95 1310 ms\n  \
\u{2022} payments-gateway: 1.05% errors, p95 920 ms\n\
Healthy: cart, tax-service\n\
\n\
On call: Priya Natarajan (@priya)";

const MESSAGE_TS: &str = "1717406797.715797";

#[test]
fn message_body_posts_the_composed_text() {
    let folder = CleanFolder::watch("message_body");
    // Printed in lt's syntax: the new lines as `\n`, the bullet as itself.
    let printed = format!(
        "{{ts = \"{MESSAGE_TS}\", text = \"{}\"}}",
        MESSAGE_TEXT.replace('\n', "\\n")
    );
    assert_prints(&run_example("message_body", &[], &[]), &printed);

    let outbox = TempFile::new("message_body_outbox.jsonl");
    let out = run_example("message_body", &["--json"], &[("LT_OUTBOX", &outbox.0)]);
    let v = json_output(&out);
    assert_eq!(
        v["value"],
        json!({"ts": MESSAGE_TS, "text": MESSAGE_TEXT}),
        "{v}"
    );
    assert_eq!(v["calls"], json!(4), "{v}");
    let posted: Value = serde_json::from_str(outbox.read().trim()).expect("one posted message");
    assert_eq!(
        posted,
        json!({"ts": MESSAGE_TS, "channel": "#incidents", "text": MESSAGE_TEXT})
    );
    folder.assert_clean();
}

// ---------------------------------------------------------------- float_report

const FLOAT_REPORT: &str = "{claims = 9, total_eur = \"804.82\", average_eur = \"89.42\", \
largest_eur = \"309.28\", whole_euros = 805, by_category = [\
{category = \"travel\", total_eur = \"499.18\"}, {category = \"meals\", total_eur = \"159.47\"}, \
{category = \"software\", total_eur = \"146.17\"}], unconverted = [\"exp_0507 76.25 CHF\"]}";

#[test]
fn float_report_totals_in_euros() {
    let folder = CleanFolder::watch("float_report");
    assert_prints(&run_example("float_report", &[], &[]), FLOAT_REPORT);
    let v = json_output(&run_example("float_report", &["--json"], &[]));
    assert_eq!(v["calls"], json!(2), "{v}");
    assert_eq!(v["value"]["whole_euros"], json!(805), "{v}");
    assert_eq!(v["value"]["claims"], json!(9), "{v}");
    folder.assert_clean();
}
