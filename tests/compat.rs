//! `lambda_tool`, lt speaking λ-Tool's protocol (docs/protocol.md), end to
//! end: the built binary is spawned as a λ-Tool host spawns it, in its three
//! modes (`--json --typecheck`, `--json`, `--json --interactive FILE`), and
//! this test plays the host: it reads the `tool_call` lines and answers with
//! `tool_result` lines (or garbage, or nothing). Interactive sessions run
//! under the control plane, logged with `--log`, verified with `lt log
//! verify` and replayed with `lt replay`.

use lt::log::{read_log, Event, EventBody};
use serde_json::{json, Value as Json};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LAMBDA_TOOL: &str = env!("CARGO_BIN_EXE_lambda_tool");
const LT: &str = env!("CARGO_BIN_EXE_lt");

/// How long the test waits for one line, or for the process to end.
const PATIENCE: Duration = Duration::from_secs(30);

mod support;

use support::TempDir;

/// What a finished `lambda_tool` printed.
#[derive(Debug)]
struct Output {
    code: i32,
    /// The result object: the last stdout line.
    result: Json,
    /// Every stdout line.
    lines: Vec<String>,
    stderr: String,
}

impl Output {
    fn value(&self) -> &Json {
        assert_eq!(self.result["ok"], true, "{self:#?}");
        assert_eq!(self.code, 0, "{self:#?}");
        &self.result["value"]
    }

    fn errors(&self) -> Vec<String> {
        assert_eq!(self.result["ok"], false, "{self:#?}");
        let errors: Vec<String> = self.result["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("no errors array: {self:#?}"))
            .iter()
            .map(|e| e.as_str().expect("an error is a string").to_string())
            .collect();
        assert!(!errors.is_empty(), "{self:#?}");
        for e in &errors {
            assert!(!e.contains('\n'), "one line per error: {e:?}");
        }
        errors
    }
}

/// Runs `binary ARGS` with `stdin` as its input, to the end.
fn run_with(binary: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lambda_tool");
    let mut input = child.stdin.take().expect("stdin");
    let text = stdin.to_string();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().expect("wait for lambda_tool");
    let _ = writer.join();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    let result = lines
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON result line: {stdout:?}"));
    Output {
        code: out.status.code().unwrap_or(-1),
        result,
        lines,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `lambda_tool ARGS < stdin`.
fn lambda_tool(args: &[&str], stdin: &str) -> Output {
    run_with(LAMBDA_TOOL, args, stdin)
}

/// The host's answer to one call.
enum Answer {
    /// `{"tool_result": {"ok": v}}`.
    Ok(Json),
    /// `{"tool_result": {"error": "…"}}`.
    Error(&'static str),
    /// These raw lines.
    Raw(Vec<String>),
    /// Close lambda_tool's stdin.
    Close,
}

/// A host's view of an interactive session: the calls it answered, in order.
#[derive(Debug)]
struct Session {
    calls: Vec<(String, Json)>,
    out: Output,
}

/// Runs `lambda_tool --json --interactive FILE ARGS` on `program`, answering
/// each call with `answer(tool, argument)`. Like the Python wrapper, it keeps
/// stdin open after the result line: lambda_tool must exit by itself.
fn interactive(
    dir: &TempDir,
    program: &str,
    args: &[&str],
    mut answer: impl FnMut(&str, &Json) -> Answer,
) -> Session {
    let file = dir.write("program.ltool", program);
    let mut child = Command::new(LAMBDA_TOOL)
        .args(["--json", "--interactive", &file])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lambda_tool");
    let (rx, stderr) = support::read_output(&mut child);
    let mut stdin = child.stdin.take();
    let mut calls = Vec::new();
    let mut lines = Vec::new();
    let result = loop {
        let line = match rx.recv_timeout(PATIENCE) {
            Ok(l) => l,
            Err(e) => {
                let _ = child.kill();
                panic!("no line from lambda_tool within {PATIENCE:?} ({e}); so far {lines:?}");
            }
        };
        lines.push(line.clone());
        let msg: Json = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        if msg.get("ok").is_some() {
            break msg;
        }
        // Exactly `{"tool_call":{"tool":…,"argument":…}}`, compact.
        assert!(line.starts_with(r#"{"tool_call":{"tool":""#), "{line}");
        let call = msg["tool_call"].as_object().expect("tool_call object");
        assert_eq!(msg.as_object().map(|o| o.len()), Some(1), "{line}");
        assert_eq!(call.len(), 2, "tool and argument only: {line}");
        let tool = call["tool"].as_str().expect("tool name").to_string();
        let argument = call["argument"].clone();
        let reply = answer(&tool, &argument);
        calls.push((tool, argument));
        let text = match reply {
            Answer::Ok(v) => vec![json!({"tool_result": {"ok": v}}).to_string()],
            Answer::Error(e) => vec![json!({"tool_result": {"error": e}}).to_string()],
            Answer::Raw(l) => l,
            Answer::Close => {
                stdin = None;
                continue;
            }
        };
        let pipe = stdin.as_mut().expect("stdin still open");
        for l in text {
            pipe.write_all(l.as_bytes())
                .and_then(|()| pipe.write_all(b"\n"))
                .and_then(|()| pipe.flush())
                .expect("write to lambda_tool");
        }
    };
    // The result line is the last line, and the process ends with stdin open.
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("lambda_tool did not exit after its result line");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    drop(stdin);
    let rest: Vec<String> = rx.iter().collect();
    assert!(rest.is_empty(), "lines after the result: {rest:?}");
    Session {
        calls,
        out: Output {
            code: status.code().unwrap_or(-1),
            result,
            lines,
            stderr: stderr.join().unwrap_or_default(),
        },
    }
}

/// `lt ARGS`, stdin closed: (exit code, stdout, stderr).
fn lt(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(LT)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run lt");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn events(log: &str) -> Vec<Event> {
    let text = std::fs::read_to_string(log).expect("read the log");
    read_log(&text).unwrap_or_else(|e| panic!("the log does not read back: {e:?}"))
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(Event::kind).collect()
}

const REFUND: &str = r#"
tool lookup_account: String -{Read}-> {id: String, subscription_tier: String,
                                       email: String, last_charge_cents: Int};
tool issue_refund: {account_id: String, amount: Int} -{Write}-> {tx_id: String};
tool send_reply: {to: String, body: String} -{Write}-> Unit;

match exec tool lookup_account "cust_12345" {
  Ok(account) =>
    match exec tool issue_refund {account_id = account.id,
                                   amount = account.last_charge_cents} {
      Ok(refund) =>
        match exec tool send_reply {to = account.email,
                                     body = refund.tx_id} {
          Ok(u) => "refund processed and customer notified",
          Err(e) => e
        },
      Err(e) => e
    },
  Err(e) => e
}
"#;

const QUERY: &str = r#"
tool query: String -{Read}-> {name: String};
match exec tool query "SELECT name FROM users" {
  Ok(r) => r.name,
  Err(e) => e
}
"#;

// ---------------------------------------------------------------------------
// --typecheck

#[test]
fn typecheck_prints_the_type_and_effects_as_lambda_tool_does() {
    let cases = [
        ("let x = 1 + 2 in x", "Int", json!([])),
        (
            r#"{name = "Alice", age = 30}"#,
            "{name: String, age: Int}",
            json!([]),
        ),
        (r#"["a", "b"]"#, "List String", json!([])),
        (REFUND, "String", json!(["Read", "Write"])),
    ];
    for (program, ty, effects) in cases {
        let out = lambda_tool(&["--json", "--typecheck"], program);
        assert_eq!(out.code, 0, "{out:#?}");
        assert_eq!(
            out.result,
            json!({"ok": true, "type": ty, "effects": effects}),
            "{program}"
        );
        assert_eq!(out.lines.len(), 1, "one line: {out:#?}");
        assert!(out.stderr.is_empty(), "{out:#?}");
    }
}

#[test]
fn errors_keep_lambda_tool_wording_then_code_position_and_hint() {
    let field = "tool lookup_account: String -{Read}-> {id: String, subscription_tier: String};\n\
                 match exec tool lookup_account \"c\" {\n  Ok(a) => a.plan,\n  Err(e) => e\n}";
    let out = lambda_tool(&["--json", "--typecheck"], field);
    assert_eq!(out.code, 1, "{out:#?}");
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert!(
        e.starts_with(
            "Field 'plan' not found in record type {id: String, subscription_tier: String} \
             [E0202 at line 3, col 14; hint: "
        ),
        "{e}"
    );
    assert!(e.ends_with(']'), "{e}");

    let cases = [
        (
            "fn token: !String => let a = token in let b = token in a",
            "Linearity violation for 'token': used 2 times (must be exactly once) [E0501 at line 1, col ",
        ),
        (
            "tool charge: {id: Int, amount: Int} -{Write}-> {tx_id: String};\n\
             match traverse (fn o: {id: Int, amount: Int} => exec tool charge o) [{id = 1, amount = 100}] {\n\
               Ok(r) => map (fn o: {id: Int, amount: Int} => exec tool charge o) [{id = 1, amount = 100}],\n\
               Err(e) => []: Result<{tx_id: String}, String>\n}",
            "Effect violation: allowed {} but got {Write} [E0401 at line 3, col ",
        ),
        ("@@invalid@@", "[E0001 at line 1, col 1; hint: "),
        ("", "[E0104 at line 1, col 1; hint: "),
        ("let x = 1 + true in x", "[E0201 at line 1, col 13; hint: "),
    ];
    for (program, expected) in cases {
        for args in [&["--json", "--typecheck"][..], &["--json"][..]] {
            let out = lambda_tool(args, program);
            assert_eq!(out.code, 1, "{out:#?}");
            let errors = out.errors();
            assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{program}: {errors:#?}"
            );
        }
    }
}

#[test]
fn a_type_mismatch_reads_as_lambda_tool_words_it() {
    // λ-Tool (the lambda-tool-python README): `Type mismatch at line 1,
    // col 9: expected Bool, got Int`, word for word; lt's own position
    // (the operand) and hint follow in the bracket.
    let cases = [
        (
            "let x = 1 + true in x",
            "Type mismatch at line 1, col 9: expected Bool, got Int [E0201 at line 1, col 13; hint: ",
        ),
        (
            "let f = fn b: Bool => b in f 1",
            "Type mismatch at line 1, col 30: expected Bool, got Int [E0201 at line 1, col 30; hint: ",
        ),
        // What lt adds follows λ-Tool's words: the path into the value, or
        // lt's more specific sentence.
        (
            "let r = {a = 1} in let g = fn x: {a: String} => x.a in g r",
            "Type mismatch at line 1, col 58: expected String, got Int (in field `a`) [E0201 at line 1, col 58",
        ),
        (
            r#"let x = "a" + "b" in x"#,
            "Type mismatch at line 1, col 13: expected Int, got String; `+` adds Ints; it cannot join Strings [E0201 at line 1, col 13; hint: join strings with `++`",
        ),
    ];
    for (program, expected) in cases {
        for args in [&["--json", "--typecheck"][..], &["--json"][..]] {
            let out = lambda_tool(args, program);
            assert_eq!(out.code, 1, "{out:#?}");
            let errors = out.errors();
            assert_eq!(errors.len(), 1, "{program}: {errors:#?}");
            assert!(errors[0].starts_with(expected), "{program}: {errors:#?}");
            assert!(errors[0].ends_with(']'), "{errors:#?}");
        }
    }
    // `lt compat` is the same program; `lt check` keeps lt's own wording.
    let out = run_with(
        LT,
        &["compat", "--json", "--typecheck"],
        "let x = 1 + true in x",
    );
    assert!(
        out.errors()[0]
            .starts_with("Type mismatch at line 1, col 9: expected Bool, got Int [E0201"),
        "{out:#?}"
    );
    let dir = TempDir::new("compat", "mismatch");
    let file = dir.write("p.lt", "let x = 1 + true in x");
    let (code, stdout, _) = lt(&["check", &file, "--json"]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("type mismatch: expected Int, found Bool"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------
// --json (no executors)

#[test]
fn a_run_without_executors_prints_the_value() {
    let cases = [
        ("let x = 1 + 2 in x", json!(3), "Int"),
        (
            r#"{name = "Alice", age = 30}"#,
            json!({"name": "Alice", "age": 30}),
            "{name: String, age: Int}",
        ),
        (
            "map (fn x: Int => x * 2) [1, 2, 3]",
            json!([2, 4, 6]),
            "List Int",
        ),
        ("()", json!(null), "Unit"),
    ];
    for (program, value, ty) in cases {
        let out = lambda_tool(&["--json"], program);
        assert_eq!(
            out.result,
            json!({"ok": true, "value": value, "type": ty, "effects": []}),
            "{out:#?}"
        );
        assert_eq!(out.code, 0);
        // `value` first, as λ-Tool documents the object.
        assert!(
            out.lines[0].starts_with(r#"{"ok":true,"value":"#),
            "{out:#?}"
        );
    }
}

#[test]
fn without_executors_every_call_is_an_err_the_program_handles() {
    let out = lambda_tool(&["--json"], QUERY);
    assert_eq!(out.value(), &json!("no executor for tool 'query'"));
    assert_eq!(out.result["effects"], json!(["Read"]));
}

#[test]
fn a_runtime_error_is_ok_false_with_its_kind_and_position() {
    let out = lambda_tool(&["--json"], "let x = 1 in\n9223372036854775807 + x");
    assert_eq!(out.code, 3, "{out:#?}");
    let errors = out.errors();
    assert!(
        errors[0].starts_with(
            "integer overflow: 9223372036854775807 + 1 [arithmetic at line 2, col 1; hint: "
        ),
        "{errors:?}"
    );
}

#[test]
fn the_call_and_step_limits_can_be_set() {
    // Without executors every call is an Err, so each Err arm calls again.
    let program = "tool t: Int -{Read}-> Int;\n\
                   match exec tool t 1 { Ok(a) => 0, Err(e1) =>\n\
                   match exec tool t 2 { Ok(b) => 0, Err(e2) =>\n\
                   match exec tool t 3 { Ok(c) => 0, Err(e3) => 1 } } }";
    let out = lambda_tool(&["--json", "--max-calls", "2"], program);
    assert_eq!(out.code, 3, "{out:#?}");
    let errors = out.errors();
    assert!(
        errors[0].contains("[call_limit at line 4") && errors[0].contains("--max-calls N"),
        "{errors:?}"
    );
    let out = lambda_tool(&["--json", "--max-steps", "5"], "1 + 2 + 3 + 4 + 5 + 6");
    assert_eq!(out.code, 3, "{out:#?}");
    assert!(out.errors()[0].contains("[step_limit"), "{out:#?}");
    let out = lambda_tool(&["--json", "--max-calls", "3"], program);
    assert_eq!(out.code, 0, "{out:#?}");
}

// ---------------------------------------------------------------------------
// usage

#[test]
fn bad_command_lines_are_ok_false_and_a_non_zero_exit() {
    let dir = TempDir::new("compat", "usage");
    let missing = dir.path("missing.ltool");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--json", "--frobnicate"],
            "unknown option `--frobnicate` [usage; hint: ",
        ),
        (
            &["--json", "--interactive"],
            "`--interactive` needs the program as a FILE",
        ),
        (
            &["--json", "--typecheck", "--interactive", "x"],
            "exclude each other",
        ),
        (
            &["--json", "--typecheck", "--log", "x.jsonl"],
            "`--log` records a run",
        ),
        (&["--json", "--interactive", &missing], "cannot read"),
    ];
    for (args, expected) in cases {
        let out = lambda_tool(args, "1");
        assert_eq!(out.code, 2, "{args:?}: {out:#?}");
        assert_eq!(out.lines.len(), 1, "{out:#?}");
        let errors = out.errors();
        assert!(errors[0].contains(expected), "{args:?}: {errors:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_reported_in_the_protocol() {
    use std::os::unix::ffi::OsStrExt;
    let out = Command::new(LAMBDA_TOOL)
        .arg(std::ffi::OsStr::from_bytes(b"--json\xff"))
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let result: Json = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(result["ok"], false);
    assert!(result["errors"][0]
        .as_str()
        .is_some_and(|e| e.contains("is not valid UTF-8")));
}

#[test]
fn lt_compat_is_the_same_program() {
    for (args, program) in [
        (&["--json", "--typecheck"][..], REFUND),
        (&["--json"][..], QUERY),
        (&["--json", "--bogus"][..], "1"),
    ] {
        let ours = lambda_tool(args, program);
        let mut compat_args = vec!["compat"];
        compat_args.extend_from_slice(args);
        let via_lt = run_with(LT, &compat_args, program);
        assert_eq!(ours.lines, via_lt.lines, "{args:?}");
        assert_eq!(ours.code, via_lt.code, "{args:?}");
    }
    let (code, help, _) = lt(&["compat", "--help"]);
    assert_eq!(code, 0);
    assert!(help.starts_with("usage: lambda_tool"), "{help}");
}

// ---------------------------------------------------------------------------
// --interactive

#[test]
fn the_host_answers_every_call() {
    let dir = TempDir::new("compat", "refund");
    let s = interactive(&dir, REFUND, &[], |tool, _| match tool {
        "lookup_account" => Answer::Ok(json!({
            "id": "acc_1", "subscription_tier": "pro", "email": "a@b.c",
            "last_charge_cents": 4999, "ignored": true
        })),
        "issue_refund" => Answer::Ok(json!({"tx_id": "tx_9"})),
        _ => Answer::Ok(json!(null)),
    });
    assert_eq!(
        s.out.result,
        json!({"ok": true, "value": "refund processed and customer notified",
               "type": "String", "effects": ["Read", "Write"]})
    );
    assert_eq!(s.out.code, 0);
    assert!(s.out.stderr.is_empty(), "{:?}", s.out.stderr);
    assert_eq!(
        s.calls,
        [
            ("lookup_account".to_string(), json!("cust_12345")),
            (
                "issue_refund".to_string(),
                json!({"account_id": "acc_1", "amount": 4999})
            ),
            (
                "send_reply".to_string(),
                json!({"to": "a@b.c", "body": "tx_9"})
            ),
        ]
    );
}

#[test]
fn a_reported_error_reaches_the_program_verbatim() {
    let dir = TempDir::new("compat", "error");
    let s = interactive(&dir, QUERY, &[], |_, _| Answer::Error("database offline"));
    assert_eq!(s.out.value(), &json!("database offline"));
    // What the Python wrapper answers for a tool it has no executor for.
    let s = interactive(&dir, QUERY, &[], |tool, _| {
        assert_eq!(tool, "query");
        Answer::Raw(vec![
            r#"{"tool_result": {"error": "no executor for tool 'query'"}}"#.into(),
        ])
    });
    assert_eq!(s.out.value(), &json!("no executor for tool 'query'"));
}

#[test]
fn a_wrong_shaped_result_is_an_err_in_the_program() {
    let dir = TempDir::new("compat", "shape");
    let s = interactive(&dir, QUERY, &[], |_, _| Answer::Ok(json!({"nom": "Alice"})));
    assert_eq!(
        s.out.value(),
        &json!("tool query returned an invalid result: field name: missing (expected String)")
    );
}

const TRAVERSE: &str = r#"
tool check: String -{Network}-> {ok: Bool};
let hosts = ["a", "b", "c"] in
match traverse (fn h: String => exec tool check h) hosts {
  Ok(results) => map (fn r: {ok: Bool} => r.ok) results,
  Err(e) => []: Bool
}
"#;

#[test]
fn traverse_calls_the_host_in_order_and_stops_at_the_first_err() {
    let dir = TempDir::new("compat", "traverse");
    let s = interactive(&dir, TRAVERSE, &[], |_, arg| {
        Answer::Ok(json!({"ok": arg != "b"}))
    });
    assert_eq!(s.out.value(), &json!([true, false, true]));
    let args: Vec<&Json> = s.calls.iter().map(|(_, a)| a).collect();
    assert_eq!(args, [&json!("a"), &json!("b"), &json!("c")]);

    let s = interactive(&dir, TRAVERSE, &[], |_, arg| {
        if arg == "b" {
            Answer::Error("host b is down")
        } else {
            Answer::Ok(json!({"ok": true}))
        }
    });
    assert_eq!(s.out.value(), &json!([]));
    assert_eq!(s.calls.len(), 2, "c is never called: {:?}", s.calls);
}

#[test]
fn a_malformed_answer_fails_its_call_and_the_next_line_answers_the_next_call() {
    let dir = TempDir::new("compat", "malformed");
    let answers = [
        // A blank line is skipped; the answer after it counts.
        vec![
            "".to_string(),
            r#"{"tool_result": {"ok": {"ok": true}}}"#.to_string(),
        ],
        vec!["this is not JSON".to_string()],
        vec![r#"{"tool_result": {"ok": 1, "error": "both"}}"#.to_string()],
    ];
    let mut n = 0;
    let s = interactive(
        &dir,
        TRAVERSE
            .replace("Err(e) => []: Bool", "Err(e) => [false, false]")
            .as_str(),
        &[],
        |_, _| {
            n += 1;
            Answer::Raw(answers[n - 1].clone())
        },
    );
    // The second answer fails its call: traverse stops there.
    assert_eq!(s.out.value(), &json!([false, false]));
    assert_eq!(s.calls.len(), 2);

    let program = r#"
tool q: Int -> String;
match exec tool q 1 {
  Ok(a) => a,
  Err(e) => match exec tool q 2 { Ok(b) => e ++ " / then " ++ b, Err(f) => f }
}"#;
    let mut n = 0;
    let s = interactive(&dir, program, &[], |_, _| {
        n += 1;
        if n == 1 {
            Answer::Raw(vec![r#"{"tool_result": "yes"}"#.into()])
        } else {
            Answer::Ok(json!("fine"))
        }
    });
    assert_eq!(
        s.out.value(),
        &json!("tool q: the host's answer is not a tool_result: `tool_result` must be an object, found a string; \
                expected {\"tool_result\": {\"ok\": …}} or {\"tool_result\": {\"error\": \"…\"}} / then fine")
    );
}

#[test]
fn a_host_that_closes_its_output_fails_the_pending_call_and_the_result_still_comes() {
    let dir = TempDir::new("compat", "closed");
    let program = r#"
tool q: Int -> String;
match exec tool q 1 {
  Ok(a) => a,
  Err(e) => match exec tool q 2 { Ok(b) => b, Err(f) => e ++ " | " ++ f }
}"#;
    let s = interactive(&dir, program, &[], |_, _| Answer::Close);
    // The second call is not written: the host is gone.
    assert_eq!(s.calls.len(), 1, "{s:#?}");
    let value = s.out.value().as_str().expect("a string").to_string();
    assert!(
        value.starts_with("tool q: the client closed its input before reporting call n")
            && value.contains(" | tool q: the client closed its input (during call n"),
        "{value}"
    );
}

#[test]
fn a_program_that_calls_no_tool_needs_no_host() {
    let dir = TempDir::new("compat", "pure");
    let s = interactive(&dir, "let x = 20 in x + 22", &[], |_, _| Answer::Close);
    assert_eq!(s.out.value(), &json!(42));
    assert!(s.calls.is_empty());
}

// ---------------------------------------------------------------------------
// the control plane under the protocol

#[test]
fn a_logged_session_verifies_and_replays_without_the_host() {
    let dir = TempDir::new("compat", "log");
    let log = dir.path("session.jsonl");
    let program = r#"
tool q: String -{Read}-> {name: String};
match traverse (fn s: String => match exec tool q s { Ok(r) => Ok(r.name), Err(e) => Ok(e) }) ["a", "b", "c"] {
  Ok(names) => names,
  Err(e) => [e]
}"#;
    let s = interactive(&dir, program, &["--log", &log], |_, arg| {
        match arg.as_str() {
            Some("a") => Answer::Ok(json!({"name": "Alice"})),
            Some("b") => Answer::Ok(json!({"nom": "Bob"})),
            _ => Answer::Raw(vec!["".into(), "garbage".into()]),
        }
    });
    let value = s.out.value().clone();
    assert_eq!(value[0], "Alice");
    assert_eq!(
        value[1],
        "tool q returned an invalid result: field name: missing (expected String)"
    );
    assert!(
        value[2].as_str().is_some_and(|v| v
            .starts_with("tool q: the host's answer is not a tool_result: the line is not JSON")),
        "{value}"
    );

    let ev = events(&log);
    let k = kinds(&ev);
    assert_eq!(k.first(), Some(&"session_started"));
    assert_eq!(k.last(), Some(&"session_ended"));
    let call = [
        "proposed",
        "decided",
        "scheduled",
        "client_dispatched",
        "client_reported",
        "completed",
    ];
    assert_eq!(k[1..7], call, "{k:?}");
    assert_eq!(k[7..13], call, "{k:?}");
    assert_eq!(k[13..16], ["proposed", "decided", "scheduled"], "{k:?}");
    assert_eq!(k[19..], ["failed", "session_ended"], "{k:?}");
    // The blank line may be read before the writer's notice that the call
    // was written: client_dispatched comes before or after it.
    let mut middle = k[16..19].to_vec();
    middle.sort_unstable();
    assert_eq!(
        middle,
        ["client_dispatched", "client_rejected", "client_rejected"],
        "{k:?}"
    );
    for e in &ev {
        match &e.body {
            EventBody::Scheduled { venue, .. } => assert_eq!(venue, "client"),
            EventBody::ClientReported { report, .. } => {
                assert!(report.get("tool_result").is_some(), "{report}")
            }
            EventBody::Completed { result, output, .. } if output.get("nom").is_some() => {
                assert!(result.get("Err").is_some(), "validated: {result}")
            }
            EventBody::Failed { failure, .. } => assert_eq!(failure, "bad_output"),
            _ => {}
        }
    }
    let reasons: Vec<String> = ev
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ClientRejected { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        reasons[0].starts_with("the line is blank; skipped"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].starts_with("the line is not JSON"),
        "{reasons:?}"
    );

    let (code, stdout, stderr) = lt(&["log", "verify", &log]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) = lt(&["replay", &log, "--json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let replay: Json = serde_json::from_str(stdout.trim()).expect("replay --json");
    assert_eq!(replay["ok"], true, "{replay}");
    assert_eq!(replay["value"], value, "{replay}");
}

#[test]
fn a_run_without_executors_is_logged_too() {
    let dir = TempDir::new("compat", "log-run");
    let log = dir.path("run.jsonl");
    let out = lambda_tool(&["--json", "--log", &log], QUERY);
    assert_eq!(out.value(), &json!("no executor for tool 'query'"));
    let ev = events(&log);
    assert_eq!(
        kinds(&ev),
        [
            "session_started",
            "proposed",
            "decided",
            "scheduled",
            "failed",
            "session_ended"
        ]
    );
    let (code, stdout, stderr) = lt(&["replay", &log]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn the_profile_decides_before_the_host_sees_a_call() {
    let dir = TempDir::new("compat", "profile");
    let profile = dir.write(
        "profile.toml",
        "[profile]\nname = \"readonly\"\neffects = [\"Read\"]\n",
    );
    let log = dir.path("session.jsonl");
    let s = interactive(
        &dir,
        REFUND,
        &["--profile", &profile, "--log", &log],
        |tool, _| {
            assert_eq!(tool, "lookup_account", "a Write tool reached the host");
            Answer::Ok(
                json!({"id": "acc_1", "subscription_tier": "pro", "email": "a@b.c", "last_charge_cents": 10}),
            )
        },
    );
    let value = s.out.value().as_str().expect("string").to_string();
    assert!(
        value.starts_with("denied: effects: tool issue_refund performs {Write}"),
        "{value}"
    );
    assert_eq!(s.calls.len(), 1);
    let (code, stdout, stderr) = lt(&["replay", &log]);
    assert_eq!(code, 0, "{stdout}{stderr}");

    // --typecheck --profile rejects the call sites the profile would deny.
    let out = lambda_tool(&["--json", "--typecheck", "--profile", &profile], REFUND);
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.errors().iter().any(|e| e.contains("[E0703 at line ")),
        "{out:#?}"
    );

    let bad = dir.write("bad.toml", "[profile]\nbogus = 1\n");
    let out = lambda_tool(&["--json", "--profile", &bad], QUERY);
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.errors()[0].contains("[profile in "), "{out:#?}");
}

#[test]
fn a_profile_timeout_fails_the_call_and_its_late_answer_is_skipped() {
    let dir = TempDir::new("compat", "timeout");
    let profile = dir.write(
        "profile.toml",
        "[profile]\n[profile.tools.q]\ntimeout_ms = 200\n",
    );
    // Only q has a timeout; r waits as long as the host takes.
    let program = r#"
tool q: Int -> String;
tool r: Int -> String;
match exec tool q 1 {
  Ok(a) => a,
  Err(e) => match exec tool r 2 { Ok(b) => e ++ " / " ++ b, Err(f) => f }
}"#;
    let s = interactive(&dir, program, &["--profile", &profile], |_, arg| {
        if arg == 1 {
            // Answered after lt gave up: this line answers call 1, late.
            std::thread::sleep(Duration::from_millis(600));
            Answer::Ok(json!("late"))
        } else {
            Answer::Ok(json!("second"))
        }
    });
    let value = s.out.value().as_str().expect("string").to_string();
    assert!(
        value
            .starts_with("tool q timed out after 200 ms waiting for the client's report of call n")
            && value.ends_with(" / second"),
        "{value}"
    );
}

// ---------------------------------------------------------------------------
// answers written in advance; the result line not written

#[test]
fn answers_written_in_advance_answer_the_calls_in_order() {
    let dir = TempDir::new("compat", "in-advance");
    let file = dir.write(
        "li.ltool",
        r#"tool q: String -> {name: String};
let a = match exec tool q "1" { Ok(r) => r.name, Err(e) => e } in
let b = match exec tool q "2" { Ok(r) => r.name, Err(e) => e } in
a ++ "|" ++ b"#,
    );
    let answers = "{\"tool_result\":{\"ok\":{\"name\":\"A\"}}}\n\
                   {\"tool_result\":{\"ok\":{\"name\":\"B\"}}}\n";
    for round in 0..50 {
        let out = lambda_tool(&["--json", "--interactive", &file], answers);
        assert_eq!(out.value(), &json!("A|B"), "round {round}: {out:#?}");
        assert!(out.stderr.is_empty(), "{out:#?}");
    }
}

#[test]
fn a_host_that_closes_stdout_before_the_result_line_gets_exit_2_and_no_stderr() {
    let dir = TempDir::new("compat", "early-close");
    let file = dir.write(
        "big.ltool",
        &format!("tool q: String -> String;\n\"{}\"", "x".repeat(200 * 1024)),
    );
    let mut child = Command::new(LAMBDA_TOOL)
        .args(["--json", "--interactive", &file])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lambda_tool");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut stdout, &mut first).expect("the line begins");
    drop(stdout);
    let status = child.wait().expect("wait for lambda_tool");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(2));
    assert_eq!(stderr, "");
}
