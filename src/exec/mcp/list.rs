//! [`list_tools`]: a server's tools as it lists them, for `lt tools
//! import --mcp`.

use super::super::text::drop_deep;
use super::conn::{Connection, Death, Failure, ServerSpec};
use super::{initialize, json_kind, label, server_failure, StartFailure, ECHOES, SHUTDOWN_GRACE};
use crate::runtime::host::FailureKind;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Starts the MCP server `command` (the program, looked up on `PATH` if it
/// has no `/`, and its arguments; in the current directory, with lt's
/// environment), initializes it, pages through `tools/list` (following
/// `nextCursor`), shuts it down, and returns `{"tools": [ … ]}`: every tool
/// object as the server sent it. The whole exchange must end within
/// `timeout`, and a program that is not an MCP server is given up on
/// early: one that exits, or sends lt's requests back, at once; one that
/// writes lines on stdout that are not JSON-RPC after `NOT_JSON_RPC_GRACE`;
/// one silent on stdout and stderr after `SILENCE_GRACE`. Blocking: it
/// runs on a runtime of its own. Errors are one-line messages (the command
/// could not start, the server exited, with its stderr tail, it is not an
/// MCP server, it timed out, it answered something that is not a tool
/// list).
pub fn list_tools(command: &[String], timeout: Duration) -> Result<Json, String> {
    let Some(program) = command.first() else {
        return Err("no MCP server command given: name its program and arguments".to_string());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let spec = ServerSpec {
        program: PathBuf::from(program),
        args: command[1..].to_vec(),
        cwd,
        env: BTreeMap::new(),
    };
    let label = label(command);
    runtime.block_on(async {
        let deadline = Instant::now() + timeout;
        let conn = Connection::start(&spec, label.clone(), &Default::default()).map_err(|e| {
            format!("the MCP server `{label}` could not be started: {program}: {e}")
        })?;
        let conn = Arc::new(conn);
        let started = Instant::now();
        let listed = async {
            tokio::select! {
                done = initialize(&conn, deadline) => done.map_err(|f| match f {
                    StartFailure::Request(f) => list_failure(&conn, "initialize", timeout, f),
                    StartFailure::Incompatible(why) => format!("the MCP server `{label}` {why}"),
                })?,
                why = not_a_server(&conn, started) => return Err(why),
            }
            page_tools(&conn, deadline, timeout).await
        }
        .await;
        if listed.is_ok() {
            let done = Death {
                kind: FailureKind::Unavailable,
                what: "was shut down: its tools were listed".to_string(),
            };
            conn.close(done, SHUTDOWN_GRACE).await;
        } else {
            // Not a server, or not a working one: no grace to wait out.
            conn.stop(Death {
                kind: FailureKind::Unavailable,
                what: "was stopped: its tools could not be listed".to_string(),
            });
        }
        listed
    })
}

/// How long a program may write lines on stdout that are not JSON-RPC,
/// from the first one, without answering `initialize` before
/// [`list_tools`] gives up on it: 3 s. (A server that prints a banner
/// answers right after.)
pub(crate) const NOT_JSON_RPC_GRACE: Duration = Duration::from_secs(3);

/// How long a program may write nothing at all, on stdout or stderr,
/// without answering `initialize` before [`list_tools`] gives up on it:
/// 10 s. A server still starting that says so on stderr (a package runner
/// downloading it, a server logging its start) is waited for, up to the
/// whole timeout.
pub(crate) const SILENCE_GRACE: Duration = Duration::from_secs(10);

/// Ends (with the message) once the program `conn` runs shows it is not an
/// MCP server while `initialize` is unanswered: lines on stdout that are not
/// JSON-RPC for [`NOT_JSON_RPC_GRACE`], or nothing written at all for
/// [`SILENCE_GRACE`]. Never ends otherwise (raced against `initialize`;
/// a program that exits or echoes fails `initialize` itself, at once).
async fn not_a_server(conn: &Connection, started: Instant) -> String {
    let label = conn.label();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let heard = conn.heard();
        let now = Instant::now();
        if let Some(first) = heard.first_skipped {
            if now >= first + NOT_JSON_RPC_GRACE {
                return one_line(&format!(
                    "the MCP server `{label}` is not answering as an MCP server: in {} s it wrote {} line(s) on stdout, none of them JSON-RPC (the last: {:?}), and did not answer `initialize`; is it an MCP server?{}",
                    (now - started).as_secs(),
                    heard.skipped,
                    heard.last_skipped,
                    stderr_note(conn)
                ));
            }
        }
        if now >= heard.last.unwrap_or(started) + SILENCE_GRACE {
            return one_line(&format!(
                "the MCP server `{label}` has written nothing, on stdout or stderr, for {} s, and did not answer `initialize`: it does not speak MCP on its stdin and stdout; is it an MCP server?{}",
                SILENCE_GRACE.as_secs(),
                stderr_note(conn)
            ));
        }
    }
}

/// `; stderr: …` when the program wrote on stderr.
fn stderr_note(conn: &Connection) -> String {
    conn.stderr()
        .map(|text| format!("; stderr: {text}"))
        .unwrap_or_default()
}

async fn page_tools(
    conn: &Connection,
    deadline: Instant,
    timeout: Duration,
) -> Result<Json, String> {
    let label = conn.label();
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let answer = conn
            .request("tools/list", params.to_string().as_bytes(), deadline)
            .await
            .map_err(|f| list_failure(conn, "tools/list", timeout, f))?;
        let Json::Object(mut answer) = answer else {
            let kind = json_kind(&answer);
            drop_deep(answer);
            return Err(format!(
                "the MCP server `{label}` answered tools/list with {kind}, not a result object"
            ));
        };
        match answer.remove("tools") {
            Some(Json::Array(page)) => tools.extend(page),
            other => {
                if let Some(v) = other {
                    drop_deep(v);
                }
                drop_deep(Json::Object(answer));
                return Err(format!(
                    "the MCP server `{label}` answered tools/list without a `tools` list"
                ));
            }
        }
        match answer.remove("nextCursor") {
            Some(Json::String(next)) => {
                if !seen.insert(next.clone()) {
                    return Err(format!(
                        "the MCP server `{label}` repeats the tools/list cursor {next:?}: its pages do not end"
                    ));
                }
                cursor = Some(next);
            }
            _ => break,
        }
        drop_deep(Json::Object(answer));
    }
    Ok(json!({ "tools": tools }))
}

/// A failed request of [`list_tools`], on one line.
fn list_failure(conn: &Connection, method: &str, timeout: Duration, failure: Failure) -> String {
    let label = conn.label();
    let text = match failure {
        Failure::TimedOut => format!(
            "the MCP server `{label}` timed out: no answer to {method} within {} ms",
            timeout.as_millis()
        ),
        Failure::Dead(death) => format!(
            "the MCP server `{label}` {} before it answered {method}",
            death.what
        ),
        Failure::Unsent => format!(
            "the MCP server `{label}` timed out: lt could not write {method} to it within {} ms",
            timeout.as_millis()
        ),
        rpc @ Failure::Rpc { .. } => format!(
            "the MCP server `{label}` refused {method}: {}",
            server_failure(&rpc)
        ),
        Failure::Malformed(what) => {
            format!("the MCP server `{label}` answered {method} with {what}")
        }
        Failure::Echoed => {
            format!("the MCP server `{label}` sent lt's own {method} request back: {ECHOES}")
        }
    };
    one_line(&format!("{text}{}", conn.diagnostics()))
}

/// `text` on one line (line breaks as ` | `), at most about 1000 characters
/// (the end kept: the end of stderr says the most).
fn one_line(text: &str) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    let count = joined.chars().count();
    if count <= 1000 {
        return joined;
    }
    let head: String = joined.chars().take(400).collect();
    let tail: String = joined.chars().skip(count - 550).collect();
    format!("{head} […] {tail}")
}
