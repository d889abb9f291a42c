//! The MCP servers of one session: one process per distinct server, started
//! on first use, replaced after it dies, stopped when the session ends.

use super::super::command::ToolGroups;
use super::conn::{Connection, Death, Failure, ServerSpec};
use super::{initialize, server_failure, StartFailure, ECHOES, PING_GRACE};
use crate::runtime::host::{FailureKind, ToolFailure};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// How long a server may take to exit once its stdin is closed at the end of
/// a session, before its process group is killed: 1 s.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1000);

/// The session's servers, by spec. Dropping it kills every server's process
/// group.
#[derive(Debug, Default)]
pub(crate) struct Servers {
    slots: Mutex<HashMap<ServerSpec, Arc<Slot>>>,
    /// Set by [`Servers::shutdown`]: no server starts any more.
    ended: AtomicBool,
    /// The executor host's process groups, where each server's is registered.
    groups: Arc<ToolGroups>,
}

/// One server's current connection. The async lock serialises starts: the
/// calls of a batch that find no server wait for the one start.
#[derive(Debug, Default)]
struct Slot {
    current: tokio::sync::Mutex<Option<Arc<Connection>>>,
}

impl Servers {
    /// No servers yet; each one started is registered in `groups`.
    pub(crate) fn new(groups: Arc<ToolGroups>) -> Servers {
        Servers {
            groups,
            ..Servers::default()
        }
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<ServerSpec, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live connection to `spec`'s server, started (and initialized) now
    /// if there is none or the last one died, all before `deadline`. A server
    /// whose last call timed out is used only once it answered the ping
    /// ([`Connection::probe`]); one that did not is stopped, and replaced.
    /// When the deadline passes while the call waits (for that verdict, for
    /// another call's start of the server, for its own start), it fails as
    /// timed out, saying what it waited for: it is never sent. `tool` and
    /// `label` name the call and the server in failures.
    pub(crate) async fn connection(
        &self,
        spec: &ServerSpec,
        label: &str,
        tool: &str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Arc<Connection>, ToolFailure> {
        let ended = || ToolFailure {
            stderr: None,
            kind: FailureKind::Unavailable,
            message: format!(
                "tool {tool}: the session has ended; the MCP server `{label}` is not started again"
            ),
        };
        let waited_out = |waiting: String, conn: Option<&Connection>| ToolFailure {
            stderr: conn.and_then(Connection::stderr),
            kind: FailureKind::TimedOut,
            message: format!(
                "tool {tool} timed out after {} ms waiting for {waiting}; the call was not sent{}",
                timeout.as_millis(),
                conn.map(Connection::notes).unwrap_or_default()
            ),
        };
        let starting = || {
            waited_out(
                format!("the MCP server `{label}` to start (another call is starting it)"),
                None,
            )
        };
        let verdict = format!(
            "the MCP server `{label}` to answer a ping (an earlier call timed out: the server may be wedged; it is stopped if it does not answer within {} ms)",
            PING_GRACE.as_millis()
        );
        if self.ended.load(Ordering::SeqCst) {
            return Err(ended());
        }
        let slot = self.slots().entry(spec.clone()).or_default().clone();
        // What the call waited for last, for a message.
        let mut waited = format!("the MCP server `{label}`");
        let mut current = loop {
            let Ok(current) = tokio::time::timeout_at(deadline, slot.current.lock()).await else {
                return Err(starting());
            };
            let conn = match current.as_ref() {
                Some(conn) if conn.usable() => conn.clone(),
                // None yet, or the last one died: this call starts one,
                // holding the lock.
                _ => break current,
            };
            if !conn.suspect() {
                if Instant::now() >= deadline {
                    return Err(waited_out(waited, Some(&conn)));
                }
                return Ok(conn);
            }
            // The verdict is awaited without the lock: a server stopped as
            // wedged is replaced by whichever call comes first.
            drop(current);
            conn.settled(deadline).await;
            if conn.suspect() || Instant::now() >= deadline {
                return Err(waited_out(verdict, Some(&conn)));
            }
            waited = verdict.clone();
        };
        // Checked again under the lock: a shutdown may have come meanwhile.
        if self.ended.load(Ordering::SeqCst) {
            return Err(ended());
        }
        if Instant::now() >= deadline {
            return Err(waited_out(waited, None));
        }
        *current = None;
        let conn =
            Connection::start(spec, label.to_string(), &self.groups).map_err(|e| ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: format!(
                    "tool {tool} could not be started: the MCP server `{label}`: {}: {e}",
                    spec.program.display()
                ),
            })?;
        let conn = Arc::new(conn);
        match initialize(&conn, deadline).await {
            Ok(()) => {
                *current = Some(conn.clone());
                if Instant::now() >= deadline {
                    return Err(waited_out(
                        format!("the MCP server `{label}` to start (it answered `initialize` just then)"),
                        Some(&conn),
                    ));
                }
                Ok(conn)
            }
            Err(failure) => {
                let stopped = Death {
                    kind: FailureKind::Unavailable,
                    what: "was stopped: its start failed".to_string(),
                };
                let message = start_failure(&conn, tool, timeout, failure);
                conn.stop(stopped);
                Err(message)
            }
        }
    }

    /// Closes every server gracefully (stdin closed, [`SHUTDOWN_GRACE`] to
    /// exit, then the process group killed), all at once; no server starts
    /// after this.
    pub(crate) async fn shutdown(&self) {
        self.ended.store(true, Ordering::SeqCst);
        let slots: Vec<Arc<Slot>> = self.slots().values().cloned().collect();
        let mut closing = Vec::new();
        for slot in slots {
            closing.push(tokio::spawn(async move {
                // A start in progress finishes (or fails) first.
                let conn = slot.current.lock().await.take();
                if let Some(conn) = conn {
                    let death = Death {
                        kind: FailureKind::Unavailable,
                        what: "was shut down: the session ended".to_string(),
                    };
                    conn.close(death, SHUTDOWN_GRACE).await;
                }
            }));
        }
        for task in closing {
            let _ = task.await;
        }
    }

    /// Kills every server's process group now (what dropping does, for a
    /// caller that cannot wait).
    pub(crate) fn kill_all(&self) {
        self.ended.store(true, Ordering::SeqCst);
        for slot in self.slots().drain().map(|(_, slot)| slot) {
            if let Ok(mut current) = slot.current.try_lock() {
                current.take();
            }
        }
    }
}

/// The failure of a call whose server did not start: it could not be run,
/// exited, refused `initialize`, or did not answer it in time.
fn start_failure(
    conn: &Connection,
    tool: &str,
    timeout: Duration,
    failure: StartFailure,
) -> ToolFailure {
    let label = conn.label();
    let failure = match failure {
        StartFailure::Request(f) => f,
        StartFailure::Incompatible(why) => {
            return ToolFailure {
                stderr: conn.stderr(),
                kind: FailureKind::Unavailable,
                message: format!(
                    "tool {tool} could not be started: the MCP server `{label}` {why}"
                ),
            }
        }
    };
    match failure {
        Failure::TimedOut => ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::TimedOut,
            message: format!(
                "tool {tool} timed out after {} ms: the MCP server `{label}` did not answer `initialize`{}",
                timeout.as_millis(),
                conn.diagnostics()
            ),
        },
        Failure::Dead(death) => ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::Unavailable,
            message: format!(
                "tool {tool} could not be started: the MCP server `{label}` {} before it answered `initialize`{}",
                death.what,
                conn.diagnostics()
            ),
        },
        Failure::Unsent => ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::TimedOut,
            message: format!(
                "tool {tool} timed out after {} ms before lt could write `initialize` to the MCP server `{label}`; the call was not sent{}",
                timeout.as_millis(),
                conn.diagnostics()
            ),
        },
        rpc @ Failure::Rpc { .. } => ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::Unavailable,
            message: format!(
                "tool {tool} could not be started: the MCP server `{label}` refused `initialize`: {}{}",
                server_failure(&rpc),
                conn.diagnostics()
            ),
        },
        Failure::Malformed(what) => ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::Unavailable,
            message: format!(
                "tool {tool} could not be started: the MCP server `{label}` answered `initialize` with {what}{}",
                conn.diagnostics()
            ),
        },
        Failure::Echoed => ToolFailure {
            stderr: conn.stderr(),
            kind: FailureKind::Unavailable,
            message: format!(
                "tool {tool} could not be started: the MCP server `{label}` sent lt's own `initialize` request back: {ECHOES}{}",
                conn.diagnostics()
            ),
        },
    }
}
