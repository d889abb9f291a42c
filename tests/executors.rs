//! The executors of `tools.toml` against real processes and a real HTTP
//! server (the scripts in `tests/tools/`). No mocks.

use lt::exec::{ConfigError, ExecutorHost, Registry};
use lt::runtime::host::{CallId, CallRequest, FailureKind, Host, Outcome};
use serde_json::{json, Value as Json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("tools")
}

/// A host over a registry whose folder is `tests/tools`, with its own
/// multi-thread runtime. The host is dropped before the runtime.
struct Fixture {
    host: ExecutorHost,
    _runtime: tokio::runtime::Runtime,
}

impl Fixture {
    fn new(toml: &str) -> Fixture {
        let registry = Registry::from_str(toml, &tools_dir(), "tools.toml")
            .unwrap_or_else(|e| panic!("config error: {e}"));
        Fixture::with(registry)
    }

    fn with(registry: Registry) -> Fixture {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let host = ExecutorHost::new(registry, runtime.handle().clone());
        Fixture {
            host,
            _runtime: runtime,
        }
    }

    fn call(&mut self, tool: &str, arg: Json) -> Outcome {
        self.call_within(tool, arg, None)
    }

    fn call_within(&mut self, tool: &str, arg: Json, time_left: Option<Duration>) -> Outcome {
        let id = CallId {
            node: 0,
            path: Vec::new(),
        };
        self.host.call(CallRequest {
            id: &id,
            tool,
            arg,
            time_left,
            idempotency_key: None,
        })
    }
}

/// The failure's kind and message; panics if the call succeeded.
fn failure(outcome: Outcome) -> (FailureKind, String) {
    match outcome {
        Ok(v) => panic!("expected a failure, got Ok({v})"),
        Err(f) => (f.kind, f.message),
    }
}

fn config_error(toml: &str) -> ConfigError {
    match Registry::from_str(toml, &tools_dir(), "tools.toml") {
        Ok(_) => panic!("expected a config error for:\n{toml}"),
        Err(e) => e,
    }
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lt-executors-{}-{name}", std::process::id()))
}

// ---- command ----

#[test]
fn command_echo_returns_stdout_json() {
    let mut f = Fixture::new(
        r#"
        [tools.echo]
        command = ["python3", "echo.py", "two words"]
        "#,
    );
    let out = f
        .call("echo", json!({"name": "Ada", "tags": [1, 2]}))
        .expect("ok");
    assert_eq!(out["got"], json!({"name": "Ada", "tags": [1, 2]}));
    assert_eq!(out["argv"], json!(["two words"]));
    assert_eq!(out["has_path"], json!(true), "the environment is inherited");
    let cwd = PathBuf::from(out["cwd"].as_str().expect("cwd"));
    assert_eq!(cwd.canonicalize().ok(), tools_dir().canonicalize().ok());
}

#[test]
fn command_paths_resolve_from_the_config_folder_and_env_is_added() {
    // The test process runs in the crate root; the config folder is
    // tests/tools. `./echo.py` and `./sub/where.py` resolve against the
    // folder, `cwd = "sub"` too.
    let mut f = Fixture::new(
        r#"
        [tools.relative]
        command = ["./echo.py"]
        env = { LT_TEST_VAR = "from tools.toml" }

        [tools.where]
        command = ["./sub/where.py"]
        cwd = "sub"
        "#,
    );
    assert_ne!(
        std::env::current_dir()
            .ok()
            .and_then(|d| d.canonicalize().ok()),
        tools_dir().canonicalize().ok()
    );
    let out = f.call("relative", json!(null)).expect("ok");
    assert_eq!(out["env"], json!("from tools.toml"));
    assert_eq!(out["got"], json!(null));
    let out = f.call("where", json!({})).expect("ok");
    assert_eq!(out["marker"], json!("in sub"));
    let cwd = PathBuf::from(out["cwd"].as_str().expect("cwd"));
    assert_eq!(
        cwd.canonicalize().ok(),
        tools_dir().join("sub").canonicalize().ok()
    );
}

#[test]
fn load_resolves_relative_to_the_file_not_the_process() {
    let dir = temp_path("load");
    std::fs::create_dir_all(dir.join("bin")).expect("mkdir");
    let script = dir.join("bin").join("echo.py");
    std::fs::copy(tools_dir().join("echo.py"), &script).expect("copy");
    std::fs::write(
        dir.join("tools.toml"),
        "[tools.echo]\ncommand = [\"./bin/echo.py\"]\ntimeout_ms = 10000\n",
    )
    .expect("write");
    let registry = Registry::load(&dir.join("tools.toml")).expect("load");
    assert_eq!(registry.missing(["echo", "other", "other"]), vec!["other"]);
    let described = registry.describe("echo").expect("describe");
    assert!(
        described.starts_with("command ./bin/echo.py"),
        "{described}"
    );
    assert!(described.contains("timeout 10000 ms"), "{described}");
    let mut f = Fixture::with(registry);
    let out = f.call("echo", json!(7)).expect("ok");
    assert_eq!(out["got"], json!(7));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nonzero_exit_is_failed_with_stderr() {
    let mut f = Fixture::new("[tools.refund]\ncommand = [\"python3\", \"fail.py\"]\n");
    let (kind, message) = failure(f.call("refund", json!({"amount": 5})));
    assert_eq!(kind, FailureKind::Failed);
    assert_eq!(message, "tool refund failed (exit status 3): card declined");
}

#[test]
fn nonzero_exit_without_stderr_says_so() {
    let mut f =
        Fixture::new("[tools.f]\ncommand = [\"python3\", \"-c\", \"import sys; sys.exit(1)\"]\n");
    let (kind, message) = failure(f.call("f", json!(null)));
    assert_eq!(kind, FailureKind::Failed);
    assert_eq!(
        message,
        "tool f failed (exit status 1): no output on stderr"
    );
}

#[test]
fn signal_is_crashed() {
    let mut f = Fixture::new("[tools.crash]\ncommand = [\"python3\", \"segv.py\"]\n");
    let (kind, message) = failure(f.call("crash", json!(null)));
    assert_eq!(kind, FailureKind::Crashed);
    assert_eq!(
        message,
        "tool crash crashed (signal 11, SIGSEGV): about to crash"
    );
}

#[test]
fn stdin_stdout_and_stderr_are_pumped_concurrently_and_stderr_is_cut() {
    let mut f = Fixture::new(
        r#"
        [tools.ok]
        command = ["python3", "chatty.py", "0"]
        timeout_ms = 10000

        [tools.bad]
        command = ["python3", "chatty.py", "1"]
        timeout_ms = 10000
        "#,
    );
    let big = "y".repeat(1 << 20);
    let expected_len = json!(big).to_string().len() + 1; // one line, with its `\n`
    assert_eq!(
        f.call("ok", json!(big.clone())),
        Ok(json!({ "len": expected_len }))
    );
    let (kind, message) = failure(f.call("bad", json!(big)));
    assert_eq!(kind, FailureKind::Failed);
    assert!(
        message.starts_with("tool bad failed (exit status 1): first line\neee"),
        "{}",
        &message[..200]
    );
    assert!(message.contains("bytes omitted"), "stderr was not cut");
    assert!(
        message.ends_with("eee\nlast line"),
        "{}",
        &message[message.len() - 200..]
    );
    assert!(
        message.len() < 5 * 1024,
        "message is {} bytes",
        message.len()
    );
}

/// Also true of a zombie: the check fails if the child was not reaped.
fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[test]
fn timeout_kills_the_process() {
    let pid_file = temp_path("sleep.pid");
    let _ = std::fs::remove_file(&pid_file);
    let toml = format!(
        "[tools.slow]\ncommand = [\"python3\", \"sleep.py\", {:?}]\ntimeout_ms = 300\n",
        pid_file.display().to_string()
    );
    let mut f = Fixture::new(&toml);
    let start = Instant::now();
    let (kind, message) = failure(f.call("slow", json!(null)));
    let elapsed = start.elapsed();
    assert_eq!(kind, FailureKind::TimedOut);
    assert_eq!(message, "tool slow timed out after 300 ms");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    // On a loaded machine the tool may be killed before it writes its pid;
    // then there is nothing left to check.
    let pid = std::fs::read_to_string(&pid_file).ok();
    if let Some(pid) = pid.and_then(|p| p.trim().parse::<u32>().ok()) {
        assert!(!process_exists(pid), "process {pid} still exists");
    }
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn time_left_in_the_run_shortens_the_timeout() {
    let pid_file = temp_path("sleep2.pid");
    let toml = format!(
        "[tools.slow]\ncommand = [\"python3\", \"sleep.py\", {:?}]\n",
        pid_file.display().to_string()
    );
    let mut f = Fixture::new(&toml);
    let (kind, message) =
        failure(f.call_within("slow", json!(null), Some(Duration::from_millis(250))));
    assert_eq!(kind, FailureKind::TimedOut);
    assert_eq!(message, "tool slow timed out after 250 ms");
    let (kind, _) = failure(f.call_within("slow", json!(null), Some(Duration::ZERO)));
    assert_eq!(kind, FailureKind::TimedOut);
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn garbage_is_bad_output_with_excerpt_and_stderr() {
    let mut f = Fixture::new("[tools.g]\ncommand = [\"python3\", \"garbage.py\"]\n");
    let (kind, message) = failure(f.call("g", json!(null)));
    assert_eq!(kind, FailureKind::BadOutput);
    assert!(
        message.starts_with("tool g returned output that is not JSON: expected"),
        "{message}"
    );
    assert!(
        message.contains(r#"(output starts: "this is not json\n")"#),
        "{message}"
    );
    assert!(
        message.ends_with("; stderr: warning: deprecated"),
        "{message}"
    );
}

#[test]
fn empty_stdout_is_null() {
    let mut f = Fixture::new("[tools.quiet]\ncommand = [\"python3\", \"silent.py\"]\n");
    assert_eq!(f.call("quiet", json!({"a": 1})), Ok(Json::Null));
}

#[test]
fn a_tool_that_ignores_stdin_is_fine() {
    let mut f = Fixture::new("[tools.n]\ncommand = [\"python3\", \"no_stdin.py\"]\n");
    // A megabyte of argument: more than a pipe holds, so the write fails
    // with EPIPE once the tool has exited.
    let big = "x".repeat(1 << 20);
    assert_eq!(f.call("n", json!({ "blob": big })), Ok(json!({"ok": true})));
    assert_eq!(f.call("n", json!(null)), Ok(json!({"ok": true})));
}

#[test]
fn huge_output_is_bad_output() {
    let mut f =
        Fixture::new("[tools.big]\ncommand = [\"python3\", \"big.py\"]\ntimeout_ms = 15000\n");
    let (kind, message) = failure(f.call("big", json!(null)));
    assert_eq!(kind, FailureKind::BadOutput);
    assert!(
        message.starts_with("tool big returned output larger than 64 MiB"),
        "{message}"
    );
}

#[test]
fn a_program_that_cannot_start_at_call_time_is_unavailable() {
    // tools.toml is checked at load time; these go wrong only afterwards.
    let dir = temp_path("nostart");
    std::fs::create_dir_all(dir.join("tools")).expect("mkdir");
    std::fs::create_dir_all(dir.join("work")).expect("mkdir");
    let script = dir.join("tools").join("bad_interpreter.sh");
    std::fs::write(&script, "#!/no/such/interpreter\n").expect("write");
    let mut permissions = std::fs::metadata(&script).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    let registry = Registry::from_str(
        r#"
        [tools.bad_interpreter]
        command = ["./tools/./bad_interpreter.sh"]

        [tools.cwd_gone]
        command = ["python3", "-c", "print(1)"]
        cwd = "./work"
        "#,
        &dir,
        "tools.toml",
    )
    .expect("valid at load time");
    std::fs::remove_dir(dir.join("work")).expect("rmdir");
    let mut f = Fixture::with(registry);
    let (kind, message) = failure(f.call("bad_interpreter", json!(null)));
    assert_eq!(kind, FailureKind::Unavailable);
    assert_eq!(
        message,
        format!(
            "tool bad_interpreter could not be started: {}: No such file or directory (os error 2)",
            script.display()
        ),
        "the path is shown without `/./`"
    );
    let (kind, message) = failure(f.call("cwd_gone", json!(null)));
    assert_eq!(kind, FailureKind::Unavailable);
    assert_eq!(
        message,
        format!(
            "tool cwd_gone could not be started: working directory {} does not exist",
            dir.join("work").display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tool_without_executor_is_unavailable() {
    let mut f = Fixture::new("[tools.a]\nfixed = { ok = 1 }\n");
    let (kind, message) = failure(f.call("b", json!(null)));
    assert_eq!(kind, FailureKind::Unavailable);
    assert_eq!(message, "tool b has no executor in tools.toml");
}

#[test]
fn calls_work_from_spawn_blocking_and_fail_cleanly_after_shutdown() {
    let registry = Registry::from_str(
        "[tools.a]\ncommand = [\"python3\", \"echo.py\"]\n",
        &tools_dir(),
        "tools.toml",
    )
    .expect("config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let host = ExecutorHost::new(registry, runtime.handle().clone());
    let call = |mut host: ExecutorHost| {
        let id = CallId {
            node: 0,
            path: Vec::new(),
        };
        host.call(CallRequest {
            id: &id,
            tool: "a",
            arg: json!(5),
            time_left: None,
            idempotency_key: None,
        })
    };
    let inside = host.clone();
    let outcome = runtime
        .block_on(runtime.spawn_blocking(move || call(inside)))
        .expect("join");
    assert_eq!(outcome.expect("ok")["got"], json!(5));
    runtime.shutdown_timeout(Duration::from_secs(1));
    let (kind, message) = failure(call(host));
    assert_eq!(kind, FailureKind::Unavailable);
    assert!(message.contains("runtime shut down"), "{message}");
}

// ---- http ----

/// The Python test server; killed (and reaped) on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new("python3")
            .arg(tools_dir().join("http_server.py"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start http_server.py");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("port line");
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("http_server.py printed {line:?} instead of a port")
        });
        Server { child, port }
    }

    fn url(&self, route: &str) -> String {
        format!("http://127.0.0.1:{}{route}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_tools() {
    let server = Server::start();
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let toml = format!(
        r#"
        [tools.echo]
        http = {{ url = "{echo}", headers = {{ Authorization = "Bearer t0k" }} }}

        [tools.fail]
        http = {{ url = "{fail}" }}

        [tools.slow]
        http = {{ url = "{slow}" }}
        timeout_ms = 300

        [tools.garbage]
        http = {{ url = "{garbage}" }}

        [tools.empty]
        http = {{ url = "{empty}" }}

        [tools.refused]
        http = {{ url = "http://127.0.0.1:{closed_port}/x" }}
        "#,
        echo = server.url("/echo"),
        fail = server.url("/fail"),
        slow = server.url("/slow"),
        garbage = server.url("/garbage"),
        empty = server.url("/empty"),
    );
    let mut f = Fixture::new(&toml);
    assert_eq!(
        f.host.registry().describe("fail"),
        Some(format!(
            "http POST {} (timeout 30000 ms)",
            server.url("/fail")
        ))
    );

    let out = f.call("echo", json!({"amount": 12})).expect("ok");
    assert_eq!(out["got"], json!({"amount": 12}));
    assert_eq!(out["content_type"], json!("application/json"));
    assert_eq!(out["auth"], json!("Bearer t0k"));

    let (kind, message) = failure(f.call("fail", json!(null)));
    assert_eq!(kind, FailureKind::Failed);
    assert_eq!(
        message,
        "tool fail failed (HTTP 500 Internal Server Error): database down"
    );

    let start = Instant::now();
    let (kind, message) = failure(f.call("slow", json!(null)));
    assert_eq!(kind, FailureKind::TimedOut);
    assert_eq!(message, "tool slow timed out after 300 ms");
    assert!(start.elapsed() < Duration::from_secs(4));

    let (kind, message) = failure(f.call("garbage", json!(null)));
    assert_eq!(kind, FailureKind::BadOutput);
    assert!(
        message.starts_with("tool garbage returned a body that is not JSON"),
        "{message}"
    );
    assert!(message.contains("<html>not json</html>"), "{message}");

    assert_eq!(f.call("empty", json!(1)), Ok(Json::Null));

    let (kind, message) = failure(f.call("refused", json!(null)));
    assert_eq!(kind, FailureKind::Unavailable);
    assert!(
        message.starts_with("tool refused could not be reached at http://127.0.0.1:"),
        "{message}"
    );
}

// ---- fixed ----

#[test]
fn fixed_tools() {
    let mut f = Fixture::new(
        r#"
        [tools.send_reply]
        fixed = { ok = { sent = true, at = 1979-05-27T07:32:00Z, ratio = 0.5, ids = [1, 2] } }

        [tools.full]
        fixed = { error = "mailbox full" }

        [tools.seq]
        fixed = { sequence = [ { ok = 1 }, { error = "boom" }, { ok = 3 } ] }
        "#,
    );
    let expected = json!({"sent": true, "at": "1979-05-27T07:32:00Z", "ratio": 0.5, "ids": [1, 2]});
    assert_eq!(f.call("send_reply", json!(null)), Ok(expected.clone()));
    assert_eq!(f.call("send_reply", json!(null)), Ok(expected));

    let (kind, message) = failure(f.call("full", json!(null)));
    assert_eq!(kind, FailureKind::Failed);
    assert_eq!(message, "tool full failed: mailbox full");

    assert_eq!(f.call("seq", json!(null)), Ok(json!(1)));
    assert_eq!(
        failure(f.call("seq", json!(null))).1,
        "tool seq failed: boom"
    );
    assert_eq!(f.call("seq", json!(null)), Ok(json!(3)));
    for _ in 0..2 {
        let (kind, message) = failure(f.call("seq", json!(null)));
        assert_eq!(kind, FailureKind::Failed);
        assert_eq!(message, "tool seq: fixed sequence exhausted after 3 calls");
    }
    assert_eq!(
        f.host.registry().describe("full").as_deref(),
        Some("fixed error \"mailbox full\"")
    );
}

#[test]
fn executor_tables_may_be_written_as_headers_or_dotted_keys() {
    // TOML's other spellings of `fixed = { … }`, `env = { … }`, `mcp = { … }`
    // and `http = { … }`: a header of their own (under an implied
    // `[tools.NAME]` or not) and dotted keys.
    let mut f = Fixture::new(
        r#"
        [tools.header.fixed]
        ok = { sent = true }

        [tools.dotted]
        fixed.sequence = [ { ok = 1 }, { error = "boom" } ]

        [[tools.tables.fixed.sequence]]
        ok = "first"
        [[tools.tables.fixed.sequence]]
        error = "second"

        [tools.env_dotted]
        command = ["./echo.py"]
        env.LT_TEST_VAR = "dotted"

        [tools.env_header]
        command = ["./echo.py"]
        [tools.env_header.env]
        LT_TEST_VAR = "header"

        [tools.server.mcp]
        command = ["python3", "server.py"]
        tool = "get_time"
        env = { TZ = "UTC" }

        [tools.server_dotted]
        mcp.command = ["python3", "server.py"]
        mcp.tool = "get_date"
        mcp.env.TZ = "UTC"
        timeout_ms = 1234

        [tools.web.http]
        url = "http://127.0.0.1:1/x"
        headers.Authorization = "Bearer t"
        "#,
    );
    assert_eq!(f.call("header", json!(null)), Ok(json!({"sent": true})));
    assert_eq!(f.call("dotted", json!(null)), Ok(json!(1)));
    assert_eq!(
        failure(f.call("dotted", json!(null))).1,
        "tool dotted failed: boom"
    );
    assert_eq!(f.call("tables", json!(null)), Ok(json!("first")));
    assert_eq!(
        failure(f.call("tables", json!(null))).1,
        "tool tables failed: second"
    );
    for (tool, value) in [("env_dotted", "dotted"), ("env_header", "header")] {
        assert_eq!(f.call(tool, json!(null)).expect("ok")["env"], json!(value));
    }
    let registry = f.host.registry();
    let described = |tool: &str| registry.describe(tool).unwrap_or_default();
    assert!(described("server").starts_with("mcp tool get_time of `python3 server.py`"));
    assert!(described("server_dotted").starts_with("mcp tool get_date of `python3 server.py`"));
    assert!(described("server_dotted").ends_with("timeout 1234 ms)"));
    assert!(described("web").starts_with("http POST http://127.0.0.1:1/x"));
}

#[test]
fn fixed_sequence_is_shared_between_threads() {
    let f = Fixture::new(
        "[tools.seq]\nfixed = { sequence = [ { ok = 0 }, { ok = 1 }, { ok = 2 }, { ok = 3 } ] }\n",
    );
    let results: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let mut host = f.host.clone();
                s.spawn(move || {
                    let id = CallId {
                        node: 0,
                        path: Vec::new(),
                    };
                    host.call(CallRequest {
                        id: &id,
                        tool: "seq",
                        arg: Json::Null,
                        time_left: None,
                        idempotency_key: None,
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let mut oks: Vec<i64> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().and_then(Json::as_i64))
        .collect();
    oks.sort();
    assert_eq!(oks, vec![0, 1, 2, 3]);
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 2);
}

// ---- configuration errors ----

/// `(toml, expected "line:column", a fragment of the message)`.
const BAD_CONFIGS: &[(&str, &str, &str)] = &[
    (
        "[tools.a]\nfixed = { ok = 1 }\n\n[tools.issue_refund]\ncommand = [\"x\"]\nhttp = { url = \"http://127.0.0.1:1/\" }\n",
        "4:1",
        "tool issue_refund: give exactly one of command, http, fixed or mcp (found command and http)",
    ),
    ("[tools.nothing]\ntimeout_ms = 5\n", "1:1", "tool nothing: give exactly one of command, http, fixed or mcp (none is given)"),
    ("[tools.t]\ncomand = [\"x\"]\n", "2:1", "tool t: unknown field `comand`"),
    ("[tools.t]\ncommand = []\n", "2:11", "tool t: `command` is empty"),
    ("[tools.t]\ncommand = [\"\"]\n", "2:12", "tool t: the program name (first element of `command`) is empty"),
    ("[tools.t]\ncommand = [\"x\"]\ntimeout_ms = 0\n", "3:14", "tool t: timeout_ms must be a positive number of milliseconds"),
    ("[tools.t]\ncommand = [\"x\"]\ntimeout_ms = -5\n", "3:14", "timeout_ms must be a positive"),
    ("[tools.t]\ncommand = [\"x\"]\ntimeout_ms = \"5s\"\n", "3:14", "tool t: timeout_ms must be a positive"),
    ("[tools.t]\ncommand = [\"x\", 3]\n", "2:17", "tool t: invalid type: integer"),
    ("[tools.t]\ncommand = [\"x\"]\nenv = { A = 1 }\n", "3:13", "tool t: invalid type: integer"),
    ("[tools.t\ncommand = [\"x\"]\n", "1:9", "invalid table header; expected"),
    ("[tool.t]\ncommand = [\"x\"]\n", "1:2", "unknown field `tool`"),
    ("[tools.t]\nhttp = { url = \"not a url\" }\n", "2:16", "tool t: `not a url` is not a URL"),
    ("[tools.t]\nhttp = { url = \"ftp://h/x\" }\n", "2:16", "scheme must be http or https"),
    ("[tools.t]\nhttp = { uri = \"http://h/\" }\n", "2:10", "tool t: unknown field `uri`"),
    ("[tools.t]\nhttp = { url = \"http://h/\" }\ncwd = \"x\"\n", "3:7", "tool t: `cwd` applies only to command tools"),
    ("[tools.t]\nhttp = { url = \"http://h/\", headers = { \"a b\" = \"x\" } }\n", "2:39", "not a valid HTTP header name"),
    ("[tools.t]\nfixed = { ok = 1, error = \"e\" }\n", "2:9", "tool t: a fixed table takes exactly one of ok, error or sequence"),
    ("[tools.t]\nfixed = {}\n", "2:9", "exactly one of ok, error or sequence"),
    ("[tools.t]\nfixed = { sequence = [] }\n", "2:22", "a fixed sequence needs at least one response"),
    ("[tools.t]\nfixed = { sequence = [ { ok = 1 }, { ok = 2, error = \"e\" } ] }\n", "2:36", "each response of a sequence takes exactly one of ok or error"),
    ("[tools.t]\nfixed = { ok = nan }\n", "2:16", "nan or inf"),
    ("[tools.t]\nfixed = { ok = 1 }\ntimeout_ms = 10\n", "3:14", "`timeout_ms` has no effect on a fixed tool"),
    ("[tools.t]\nfixed = 3\n", "2:9", "tool t: invalid type: integer `3`, expected a fixed table"),
    // Checked at load time: what `exec` would trip over in the middle of a run.
    ("[tools.t]\ncommand = [\"python9-no-such-program\", \"x.py\"]\n", "2:12", "tool t: the program `python9-no-such-program` was not found on PATH"),
    ("[tools.t]\ncommand = [\"./no/such/tool.sh\"]\n", "2:12", "tool t: the program `./no/such/tool.sh` ("),
    ("[tools.t]\ncommand = [\"./no/such/tool.sh\"]\n", "2:12", "/tests/tools/no/such/tool.sh) does not exist"),
    ("[tools.t]\ncommand = [\"/no/such/tool\"]\n", "2:12", "tool t: the program `/no/such/tool` does not exist"),
    ("[tools.t]\ncommand = [\"./sub\"]\n", "2:12", "/tests/tools/sub) is a directory"),
    ("[tools.t]\ncommand = [\"sub/marker.txt\"]\n", "2:12", "/tests/tools/sub/marker.txt) is not executable"),
    ("[tools.t]\ncommand = [\"python3\", \"a\\u0000b\"]\n", "2:23", "tool t: argument 1 of `command` contains a NUL byte"),
    ("[tools.t]\ncommand = [\"python3\"]\ncwd = \"no-such-dir\"\n", "3:7", "/tests/tools/no-such-dir does not exist"),
    ("[tools.t]\ncommand = [\"python3\"]\ncwd = \"./echo.py\"\n", "3:7", "/tests/tools/echo.py is not a directory"),
    ("[tools.t]\ncommand = [\"python3\"]\nenv = { \"\" = \"x\" }\n", "3:9", "tool t: the environment variable name \"\" is empty"),
    ("[tools.t]\ncommand = [\"python3\"]\nenv = { OK = \"1\", \"A=B\" = \"x\" }\n", "3:19", "the environment variable name \"A=B\" contains `=`"),
    ("[tools.t]\ncommand = [\"python3\"]\nenv = { \"A\\u0000\" = \"x\" }\n", "3:9", "contains a NUL byte"),
    ("[tools.t]\ncommand = [\"python3\"]\nenv = { A = \"x\\u0000y\" }\n", "3:13", "tool t: the value of environment variable A contains a NUL byte"),
    ("[tools.t]\nmcp = { command = [\"python3\"], tool = \"a\\u0000b\" }\n", "2:39", "tool t: `tool` contains a NUL byte"),
    // Tables toml gives no position of their own (a header under an implied
    // `[tools.t]`, dotted keys): found in the text.
    ("[tools.t.mcp]\ncommand = [\"python3\"]\n", "1:1", "tool t: the mcp table has no `tool`"),
    ("[tools.t]\ntimeout_ms = 5\nmcp.command = [\"python3\"]\n", "3:1", "tool t: the mcp table has no `tool`"),
    ("[tools.t]\nmcp.command = [\"no-such-server\"]\nmcp.tool = \"x\"\n", "2:16", "tool t: the program `no-such-server` was not found on PATH"),
    ("[tools.t.mcp]\ncommand = [\"python3\"]\ntool = \"x\"\nurl = \"y\"\n", "4:1", "tool t: unknown field `url`"),
    ("[tools.t]\ncommand = [\"python3\"]\n[tools.t.env]\nA = \"b\"\n\"B=C\" = \"d\"\n", "5:1", "tool t: the environment variable name \"B=C\" contains `=`"),
    ("[tools.t.fixed]\nok = 1\nerror = \"x\"\n", "1:1", "tool t: a fixed table takes exactly one of ok, error or sequence"),
    ("[tools.t]\nfixed.ok.x = nan\n", "2:7", "tool t: the fixed result contains nan or inf"),
    ("[tools.t]\nhttp.url = \"http://h/\"\nhttp.headers.\"a b\" = \"c\"\n", "3:6", "tool t: `a b` is not a valid HTTP header name"),
    ("[tools.t.checks]\ninput = 3\n[tools.t.fixed]\nok = 1\n", "1:10", "tool t: checks.input must be a JSON Schema"),
];

#[test]
fn config_errors_point_at_line_and_column() {
    let mut problems = Vec::new();
    for (toml, position, fragment) in BAD_CONFIGS {
        let e = config_error(toml);
        let shown = e.to_string();
        let first = shown.lines().next().unwrap_or("");
        let expected_start = format!("tools.toml:{position}: ");
        if !first.starts_with(&expected_start) || !first.contains(fragment) {
            problems.push(format!(
                "for {toml:?}\n  expected `{expected_start}…{fragment}…`\n  got      `{shown}`"
            ));
        }
        assert_eq!(e.path, "tools.toml");
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn config_error_shows_help_on_its_own_line() {
    let e = config_error("[tools.t]\ncommand = []\n");
    assert_eq!(e.line, Some(2));
    assert_eq!(e.column, Some(11));
    assert!(e.help.is_some());
    let shown = e.to_string();
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert!(
        shown
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("help: ")),
        "{shown}"
    );
}

#[test]
fn missing_file_names_the_path() {
    let path = temp_path("absent/tools.toml");
    let e = Registry::load(&path).expect_err("an error");
    assert_eq!(e.path, path.display().to_string());
    assert_eq!(e.line, None);
    let shown = e.to_string();
    assert!(shown.starts_with(&path.display().to_string()), "{shown}");
    assert!(shown.contains("No such file or directory"), "{shown}");
}

#[test]
fn an_empty_file_is_an_empty_registry() {
    let registry = Registry::from_str("", &tools_dir(), "tools.toml").expect("ok");
    assert_eq!(registry.names().count(), 0);
    assert_eq!(registry.missing(["a"]), vec!["a"]);
    assert_eq!(registry.describe("a"), None);
}

#[test]
fn env_path_is_used_to_find_a_bare_program_and_paths_are_normalised() {
    // `echo.py` is not on lt's PATH, but on the PATH the tool gets.
    let toml = format!(
        "[tools.t]\ncommand = [\"echo.py\"]\ncwd = \"./sub/.\"\nenv = {{ PATH = {:?} }}\n",
        format!(
            "{}:{}",
            tools_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    );
    let mut f = Fixture::new(&toml);
    let out = f.call("t", json!(3)).expect("ok");
    assert_eq!(out["got"], json!(3));
    let described = f.host.registry().describe("t").expect("describe");
    assert_eq!(
        described,
        format!(
            "command echo.py (in {}, timeout 30000 ms)",
            tools_dir().join("sub").display()
        )
    );
    let e = config_error("[tools.t]\ncommand = [\"echo.py\"]\n");
    assert!(
        e.message
            .ends_with("the program `echo.py` was not found on PATH"),
        "{e}"
    );
    let e = config_error("[tools.t]\ncommand = [\"./sub/./nothing.sh\"]\n");
    let resolved = tools_dir().join("sub").join("nothing.sh");
    assert_eq!(
        e.message,
        format!(
            "tool t: the program `./sub/./nothing.sh` ({}) does not exist",
            resolved.display()
        )
    );
    assert!(
        e.help
            .as_deref()
            .is_some_and(|h| h.contains("not against `cwd`")),
        "{e}"
    );
}

// ---- process groups ----

/// The processes (zombies aside) whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may contain spaces.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        let zombie = matches!(fields.first(), Some(&"Z") | Some(&"X"));
        if !zombie && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid) {
            members.push(pid);
        }
    }
    members
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next());
        !matches!(state, Some("Z") | Some("X"))
    })
}

/// Waits (up to 5 s) for the shell and child of `tree.sh`, and every other
/// process of the group, to be gone; panics if some are not.
fn assert_tree_gone(pids: [i32; 2]) {
    let start = Instant::now();
    loop {
        let mut left = group_members(pids[0]);
        left.extend(pids.into_iter().filter(|&p| alive(p)));
        if left.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(5) {
            // Leave nothing behind, then fail.
            for &pid in &left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            panic!(
                "tool processes {left:?} (group {}) are still running",
                pids[0]
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (up to 10 s) for `tree.sh` to record its pid (= its group id) and
/// its child's.
fn read_pids(pid_file: &Path) -> [i32; 2] {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(pid_file).unwrap_or_default();
        let pids: Vec<i32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if let [shell, child] = pids[..] {
            return [shell, child];
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no pids in {}",
            pid_file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn tree_tool(pid_file: &Path, mode: &str, timeout_ms: u64) -> String {
    format!(
        "[tools.t]\ncommand = [\"./tree.sh\", {:?}, {mode:?}]\ntimeout_ms = {timeout_ms}\n",
        pid_file.display().to_string()
    )
}

#[test]
fn a_timeout_kills_the_tools_whole_process_group() {
    let pid_file = temp_path("tree-hang.pid");
    let _ = std::fs::remove_file(&pid_file);
    let mut f = Fixture::new(&tree_tool(&pid_file, "hang", 500));
    let (kind, message) = failure(f.call("t", json!(null)));
    assert_eq!(kind, FailureKind::TimedOut);
    assert_eq!(message, "tool t timed out after 500 ms");
    // `sleep 100`, the shell's child, goes with the shell.
    assert_tree_gone(read_pids(&pid_file));
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn a_tool_that_exits_leaving_a_child_holding_stdout_succeeds() {
    let pid_file = temp_path("tree-fork.pid");
    let _ = std::fs::remove_file(&pid_file);
    let mut f = Fixture::new(&tree_tool(&pid_file, "fork", 10_000));
    let start = Instant::now();
    assert_eq!(f.call("t", json!({"a": 1})), Ok(json!("forked")));
    let elapsed = start.elapsed();
    assert!(
        elapsed < Duration::from_secs(3),
        "took {elapsed:?}: waited for the background child"
    );
    assert_tree_gone(read_pids(&pid_file));
    // The same, with a child that closed stdout: no grace period needed,
    // and the child is killed all the same.
    let _ = std::fs::remove_file(&pid_file);
    let mut f = Fixture::new(&tree_tool(&pid_file, "detached", 10_000));
    assert_eq!(f.call("t", json!(null)), Ok(json!("detached")));
    assert_tree_gone(read_pids(&pid_file));
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn output_overflow_kills_the_tools_whole_process_group() {
    let pid_file = temp_path("tree-flood.pid");
    let _ = std::fs::remove_file(&pid_file);
    let mut f = Fixture::new(&tree_tool(&pid_file, "flood", 15_000));
    let (kind, message) = failure(f.call("t", json!(null)));
    assert_eq!(kind, FailureKind::BadOutput);
    assert!(
        message.starts_with("tool t returned output larger than 64 MiB"),
        "{message}"
    );
    assert_tree_gone(read_pids(&pid_file));
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn an_abandoned_call_kills_the_tools_whole_process_group() {
    let pid_file = temp_path("tree-abandon.pid");
    let _ = std::fs::remove_file(&pid_file);
    let f = Fixture::new(&tree_tool(&pid_file, "hang", 30_000));
    let host = f.host.clone();
    let watched = pid_file.clone();
    let abandoned = f._runtime.block_on(async move {
        let call = host.call_async("t", &json!(null), None, None);
        tokio::pin!(call);
        // Drop the call's future as soon as the tool is running.
        loop {
            tokio::select! {
                outcome = &mut call => return Err(outcome),
                () = tokio::time::sleep(Duration::from_millis(20)) => {
                    if watched.exists() {
                        return Ok(());
                    }
                }
            }
        }
    });
    assert!(abandoned.is_ok(), "the call ended: {abandoned:?}");
    assert_tree_gone(read_pids(&pid_file));
    let _ = std::fs::remove_file(&pid_file);
}

const SIGNAL_HELPER_VAR: &str = "LT_EXECUTORS_SIGNAL_HELPER";

/// Not a test by itself: `signals_stop_the_running_tools_and_exit` runs
/// this test binary again with only this test and [`SIGNAL_HELPER_VAR`] set
/// to a pid file. It then installs the signal forwarding and calls a tool
/// that hangs, until the parent test signals it.
#[test]
fn signal_helper_process() {
    let Some(pid_file) = std::env::var_os(SIGNAL_HELPER_VAR) else {
        return;
    };
    let f = Fixture::new(&tree_tool(Path::new(&pid_file), "hang", 30_000));
    let cancel = lt::runtime::cancel::Cancel::new();
    let mut f = f;
    f.host = f.host.clone().with_cancel(cancel.clone());
    lt::exec::abandon_on_signals(f._runtime.handle(), cancel);
    let outcome = f.call("t", json!(null));
    // Only reached if the signal did not stop the process.
    eprintln!("the call ended: {outcome:?}");
    std::process::exit(99);
}

/// A child process killed (and reaped) on drop, so a failing test leaves
/// nothing running.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What happens when lt gets `signal` while a tool runs: the exit status
/// and stderr of the helper process, and the tool's processes.
fn signal_a_running_tool(signal: nix::sys::signal::Signal) -> (Option<i32>, String, [i32; 2]) {
    let pid_file = temp_path(&format!("signal-{signal}.pid"));
    let _ = std::fs::remove_file(&pid_file);
    let exe = std::env::current_exe().expect("test binary");
    let mut helper = Reaped(
        Command::new(exe)
            .args(["--exact", "signal_helper_process", "--nocapture"])
            .env(SIGNAL_HELPER_VAR, &pid_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the helper"),
    );
    let pids = read_pids(&pid_file);
    let _ = std::fs::remove_file(&pid_file);
    // The tool runs in a group of its own, the shell leading it.
    let members = group_members(pids[0]);
    assert!(
        members.contains(&pids[0]) && members.contains(&pids[1]),
        "{signal}: group {} has {members:?}",
        pids[0]
    );
    let helper_pid = i32::try_from(helper.0.id()).expect("pid");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(helper_pid), signal).expect("kill");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = helper.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{signal}: the helper did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = helper.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    (status.code(), stderr, pids)
}

#[test]
fn signals_stop_the_running_tools_and_exit() {
    use nix::sys::signal::Signal;
    let cases = [
        (Signal::SIGTERM, 143),
        (Signal::SIGINT, 130),
        (Signal::SIGHUP, 129),
    ];
    std::thread::scope(|s| {
        for (signal, code) in cases {
            s.spawn(move || {
                let (status, stderr, pids) = signal_a_running_tool(signal);
                assert_eq!(status, Some(code), "{signal}: {stderr}");
                assert!(
                    stderr.contains(&format!(
                        "error: interrupted by {signal}; stopped 1 running tool(s)\n"
                    )),
                    "{signal}: {stderr}"
                );
                assert_tree_gone(pids);
            });
        }
    });
}

// ---- deep JSON ----

fn nested_list(depth: usize) -> Json {
    let mut value = json!(7);
    for _ in 0..depth {
        value = json!([value]);
    }
    value
}

/// The nesting depth of `value`, counted without recursion.
fn depth(value: &Json) -> usize {
    let mut deepest = 0;
    let mut work = vec![(value, 0)];
    while let Some((v, d)) = work.pop() {
        deepest = deepest.max(d);
        match v {
            Json::Array(items) => work.extend(items.iter().map(|i| (i, d + 1))),
            Json::Object(fields) => work.extend(fields.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}

#[test]
fn deeply_nested_output_is_json() {
    let mut f = Fixture::new(
        r#"
        [tools.cat]
        command = ["cat"]

        [tools.deep]
        command = ["python3", "-c", "import sys; n = int(sys.argv[1]); print('[' * n + '7' + ']' * n)", "9000"]

        [tools.deep_garbage]
        command = ["python3", "-c", "n = 9000; print('[' * n + '7' + ']' * n + ' x')"]

        [tools.too_deep]
        command = ["python3", "-c", "n = 1600000; print('[' * n)"]
        "#,
    );
    // lt sends a 1,000-deep argument; `cat` sends it back.
    let deep = nested_list(1000);
    let out = f
        .call("cat", deep.clone())
        .expect("a 1,000-deep list is JSON");
    assert_eq!(out, deep);
    // 9,000 levels: far past serde_json's recursion limit (128).
    let out = f.call("deep", json!(null)).expect("a 9,000-deep list");
    assert_eq!(depth(&out), 9_000);
    lt::runtime::boundary::drop_deep(out);
    let (kind, message) = failure(f.call("deep_garbage", json!(null)));
    assert_eq!(kind, FailureKind::BadOutput);
    assert!(message.contains("trailing characters"), "{message}");
    // Deeper than MAX_OUTPUT_DEPTH: refused before parsing, at once (the
    // parser's error path is quadratic in the depth: 1.6 M unclosed
    // brackets took it 51 s).
    let started = Instant::now();
    let (kind, message) = failure(f.call("too_deep", json!(null)));
    assert_eq!(kind, FailureKind::BadOutput);
    assert!(
        message.contains("it is nested more than 10000 levels deep"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Answers every request on `listener` with `body` (200, JSON).
fn serve_forever(listener: std::net::TcpListener, body: String) {
    use std::io::{Read, Write};
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        // Read the head and the body (Content-Length) of the request.
        let mut request = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        while let Ok(n @ 1..) = stream.read(&mut buf) {
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

#[test]
fn deeply_nested_http_body_is_json() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let deep = nested_list(1000);
    let body = deep.to_string();
    std::thread::spawn(move || serve_forever(listener, body));
    let mut f = Fixture::new(&format!(
        "[tools.deep]\nhttp = {{ url = \"http://127.0.0.1:{port}/deep\" }}\ntimeout_ms = 10000\n"
    ));
    assert_eq!(f.call("deep", deep.clone()), Ok(deep));
}
