//! The `lt` command line, run as a real process: exit codes (0 well-typed,
//! 1 diagnostics, 2 usage or I/O error), the `--json` shape, standard input,
//! `--emit types`, `lt explain`, and argument errors.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The `lt` binary built by Cargo for these tests.
const LT: &str = env!("CARGO_BIN_EXE_lt");

/// A hang guard; every command here takes milliseconds.
const LIMIT: Duration = Duration::from_secs(60);

/// A well-typed program: `Int`, effects `{Read}`; `r.m` is a typo for `r.n`
/// in [`BAD`].
const GOOD: &str =
    "tool q: String -{Read}-> {n: Int};\nmatch exec tool q \"a\" { Ok(r) => r.n, Err(e) => 0 }\n";
const BAD: &str =
    "tool q: String -{Read}-> {n: Int};\nmatch exec tool q \"a\" { Ok(r) => r.m, Err(e) => 0 }\n";

// ------------------------------------------------------------------ harness

struct Run {
    what: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "{}: exit code {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.what, self.code, self.stdout, self.stderr
        )
    }

    fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "unexpected exit code\n{}",
            self.describe()
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.describe());
        self
    }

    fn json(&self) -> Value {
        let line = self.stdout.trim();
        assert_eq!(
            line.lines().count(),
            1,
            "--json prints exactly one line\n{}",
            self.describe()
        );
        serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", self.describe()))
    }
}

/// Runs `lt ARGS` with `stdin`, with colours disabled unless asked for.
fn lt(args: &[&str], stdin: &str) -> Run {
    lt_in(None, args, stdin)
}

fn lt_in(dir: Option<&Path>, args: &[&str], stdin: &str) -> Run {
    let mut cmd = Command::new(LT);
    cmd.args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().expect("cannot start the lt binary");
    let mut input = child.stdin.take().expect("stdin is piped");
    let data = stdin.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("cannot wait for lt") {
            break s;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("`lt {}` did not finish within {LIMIT:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = writer.join();
    Run {
        what: format!("lt {}", args.join(" ")),
        code: status.code(),
        stdout: o.join().unwrap_or_default(),
        stderr: e.join().unwrap_or_default(),
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("lt-cli-{}-{n}-{nanos}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("cannot create a temp dir");
        TempDir(dir)
    }

    fn file(&self, name: &str, contents: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("cannot write a temp file");
        path.to_str().expect("temp paths are UTF-8").to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// 1-based line and character column of the first occurrence of `needle`.
fn position(src: &str, needle: &str) -> (u64, u64) {
    let at = src.find(needle).expect("needle is in the source");
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line as u64, column as u64)
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    k.sort_unstable();
    k
}

// --------------------------------------------------------------- exit codes

#[test]
fn exit_0_for_a_well_typed_program() {
    let dir = TempDir::new("good");
    let path = dir.file("good.lt", GOOD);
    let r = lt(&["check", &path], "");
    r.expect_code(0);
    assert_eq!(r.stdout, "type: Int\neffects: {Read}\n", "{}", r.describe());
    assert!(
        r.stderr.is_empty(),
        "nothing on stderr for a good program\n{}",
        r.describe()
    );
}

#[test]
fn exit_0_for_the_support_agent_example() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/support_agent.lt");
    let r = lt(&["check", path], "");
    r.expect_code(0);
    assert!(r.stdout.contains("type: String"), "{}", r.describe());
    assert!(
        r.stdout.contains("effects: {Read, Write}"),
        "{}",
        r.describe()
    );
}

#[test]
fn exit_1_for_a_program_with_errors() {
    let dir = TempDir::new("bad");
    let path = dir.file("bad.lt", BAD);
    let r = lt(&["check", &path], "");
    r.expect_code(1);
    assert!(
        r.stdout.is_empty(),
        "human diagnostics go to stderr only\n{}",
        r.describe()
    );
    assert!(r.stderr.contains("[E0202]"), "{}", r.describe());
    assert!(r.stderr.contains("did you mean `n`?"), "{}", r.describe());
    assert!(
        r.stderr.contains("bad.lt:2:"),
        "the location names the file and line\n{}",
        r.describe()
    );
    assert!(
        r.stderr.contains("error: 1 error found in"),
        "a summary line ends the output\n{}",
        r.describe()
    );
    assert!(
        !r.stderr.contains("\u{1b}["),
        "no colour when NO_COLOR is set and stderr is not a terminal\n{}",
        r.describe()
    );
}

#[test]
fn exit_1_counts_every_error() {
    let src = "let a = 1 + \"s\" in\nlet b = nope in\nlet c = true + 1 in\na";
    let r = lt(&["check", "-"], src);
    r.expect_code(1);
    assert!(
        r.stderr.contains("3 errors found in <stdin>"),
        "{}",
        r.describe()
    );
}

#[test]
fn exit_1_for_syntax_errors() {
    let r = lt(&["check", "-"], "let x = 1");
    r.expect_code(1);
    assert!(r.stderr.contains("[E0102]"), "{}", r.describe());
    let r = lt(&["check", "-"], "");
    r.expect_code(1);
    assert!(r.stderr.contains("[E0104]"), "{}", r.describe());
}

#[test]
fn exit_2_without_arguments() {
    let r = lt(&[], "");
    r.expect_code(2);
    assert!(
        r.stderr.contains("Usage"),
        "usage is printed\n{}",
        r.describe()
    );
    assert!(r.stdout.is_empty(), "{}", r.describe());
}

#[test]
fn exit_2_for_bad_flags_and_arguments() {
    for args in [
        &["--bogus"][..],
        &["frobnicate"],
        &["check"],
        &["check", "--bogus", "x.lt"],
        &["check", "--emit", "everything", "-"],
        &["check", "--color", "sometimes", "-"],
        &["check", "a.lt", "b.lt"],
        &["explain"],
    ] {
        let r = lt(args, GOOD);
        r.expect_code(2);
        assert!(r.stderr.contains("error"), "{}", r.describe());
        assert!(r.stdout.is_empty(), "{}", r.describe());
    }
}

#[test]
fn help_and_version_exit_0() {
    let r = lt(&["--help"], "");
    r.expect_code(0);
    assert!(
        r.stdout.contains("check") && r.stdout.contains("explain"),
        "{}",
        r.describe()
    );
    let r = lt(&["check", "--help"], "");
    r.expect_code(0);
    assert!(
        r.stdout.contains("--json") && r.stdout.contains("--emit"),
        "{}",
        r.describe()
    );
    let r = lt(&["--version"], "");
    r.expect_code(0);
    assert!(r.stdout.starts_with("lt "), "{}", r.describe());
}

// -------------------------------------------------------------------- files

#[test]
fn missing_file_exits_2_naming_the_path() {
    let dir = TempDir::new("missing");
    let path = dir.0.join("no such dir").join("missing.lt");
    let p = path.to_str().expect("UTF-8 path");
    let r = lt(&["check", p], "");
    r.expect_code(2);
    assert!(
        r.stderr.contains(p),
        "the message names the path\n{}",
        r.describe()
    );
    assert!(r.stdout.is_empty(), "{}", r.describe());
    // A relative path is named as given.
    let r = lt_in(Some(&dir.0), &["check", "nope.lt"], "");
    r.expect_code(2);
    assert!(r.stderr.contains("`nope.lt`"), "{}", r.describe());
}

#[test]
fn missing_file_with_json_exits_2_with_a_json_error() {
    let r = lt(&["check", "--json", "/nonexistent/dir/missing.lt"], "");
    r.expect_code(2);
    let v = r.json();
    assert_eq!(v["ok"], json!(false), "{}", r.describe());
    assert_eq!(v["type"], Value::Null, "{}", r.describe());
    assert_eq!(v["effects"], json!([]), "{}", r.describe());
    assert_eq!(v["diagnostics"], json!([]), "{}", r.describe());
    let err = v["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("/nonexistent/dir/missing.lt"),
        "{}",
        r.describe()
    );
}

#[test]
fn json_error_object_has_the_documented_shape() {
    let r = lt(&["check", "--json", "/nonexistent/dir/missing.lt"], "");
    r.expect_code(2);
    let v = r.json();
    for k in ["ok", "type", "effects", "diagnostics", "truncated"] {
        assert!(v.get(k).is_some(), "missing `{k}`\n{}", r.describe());
    }
}

#[test]
fn a_directory_exits_2() {
    let dir = TempDir::new("dir");
    let p = dir.0.to_str().expect("UTF-8 path").to_string();
    let r = lt(&["check", &p], "");
    r.expect_code(2);
    assert!(
        r.stderr.contains(&p),
        "the message names the path\n{}",
        r.describe()
    );
    let r = lt(&["check", "--json", &p], "");
    r.expect_code(2);
    assert_eq!(r.json()["ok"], json!(false), "{}", r.describe());
}

// -------------------------------------------------------------------- stdin

#[test]
fn reads_standard_input_with_dash() {
    let r = lt(&["check", "-"], GOOD);
    r.expect_code(0);
    assert_eq!(r.stdout, "type: Int\neffects: {Read}\n", "{}", r.describe());

    let r = lt(&["check", "-"], BAD);
    r.expect_code(1);
    assert!(
        r.stderr.contains("<stdin>:2:"),
        "stdin is named <stdin>\n{}",
        r.describe()
    );

    let r = lt(&["check", "--json", "-"], BAD);
    r.expect_code(1);
    assert_eq!(
        r.json()["diagnostics"][0]["file"],
        json!("<stdin>"),
        "{}",
        r.describe()
    );
}

// --------------------------------------------------------------------- JSON

#[test]
fn json_for_a_good_program() {
    let dir = TempDir::new("json-good");
    let path = dir.file("good.lt", GOOD);
    let r = lt(&["check", "--json", &path], "");
    r.expect_code(0);
    assert!(r.stderr.is_empty(), "{}", r.describe());
    let v = r.json();
    assert_eq!(
        keys(&v),
        ["diagnostics", "effects", "ok", "truncated", "type"],
        "{}",
        r.describe()
    );
    assert_eq!(v["ok"], json!(true));
    assert_eq!(v["type"], json!("Int"));
    assert_eq!(v["effects"], json!(["Read"]));
    assert_eq!(v["diagnostics"], json!([]));
    assert_eq!(v["truncated"], json!(0));

    let agent = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/support_agent.lt");
    let r = lt(&["check", "--json", agent], "");
    r.expect_code(0);
    let v = r.json();
    assert_eq!(v["type"], json!("String"), "{}", r.describe());
    assert_eq!(
        v["effects"],
        json!(["Read", "Write"]),
        "effects in canonical order\n{}",
        r.describe()
    );
}

#[test]
fn json_for_a_bad_program_field_by_field() {
    let dir = TempDir::new("json-bad");
    let path = dir.file("bad.lt", BAD);
    let r = lt(&["check", "--json", &path], "");
    r.expect_code(1);
    assert!(
        r.stderr.is_empty(),
        "--json prints nothing on stderr\n{}",
        r.describe()
    );
    let v = r.json();
    assert_eq!(
        keys(&v),
        ["diagnostics", "effects", "ok", "truncated", "type"],
        "{}",
        r.describe()
    );
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["type"], Value::Null);
    assert_eq!(v["effects"], json!([]));
    assert_eq!(v["truncated"], json!(0));
    let diags = v["diagnostics"]
        .as_array()
        .expect("diagnostics is an array");
    assert_eq!(diags.len(), 1, "{}", r.describe());
    let d = &diags[0];

    let required = [
        "code",
        "column",
        "end_column",
        "end_line",
        "file",
        "help",
        "label",
        "labels",
        "line",
        "message",
        "notes",
        "severity",
    ];
    for k in required {
        assert!(d.get(k).is_some(), "diagnostic lacks `{k}`: {d}");
    }
    assert_eq!(d["label"], json!("no field `m`"), "the primary label: {d}");
    for k in keys(d) {
        assert!(
            required.contains(&k) || k == "expected" || k == "found",
            "unexpected key `{k}`: {d}"
        );
    }

    // The primary span is the field name `m` in `r.m`.
    let (line, col) = position(BAD, "r.m");
    assert_eq!(d["code"], json!("E0202"));
    assert_eq!(d["severity"], json!("error"));
    assert_eq!(d["file"], json!(path));
    assert_eq!(d["line"], json!(line));
    assert_eq!(d["column"], json!(col + 2));
    assert_eq!(d["end_line"], json!(line));
    assert_eq!(
        d["end_column"],
        json!(col + 3),
        "end_column is one past the last character"
    );
    let message = d["message"].as_str().expect("message is a string");
    assert!(
        message.contains('m') && message.contains("{n: Int}"),
        "{message}"
    );
    assert_eq!(d["help"], json!("did you mean `n`?"));
    let notes = d["notes"].as_array().expect("notes is an array");
    assert!(notes.iter().all(Value::is_string), "{d}");
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("fields: n"))),
        "{d}"
    );

    // One secondary label: the record `r`, with its type.
    let labels = d["labels"].as_array().expect("labels is an array");
    assert_eq!(labels.len(), 1, "{d}");
    let l = &labels[0];
    assert_eq!(
        keys(l),
        ["column", "end_column", "end_line", "line", "message"],
        "{l}"
    );
    assert_eq!(l["line"], json!(line));
    assert_eq!(l["column"], json!(col));
    assert_eq!(l["end_line"], json!(line));
    assert_eq!(l["end_column"], json!(col + 1));
    assert!(
        l["message"]
            .as_str()
            .is_some_and(|m| m.contains("{n: Int}")),
        "{l}"
    );
}

#[test]
fn json_expected_and_found_for_a_type_mismatch() {
    let src = "let x = 1 + \"s\" in x";
    let r = lt(&["check", "--json", "-"], src);
    r.expect_code(1);
    let d = &r.json()["diagnostics"][0];
    assert_eq!(d["code"], json!("E0201"), "{d}");
    assert_eq!(d["expected"], json!("Int"), "{d}");
    assert_eq!(d["found"], json!("String"), "{d}");
    let (line, col) = position(src, "\"s\"");
    assert_eq!(
        (d["line"].clone(), d["column"].clone()),
        (json!(line), json!(col)),
        "{d}"
    );
    assert_eq!(d["end_column"], json!(col + 3), "{d}");
}

#[test]
fn json_columns_count_characters_not_bytes() {
    let src = "let s = \"ééé😀\" in s ++ 1";
    let r = lt(&["check", "--json", "-"], src);
    r.expect_code(1);
    let d = &r.json()["diagnostics"][0];
    let (line, col) = position(src, "1");
    assert_eq!(d["line"], json!(line), "{d}");
    assert_eq!(d["column"], json!(col), "{d}");
    assert_eq!(d["end_column"], json!(col + 1), "{d}");
}

#[test]
fn json_truncates_after_100_diagnostics() {
    let mut src = String::new();
    for i in 0..150 {
        src.push_str(&format!("let x{i} = 1 + \"s\" in\n"));
    }
    src.push('1');
    let r = lt(&["check", "--json", "-"], &src);
    r.expect_code(1);
    let v = r.json();
    assert_eq!(
        v["diagnostics"].as_array().map(Vec::len),
        Some(100),
        "{}",
        r.describe()
    );
    assert_eq!(v["truncated"], json!(50), "{}", r.describe());
    // Diagnostics are sorted by position.
    let lines: Vec<u64> = v["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["line"].as_u64())
        .collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{lines:?}");

    let r = lt(&["check", "-"], &src);
    r.expect_code(1);
    assert!(
        r.stderr.contains("… and 50 more errors not shown"),
        "{}",
        r.describe()
    );
    assert!(r.stderr.contains("150 errors found"), "{}", r.describe());
}

#[test]
fn json_is_never_coloured() {
    let r = lt(&["check", "--json", "--color", "always", "-"], BAD);
    r.expect_code(1);
    assert!(!r.stdout.contains('\u{1b}'), "{}", r.describe());
    r.json();
}

#[test]
fn color_always_and_never() {
    let r = lt(&["check", "--color", "always", "-"], BAD);
    r.expect_code(1);
    assert!(
        r.stderr.contains("\u{1b}["),
        "--color always colours stderr\n{}",
        r.describe()
    );
    let r = lt(&["check", "--color", "never", "-"], BAD);
    r.expect_code(1);
    assert!(!r.stderr.contains('\u{1b}'), "{}", r.describe());
}

// ------------------------------------------------------------- --emit types

const LETS: &str = "tool q: String -{Read}-> {n: Int};
let a = 1 in
let r = {x = a, y = \"s\"} in
let xs = map (fn v: Int => v + 1) [a, 2] in
let f = fn s: String => s ++ \"!\" in
match exec tool q (f \"k\") { Ok(res) => res.n + r.x, Err(e) => 0 }
";

#[test]
fn emit_types_lists_let_bindings() {
    let dir = TempDir::new("emit");
    let path = dir.file("lets.lt", LETS);
    let r = lt(&["check", "--emit", "types", &path], "");
    r.expect_code(0);
    let expected = [
        ("a", "Int"),
        ("r", "{x: Int, y: String}"),
        ("xs", "List Int"),
        ("f", "String -{}-> String"),
    ];
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), expected.len() + 2, "{}", r.describe());
    for (line, (name, ty)) in lines.iter().zip(expected) {
        let (l, c) = position(LETS, &format!("let {name} "));
        assert_eq!(
            *line,
            format!("{path}:{l}:{}: let {name}: {ty}", c + 4),
            "{}",
            r.describe()
        );
    }
    assert_eq!(lines[expected.len()], "type: Int");
    assert_eq!(lines[expected.len() + 1], "effects: {Read}");

    let r = lt(&["check", "--emit", "types", "--json", &path], "");
    r.expect_code(0);
    let v = r.json();
    assert_eq!(
        keys(&v),
        [
            "bindings",
            "diagnostics",
            "effects",
            "ok",
            "truncated",
            "type"
        ],
        "{}",
        r.describe()
    );
    let bindings = v["bindings"].as_array().expect("bindings is an array");
    assert_eq!(bindings.len(), expected.len());
    for (b, (name, ty)) in bindings.iter().zip(expected) {
        let (l, c) = position(LETS, &format!("let {name} "));
        assert_eq!(
            b,
            &json!({"name": name, "type": ty, "line": l, "column": c + 4})
        );
    }
}

#[test]
fn emit_types_on_a_program_with_errors_still_exits_1() {
    let src = "let a = 1 in\nlet b = a.nope in\nb";
    let r = lt(&["check", "--emit", "types", "-"], src);
    r.expect_code(1);
    assert!(
        r.stdout.contains("<stdin>:1:5: let a: Int"),
        "{}",
        r.describe()
    );
    assert!(r.stderr.contains("[E0202]"), "{}", r.describe());
}

// ------------------------------------------------------------------ explain

#[test]
fn explain_a_documented_code() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors/E0202.md");
    let text = std::fs::read_to_string(&page).expect("docs/errors/E0202.md");
    let r = lt(&["explain", "E0202"], "");
    r.expect_code(0);
    assert_eq!(
        r.stdout,
        text,
        "lt explain prints the page verbatim\n{}",
        r.describe()
    );
    for alias in ["e0202", "0202", "202"] {
        let r2 = lt(&["explain", alias], "");
        r2.expect_code(0);
        assert_eq!(r2.stdout, r.stdout, "`lt explain {alias}`");
    }
}

#[test]
fn explain_an_unknown_code_exits_2() {
    for code in ["E9999", "banana", "E02021", ""] {
        let r = lt(&["explain", code], "");
        r.expect_code(2);
        assert!(r.stdout.is_empty(), "{}", r.describe());
        assert!(
            r.stderr.contains("not an lt error code"),
            "{}",
            r.describe()
        );
    }
    let r = lt(&["explain", "E9999"], "");
    assert!(
        r.stderr.contains("E9999") && r.stderr.contains("E0202"),
        "the known codes are listed\n{}",
        r.describe()
    );
}

// ------------------------------------------------------------ closed pipes

/// Runs `lt ARGS` on `src` (stdin), reads only the first bytes of the chosen
/// stream and closes it, as `lt … | head -1` does; returns the exit code and
/// the other stream.
fn close_early(args: &[&str], src: &str, close_stdout: bool) -> (Option<i32>, String) {
    let mut child = Command::new(LT)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the lt binary");
    let mut input = child.stdin.take().expect("stdin is piped");
    let data = src.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.stdout.take().expect("stdout is piped");
    let err = child.stderr.take().expect("stderr is piped");
    let (mut closed, mut other): (Box<dyn Read + Send>, Box<dyn Read + Send>) = if close_stdout {
        (Box::new(out), Box::new(err))
    } else {
        (Box::new(err), Box::new(out))
    };
    let drain = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = other.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let mut first = [0u8; 16];
    let _ = closed.read_exact(&mut first);
    drop(closed);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("cannot wait for lt") {
            break s;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("`lt {}` did not finish within {LIMIT:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = writer.join();
    (status.code(), drain.join().unwrap_or_default())
}

/// A long, well-typed program: `--emit types` prints one line per `let`
/// (far more than a pipe buffer).
fn many_lets(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "let value_number_{i} = {{field_a = {i}, field_b = \"text\"}} in\n"
        ));
    }
    s.push_str("value_number_0.field_a\n");
    s
}

#[test]
fn closed_stdout_is_not_an_internal_error() {
    let src = many_lets(20_000);
    for args in [
        &["check", "--emit", "types", "-"][..],
        &["check", "--emit", "types", "--json", "-"],
    ] {
        let (code, stderr) = close_early(args, &src, true);
        // A closed pipe is not an I/O error: the exit status is the
        // check's (0: the program checks).
        assert_eq!(
            code,
            Some(0),
            "`lt {}` exited with {code:?}\n{stderr}",
            args.join(" ")
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("internal error"),
            "{stderr}"
        );
    }
}

#[test]
fn closed_stderr_is_not_an_internal_error() {
    // 100 rendered diagnostics, each echoing a 300-character line (short
    // enough to be shown whole): ~200 KB, far more than a pipe buffer
    // (64 KiB), so the write is still blocked when the reader goes away.
    let long = "x".repeat(300);
    let mut src = String::new();
    for i in 0..150 {
        src.push_str(&format!("let x{i} = 1 + \"{long}\" in\n"));
    }
    src.push('1');
    // A closed pipe is a reader that stopped early, not an I/O error: the
    // exit status is the check's (1: the program has errors).
    let (code, stdout) = close_early(&["check", "-"], &src, false);
    assert_eq!(code, Some(1), "exited with {code:?}\n{stdout}");
}
