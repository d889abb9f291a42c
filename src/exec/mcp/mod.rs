//! `mcp` executors: a tool run by an MCP server over stdio.
//!
//! ```toml
//! [tools.current_time]
//! mcp = { command = ["mcp-server-time"], tool = "get_current_time" }  # cwd, env as for commands
//! timeout_ms = 5000
//! ```
//!
//! **Lifetime.** A server is one process per session per distinct server
//! (same resolved program, arguments, working directory and environment:
//! every tool table naming it shares the process). It starts on the first
//! call that needs it (`initialize`, then `notifications/initialized`;
//! protocol [`PROTOCOL_VERSION`], older revisions accepted), stays up across
//! calls, and is closed when the session ends ([`Servers::shutdown`]: stdin
//! closed, [`SHUTDOWN_GRACE`] to exit, then its process group killed;
//! dropping the executor host kills at once). It runs in a process group of
//! its own, registered like a command tool's, so lt's signal forwarding
//! kills it too. A server that died is started afresh by the next call.
//!
//! **Calls.** Each call is a `tools/call` request with the record argument
//! as `arguments` (unit → `{}`; any other value is refused: MCP tools take
//! an object) and lt's idempotency key in `_meta` as
//! [`IDEMPOTENCY_META_KEY`]. Concurrent calls (a `gather` batch) share the
//! connection, told apart by their JSON-RPC ids. The first call's deadline
//! covers the server's start. On a timeout the request is cancelled
//! (`notifications/cancelled`) and the server pinged: one that does not
//! answer within [`PING_GRACE`] is wedged and is stopped (a call that comes
//! meanwhile waits for the ping's verdict, and then uses the server or
//! starts a fresh one). A call whose deadline passes while it waits (for
//! that verdict, for another call's start of the server, behind messages
//! the server does not read) is `TimedOut` with what it waited for, and is
//! never sent: a tool that acts must not act after lt reported a timeout.
//!
//! **Results.** `isError: true` and JSON-RPC errors are `Failed` with the
//! server's text (an error message is clipped to 2 KiB; an `error` that is
//! not an object keeps its text); `structuredContent` is the result;
//! otherwise text-only `content` is one string (items joined with `\n`), no
//! content is `null`, and any other content (images, audio, resources) is
//! the `content` list itself, as sent. A dead server is `Crashed`
//! (`Unavailable` before it answered `initialize`), no answer in time is
//! `TimedOut`; an answer that is not a tool result (`isError` not a boolean),
//! not a JSON-RPC 2.0 response (neither `result` nor `error`, both, another
//! `jsonrpc`), or over 64 MiB is `BadOutput`, at once; lt's own request sent
//! back (a program that echoes its input) too. A server's stderr is its
//! log, not a call's error: every failure carries its tail apart from the
//! message ([`ToolFailure::stderr`], recorded in the log's `failed` or
//! `timed_out` event), and only the message of a server that did not start
//! quotes it (there it says why). Lines on stdout that are not JSON-RPC are skipped,
//! and responses with an id lt never used are dropped (both counted in
//! later failure messages).
//!
//! **Why not `rmcp`.** The official Rust SDK was the first choice; its 3.11
//! source was read against these needs (features `client` +
//! `transport-async-rw`, lt spawning the process itself). It decodes every
//! answer through an untagged union of typed results (`ServerResult`), so a
//! `tools/list` answer comes back re-typed: tool fields it does not model
//! (the 2025-11-25 `execution`, vendor extensions) are dropped, while
//! [`list_tools`] must hand `lt tools import` each tool as the server sent
//! it; and a `tools/call` answer it cannot type (an unknown content block)
//! falls through to another variant instead of reaching lt's own mapping.
//! It also fails pending requests only after its service loop has drained
//! (up to 5 s after the server's stdout closes), and it adds some 24k lines
//! plus `chrono`, `futures`, `tokio-util` and `tracing` to a two-core build.
//! What lt needs is small: line-delimited JSON-RPC 2.0 on tokio and
//! serde_json, with lt's own process groups and depth-safe JSON.
//!
//! Files: `conn.rs` (one server process and its connection), `stdio.rs`
//! (reading its stdout lines and stderr tail), `pool.rs` (the session's
//! servers), `list.rs` ([`list_tools`]); here, the tool call and its result.

mod conn;
mod list;
mod pool;
mod stdio;

pub use list::list_tools;
pub(crate) use pool::Servers;
pub use pool::SHUTDOWN_GRACE;

use super::command::shell_word;
use super::text::{drop_deep, to_json_bytes};
use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use conn::{Connection, Failure, ServerSpec};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// The protocol revision lt asks for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The revisions lt accepts in a server's `initialize` answer (`tools/call`
/// is the same in all of them; `structuredContent` came in 2025-06-18).
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The `_meta` key of a `tools/call` that carries lt's idempotency key
/// (`<session>:<call id>`).
pub const IDEMPOTENCY_META_KEY: &str = "lt/idempotency_key";

/// How long a server has to answer a ping after one of its calls timed out
/// before lt stops it as wedged: 2 s.
pub const PING_GRACE: Duration = Duration::from_millis(2000);

/// An `mcp` executor: one tool of one server.
#[derive(Debug)]
pub(crate) struct McpTool {
    spec: ServerSpec,
    /// `command` as written, shell-quoted.
    label: String,
    /// The tool's name on the server.
    tool: String,
    pub(crate) timeout: Duration,
}

/// Why a server's start failed (for the pool's messages).
pub(super) enum StartFailure {
    Request(Failure),
    /// It answered `initialize` with something lt cannot use.
    Incompatible(String),
}

impl McpTool {
    /// `written` is `command` as written; `program`, `args`, `cwd`, `env`
    /// are resolved and checked as for a command tool.
    pub(crate) fn new(
        written: &[String],
        program: PathBuf,
        args: Vec<String>,
        cwd: PathBuf,
        env: BTreeMap<String, String>,
        tool: String,
        timeout: Duration,
    ) -> McpTool {
        McpTool {
            spec: ServerSpec {
                program,
                args,
                cwd,
                env,
            },
            label: label(written),
            tool,
            timeout,
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "mcp tool {} of `{}` (in {}, timeout {} ms)",
            self.tool,
            self.label,
            self.spec.cwd.display(),
            self.timeout.as_millis()
        )
    }

    /// Calls the tool once on `servers`' connection to its server (started
    /// now if needed); gives up after `timeout` (already the smaller of the
    /// tool's and the run's).
    pub(crate) async fn call(
        &self,
        servers: &Servers,
        name: &str,
        arg: &Json,
        timeout: Duration,
        key: Option<&str>,
        started: &(dyn Fn() + Sync),
    ) -> Outcome {
        let deadline = Instant::now() + timeout;
        let arguments = match arg {
            Json::Null => b"{}".to_vec(),
            Json::Object(_) => to_json_bytes(arg),
            other => {
                return Err(ToolFailure {
                    stderr: None,
                    kind: FailureKind::Unavailable,
                    message: format!(
                        "tool {name}: an MCP tool takes a record argument (a JSON object), not {}; the call was not sent",
                        json_kind(other)
                    ),
                })
            }
        };
        let conn = servers
            .connection(&self.spec, &self.label, name, deadline, timeout)
            .await?;
        started();
        let mut params = format!(
            "{{\"name\":{},\"arguments\":",
            Json::String(self.tool.clone())
        )
        .into_bytes();
        params.extend_from_slice(&arguments);
        if let Some(key) = key {
            let meta = json!({ IDEMPOTENCY_META_KEY: key });
            params.extend_from_slice(format!(",\"_meta\":{meta}").as_bytes());
        }
        params.push(b'}');
        match conn.request("tools/call", &params, deadline).await {
            Ok(result) => call_result(name, &conn, result),
            Err(Failure::TimedOut) => {
                conn.probe(PING_GRACE);
                Err(ToolFailure {
                    stderr: conn.stderr(),
                    kind: FailureKind::TimedOut,
                    message: format!(
                        "tool {name} timed out after {} ms (MCP server `{}`){}",
                        timeout.as_millis(),
                        self.label,
                        conn.notes()
                    ),
                })
            }
            Err(Failure::Unsent) => {
                // Messages queued before it are still not written: the
                // server does not read; the ping tells whether it is wedged.
                conn.probe(PING_GRACE);
                Err(ToolFailure {
                    stderr: conn.stderr(),
                    kind: FailureKind::TimedOut,
                    message: format!(
                        "tool {name} timed out after {} ms waiting to write to the MCP server `{}` (it has not read what lt sent before); the call was not sent{}",
                        timeout.as_millis(),
                        self.label,
                        conn.notes()
                    ),
                })
            }
            Err(Failure::Dead(death)) => Err(ToolFailure {
                stderr: conn.stderr(),
                kind: death.kind,
                message: format!(
                    "tool {name}: the MCP server `{}` {} during the call{}",
                    self.label,
                    death.what,
                    conn.notes()
                ),
            }),
            Err(rpc @ Failure::Rpc { .. }) => Err(ToolFailure {
                stderr: conn.stderr(),
                kind: FailureKind::Failed,
                message: format!("tool {name} failed ({})", server_failure(&rpc)),
            }),
            Err(Failure::Malformed(what)) => Err(ToolFailure {
                stderr: conn.stderr(),
                kind: FailureKind::BadOutput,
                message: format!(
                    "tool {name}: the MCP server `{}` answered tools/call with {what}{}",
                    self.label,
                    conn.notes()
                ),
            }),
            Err(Failure::Echoed) => Err(ToolFailure {
                stderr: conn.stderr(),
                kind: FailureKind::BadOutput,
                message: format!(
                    "tool {name}: the MCP server `{}` sent lt's own tools/call request back: {ECHOES}{}",
                    self.label,
                    conn.notes()
                ),
            }),
        }
    }
}

/// What a program that sends lt's requests back is told.
pub(super) const ECHOES: &str = "the program echoes its input; is it an MCP server?";

/// `command` as a shell would need it written.
fn label(written: &[String]) -> String {
    written
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// A failure of a request as text: for a JSON-RPC error, `MCP error
/// -32602: Unknown tool: x` (with its `data`, shortened, when there is
/// some; `MCP error: …` when it has no code).
pub(super) fn server_failure(failure: &Failure) -> String {
    match failure {
        Failure::Rpc {
            code,
            message,
            data,
        } => {
            let mut text = match code {
                Some(code) => format!("MCP error {code}: {message}"),
                None => format!("MCP error: {message}"),
            };
            if let Some(data) = data {
                let data = match data {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                };
                text.push_str(&format!(" ({})", shorten(&data, 500)));
            }
            text
        }
        Failure::TimedOut => "no answer in time".to_string(),
        Failure::Unsent => "the request could not be written in time".to_string(),
        Failure::Dead(death) => death.what.clone(),
        Failure::Malformed(what) => what.clone(),
        Failure::Echoed => ECHOES.to_string(),
    }
}

fn shorten(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The handshake: `initialize`, checked, then `notifications/initialized`.
pub(super) async fn initialize(conn: &Connection, deadline: Instant) -> Result<(), StartFailure> {
    let params = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "lt", "version": env!("CARGO_PKG_VERSION")},
    });
    let answer = conn
        .request("initialize", params.to_string().as_bytes(), deadline)
        .await
        .map_err(StartFailure::Request)?;
    let version = answer.get("protocolVersion").and_then(Json::as_str);
    let problem = match version {
        Some(v) if SUPPORTED_VERSIONS.contains(&v) => None,
        Some(v) => Some(format!(
            "speaks MCP protocol version {v:?}; lt speaks {}",
            SUPPORTED_VERSIONS.join(", ")
        )),
        None => Some(format!(
            "answered `initialize` without a protocolVersion: {}",
            shorten(&answer.to_string(), 200)
        )),
    };
    drop_deep(answer);
    if let Some(problem) = problem {
        return Err(StartFailure::Incompatible(problem));
    }
    conn.notify("notifications/initialized", json!({}));
    Ok(())
}

/// A `tools/call` result → the call's outcome (see the module's note).
fn call_result(name: &str, conn: &Connection, result: Json) -> Outcome {
    let bad = |why: String| {
        Err(ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::BadOutput,
            message: format!(
                "tool {name}: the MCP server `{}` answered tools/call with {why}{}",
                conn.label(),
                conn.notes()
            ),
        })
    };
    let Json::Object(mut result) = result else {
        let kind = json_kind(&result);
        drop_deep(result);
        return bad(format!("{kind}, not a result object"));
    };
    let is_error = match result.get("isError") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(other) => {
            let kind = json_kind(other);
            drop_deep(Json::Object(result));
            return bad(format!("an `isError` that is {kind}, not a boolean"));
        }
    };
    let structured = result.remove("structuredContent").filter(|v| !v.is_null());
    let content = result.remove("content");
    drop_deep(Json::Object(result));
    let content = match content {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(items)) => items,
        Some(other) => {
            let kind = json_kind(&other);
            drop_deep(other);
            if let Some(v) = structured {
                drop_deep(v);
            }
            return bad(format!("a `content` that is {kind}, not a list"));
        }
    };
    let text = all_text(&content);
    if is_error {
        let message = match (&text, &structured) {
            (Some(t), _) if !t.trim().is_empty() => shorten(t.trim(), 4000),
            (_, Some(s)) => shorten(&s.to_string(), 4000),
            _ => "the server gave no message".to_string(),
        };
        drop_deep(Json::Array(content));
        if let Some(v) = structured {
            drop_deep(v);
        }
        return Err(ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::Failed,
            message: format!("tool {name} failed: {message}"),
        });
    }
    if let Some(structured) = structured {
        drop_deep(Json::Array(content));
        return Ok(structured);
    }
    Ok(match text {
        _ if content.is_empty() => Json::Null,
        Some(text) => {
            drop_deep(Json::Array(content));
            Json::String(text)
        }
        None => Json::Array(content),
    })
}

/// The text of `content` when every item is a text block, joined with `\n`.
fn all_text(content: &[Json]) -> Option<String> {
    let mut parts = Vec::with_capacity(content.len());
    for item in content {
        match (item.get("type"), item.get("text")) {
            (Some(Json::String(t)), Some(Json::String(text))) if t == "text" => {
                parts.push(text.as_str())
            }
            _ => return None,
        }
    }
    Some(parts.join("\n"))
}
