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
/// `timeout`. Blocking: it runs on a runtime of its own. Errors are one-line
/// messages (the command could not start, the server exited, with its stderr
/// tail, it timed out, it answered something that is not a tool list).
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
        let listed = async {
            initialize(&conn, deadline).await.map_err(|f| match f {
                StartFailure::Request(f) => list_failure(&conn, "initialize", timeout, f),
                StartFailure::Incompatible(why) => format!("the MCP server `{label}` {why}"),
            })?;
            page_tools(&conn, deadline, timeout).await
        }
        .await;
        let done = Death {
            kind: FailureKind::Unavailable,
            what: "was shut down: its tools were listed".to_string(),
        };
        conn.close(done, SHUTDOWN_GRACE).await;
        listed
    })
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
