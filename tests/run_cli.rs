//! `lt run` end to end: the binary, real subprocess tools (the scripts in
//! `tests/tools/` and `tests/run/`), `tools.toml` files written to a fresh
//! temporary folder per test. Exit codes: 0 ok, 1 rejected by the checker,
//! 2 usage or configuration, 3 run stopped.

use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const LT: &str = env!("CARGO_BIN_EXE_lt");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/tools/NAME` as an absolute path.
fn tool_script(name: &str) -> String {
    repo()
        .join("tests")
        .join("tools")
        .join(name)
        .display()
        .to_string()
}

/// `tests/run/NAME` as an absolute path.
fn run_script(name: &str) -> String {
    repo()
        .join("tests")
        .join("run")
        .join(name)
        .display()
        .to_string()
}

/// A fresh folder under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("lt-run-cli-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// Writes `file` and returns its path as a string.
    fn write(&self, file: &str, text: &str) -> String {
        let p = self.path(file);
        std::fs::write(&p, text).expect("write temp file");
        p.display().to_string()
    }

    /// The lines of a log written by the `tests/run` scripts (none if the
    /// file does not exist: no call was made).
    fn log(&self, file: &str) -> Vec<String> {
        match std::fs::read_to_string(self.path(file)) {
            Ok(s) => s.lines().map(str::to_string).collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sets the execute bits of `path`.
fn make_executable(path: &str) {
    let mut perms = std::fs::metadata(path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// A TOML literal string (no escapes needed for our paths).
fn lit(s: &str) -> String {
    assert!(!s.contains('\''), "path with a quote: {s}");
    format!("'{s}'")
}

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Out {
    fn json(&self) -> Json {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// Runs `lt ARGS` in `cwd` with `stdin` as its standard input.
fn lt_in(cwd: &Path, args: &[&str], stdin: &str) -> Out {
    let started = Instant::now();
    let mut child = Command::new(LT)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt");
    {
        let mut input = child.stdin.take().expect("stdin");
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for lt");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Runs `lt run PROGRAM --executors TOOLS ARGS…` in `dir`, both files written there.
fn run_prog(dir: &TempDir, program: &str, tools: Option<&str>, extra: &[&str]) -> Out {
    let prog = dir.write("prog.lt", program);
    let mut args = vec!["run".to_string(), prog];
    if let Some(t) = tools {
        args.push("--executors".into());
        args.push(dir.write("tools.toml", t));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lt_in(&dir.0, &args, "")
}

/// `[tools.NAME]` running `python3 SCRIPT ARGS…`, logging to `log` in `dir`.
fn command_tool(dir: &TempDir, name: &str, script: &str, args: &[&str], log: &str) -> String {
    let mut cmd = vec![lit("python3"), lit(script)];
    cmd.extend(args.iter().map(|a| lit(a)));
    format!(
        "[tools.{name}]\ncommand = [{}]\nenv = {{ LT_LOG = {} }}\n",
        cmd.join(", "),
        lit(&dir.path(log).display().to_string())
    )
}

/// A program whose value is the tool's `Err` message (or "OK: …").
fn err_arm_program(ty: &str) -> String {
    format!(
        "tool t: Unit -{{Read}}-> {ty};\n\
         match exec tool t () {{ Ok(v) => \"OK\", Err(e) => e }}\n"
    )
}

/// The program's value as printed by `--json`; asserts exit 0.
fn json_value(out: &Out) -> Json {
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["ok"], json!(true), "{out:?}");
    j["value"].clone()
}

// ---------------------------------------------------------------------------
// Success
// ---------------------------------------------------------------------------

#[test]
fn a_program_runs_and_prints_its_value() {
    let dir = TempDir::new("ok");
    let out = run_prog(
        &dir,
        "tool get: Int -{Read}-> {a: Int};\n\
         match exec tool get 5 { Ok(r) => {n = r.a + 1, s = \"x\", l = [true]}, \
                                 Err(e) => {n = 0, s = e, l = []} }\n",
        Some("[tools.get]\nfixed = { ok = { a = 1, extra = \"dropped\" } }\n"),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "{n = 2, s = \"x\", l = [true]}\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn json_output_on_success() {
    let dir = TempDir::new("json-ok");
    let out = run_prog(
        &dir,
        "tool get: Int -{Read}-> {a: Int};\n\
         tool put: Int -{Write}-> Unit;\n\
         match exec tool get 5 { Ok(r) => match exec tool put r.a { Ok(u) => [r.a, 2], Err(e) => [] }, \
                                 Err(e) => [] }\n",
        Some(
            "[tools.get]\nfixed = { ok = { a = 1 } }\n\
             [tools.put]\nfixed = { ok = {} }\n",
        ),
        &["--json"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    let steps = j["steps"].as_u64().expect("steps");
    assert!(steps > 0);
    assert_eq!(
        j,
        json!({
            "ok": true,
            "value": [1, 2],
            "type": "List Int",
            "effects": ["Read", "Write"],
            "calls": 2,
            "steps": steps,
        })
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn json_value_encoding() {
    let dir = TempDir::new("json-enc");
    let out = run_prog(
        &dir,
        r#"{s = "a\"b", n = -3, u = (), b = false, l = [[1], []], r = {x = "y"}}"#,
        None,
        &["--json"],
    );
    assert_eq!(
        json_value(&out),
        json!({"s": "a\"b", "n": -3, "u": null, "b": false, "l": [[1], []], "r": {"x": "y"}})
    );
    assert_eq!(
        out.json()["type"],
        json!("{s: String, n: Int, u: Unit, b: Bool, l: List List Int, r: {x: String}}")
    );
    assert_eq!(out.json()["effects"], json!([]));
    assert_eq!(out.json()["calls"], json!(0));
}

#[test]
fn command_tool_gets_the_argument_json_on_stdin() {
    let dir = TempDir::new("arg");
    let tools = command_tool(
        &dir,
        "t",
        &run_script("reply.py"),
        &["{\"id\": \"tx_9\", \"more\": 1}"],
        "log",
    );
    let out = run_prog(
        &dir,
        "tool t: {name: String, tags: List String, n: Int, nothing: Unit, inner: {ok: Bool}} -{Write}-> {id: String};\n\
         match exec tool t {name = \"Ada\", tags = [\"a\", \"b\"], n = -1, nothing = (), inner = {ok = true}} {\n\
           Ok(r) => r.id, Err(e) => e }\n",
        Some(&tools),
        &["--json"],
    );
    assert_eq!(json_value(&out), json!("tx_9"));
    let log = dir.log("log");
    assert_eq!(log.len(), 1, "{log:?}");
    let arg: Json = serde_json::from_str(&log[0]).expect("argument JSON");
    assert_eq!(
        arg,
        json!({"name": "Ada", "tags": ["a", "b"], "n": -1, "nothing": null, "inner": {"ok": true}})
    );
}

#[test]
fn traverse_calls_a_command_tool_per_element_in_order() {
    let dir = TempDir::new("traverse");
    let tools = command_tool(&dir, "double", &run_script("double.py"), &[], "log");
    let program = |xs: &str| {
        format!(
            "tool double: Int -{{Read}}-> Int;\n\
             match traverse (fn x: Int => exec tool double x) {xs} {{\n\
               Ok(ys) => ys, Err(e) => [] }}\n"
        )
    };
    let out = run_prog(&dir, &program("[3, 1, 2]"), Some(&tools), &["--json"]);
    assert_eq!(json_value(&out), json!([6, 2, 4]));
    assert_eq!(out.json()["calls"], json!(3));
    assert_eq!(dir.log("log"), ["3", "1", "2"]);
}

#[test]
fn traverse_stops_at_the_first_failing_command() {
    let dir = TempDir::new("traverse-err");
    let tools = command_tool(&dir, "double", &run_script("double.py"), &[], "log");
    let out = run_prog(
        &dir,
        "tool double: Int -{Read}-> Int;\n\
         match traverse (fn x: Int => exec tool double x) [1, -2, 3] {\n\
           Ok(ys) => \"all ok\", Err(e) => e }\n",
        Some(&tools),
        &["--json"],
    );
    assert_eq!(
        json_value(&out),
        json!("tool double failed (exit status 4): negative: -2")
    );
    assert_eq!(out.json()["calls"], json!(2));
    assert_eq!(dir.log("log"), ["1", "-2"], "3 is never sent");
}

#[test]
fn program_from_stdin() {
    let dir = TempDir::new("stdin");
    let tools = dir.write("tools.toml", "[tools.get]\nfixed = { ok = \"hello\" }\n");
    let out = lt_in(
        &dir.0,
        &["run", "-", "--executors", &tools],
        "tool get: Unit -{Read}-> String;\nmatch exec tool get () { Ok(s) => s ++ \"!\", Err(e) => e }\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "\"hello!\"\n");
    // A pure program needs no executors, nor does a declared, uncalled tool.
    let out = lt_in(&dir.0, &["run", "-"], "let x = 6 in x * 7");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "42\n");
    let out = lt_in(
        &dir.0,
        &["run", "-", "--timeout-ms", "0"],
        "tool never: Int -{Write}-> Int;\n\"unused\"",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "\"unused\"\n");
}

#[test]
fn relative_command_paths_resolve_from_the_tools_toml_folder() {
    let dir = TempDir::new("relative");
    std::fs::create_dir_all(dir.path("bin")).expect("mkdir");
    let script = dir.write(
        "bin/tool.sh",
        "#!/bin/sh\ncat > /dev/null\necho '\"from the script\"'\n",
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let tools = dir.write("tools.toml", "[tools.t]\ncommand = [\"./bin/tool.sh\"]\n");
    let prog = dir.write("prog.lt", &err_arm_program("String").replace("\"OK\"", "v"));
    // lt runs in `/`, not in the folder of tools.toml.
    let out = lt_in(Path::new("/"), &["run", &prog, "--executors", &tools], "");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "\"from the script\"\n");
}

// ---------------------------------------------------------------------------
// Tool failures reach the program's Err arm (exit 0)
// ---------------------------------------------------------------------------

#[test]
fn crashing_tool() {
    let dir = TempDir::new("segv");
    let tools = format!(
        "[tools.t]\ncommand = ['python3', {}]\n",
        lit(&tool_script("segv.py"))
    );
    let out = run_prog(&dir, &err_arm_program("Unit"), Some(&tools), &["--json"]);
    assert_eq!(
        json_value(&out),
        json!("tool t crashed (signal 11, SIGSEGV): about to crash")
    );
}

#[test]
fn hanging_tool_times_out() {
    let dir = TempDir::new("hang");
    let pidfile = dir.path("pid").display().to_string();
    let tools = format!(
        "[tools.t]\ncommand = ['python3', {}, {}]\ntimeout_ms = 2000\n",
        lit(&tool_script("sleep.py")),
        lit(&pidfile)
    );
    // 2 s: long enough for Python to start and write its pid on a loaded
    // machine, far shorter than the script's 30 s sleep.
    let out = run_prog(&dir, &err_arm_program("{}"), Some(&tools), &["--json"]);
    assert_eq!(json_value(&out), json!("tool t timed out after 2000 ms"));
    assert!(
        out.elapsed < Duration::from_secs(10),
        "the 30 s sleep was cut short: {:?}",
        out.elapsed
    );
    // The process was started (it wrote its pid) and then killed.
    let pid = std::fs::read_to_string(&pidfile).expect("the tool ran");
    #[cfg(target_os = "linux")]
    {
        // Gone, or (reaped by nobody yet) a zombie: not sleeping any more.
        // A short bounded wait lets the SIGKILL be delivered.
        let status = format!("/proc/{}/status", pid.trim());
        let gone = || match std::fs::read_to_string(&status) {
            Err(_) => true,
            Ok(s) => s.contains("State:\tZ"),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !gone() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            gone(),
            "the timed-out tool still runs: {}",
            std::fs::read_to_string(&status).unwrap_or_default()
        );
    }
}

#[test]
fn tool_printing_garbage() {
    let dir = TempDir::new("garbage");
    let tools = format!(
        "[tools.t]\ncommand = ['python3', {}]\n",
        lit(&tool_script("garbage.py"))
    );
    let out = run_prog(&dir, &err_arm_program("Int"), Some(&tools), &["--json"]);
    let msg = json_value(&out);
    let msg = msg.as_str().expect("a string");
    assert!(
        msg.starts_with("tool t returned output that is not JSON: "),
        "{msg}"
    );
    assert!(msg.contains("this is not json"), "quotes the output: {msg}");
    assert!(msg.contains("warning: deprecated"), "quotes stderr: {msg}");
}

#[test]
fn tool_returning_the_wrong_shape() {
    let dir = TempDir::new("shape");
    let tools = command_tool(
        &dir,
        "t",
        &run_script("reply.py"),
        &["{\"a\": \"x\", \"b\": 1}"],
        "log",
    );
    let out = run_prog(
        &dir,
        &err_arm_program("{a: Int, b: Int}"),
        Some(&tools),
        &["--json"],
    );
    assert_eq!(
        json_value(&out),
        json!("tool t returned an invalid result: field a: expected Int, found String")
    );
    let tools = command_tool(&dir, "t", &run_script("reply.py"), &["{\"b\": 1}"], "log");
    let out = run_prog(
        &dir,
        &err_arm_program("{a: Int, b: Int}"),
        Some(&tools),
        &["--json"],
    );
    assert_eq!(
        json_value(&out),
        json!("tool t returned an invalid result: field a: missing (expected Int)")
    );
    // Extra fields are fine.
    let tools = command_tool(
        &dir,
        "t",
        &run_script("reply.py"),
        &["{\"a\": 1, \"b\": 2, \"c\": 3}"],
        "log",
    );
    let out = run_prog(
        &dir,
        &err_arm_program("{a: Int, b: Int}"),
        Some(&tools),
        &["--json"],
    );
    assert_eq!(json_value(&out), json!("OK"));
}

#[test]
fn tool_exiting_non_zero_with_stderr() {
    let dir = TempDir::new("fail");
    let tools = format!(
        "[tools.t]\ncommand = ['python3', {}]\n",
        lit(&tool_script("fail.py"))
    );
    let out = run_prog(&dir, &err_arm_program("Int"), Some(&tools), &["--json"]);
    assert_eq!(
        json_value(&out),
        json!("tool t failed (exit status 3): card declined")
    );
    // Human output: the string, exit 0.
    let out = run_prog(&dir, &err_arm_program("Int"), Some(&tools), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "\"tool t failed (exit status 3): card declined\"\n"
    );
}

#[test]
fn tool_that_cannot_start() {
    let dir = TempDir::new("nostart");
    // A missing program is a configuration error: reported before anything runs.
    let tools = "[tools.t]\ncommand = ['./no-such-program']\n";
    let out = run_prog(&dir, &err_arm_program("Int"), Some(tools), &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("tools.toml:2:12: tool t: the program `./no-such-program`"),
        "{}",
        out.stderr
    );
    // A script whose interpreter is missing can only fail when started: the
    // program gets the failure as an Err.
    make_executable(&dir.write("broken.sh", "#!/no/such/interpreter\necho 1\n"));
    let tools = "[tools.t]\ncommand = ['./broken.sh']\n";
    let out = run_prog(&dir, &err_arm_program("Int"), Some(tools), &["--json"]);
    let msg = json_value(&out);
    let msg = msg.as_str().expect("a string");
    assert!(msg.starts_with("tool t could not be started: "), "{msg}");
}

#[test]
fn fixed_error_and_sequence() {
    let dir = TempDir::new("fixed");
    let program = "tool t: Unit -{Read}-> Int;\n\
                   match traverse (fn u: Unit => exec tool t u) [(), (), (), ()] {\n\
                     Ok(xs) => \"ok\", Err(e) => e }\n";
    let out = run_prog(
        &dir,
        program,
        Some("[tools.t]\nfixed = { error = \"mailbox full\" }\n"),
        &["--json"],
    );
    assert_eq!(json_value(&out), json!("tool t failed: mailbox full"));
    let out = run_prog(
        &dir,
        program,
        Some("[tools.t]\nfixed = { sequence = [ { ok = 1 }, { ok = 2 } ] }\n"),
        &["--json"],
    );
    assert_eq!(
        json_value(&out),
        json!("tool t: fixed sequence exhausted after 2 calls")
    );
    assert_eq!(out.json()["calls"], json!(3));
}

// ---------------------------------------------------------------------------
// --verbose
// ---------------------------------------------------------------------------

#[test]
fn verbose_says_when_a_result_fails_validation() {
    let dir = TempDir::new("verbose-invalid");
    let out = run_prog(
        &dir,
        "tool t: Unit -{Read}-> {id: String};\n\
         match exec tool t () { Ok(r) => r.id, Err(e) => e }\n",
        Some("[tools.t]\nfixed = { ok = \"just a string\" }\n"),
        &["--verbose"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "\"tool t returned an invalid result: expected {id: String}, found String\"\n"
    );
    assert!(
        out.stderr.contains("→ invalid result in")
            && out.stderr.contains("expected {id: String}, found String"),
        "{}",
        out.stderr
    );
}

#[test]
fn verbose_prints_one_line_per_call() {
    let dir = TempDir::new("verbose");
    let tools = command_tool(&dir, "double", &run_script("double.py"), &[], "log");
    let out = run_prog(
        &dir,
        "tool double: Int -{Read}-> Int;\n\
         tool note: String -{Write}-> Unit;\n\
         match traverse (fn x: Int => exec tool double x) [1, 2, 3] {\n\
           Ok(ys) => match exec tool note \"done\" { Ok(u) => ys, Err(e) => [] },\n\
           Err(e) => [] }\n",
        Some(&(tools + "[tools.note]\nfixed = { error = \"disk full\" }\n")),
        &["--verbose"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "[]\n");
    let lines: Vec<&str> = out.stderr.lines().collect();
    let calls: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("[lt] call "))
        .collect();
    assert_eq!(calls.len(), 4, "{}", out.stderr);
    for (i, (l, (arg, result))) in calls
        .iter()
        .zip([
            ("1", "→ ok in"),
            ("2", "→ ok in"),
            ("3", "→ ok in"),
            ("\"done\"", "→ failed in"),
        ])
        .enumerate()
    {
        assert!(l.starts_with(&format!("[lt] call {} n", i + 1)), "{l}");
        assert!(l.contains(&format!(" {arg} {result}")), "{l}");
    }
    assert!(calls[0].contains(" double "), "{}", calls[0]);
    assert!(calls[2].ends_with(": 6"), "{}", calls[2]);
    assert!(calls[3].contains(" note "), "{}", calls[3]);
    assert!(
        calls[3].ends_with(": tool note failed: disk full"),
        "{}",
        calls[3]
    );
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("[lt] done: 4 tool calls, ")),
        "{}",
        out.stderr
    );
    assert_eq!(lines.len(), 5, "{}", out.stderr);
    // The three traverse calls have distinct identities.
    let ids: std::collections::BTreeSet<&str> = calls[..3]
        .iter()
        .map(|l| l.split(' ').nth(3).unwrap_or(""))
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
}

#[test]
fn without_verbose_stderr_is_quiet() {
    let dir = TempDir::new("quiet");
    let out = run_prog(
        &dir,
        &err_arm_program("Int"),
        Some("[tools.t]\nfixed = { ok = 1 }\n"),
        &[],
    );
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, "\"OK\"\n");
    assert_eq!(out.stderr, "");
}

// ---------------------------------------------------------------------------
// Exit 1: rejected by the checker, nothing runs
// ---------------------------------------------------------------------------

const MARKED_BAD: &str = "tool t: Unit -{Write}-> {id: String};\n\
     match exec tool t () { Ok(r) => r.plan, Err(e) => e }\n";

#[test]
fn checker_rejection_exits_1_and_runs_nothing() {
    let dir = TempDir::new("reject");
    let tools = command_tool(
        &dir,
        "t",
        &run_script("reply.py"),
        &["{\"id\": \"x\"}"],
        "marker",
    );
    let out = run_prog(&dir, MARKED_BAD, Some(&tools), &["--color", "never"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("E0202"), "{}", out.stderr);
    assert!(out.stderr.contains("plan"), "{}", out.stderr);
    assert!(!dir.path("marker").exists(), "the tool ran");
    let out = run_prog(&dir, MARKED_BAD, Some(&tools), &["--json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let j = out.json();
    assert_eq!(j["ok"], json!(false));
    assert_eq!(j["stage"], json!("check"));
    assert_eq!(j["diagnostics"][0]["code"], json!("E0202"));
    assert_eq!(j["diagnostics"][0]["line"], json!(2));
    assert!(!dir.path("marker").exists(), "the tool ran");
}

#[test]
fn unhandled_result_is_rejected() {
    let dir = TempDir::new("unhandled");
    let tools = command_tool(&dir, "t", &run_script("reply.py"), &["1"], "marker");
    let out = run_prog(
        &dir,
        "tool t: Unit -{Write}-> Int;\nexec tool t ()\n",
        Some(&tools),
        &["--json"],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.json()["diagnostics"][0]["code"], json!("E0602"));
    assert!(!dir.path("marker").exists(), "the tool ran");
}

// ---------------------------------------------------------------------------
// Exit 2: usage and configuration
// ---------------------------------------------------------------------------

#[test]
fn a_tool_without_executor_is_reported_before_anything_runs() {
    let dir = TempDir::new("missing");
    let tools = command_tool(&dir, "first", &run_script("reply.py"), &["1"], "marker");
    let program = "tool first: Unit -{Write}-> Int;\n\
                   tool second: Int -{Write}-> Int;\n\
                   tool unused: Int -{Write}-> Int;\n\
                   match exec tool first () {\n\
                     Ok(n) => match exec tool second n { Ok(m) => m, Err(e) => 0 },\n\
                     Err(e) => 0 }\n";
    let out = run_prog(&dir, program, Some(&tools), &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .contains("has no executor for tool `second`, which the program calls"),
        "{}",
        out.stderr
    );
    // The location is the call site of `second` in the program (line 5).
    assert!(out.stderr.contains("prog.lt:5:16:"), "{}", out.stderr);
    assert!(out.stderr.contains("[tools.second]"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("unused"),
        "a declared but uncalled tool needs no executor: {}",
        out.stderr
    );
    assert!(!dir.path("marker").exists(), "the first tool ran");
    let out = run_prog(&dir, program, Some(&tools), &["--json"]);
    assert_eq!(out.code, 2, "{out:?}");
    let j = out.json();
    assert_eq!(j["ok"], json!(false));
    assert_eq!(j["stage"], json!("executors"));
    assert_eq!(j["error"]["kind"], json!("missing_executor"));
    assert!(
        j["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("second")),
        "{j}"
    );
    assert_eq!(j["error"]["line"], json!(5));
    assert_eq!(j["error"]["column"], json!(16));
    assert!(
        j["error"]["help"]
            .as_str()
            .is_some_and(|h| h.contains("[tools.second]")),
        "{j}"
    );
    assert!(!dir.path("marker").exists(), "the first tool ran");
}

#[test]
fn several_missing_tools_are_all_named() {
    let dir = TempDir::new("missing2");
    let out = run_prog(
        &dir,
        "tool a: Unit -{Read}-> Int;\ntool b: Unit -{Read}-> Int;\n\
         match exec tool a () { Ok(x) => match exec tool b () { Ok(y) => x + y, Err(e) => 0 }, Err(e) => 0 }\n",
        Some("[tools.other]\nfixed = { ok = 1 }\n"),
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("has no executor for tools `a`, `b`, which the program calls"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_tool_call_without_executors_file() {
    let dir = TempDir::new("noexec");
    let out = run_prog(&dir, &err_arm_program("Int"), None, &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("the program calls `t` but no executors were given"),
        "{}",
        out.stderr
    );
}

#[test]
fn invalid_tools_toml() {
    let dir = TempDir::new("badtoml");
    for (toml, expect) in [
        (
            "[tools.t]\ncomand = [\"x\"]\n",
            "tools.toml:2:1: tool t: unknown field `comand`",
        ),
        (
            "[tools.t]\ncommand = [\"x\"]\ntimeout_ms = 0\n",
            "tools.toml:3:14: tool t: timeout_ms must be a positive number of milliseconds",
        ),
        (
            "[tools.t]\ncommand = [\"x\"]\nfixed = { ok = 1 }\n",
            "tools.toml:1:1: tool t: give exactly one of command, http, fixed or mcp (found command and fixed)",
        ),
        ("[tools.t]\ncommand = []\n", "tools.toml:2:11: tool t: `command` is empty"),
        ("[tools.t\n", "tools.toml:1:"),
    ] {
        let out = run_prog(&dir, &err_arm_program("Int"), Some(toml), &[]);
        assert_eq!(out.code, 2, "{toml}: {out:?}");
        assert_eq!(out.stdout, "", "{toml}");
        assert!(out.stderr.contains(expect), "{toml}: {}", out.stderr);
    }
    let out = run_prog(
        &dir,
        &err_arm_program("Int"),
        Some("[tools.t]\ncomand = [\"x\"]\n"),
        &["--json"],
    );
    assert_eq!(out.code, 2);
    let j = out.json();
    assert_eq!(j["stage"], json!("executors"));
    assert_eq!(j["error"]["kind"], json!("config"));
    assert!(
        j["error"]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("tools.toml")),
        "{j}"
    );
    assert_eq!(j["error"]["line"], json!(2));
    assert_eq!(j["error"]["column"], json!(1));
    assert!(
        j["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field `comand`")),
        "{j}"
    );
}

#[test]
fn missing_tools_toml_and_missing_program() {
    let dir = TempDir::new("nofile");
    let prog = dir.write("prog.lt", "1");
    let out = lt_in(
        &dir.0,
        &["run", &prog, "--executors", "no-such-tools.toml"],
        "",
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no-such-tools.toml"), "{}", out.stderr);
    let out = lt_in(&dir.0, &["run", "no-such-program.lt"], "");
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no-such-program.lt"), "{}", out.stderr);
    let out = lt_in(&dir.0, &["run", "no-such-program.lt", "--json"], "");
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.json()["stage"], json!("input"));
    // Bad flags are usage errors too.
    let out = lt_in(&dir.0, &["run", &prog, "--max-calls", "many"], "");
    assert_eq!(out.code, 2, "{out:?}");
}

// ---------------------------------------------------------------------------
// Exit 3: the run stopped
// ---------------------------------------------------------------------------

#[test]
fn max_calls_stops_a_traverse() {
    let dir = TempDir::new("maxcalls");
    let tools = command_tool(&dir, "double", &run_script("double.py"), &[], "log");
    let program = "tool double: Int -{Read}-> Int;\n\
                   match traverse (fn x: Int => exec tool double x) [1, 2, 3, 4, 5] {\n\
                     Ok(ys) => ys, Err(e) => [] }\n";
    let out = run_prog(&dir, program, Some(&tools), &["--max-calls", "2"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .contains("error[run]: tool call limit of 2 reached before calling double"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("prog.lt:2:30"), "{}", out.stderr);
    assert!(
        out.stderr.contains("raise the limit with --max-calls N"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("stopped (call_limit) after 2 tool calls"),
        "{}",
        out.stderr
    );
    assert_eq!(dir.log("log"), ["1", "2"], "the third call was not made");
    let out = run_prog(&dir, program, Some(&tools), &["--max-calls", "2", "--json"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(
        out.json(),
        json!({
            "ok": false,
            "stage": "run",
            "error": {
                "kind": "call_limit",
                "message": "tool call limit of 2 reached before calling double",
                "line": 2,
                "column": 30,
                "help": "raise the limit with --max-calls N",
            },
            "calls": 2,
            "steps": out.json()["steps"],
        })
    );
}

#[test]
fn integer_overflow_exits_3() {
    let dir = TempDir::new("overflow");
    let program = "let d = 1 in\nlet n = 9223372036854775807 in\nn + d\n";
    let out = run_prog(&dir, program, None, &["--json"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(
        out.json(),
        json!({
            "ok": false,
            "stage": "run",
            "error": {
                "kind": "arithmetic",
                "message": "integer overflow: 9223372036854775807 + 1",
                "line": 3,
                "column": 1,
                "help": "the result does not fit in an Int (-9223372036854775808 to 9223372036854775807); keep the numbers smaller, e.g. work in larger units",
            },
            "calls": 0,
            "steps": out.json()["steps"],
        })
    );
    let out = run_prog(&dir, program, None, &[]);
    assert_eq!(out.code, 3);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("error[run]: integer overflow"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("prog.lt:3:1"), "{}", out.stderr);
    assert!(out.stderr.contains("| n + d"), "{}", out.stderr);
}

#[test]
fn division_by_zero_is_zero() {
    let dir = TempDir::new("div0");
    let out = run_prog(
        &dir,
        "let d = 0 in\nlet n = 10 in\n1 + n / d + n % d\n",
        None,
        &["--json"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["value"], json!(1));
}

#[test]
fn max_steps_exits_3() {
    let dir = TempDir::new("steps");
    let out = run_prog(
        &dir,
        "fold (fn a: Int => fn x: Int => a + x) 0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
        None,
        &["--max-steps", "20", "--json"],
    );
    assert_eq!(out.code, 3, "{out:?}");
    let j = out.json();
    assert_eq!(j["error"]["kind"], json!("step_limit"));
    assert_eq!(j["error"]["message"], json!("step limit of 20 exceeded"));
    assert!(j["steps"].as_u64().is_some_and(|s| s > 20), "{j}");
}

#[test]
fn timeout_ms_exits_3() {
    let dir = TempDir::new("timeout");
    // A tool sleeping 30 s against a run limit of 300 ms: the call is cut
    // short by the run's deadline and the run stops.
    let pidfile = dir.path("pid").display().to_string();
    let tools = format!(
        "[tools.t]\ncommand = ['python3', {}, {}]\n",
        lit(&tool_script("sleep.py")),
        lit(&pidfile)
    );
    let out = run_prog(
        &dir,
        &err_arm_program("{}"),
        Some(&tools),
        &["--timeout-ms", "300", "--json"],
    );
    assert_eq!(out.code, 3, "{out:?}");
    let j = out.json();
    assert_eq!(j["error"]["kind"], json!("timeout"));
    assert_eq!(
        j["error"]["message"],
        json!("the run exceeded its time limit of 300 ms")
    );
    assert_eq!(j["calls"], json!(1));
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
}

#[test]
fn max_list_len_on_a_tool_result_is_an_err_value() {
    let dir = TempDir::new("listlen");
    let tools = "[tools.t]\nfixed = { ok = [1, 2, 3, 4, 5] }\n";
    let out = run_prog(
        &dir,
        &err_arm_program("List Int"),
        Some(tools),
        &["--max-list-len", "3", "--json"],
    );
    assert_eq!(
        json_value(&out),
        json!("tool t returned an invalid result: a list of 5 items, more than the limit of 3")
    );
    let out = run_prog(
        &dir,
        &err_arm_program("List Int"),
        Some(tools),
        &["--max-list-len", "5", "--json"],
    );
    assert_eq!(json_value(&out), json!("OK"));
}

#[test]
fn overflow_exits_3_with_position() {
    let dir = TempDir::new("overflow");
    let out = run_prog(
        &dir,
        "let big = 9223372036854775807 in\nbig * 2\n",
        None,
        &["--json"],
    );
    assert_eq!(out.code, 3, "{out:?}");
    let j = out.json();
    assert_eq!(j["error"]["kind"], json!("arithmetic"));
    assert_eq!(
        j["error"]["message"],
        json!("integer overflow: 9223372036854775807 * 2")
    );
    assert_eq!(
        (j["error"]["line"].clone(), j["error"]["column"].clone()),
        (json!(2), json!(1))
    );
}

#[test]
fn sigterm_to_lt_stops_the_running_tool() {
    let dir = TempDir::new("sigterm");
    // The tool records its pid, then hangs.
    let script = dir.write(
        "hang.sh",
        "#!/bin/sh\necho $$ > \"$1\"\nwhile :; do sleep 1; done\n",
    );
    make_executable(&script);
    let pidfile = dir.path("pid").display().to_string();
    let tools = dir.write(
        "tools.toml",
        &format!(
            "[tools.t]\ncommand = [{}, {}]\n",
            lit(&script),
            lit(&pidfile)
        ),
    );
    let prog = dir.write("prog.lt", &err_arm_program("Int"));
    let child = Command::new(LT)
        .args(["run", &prog, "--executors", &tools])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt");
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        if let Ok(p) = std::fs::read_to_string(&pidfile) {
            if let Ok(p) = p.trim().parse::<u32>() {
                break p;
            }
        }
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(143), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("interrupted by SIGTERM; stopped 1 running tool"),
        "{stderr}"
    );
    // The tool is gone (give the kernel a moment to reap it).
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
    if !gone {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(gone, "tool process {pid} survived lt");
}
