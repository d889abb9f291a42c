//! The fake model server (`tests/fixtures/fake_model/server.py`, Python
//! stdlib only) from Rust tests: [`FakeModel::start`] writes the script,
//! starts the server and waits for its port; [`FakeModel::requests`] reads
//! what was sent to it; dropping it kills the server.

use super::TempDir;
use serde_json::Value as Json;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

/// The server's script.
pub fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_model/server.py")
}

/// A running fake model server.
pub struct FakeModel {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    child: Child,
    /// Kept open so that the server can never get a broken pipe.
    _stdout: std::sync::mpsc::Receiver<ChildStdout>,
    log: PathBuf,
    _dir: TempDir,
}

impl FakeModel {
    /// Starts a server replaying `replies` (the entries of the script's
    /// `replies` array; see the server's docstring). Panics when it does
    /// not report its port within 10 s.
    pub fn start(replies: Vec<Json>) -> FakeModel {
        FakeModel::start_script(serde_json::json!({ "replies": replies }))
    }

    /// Starts a server playing `script` (`{"replies": […]}`, or `{"random":
    /// {seed, p, right, wrong, answer}}`: see the server's docstring).
    pub fn start_script(script: Json) -> FakeModel {
        let dir = TempDir::new("fake-model", "server");
        let script = dir.write("script.json", &script.to_string());
        let log = dir.0.join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(server_script())
            .arg(&script)
            .arg("--requests-log")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start python3 (the fake model server)");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let (keep_tx, keep) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            let _ = keep_tx.send(reader.into_inner());
        });
        let line = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("the fake model server did not print its port within 10 s");
            }
        };
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("the fake model server printed {line:?}, not `PORT <n>`")
            });
        FakeModel {
            port,
            child,
            _stdout: keep,
            log,
            _dir: dir,
        }
    }

    /// The base URL of the OpenAI-compatible API (`…/v1`).
    pub fn base_url_openai(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The base URL of the Anthropic API (the endpoint is `…/v1/messages`).
    pub fn base_url_anthropic(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests received so far, in order: `{"path", "headers" (lower
    /// case names), "body" (parsed JSON or null), "raw_len"}`.
    pub fn requests(&self) -> Vec<Json> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a requests-log line is JSON"))
            .collect()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
