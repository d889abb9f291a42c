//! One MCP server process and the JSON-RPC 2.0 connection over its stdio.
//!
//! Messages are single lines of JSON in both directions. Writes go through
//! one lock on the server's stdin (a message is written whole); a
//! *supervisor* task reads stdout line by line and routes each response to
//! the request waiting for its id, answers the server's `ping`s (any other
//! request from the server gets "method not found": lt offers no client
//! capabilities), ignores notifications, and skips (counting them) lines that
//! are not JSON-RPC. A second task keeps the tail of stderr for failure
//! messages (`stdio.rs`).
//!
//! The supervisor also waits for the process. When it exits, or closes
//! stdout, the connection is *dead*: every request in flight, and every
//! later one, fails with the [`Death`] (exit status or signal, or the reason
//! lt stopped it). Answers the server wrote just before exiting are still
//! read (for [`EXIT_GRACE`]); a process that closed stdout but lives on is
//! killed after [`EXIT_GRACE`]; the rest of its process group is killed once
//! the server is gone.

use super::super::command::{signal_name, Group, EXIT_GRACE};
use super::super::text::{check_shape, drop_deep, excerpt, parse_json};
use super::stdio::{Line, Lines, StderrTail};
use crate::runtime::host::FailureKind;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// What a server process is started from. Equal specs are one server: the
/// tools that name the same command, working directory and environment
/// share its process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ServerSpec {
    /// The program, resolved as for command tools.
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    /// Absolute.
    pub(crate) cwd: PathBuf,
    pub(crate) env: BTreeMap<String, String>,
}

/// Why a connection ended.
#[derive(Clone, Debug)]
pub(crate) struct Death {
    /// How calls it ends are reported (`Crashed` when the server went away
    /// by itself).
    pub(crate) kind: FailureKind,
    /// What happened, completing "the MCP server `…` …": `exited (exit
    /// status 7)`, `was killed by signal 9 (SIGKILL)`, `was stopped: …`.
    pub(crate) what: String,
}

/// Why a request got no result.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server answered with a JSON-RPC error.
    Rpc {
        code: i64,
        message: String,
        data: Option<Json>,
    },
    /// The connection is dead (before or during the request).
    Dead(Death),
    /// No answer before the deadline.
    TimedOut,
}

type Reply = Result<Json, Failure>;

/// A running server. Dropping it kills the server's process group.
pub(crate) struct Connection {
    shared: Arc<Shared>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Dropping the group kills it (if the supervisor has not already).
        drop(self.shared.group().take());
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection({})", self.shared.label)
    }
}

struct Shared {
    /// The command as written, shell-quoted, for messages.
    label: String,
    /// The server's process group, registered (for `stop_all`) while it
    /// may have members: the supervisor drops it (killing what is left)
    /// right after reaping the server, so that no later kill can reach a
    /// group that reuses the number.
    group: Mutex<Option<Group>>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Becomes `true` once the connection is dead.
    ended: watch::Sender<bool>,
    /// `true` while a liveness ping after a timeout is in flight: the
    /// server is suspect until it answers (or is stopped).
    probing: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    pending: HashMap<u64, oneshot::Sender<Reply>>,
    death: Option<Death>,
    /// Set before lt stops the server itself: the death to report.
    stopping: Option<Death>,
    stderr: StderrTail,
    skipped: usize,
    last_skipped: String,
}

impl Connection {
    /// Starts the server (in a process group of its own, registered for
    /// [`super::super::command::stop_all`]) and its reading tasks; must be
    /// called inside a tokio runtime. No message is exchanged yet.
    pub(crate) fn start(spec: &ServerSpec, label: String) -> std::io::Result<Connection> {
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .envs(&spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let (mut child, group) = Group::spawn(&mut command)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the server's pipes are missing"));
        };
        let (ended, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            label,
            group: Mutex::new(Some(group)),
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(1),
            ended,
            probing: watch::channel(false).0,
        });
        let stderr_task = tokio::spawn(read_stderr(stderr, shared.clone()));
        tokio::spawn(supervise(shared.clone(), child, stdout, stderr_task));
        Ok(Connection { shared })
    }

    /// The command as written, shell-quoted (`` `python3 server.py` ``).
    pub(crate) fn label(&self) -> &str {
        &self.shared.label
    }

    /// Why the connection is dead, if it is.
    pub(crate) fn death(&self) -> Option<Death> {
        self.shared.state().death.clone()
    }

    /// `; stderr: …` (the tail) and a note on skipped stdout lines, for
    /// failure messages; empty when there is neither.
    pub(crate) fn diagnostics(&self) -> String {
        let state = self.shared.state();
        let mut out = String::new();
        let stderr = state.stderr.text();
        if !stderr.is_empty() {
            out.push_str("; stderr: ");
            out.push_str(&stderr);
        }
        if state.skipped > 0 {
            out.push_str(&format!(
                "; the server also wrote {} line(s) on stdout that are not JSON-RPC (the last: {:?})",
                state.skipped, state.last_skipped
            ));
        }
        out
    }

    /// Sends request `method` with `params` (JSON text) and waits for its
    /// answer until `deadline`. On a timeout the request is cancelled
    /// (`notifications/cancelled`, except for `initialize`, which may not
    /// be); a late answer is dropped.
    pub(crate) async fn request(&self, method: &str, params: &[u8], deadline: Instant) -> Reply {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = self.shared.state();
            if let Some(death) = &state.death {
                return Err(Failure::Dead(death.clone()));
            }
            state.pending.insert(id, sender);
        }
        let _pending = PendingGuard {
            shared: &self.shared,
            id,
        };
        let mut line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":{},\"params\":",
            Json::String(method.to_string())
        )
        .into_bytes();
        line.extend_from_slice(params);
        line.extend_from_slice(b"}\n");
        // A write error (a broken pipe) means the server is going: its
        // death, which the supervisor reports to every pending request, says
        // more than the error would.
        let outcome = tokio::time::timeout_at(deadline, async {
            let _ = self.shared.write(&line).await;
            receiver.await
        })
        .await;
        match outcome {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(Failure::Dead(self.death().unwrap_or_else(|| Death {
                kind: FailureKind::Crashed,
                what: "closed the connection".to_string(),
            }))),
            Err(_) => {
                if method != "initialize" {
                    self.shared.cancel(id);
                }
                Err(Failure::TimedOut)
            }
        }
    }

    /// Sends a notification (no answer), waiting at most until `deadline`.
    pub(crate) async fn notify(&self, method: &str, params: Json, deadline: Instant) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        let _ = tokio::time::timeout_at(deadline, self.shared.write(&bytes)).await;
    }

    /// After a call timed out: pings the server (once at a time); if it does
    /// not answer within `grace` either, it is wedged and is stopped, so
    /// that the next call starts a fresh one instead of waiting out its own
    /// timeout too.
    pub(crate) fn probe(self: &Arc<Self>, grace: Duration) {
        if self.shared.probing.send_replace(true) {
            return;
        }
        let conn = self.clone();
        tokio::spawn(async move {
            let answer = conn.request("ping", b"{}", Instant::now() + grace).await;
            if let Err(Failure::TimedOut) = answer {
                conn.stop(Death {
                    kind: FailureKind::TimedOut,
                    what: format!(
                        "was stopped: it did not answer a ping within {} ms after a call timed out",
                        grace.as_millis()
                    ),
                });
                let mut ended = conn.shared.ended.subscribe();
                let _ = tokio::time::timeout(EXIT_GRACE * 5, ended.wait_for(|e| *e)).await;
            }
            conn.shared.probing.send_replace(false);
        });
    }

    /// Waits (until `deadline` at most) for a liveness ping in flight to
    /// settle whether the server still answers ([`Connection::probe`]).
    pub(crate) async fn settled(&self, deadline: Instant) {
        let mut probing = self.shared.probing.subscribe();
        let _ = tokio::time::timeout_at(deadline, probing.wait_for(|p| !*p)).await;
    }

    /// Kills the server's process group now; calls in flight fail with
    /// `death`.
    pub(crate) fn stop(&self, death: Death) {
        self.shared.state().stopping.get_or_insert(death);
        self.shared.kill();
    }

    /// Ends the server gracefully: closes its stdin (the MCP way to ask a
    /// stdio server to exit), waits up to `grace` for it to exit, then kills
    /// its process group. Calls in flight fail with `death`.
    pub(crate) async fn close(&self, death: Death, grace: Duration) {
        self.shared.state().stopping.get_or_insert(death);
        // Taking the lock waits for a write in progress; bounded, since a
        // server that does not read could hold it forever.
        if let Ok(mut stdin) = tokio::time::timeout(grace, self.shared.stdin.lock()).await {
            stdin.take();
        }
        let mut ended = self.shared.ended.subscribe();
        if tokio::time::timeout(grace, ended.wait_for(|e| *e))
            .await
            .is_err()
        {
            self.shared.kill();
            let _ = tokio::time::timeout(EXIT_GRACE * 2, ended.wait_for(|e| *e)).await;
        }
        self.shared.kill();
    }
}

/// Removes a request's entry when its caller stops waiting, however it stops.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.state().pending.remove(&self.id);
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn group(&self) -> MutexGuard<'_, Option<Group>> {
        self.group.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// SIGKILL to the server's process group, while it is not reaped.
    fn kill(&self) {
        if let Some(group) = self.group().as_ref() {
            group.kill();
        }
    }

    async fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the server's stdin is closed",
            ));
        };
        pipe.write_all(line).await?;
        pipe.flush().await
    }

    /// Tells the server that lt gave up on request `id` (best effort, in
    /// the background).
    fn cancel(self: &Arc<Self>, id: u64) {
        let shared = self.clone();
        tokio::spawn(async move {
            let line = json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "lt: the call timed out"},
            });
            let mut bytes = line.to_string().into_bytes();
            bytes.push(b'\n');
            let _ = tokio::time::timeout(Duration::from_secs(1), shared.write(&bytes)).await;
        });
    }

    fn note_skipped(&self, line: &[u8]) {
        let mut state = self.state();
        state.skipped += 1;
        state.last_skipped = excerpt(line, 80);
    }

    /// One line from stdout.
    fn dispatch(self: &Arc<Self>, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        if check_shape(line).is_err() {
            return self.note_skipped(line);
        }
        match parse_json(line) {
            // JSON-RPC batches (2024-11-05, 2025-03-26).
            Ok(Json::Array(items)) => {
                for item in items {
                    self.message(item, line);
                }
            }
            Ok(message) => self.message(message, line),
            Err(_) => self.note_skipped(line),
        }
    }

    fn message(self: &Arc<Self>, message: Json, line: &[u8]) {
        let Json::Object(mut object) = message else {
            drop_deep(message);
            return self.note_skipped(line);
        };
        let method = object
            .get("method")
            .and_then(Json::as_str)
            .map(str::to_string);
        match (method, object.remove("id")) {
            (None, Some(id)) => {
                let reply = match (object.remove("result"), object.remove("error")) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(rpc_failure(error)),
                    (result, error) => {
                        if let Some(v) = result {
                            drop_deep(v);
                        }
                        if let Some(v) = error {
                            drop_deep(v);
                        }
                        drop_deep(Json::Object(object));
                        return self.note_skipped(line);
                    }
                };
                let sender = id.as_u64().and_then(|id| self.state().pending.remove(&id));
                match sender {
                    Some(sender) => {
                        if let Err(Ok(value)) = sender.send(reply) {
                            drop_deep(value);
                        }
                    }
                    // A late answer to a request given up on.
                    None => {
                        if let Ok(value) = reply {
                            drop_deep(value);
                        }
                    }
                }
            }
            (Some(method), Some(id)) => {
                // A request from the server. lt declares no client
                // capabilities (sampling, roots, elicitation), so only a
                // ping is answered in kind.
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32601,
                        "message": format!("method not found: lt (an MCP client) does not offer {method}"),
                    }})
                };
                let shared = self.clone();
                tokio::spawn(async move {
                    let mut bytes = answer.to_string().into_bytes();
                    bytes.push(b'\n');
                    let _ =
                        tokio::time::timeout(Duration::from_secs(5), shared.write(&bytes)).await;
                });
            }
            // A notification (progress, log messages, list changes): nothing
            // lt acts on.
            (Some(_), None) => {}
            (None, None) => self.note_skipped(line),
        }
        drop_deep(Json::Object(object));
    }

    /// Marks the connection dead and fails every pending request.
    fn die(&self, what: String) {
        let mut state = self.state();
        let death = state.stopping.take().unwrap_or(Death {
            kind: FailureKind::Crashed,
            what,
        });
        state.death = Some(death.clone());
        let pending = std::mem::take(&mut state.pending);
        drop(state);
        for (_, sender) in pending {
            let _ = sender.send(Err(Failure::Dead(death.clone())));
        }
        self.ended.send_replace(true);
    }
}

fn rpc_failure(error: Json) -> Failure {
    let code = error.get("code").and_then(Json::as_i64).unwrap_or(0);
    let message = match error.get("message") {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let data = match error {
        Json::Object(mut o) => {
            let data = o.remove("data");
            drop_deep(Json::Object(o));
            data
        }
        other => {
            drop_deep(other);
            None
        }
    };
    Failure::Rpc {
        code,
        message,
        data,
    }
}

/// How a process ended, completing "the MCP server `…` …".
fn ended(status: &std::io::Result<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exited (exit status {code})"),
            (None, Some(signal)) => match signal_name(signal) {
                Some(name) => format!("was killed by signal {signal} ({name})"),
                None => format!("was killed by signal {signal}"),
            },
            (None, None) => format!("ended ({s})"),
        },
        Err(e) => format!("ended (lt could not wait for it: {e})"),
    }
}

async fn read_stderr(mut stderr: ChildStderr, shared: Arc<Shared>) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => shared.state().stderr.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Reads stdout and waits for the process; see the module's note.
async fn supervise(
    shared: Arc<Shared>,
    mut child: Child,
    stdout: ChildStdout,
    stderr_task: tokio::task::JoinHandle<()>,
) {
    let mut lines = Lines::new(stdout);
    let exited = loop {
        tokio::select! {
            line = lines.next() => match line {
                Line::Text(bytes) => shared.dispatch(&bytes),
                Line::TooLong(n) => shared.note_skipped(
                    format!("<a line of {n} bytes, longer than a message may be>").as_bytes(),
                ),
                Line::End => break None,
            },
            status = child.wait() => break Some(status),
        }
    };
    let what = match exited {
        Some(status) => {
            // Answers written just before the exit are still in the pipe.
            let _ = tokio::time::timeout(EXIT_GRACE, async {
                loop {
                    match lines.next().await {
                        Line::Text(bytes) => shared.dispatch(&bytes),
                        Line::TooLong(_) => {}
                        Line::End => break,
                    }
                }
            })
            .await;
            ended(&status)
        }
        None => match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
            Ok(status) => ended(&status),
            Err(_) => {
                shared.kill();
                let _ = child.wait().await;
                "closed its stdout (lt then stopped it)".to_string()
            }
        },
    };
    // Whatever the server left running in its group goes too (dropping
    // the group kills it and unregisters it).
    drop(shared.group().take());
    let _ = tokio::time::timeout(EXIT_GRACE, stderr_task).await;
    shared.die(what);
}
