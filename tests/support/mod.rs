//! Helpers shared by the tests that drive the built binaries: a fresh
//! temporary folder per test, running `lt` and capturing what it printed,
//! and the example programs lowered to IR; `mcp.rs`, the Python venv with
//! the MCP servers. Each test crate uses a part of it (`mod support;`),
//! hence `dead_code` is allowed.
#![allow(dead_code)]

pub mod fake_model;
pub mod mcp;

use lt::ir::{lower::lower, Ir};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `lt` binary under test.
pub const LT: &str = env!("CARGO_BIN_EXE_lt");

/// A fresh folder under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `<tmp>/lt-<suite>-<pid>-<n>-<name>`, empty.
    pub fn new(suite: &str, name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("lt-{suite}-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// The path of `file` in the folder, as a string.
    pub fn path(&self, file: &str) -> String {
        self.0.join(file).display().to_string()
    }

    /// Writes `file` and returns its path.
    pub fn write(&self, file: &str, text: &str) -> String {
        let p = self.path(file);
        std::fs::write(&p, text).expect("write temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished `lt` printed.
#[derive(Debug)]
pub struct Out {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// stdout as one JSON value (`--json`).
    pub fn json(&self) -> Json {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// Runs `lt ARGS` in `dir` with `envs` set, stdin empty, without colour and
/// without the variables tools read (`LT_RECORD`, `LT_IDEMPOTENCY_KEY`).
pub fn lt_in(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(LT);
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("LT_RECORD")
        .env_remove("LT_IDEMPOTENCY_KEY")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run lt");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every example program that checks (the flat `examples/*.lt` and the
/// `program.lt` of each example folder), lowered, with its path.
pub fn example_programs() -> Vec<(String, Ir)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "lt"))
        .collect();
    for sub in ["support_desk", "batch_refunds", "revenue_report"] {
        files.push(dir.join(sub).join("program.lt"));
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let checked = lt::types::check_source(&text).into_checked().ok()?;
            Some((p.display().to_string(), lower(&checked).ok()?))
        })
        .collect()
}

/// The stdout lines and the whole stderr of a child started with piped
/// stdout and stderr, each read on its own thread (so neither pipe can
/// fill up and block the child while the test waits on the other).
pub fn read_output(
    child: &mut std::process::Child,
) -> (
    std::sync::mpsc::Receiver<String>,
    std::thread::JoinHandle<String>,
) {
    use std::io::BufRead as _;
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    (lines, stderr)
}

/// A fake tool's answer, chosen by `pick`: the empty value of the declared
/// output type (3 times in 6), a wrong shape, a failure, or a timeout.
pub fn answer(tool: &lt::types::ToolSig, pick: u64) -> lt::runtime::host::Outcome {
    use lt::runtime::host::{FailureKind, ToolFailure};
    let fail = |kind, message: &str| {
        Err(ToolFailure {
            stderr: None,
            kind,
            message: format!("tool {} {message}", tool.name),
        })
    };
    match pick % 6 {
        0..=2 => Ok(lt::control::empty_json(&tool.output)),
        3 => Ok(serde_json::json!({"unexpected": [1, 2, 3]})),
        4 => fail(FailureKind::Failed, "failed (exit status 1): boom"),
        _ => fail(FailureKind::TimedOut, "timed out after 10 ms"),
    }
}
