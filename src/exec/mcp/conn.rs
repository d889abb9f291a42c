//! One MCP server process and the JSON-RPC 2.0 connection over its stdio.
//!
//! Messages are single lines of JSON in both directions. A *writer* task
//! owns the server's stdin and writes the messages queued for it, in order,
//! each whole; a request whose deadline passes while it waits in that queue
//! is not written ([`Failure::Unsent`]). A *supervisor* task reads stdout
//! line by line and routes each response to the request waiting for its id
//! (a response without `result` or `error`, with both, or not JSON-RPC 2.0
//! fails that request at once, [`Failure::Malformed`]; one with an id lt
//! never used is counted for later failure messages), answers the server's
//! `ping`s (any other request from the server gets "method not found": lt
//! offers no client capabilities), ignores notifications, and skips
//! (counting them) lines that are not JSON-RPC. A message that is lt's own
//! request sent back (a program that echoes its input, `cat`) fails that
//! request ([`Failure::Echoed`]). A line over [`MAX_OUTPUT_BYTES`] is not
//! read; when one of its ends shows that it answers a pending request, that
//! request fails ([`Failure::Malformed`]). A second task keeps the tail of
//! stderr (`stdio.rs`): quoted in the message of a server that did not
//! start, and carried beside a call's failure otherwise (the log records
//! it apart from the message the program sees).
//!
//! The supervisor also waits for the process. When it exits, or closes
//! stdout, the connection is *dead*: every request in flight, and every
//! later one, fails with the [`Death`] (exit status or signal, or the reason
//! lt stopped it). Answers the server wrote just before exiting are still
//! read (for [`EXIT_GRACE`]); a process that closed stdout but lives on is
//! killed after [`EXIT_GRACE`]; the rest of its process group is killed once
//! the server is gone.

use super::super::command::{
    signal_name, Group, ToolGroups, EXIT_GRACE, MAX_OUTPUT_BYTES, STDERR_KEEP_BYTES,
};
use super::super::text::{check_shape, drop_deep, excerpt, parse_json};
use super::stdio::{Line, Lines, Skipped, StderrTail};
use crate::runtime::host::FailureKind;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, watch};
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

/// What a server wrote so far ([`Connection::heard`]).
pub(crate) struct Heard {
    /// When it last wrote anything, on stdout or stderr.
    pub(crate) last: Option<Instant>,
    /// Lines on stdout that are not JSON-RPC.
    pub(crate) skipped: usize,
    /// When the first of them came.
    pub(crate) first_skipped: Option<Instant>,
    /// The last of them, shortened.
    pub(crate) last_skipped: String,
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
    /// The server answered with a JSON-RPC error (`code` is `None` when the
    /// error has no integer code, or is not an error object at all; then
    /// `message` is its text).
    Rpc {
        code: Option<i64>,
        /// At most [`STDERR_KEEP_BYTES`].
        message: String,
        data: Option<Json>,
    },
    /// The connection is dead (before or during the request).
    Dead(Death),
    /// Sent, but no answer before the deadline.
    TimedOut,
    /// The deadline passed before the request was written (it waited behind
    /// earlier messages that the server does not read): the server never
    /// saw it.
    Unsent,
    /// The answer is not a JSON-RPC 2.0 response, or is too long to read;
    /// the text completes "answered METHOD with …" ("a response with
    /// neither `result` nor `error`").
    Malformed(String),
    /// The server sent the request itself back.
    Echoed,
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
    /// The server's process group, registered (for `ToolGroups::stop_all`) while it
    /// may have members: the supervisor drops it (killing what is left)
    /// right after reaping the server, so that no later kill can reach a
    /// group that reuses the number.
    group: Mutex<Option<Group>>,
    /// The writer task's queue ([`write_lines`]).
    outbox: mpsc::UnboundedSender<Out>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Becomes `true` once the connection is dead.
    ended: watch::Sender<bool>,
    /// `true` while a liveness ping after a timeout is in flight: the
    /// server is suspect until it answers (or is stopped).
    probing: watch::Sender<bool>,
}

/// A message for the writer task.
enum Out {
    /// One line, written whole; with a gate, only if its request still
    /// waits for it (see [`Gate`]).
    Line(Vec<u8>, Option<Gate>),
    /// Close stdin (the MCP way to ask a stdio server to exit).
    Close,
}

/// Whether a request may still be written: the writer takes it
/// ([`WAITING`] → [`WRITING`]) unless its deadline has passed or its caller
/// gave up first ([`WAITING`] → [`ABANDONED`]); so a request is either
/// written whole or not at all, and its caller knows which.
struct Gate {
    state: Arc<AtomicU8>,
    deadline: Instant,
}

const WAITING: u8 = 0;
const WRITING: u8 = 1;
const ABANDONED: u8 = 2;

/// A request waiting for its answer.
struct Pending {
    reply: oneshot::Sender<Reply>,
    /// Its method, to recognise the request itself sent back.
    method: String,
}

#[derive(Default)]
struct State {
    pending: HashMap<u64, Pending>,
    death: Option<Death>,
    /// Set before lt stops the server itself: the death to report.
    stopping: Option<Death>,
    stderr: StderrTail,
    skipped: usize,
    last_skipped: String,
    /// When the first line on stdout that is not JSON-RPC came.
    first_skipped: Option<Instant>,
    /// When the server last wrote anything, on stdout or stderr.
    heard: Option<Instant>,
    /// Responses with an id lt never used (not late answers: those are
    /// dropped silently).
    unmatched: usize,
    last_unmatched: String,
    /// Lines over [`MAX_OUTPUT_BYTES`] that could not be tied to a request.
    too_long: usize,
}

impl Connection {
    /// Starts the server (in a process group of its own, registered for
    /// [`ToolGroups::stop_all`]) and its reading tasks; must be
    /// called inside a tokio runtime. No message is exchanged yet.
    pub(crate) fn start(
        spec: &ServerSpec,
        label: String,
        groups: &std::sync::Arc<ToolGroups>,
    ) -> std::io::Result<Connection> {
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
        let (mut child, group) = Group::spawn(&mut command, groups)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the server's pipes are missing"));
        };
        let (ended, _) = watch::channel(false);
        let (outbox, queued) = mpsc::unbounded_channel();
        tokio::spawn(write_lines(stdin, queued));
        let shared = Arc::new(Shared {
            label,
            group: Mutex::new(Some(group)),
            outbox,
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

    /// Neither dead nor being stopped.
    pub(crate) fn usable(&self) -> bool {
        let state = self.shared.state();
        state.death.is_none() && state.stopping.is_none()
    }

    /// A call timed out and the server has not answered the ping since
    /// ([`Connection::probe`]): it may be wedged.
    pub(crate) fn suspect(&self) -> bool {
        *self.shared.probing.borrow()
    }

    /// `; stderr: …` (the tail) and [`Connection::notes`], for the message
    /// of a server that did not start (its stderr says why); empty when
    /// there is neither.
    pub(crate) fn diagnostics(&self) -> String {
        let mut out = String::new();
        if let Some(stderr) = self.stderr() {
            out.push_str("; stderr: ");
            out.push_str(&stderr);
        }
        out.push_str(&self.notes());
        out
    }

    /// The tail of the server's stderr (its last [`STDERR_KEEP_BYTES`],
    /// trimmed), if it wrote any. A call's failure carries it apart from
    /// its message ([`crate::runtime::host::ToolFailure::stderr`]): a
    /// running server's stderr is its log, not the call's error.
    pub(crate) fn stderr(&self) -> Option<String> {
        let text = self.shared.state().stderr.text();
        (!text.is_empty()).then_some(text)
    }

    /// What the server wrote so far, for telling a program that is not an
    /// MCP server apart from one still starting: when it last wrote
    /// anything (stdout or stderr), and the lines on stdout that are not
    /// JSON-RPC (how many, since when, the last one).
    pub(crate) fn heard(&self) -> Heard {
        let state = self.shared.state();
        Heard {
            last: state.heard,
            skipped: state.skipped,
            first_skipped: state.first_skipped,
            last_skipped: state.last_skipped.clone(),
        }
    }

    /// Notes on what the server wrote that lt could not use (stdout lines
    /// that are not JSON-RPC, responses with an id lt never used, lines too
    /// long), for failure messages; empty when there is none.
    pub(crate) fn notes(&self) -> String {
        let state = self.shared.state();
        let mut out = String::new();
        if state.skipped > 0 {
            out.push_str(&format!(
                "; the server also wrote {} line(s) on stdout that are not JSON-RPC (the last: {:?})",
                state.skipped, state.last_skipped
            ));
        }
        if state.unmatched > 0 {
            out.push_str(&format!(
                "; the server also sent {} response(s) with an id lt never used (the last: {})",
                state.unmatched, state.last_unmatched
            ));
        }
        if state.too_long > 0 {
            out.push_str(&format!(
                "; the server also wrote {} line(s) on stdout longer than the {} MiB a message may be, which lt did not read (an answer among them is lost)",
                state.too_long,
                MAX_OUTPUT_BYTES / (1024 * 1024)
            ));
        }
        out
    }

    /// Sends request `method` with `params` (JSON text) and waits for its
    /// answer until `deadline`. A request still queued behind earlier
    /// messages at its deadline is not written ([`Failure::Unsent`]). On a
    /// timeout after it was written, the request is cancelled
    /// (`notifications/cancelled`, except for `initialize`, which may not
    /// be); a late answer is dropped.
    pub(crate) async fn request(&self, method: &str, params: &[u8], deadline: Instant) -> Reply {
        if Instant::now() >= deadline {
            return Err(Failure::Unsent);
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = self.shared.state();
            if let Some(death) = &state.death {
                return Err(Failure::Dead(death.clone()));
            }
            state.pending.insert(
                id,
                Pending {
                    reply: sender,
                    method: method.to_string(),
                },
            );
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
        let gate = Arc::new(AtomicU8::new(WAITING));
        // A stdin that is closed (the server is going) drops the line: the
        // death, which the supervisor reports to every pending request, says
        // more than a write error would.
        self.shared.send(Out::Line(
            line,
            Some(Gate {
                state: gate.clone(),
                deadline,
            }),
        ));
        match tokio::time::timeout_at(deadline, receiver).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(Failure::Dead(self.death().unwrap_or_else(|| Death {
                kind: FailureKind::Crashed,
                what: "closed the connection".to_string(),
            }))),
            Err(_) => {
                let written = match gate.compare_exchange(
                    WAITING,
                    ABANDONED,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) => false,
                    Err(now) => now == WRITING,
                };
                if !written {
                    return Err(Failure::Unsent);
                }
                if method != "initialize" {
                    self.shared.cancel(id);
                }
                Err(Failure::TimedOut)
            }
        }
    }

    /// Queues a notification (no answer) for the server.
    pub(crate) fn notify(&self, method: &str, params: Json) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        self.shared.send(Out::Line(bytes, None));
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
            // Not even written within the grace: the server does not read.
            if let Err(Failure::TimedOut | Failure::Unsent) = answer {
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
        // After the messages already queued (a write in progress may never
        // end if the server does not read: the kill below ends it).
        self.shared.send(Out::Close);
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

    /// Queues `out` for the writer task (dropped if it has stopped: stdin
    /// is closed, the server is going).
    fn send(&self, out: Out) {
        let _ = self.outbox.send(out);
    }

    /// Tells the server that lt gave up on request `id` (best effort; queued
    /// after the request itself).
    fn cancel(&self, id: u64) {
        let line = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "lt: the call timed out"},
        });
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        self.send(Out::Line(bytes, None));
    }

    /// Fails pending request `id` with `failure`, if it is pending; `false`
    /// if it is not.
    fn fail(&self, id: u64, failure: Failure) -> bool {
        let pending = self.state().pending.remove(&id);
        match pending {
            Some(pending) => {
                let _ = pending.reply.send(Err(failure));
                true
            }
            None => false,
        }
    }

    /// A line over [`MAX_OUTPUT_BYTES`]: the answer to a pending request if
    /// one of its ends says so (that request fails), else counted.
    fn too_long(&self, line: &Skipped) {
        let what = format!(
            "a message of {} bytes, longer than the {} MiB a message may be",
            line.len,
            MAX_OUTPUT_BYTES / (1024 * 1024)
        );
        let failed = line
            .response_id()
            .is_some_and(|id| self.fail(id, Failure::Malformed(what)));
        if !failed {
            self.state().too_long += 1;
        }
    }

    fn note_skipped(&self, line: &[u8]) {
        let mut state = self.state();
        state.skipped += 1;
        state.last_skipped = excerpt(line, 80);
        state.first_skipped.get_or_insert_with(Instant::now);
    }

    /// One line from stdout.
    fn dispatch(self: &Arc<Self>, line: &[u8]) {
        self.state().heard = Some(Instant::now());
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
        let version = match object.get("jsonrpc") {
            Some(Json::String(v)) if v == "2.0" => None,
            Some(other) => Some(format!(
                "its `jsonrpc` is {}",
                excerpt(other.to_string().as_bytes(), 40)
            )),
            None => Some("it has no `jsonrpc`".to_string()),
        };
        let method = object
            .get("method")
            .and_then(Json::as_str)
            .map(str::to_string);
        match (method, object.remove("id")) {
            (None, Some(id)) => self.response(id, &mut object, version, line),
            (Some(method), Some(id)) => {
                // lt's own request, sent back: the program echoes its input.
                let ours = id.as_u64().filter(|id| {
                    self.state()
                        .pending
                        .get(id)
                        .is_some_and(|p| p.method == method)
                });
                if let Some(ours) = ours {
                    self.fail(ours, Failure::Echoed);
                } else if version.is_some() {
                    self.note_skipped(line);
                } else {
                    self.answer(&method, id);
                }
            }
            // A notification (progress, log messages, list changes): nothing
            // lt acts on.
            (Some(_), None) if version.is_none() => {}
            (_, None) => self.note_skipped(line),
        }
        drop_deep(Json::Object(object));
    }

    /// A response: to the pending request with its id, if there is one.
    fn response(
        &self,
        id: Json,
        object: &mut serde_json::Map<String, Json>,
        version: Option<String>,
        line: &[u8],
    ) {
        // `version`: why the message is not JSON-RPC 2.0, if it is not.
        let reply = match (object.remove("result"), object.remove("error"), version) {
            (result, error, Some(version)) => {
                for value in [result, error].into_iter().flatten() {
                    drop_deep(value);
                }
                Err(Failure::Malformed(format!(
                    "a response that is not JSON-RPC 2.0 ({version})"
                )))
            }
            (Some(result), None, None) => Ok(result),
            (None, Some(error), None) => Err(rpc_failure(error)),
            (None, None, None) => Err(Failure::Malformed(
                "a response with neither `result` nor `error`".to_string(),
            )),
            (Some(result), Some(error), None) => {
                drop_deep(result);
                drop_deep(error);
                Err(Failure::Malformed(
                    "a response with both `result` and `error`".to_string(),
                ))
            }
        };
        let pending = {
            let mut state = self.state();
            let pending = id.as_u64().and_then(|id| state.pending.remove(&id));
            // Not a late answer to a request given up on (ids count up
            // from 1): an id lt never used.
            let ours = id
                .as_u64()
                .is_some_and(|id| id > 0 && id < self.next_id.load(Ordering::Relaxed));
            if pending.is_none() && !ours {
                state.unmatched += 1;
                state.last_unmatched = excerpt(line, 80);
            }
            pending
        };
        match pending {
            Some(pending) => {
                if let Err(Ok(value)) = pending.reply.send(reply) {
                    drop_deep(value);
                }
            }
            None => {
                if let Ok(value) = reply {
                    drop_deep(value);
                }
            }
        }
    }

    /// A request from the server. lt declares no client capabilities
    /// (sampling, roots, elicitation), so only a ping is answered in kind.
    fn answer(&self, method: &str, id: Json) {
        let answer = if method == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601,
                "message": format!("method not found: lt (an MCP client) does not offer {method}"),
            }})
        };
        let mut bytes = answer.to_string().into_bytes();
        bytes.push(b'\n');
        self.send(Out::Line(bytes, None));
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
        for (_, pending) in pending {
            let _ = pending.reply.send(Err(Failure::Dead(death.clone())));
        }
        self.ended.send_replace(true);
    }
}

/// A JSON-RPC `error` → [`Failure::Rpc`]. One that is not an error object
/// (`"error": "oops"`) keeps its text as the message.
fn rpc_failure(error: Json) -> Failure {
    let (code, message, data) = match error {
        Json::Object(mut o) => {
            let code = o.get("code").and_then(Json::as_i64);
            let message = match o.remove("message") {
                Some(Json::String(s)) => s,
                Some(other) => {
                    let text = other.to_string();
                    drop_deep(other);
                    text
                }
                None => String::new(),
            };
            let data = o.remove("data");
            drop_deep(Json::Object(o));
            (code, message, data)
        }
        Json::String(s) => (None, s, None),
        other => {
            let text = other.to_string();
            drop_deep(other);
            (None, text, None)
        }
    };
    Failure::Rpc {
        code,
        message: clip(&message, STDERR_KEEP_BYTES),
        data,
    }
}

/// The first `bytes` of `text` (not cutting a character), `…` appended if
/// there was more.
fn clip(text: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_string();
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
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
            Ok(n) => {
                let mut state = shared.state();
                state.stderr.push(&buf[..n]);
                state.heard = Some(Instant::now());
            }
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
                Line::TooLong(skipped) => shared.too_long(&skipped),
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
                        Line::TooLong(skipped) => shared.too_long(&skipped),
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

/// The writer task: writes each queued line whole, in order (a gated
/// request only if it may still be sent, [`Gate`]); stops at
/// [`Out::Close`], at a write error (the server is going), or when the
/// connection is dropped, closing stdin.
async fn write_lines(mut stdin: ChildStdin, mut queue: mpsc::UnboundedReceiver<Out>) {
    while let Some(out) = queue.recv().await {
        let line = match out {
            Out::Close => return,
            Out::Line(line, None) => line,
            Out::Line(line, Some(gate)) => {
                let take = Instant::now() < gate.deadline
                    && gate
                        .state
                        .compare_exchange(WAITING, WRITING, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                if !take {
                    gate.state.store(ABANDONED, Ordering::SeqCst);
                    continue;
                }
                line
            }
        };
        if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}
